//! `matrix`: the pairwise performance-ratio matrix.

use super::counting_bar;
use super::{json_out, out, protocol, workload, write_file, MatrixFiles};
use crate::args::MatrixArgs;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use smtsched_model::{expand_workload_list, Placement};
use smtsched_report::matrix::{render_grid, render_speedup_grid, render_summary, summarize};
use smtsched_uarch::Workload;

pub fn run(a: MatrixArgs) -> Result<()> {
    let m = a.sim.machine.load()?;
    let placement: Placement = a.placement;
    let names = expand_workload_list(&a.workloads);
    if names.is_empty() {
        return Err(bad_input(format!(
            "--workloads {:?}: names no workloads",
            a.workloads
        )));
    }
    let profiles: Vec<Box<dyn Workload>> =
        names.iter().map(|w| workload(w)).collect::<Result<_>>()?;
    let refs: Vec<&dyn Workload> = profiles.iter().map(|p| p.as_ref()).collect();
    let proto = protocol(&a.sim, &m, a.rounds)?;
    super::check_outputs([
        a.output.as_deref(),
        a.csv.as_deref(),
        a.pairs_csv.as_deref(),
        a.svg.as_deref(),
    ])?;
    let runs = profiles.len() * 2 + profiles.len() * (profiles.len() + 1) / 2;
    let bar = counting_bar(runs as u64, "runs")?;
    bar.set_message(format!("{} pairs on {}", runs - profiles.len() * 2, m.name));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.map_or(0, usize::from))
        .build()
        .context("cannot start worker threads")?;
    let started = std::time::Instant::now();
    let matrix = pool.install(|| {
        smtsched_uarch::protocol::matrix(&m, &refs, placement, &proto, &|| bar.inc(1))
    })?;
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();
    let summary = summarize(&matrix).ok_or_else(|| bad_input("no pairs"))?;
    let files = MatrixFiles {
        json: a.output.as_deref(),
        csv: a.csv.as_deref(),
        pairs_csv: a.pairs_csv.as_deref(),
        svg: a.svg.as_deref(),
    };
    for (path, text) in files.render(&matrix, std::path::Path::to_path_buf)? {
        write_file(&path, text.as_bytes())?;
    }
    if a.json {
        return json_out(&serde_json::json!({ "summary": summary, "matrix": matrix }));
    }
    out(&format!(
        "Performance ratio of the row workload running with the column workload: {} on {}, placement {}, seed {}, {} + {} instructions per window ({:.1} s)\n\n",
        names.len(),
        m.name,
        placement,
        proto.seed,
        proto.warmup_instructions,
        proto.measure_instructions,
        elapsed
    ))?;
    out(&render_grid(&matrix))?;
    out("\n")?;
    out(&render_speedup_grid(&matrix))?;
    out("\n")?;
    out(&render_summary(&summary))
}
