//! `sweep`: run a sweep file's jobs (all, or one shard), merge shards, or write a Slurm
//! submission; the work is in `smtsched_experiments`.

use super::{counting_bar, out, write_file};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use smtsched_experiments::slurm::{submit_script, SlurmPlan};
use smtsched_experiments::sweep::{load_sweep, merge, read_results, render, Shard, SweepResults};
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
        /// Write the results (JSON) here.
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
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Write a shell script that submits the sweep to Slurm: a job array of shards and a merge
    /// job that runs after all of them succeed.
    ///
    /// Example: smtsched sweep slurm l2.toml --shards 16 --dir /scratch/l2 -o submit.sh
    Slurm {
        file: PathBuf,
        /// Array tasks (shards).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        shards: u32,
        /// Directory for shard files, logs and results.json (made if absent).
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// Write the script here (default: standard output).
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

pub fn run(a: SweepArgs) -> Result<()> {
    match a.action {
        SweepAction::Run {
            file,
            shard,
            output,
            threads,
        } => {
            let sweep = load_sweep(&file)?;
            super::check_outputs([output.as_deref()])?;
            let total = sweep.jobs_total();
            let mine = match shard {
                Some(s) => s.size(total),
                None => total,
            };
            let bar = counting_bar(mine as u64, "jobs")?;
            bar.set_message(sweep.id.name.clone());
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads.map_or(0, usize::from))
                .build()
                .context("cannot start worker threads")?;
            let r = pool.install(|| sweep.run(shard, &|| bar.inc(1)))?;
            bar.finish_and_clear();
            finish(&r, output.as_deref())
        }
        SweepAction::Merge { files, output } => {
            let parts = files
                .iter()
                .map(|f| Ok((f.display().to_string(), read_results(f)?)))
                .collect::<Result<Vec<_>>>()?;
            let r = merge(&parts)?;
            finish(&r, output.as_deref())
        }
        SweepAction::Slurm {
            file,
            shards,
            dir,
            output,
        } => {
            let sweep = load_sweep(&file)?;
            let exe = executable()?;
            let script = submit_script(&SlurmPlan {
                name: &sweep.id.name,
                shards,
                dir: &absolute(&dir)?,
                shard_command: &[
                    exe.clone(),
                    "sweep".into(),
                    "run".into(),
                    text(&absolute(&file)?),
                ],
                merge_command: &[exe, "sweep".into(), "merge".into()],
                merge_output: "results.json",
            });
            write_script(&script, output.as_deref())
        }
    }
}

/// `p` made absolute (Slurm jobs run from their own working directory).
pub fn absolute(p: &Path) -> Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

fn text(p: &Path) -> String {
    p.display().to_string()
}

/// This executable's absolute path, for job scripts.
pub fn executable() -> Result<String> {
    Ok(text(
        &std::env::current_exe().context("finding this executable")?,
    ))
}

/// Writes a submit script (executable) to `output`, or prints it.
pub fn write_script(script: &str, output: Option<&Path>) -> Result<()> {
    match output {
        Some(p) => {
            write_file(p, script.as_bytes())?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("making {} executable", p.display()))?;
            Ok(())
        }
        None => out(script),
    }
}

/// Writes the results file (if asked) and prints the table.
fn finish(r: &SweepResults, output: Option<&Path>) -> Result<()> {
    if let Some(p) = output {
        write_file(p, (serde_json::to_string_pretty(r)? + "\n").as_bytes())?;
    }
    out(&render(r))
}
