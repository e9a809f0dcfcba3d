//! `matrix`: the pairwise performance-ratio matrix.

use super::plan::Plan;
use super::MatrixFiles;
use super::{
    counting_bar, json_out, out, protocol, refs, window_text, workload_names, workloads,
    write_files,
};
use crate::args::MatrixArgs;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use smtsched_model::{MachineModel, Placement};
use smtsched_report::matrix::{render_grid, render_speedup_grid, render_summary, summarize};
use smtsched_uarch::{Protocol, Workload};

pub struct MatrixPlan {
    machine: MachineModel,
    workloads: Vec<Box<dyn Workload>>,
    placement: Placement,
    protocol: Protocol,
    files: MatrixFiles,
    /// Host threads (0: all cores).
    threads: usize,
    json: bool,
}

impl Plan for MatrixPlan {
    type Args = MatrixArgs;

    fn from_args(a: MatrixArgs) -> Result<Self> {
        let machine = a.sim.machine.load()?;
        let workloads = workloads(&workload_names(&a.workloads)?)?;
        // A matrix is looked up by workload name, and every workload's self-pair is in it.
        let names: Vec<&str> = workloads.iter().map(|w| w.name()).collect();
        if let Some((_, name)) = smtsched_model::first_repeat(&names) {
            return Err(bad_input(format!(
                "--workloads {:?}: {name} is named twice (a matrix has each workload once; its \
                 pair with itself is measured too)",
                a.workloads
            )));
        }
        let sharing = (a.placement == Placement::Timeshare).then_some("-p timeshare");
        let protocol = protocol(&a.sim, Some(&a.timeshare), &machine, sharing)?;
        let files = MatrixFiles::checked(a.files)?;
        Ok(MatrixPlan {
            machine,
            workloads,
            placement: a.placement,
            protocol,
            files,
            threads: a.threads.map_or(0, usize::from),
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let (m, n) = (&self.machine, self.workloads.len());
        let runs = n * 2 + n * (n + 1) / 2;
        let bar = counting_bar(runs as u64, "runs")?;
        bar.set_message(format!("{} pairs on {}", runs - n * 2, m.name));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads)
            .build()
            .context("cannot start worker threads")?;
        let started = std::time::Instant::now();
        let matrix = pool.install(|| {
            let refs = refs(&self.workloads);
            smtsched_uarch::protocol::matrix(m, &refs, self.placement, &self.protocol, &|| {
                bar.inc()
            })
        })?;
        bar.finish_and_clear();
        let elapsed = started.elapsed().as_secs_f64();
        let summary = summarize(&matrix).ok_or_else(|| bad_input("no pairs"))?;
        write_files(&self.files.render(&matrix, std::path::Path::to_path_buf)?)?;
        if self.json {
            return json_out(&serde_json::json!({ "summary": summary, "matrix": matrix }));
        }
        let proto = &self.protocol;
        out(&format!(
            "Performance ratio of the row workload running with the column workload: {} on {}, placement {}, seed {}, {} ({:.1} s)\n\n",
            n,
            m.name,
            self.placement,
            proto.seed,
            window_text(proto, self.placement, m),
            elapsed
        ))?;
        out(&render_grid(&matrix))?;
        out("\n")?;
        out(&render_speedup_grid(&matrix))?;
        out("\n")?;
        out(&render_summary(&summary))
    }
}
