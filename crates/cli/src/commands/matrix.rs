//! `matrix`: the pairwise performance-ratio matrix.

use super::{json_out, out, protocol, workload, write_file};
use crate::args::MatrixArgs;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smtsched_model::{expand_workload_list, Placement};
use smtsched_report::matrix::{
    grid_csv, heatmap_svg, pairs_csv, render_grid, render_speedup_grid, render_summary, summarize,
};
use smtsched_uarch::Workload;
use std::io::IsTerminal;

pub fn run(a: MatrixArgs) -> Result<()> {
    let m = a.sim.machine.load()?;
    let placement: Placement = a
        .placement
        .parse()
        .map_err(|e: String| bad_input(format!("--placement: {e}")))?;
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
    let runs = profiles.len() * 2 + profiles.len() * (profiles.len() + 1) / 2;
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(runs as u64), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:40}] {pos}/{len} runs, {elapsed} elapsed, ~{eta} left",
        )?
        .progress_chars("=> "),
    );
    bar.set_message(format!("{} pairs on {}", runs - profiles.len() * 2, m.name));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.unwrap_or(0))
        .build()
        .context("cannot start worker threads")?;
    let started = std::time::Instant::now();
    let matrix = pool.install(|| {
        smtsched_uarch::protocol::matrix(&m, &refs, placement, &proto, &|| bar.inc(1))
    })?;
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();
    let summary = summarize(&matrix).ok_or_else(|| bad_input("no pairs"))?;
    if let Some(p) = &a.output {
        write_file(
            p,
            (serde_json::to_string_pretty(&matrix)? + "\n").as_bytes(),
        )?;
    }
    if let Some(p) = &a.csv {
        write_file(p, grid_csv(&matrix).as_bytes())?;
    }
    if let Some(p) = &a.pairs_csv {
        write_file(p, pairs_csv(&matrix).as_bytes())?;
    }
    if let Some(p) = &a.svg {
        let title = format!(
            "Performance ratio, {} on {} ({})",
            names.len(),
            m.name,
            placement
        );
        write_file(
            p,
            heatmap_svg(&matrix, &title)
                .map_err(anyhow::Error::msg)?
                .as_bytes(),
        )?;
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
