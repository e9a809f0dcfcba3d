//! `sweep`: run a sweep file's jobs (all, or one shard), merge shards, or write a Slurm
//! submission; the work is in `smtsched_experiments`.

use super::kept::{inputs_fingerprint, progress_beside, Kept, KeptRun};
use super::plan::Plan;
use super::slurm::{absolute, Submission};
use super::{check_inputs_kept, check_outputs, counting_bar, out, write_files_then};
use crate::errors::bad_input;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use smtsched_experiments::sweep::{
    load_sweep, merge, read_results, render, JobResult, Shard, Sweep, SweepResults, SweepRun,
    SWEEP_PROGRESS_FORMAT,
};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub action: SweepAction,
}

#[derive(Subcommand, Debug)]
pub enum SweepAction {
    /// Run a sweep's jobs, or one shard of them, and print or write the results.
    ///
    /// Example: smtsched sweep run l2.toml --shard 1/4 -o shard-1.json
    Run {
        /// The sweep file (TOML: name, kind, machines, sets, workloads, placements or policies,
        /// seeds).
        file: PathBuf,
        /// Run shard I of N (jobs I-1, I-1+N, …) and write a shard file for `sweep merge`.
        #[arg(long, value_name = "I/N")]
        shard: Option<Shard>,
        /// Write the results (JSON) here; finished jobs are kept in FILE.progress until then,
        /// and the same command, stopped, continues from them.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Worker threads (default: every host core).
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
        threads: Option<u16>,
    },
    /// Merge every shard's file into the results an unsharded run gives.
    ///
    /// Example: smtsched sweep merge shard-*.json -o results.json
    Merge {
        /// The shard files `sweep run --shard I/N -o FILE` wrote, every shard of one sweep once.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Write the merged results (JSON, as an unsharded `sweep run -o` writes) here.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Write a shell script that submits the sweep to Slurm: a job array of shards and a merge
    /// job that runs after all of them succeed.
    ///
    /// Example: smtsched sweep slurm l2.toml --shards 16 --dir /scratch/l2 -o submit.sh
    Slurm {
        /// The sweep file (as for `sweep run`).
        file: PathBuf,
        /// Array tasks (shards).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        shards: u32,
        /// Directory for shard files, logs and results.json (made if absent).
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// Write the script here (default: standard output).
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

pub enum SweepPlan {
    /// Run a sweep's jobs (all, or one shard).
    Run {
        sweep: Box<Sweep>,
        shard: Option<Shard>,
        output: Option<PathBuf>,
        /// Worker threads (0: every core).
        threads: usize,
    },
    /// Merge shards' results, read and checked.
    Merge {
        results: SweepResults,
        output: Option<PathBuf>,
    },
    /// Write the Slurm submit script.
    Slurm(Submission),
}

impl Plan for SweepPlan {
    type Args = SweepArgs;

    fn from_args(a: SweepArgs) -> Result<Self> {
        Ok(match a.action {
            SweepAction::Run {
                file,
                shard,
                output,
                threads,
            } => {
                let sweep = Box::new(load_sweep(&file)?);
                if shard.is_some() && output.is_none() {
                    // A shard's results are only of use to `sweep merge`.
                    return Err(bad_input("--shard needs -o FILE for the shard's results"));
                }
                check_outputs([output.as_deref()])?;
                check_inputs_kept(&inputs_of(&file, &sweep), [output.as_deref()])?;
                SweepPlan::Run {
                    sweep,
                    shard,
                    output,
                    threads: threads.map_or(0, usize::from),
                }
            }
            SweepAction::Merge { files, output } => {
                let parts = files
                    .iter()
                    .map(|f| Ok((f.display().to_string(), read_results(f)?)))
                    .collect::<Result<Vec<_>>>()?;
                let results = merge(&parts)?;
                check_outputs([output.as_deref()])?;
                let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
                check_inputs_kept(&inputs, [output.as_deref()])?;
                SweepPlan::Merge { results, output }
            }
            SweepAction::Slurm {
                file,
                shards,
                dir,
                output,
            } => {
                let sweep = load_sweep(&file)?;
                check_inputs_kept(&inputs_of(&file, &sweep), [output.as_deref()])?;
                let file = absolute(&file)?.display().to_string();
                SweepPlan::Slurm(Submission::new(
                    sweep.id.name.clone(),
                    shards,
                    (sweep.jobs_total(), "jobs"),
                    &dir,
                    &["sweep".into(), "run".into(), file],
                    &["sweep", "merge"],
                    "results.json",
                    output,
                )?)
            }
        })
    }

    fn execute(self) -> Result<()> {
        match self {
            SweepPlan::Run {
                sweep,
                shard,
                output,
                threads,
            } => {
                let places = sweep.places(shard);
                let mine = places.len();
                let kept = kept_beside(&sweep, shard, output.as_deref(), &places)?;
                let done = kept.as_ref().map_or_else(Vec::new, Kept::done);
                let bar = counting_bar(mine as u64, "jobs")?;
                bar.set_message(sweep.id.name.clone());
                bar.inc_quietly(done.len() as u64);
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .context("cannot start worker threads")?;
                let finished = |j: &JobResult| {
                    bar.inc();
                    kept.as_ref()
                        .map_or(Ok(()), |k| k.keep(j))
                        .map_err(|e| format!("{e:#}"))
                };
                let r = pool.install(|| sweep.run(shard, done, &finished))?;
                bar.finish_and_clear();
                finish(&r, output.as_deref(), kept)
            }
            SweepPlan::Merge { results, output } => finish(&results, output.as_deref(), None),
            SweepPlan::Slurm(s) => s.write(),
        }
    }
}

/// The sweep file and every file it loaded.
fn inputs_of<'a>(file: &'a Path, sweep: &'a Sweep) -> Vec<&'a Path> {
    [vec![file], sweep.files()].concat()
}

/// A run writing its results to a file (not a FIFO or device) keeps its finished jobs beside it,
/// in `FILE.progress`, so that the same command, stopped, continues from them (a Slurm shard
/// requeued too).
fn kept_beside(
    sweep: &Sweep,
    shard: Option<Shard>,
    output: Option<&Path>,
    places: &[usize],
) -> Result<Option<Kept<JobResult>>> {
    let Some((output, path)) = output.and_then(|o| Some((o, progress_beside(o)?))) else {
        return Ok(None);
    };
    let run = KeptRun {
        format: SWEEP_PROGRESS_FORMAT,
        run: SweepRun {
            run: sweep.id.clone(),
            shard,
        },
        // Any file the sweep file names (a trace); the loaded machines and workloads are in
        // the sweep's id.
        inputs: inputs_fingerprint(&sweep.spec)?,
        places,
        unit: "job(s)",
        output,
    };
    Kept::open(path, run, None).map(Some)
}

/// Writes the results file (if asked), lets go of what was kept for it, and prints the table.
fn finish(r: &SweepResults, output: Option<&Path>, kept: Option<Kept<JobResult>>) -> Result<()> {
    let remove = || kept.map_or(Ok(()), Kept::remove);
    match output {
        Some(p) => {
            let text = serde_json::to_string_pretty(r)? + "\n";
            write_files_then(&[(p, text)], remove)?;
        }
        None => remove()?,
    }
    // Before printing: a closed pipe ends the program quietly, and the results are in place.
    out(&render(r))
}
