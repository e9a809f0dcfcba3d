//! `reproduce all [-o DIR]`: every experiment side by side, then one report (see [`report`]).
//! As a sweep: `--shard I/N -o FILE` runs every N-th experiment, `--merge FILES -o DIR` writes
//! the report from every shard, `--slurm` writes a script that does both on a Slurm cluster.

use super::super::kept::{inputs_fingerprint, progress_beside, Kept, KeptRun};
use super::super::output::{check_output_dir, make_output_dir};
use super::super::slurm::Submission;
use super::super::{check_outputs, out, write_files_then, Bars};
use super::report::{report, summary_table, write_report, Ran};
use super::run_options;
use crate::args::ReproduceArgs;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use smtsched_experiments::experiment::{load_experiment, Experiment, EXPERIMENTS};
use smtsched_experiments::progress::ShardRun;
use smtsched_experiments::run::{check, run_on_own_threads, Outcome, RunOptions};
use smtsched_experiments::shards::Shard;
use smtsched_experiments::suite::{merge, read_shard, Suite, SuiteShard, SUITE_PROGRESS_FORMAT};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

pub enum AllPlan {
    /// Run the experiments (all, or a shard of them).
    Run(RunAll),
    /// `--merge`: the shards' outcomes, read and merged, for the report.
    Merge {
        seed: u64,
        outcomes: Vec<Outcome>,
        dir: Option<PathBuf>,
    },
    /// `--slurm`: the submit script.
    Slurm(Submission),
}

pub struct RunAll {
    /// Every experiment of the suite, loaded (a bad name costs nothing).
    experiments: Vec<Experiment>,
    suite: Suite,
    options: RunOptions,
    /// A shard writes its outcomes to `output`; the whole suite writes its report there (a
    /// directory) if given.
    shard: Option<Shard>,
    output: Option<PathBuf>,
}

impl AllPlan {
    pub fn from_args(a: ReproduceArgs) -> Result<Self> {
        if !a.merge.is_empty() {
            return merged(a);
        }
        let names: Vec<String> = match &a.only {
            Some(list) => list.split(',').map(|n| n.trim().to_string()).collect(),
            None => EXPERIMENTS.iter().map(|p| p.name.to_string()).collect(),
        };
        if let Some((_, twice)) = smtsched_model::first_repeat(&names) {
            return Err(bad_input(format!(
                "--only: {twice} is named twice (its claims would count twice)"
            )));
        }
        let experiments = names
            .iter()
            .map(|n| load_experiment(n))
            .collect::<Result<Vec<_>, _>>()?;
        let loaded: Vec<&str> = experiments.iter().map(|e| e.name.as_str()).collect();
        if let Some((i, name)) = smtsched_model::first_repeat(&loaded) {
            return Err(bad_input(format!(
                "--only: {} is another experiment named {name} (a report tells them apart by name)",
                names[i]
            )));
        }
        let options = run_options(&a);
        // An override is for the experiments it changes; one that changes none is a mistake.
        let kinds: Vec<_> = experiments.iter().map(|e| e.kind).collect();
        if let Some(flag) = options
            .not_applying(kinds[0])
            .into_iter()
            .find(|f| kinds.iter().all(|&k| options.not_applying(k).contains(f)))
        {
            let mut spelled: Vec<String> = kinds.iter().map(|k| k.quoted()).collect();
            spelled.sort();
            spelled.dedup();
            return Err(bad_input(format!(
                "{flag} would change none of the experiments chosen (of kind {})",
                spelled.join(", ")
            )));
        }
        // Every experiment is checked before the first runs (or a script is written for them).
        for (e, name) in experiments.iter().zip(&names) {
            check(e, &options).with_context(|| name.clone())?;
        }
        // The experiments as loaded and the files they name: one edited since is another run.
        let suite = Suite::new(names, &options, inputs_fingerprint(&experiments)?);
        if a.slurm {
            return slurm(&a, &suite, &options).map(AllPlan::Slurm);
        }
        if a.json && a.output.is_none() {
            // What is printed is the claims' table; the JSON goes to the report's files.
            return Err(bad_input(
                "--json: with all, the JSON is the report's report.json; give -o DIR",
            ));
        }
        check_output(a.shard, a.output.as_deref())?;
        Ok(AllPlan::Run(RunAll {
            experiments,
            suite,
            options,
            shard: a.shard,
            output: a.output,
        }))
    }

    pub fn execute(self) -> Result<()> {
        match self {
            AllPlan::Run(r) => r.execute(),
            AllPlan::Merge {
                seed,
                outcomes,
                dir,
            } => finish(seed, &outcomes, Ran::InShards, dir.as_deref(), None),
            AllPlan::Slurm(s) => s.write(),
        }
    }
}

/// A shard writes one file (`-o FILE`, required); the whole suite a directory (made when the
/// report is written).
fn check_output(shard: Option<Shard>, output: Option<&Path>) -> Result<()> {
    match (shard, output) {
        (Some(_), None) => Err(bad_input("--shard needs -o FILE for its outcomes")),
        (Some(_), Some(f)) if f.is_dir() => Err(bad_input(format!(
            "-o {}: a directory; a shard writes one file",
            f.display()
        ))),
        (Some(_), Some(f)) => check_outputs([Some(f)]),
        (None, Some(d)) => {
            check_output_dir(d, "-o")?;
            // In a directory that exists, a report file may be in the way (a directory).
            let files = super::report::REPORT_FILES.map(|f| d.join(f));
            match d.is_dir() {
                true => check_outputs(files.iter().map(|f| Some(f.as_path()))),
                false => Ok(()),
            }
        }
        (None, None) => Ok(()),
    }
}

/// `--merge`: the shards' outcomes; the shards' options decide the results (the suite records
/// them), so the merge runs nothing.
fn merged(a: ReproduceArgs) -> Result<AllPlan> {
    let parts = a
        .merge
        .iter()
        .map(|f| Ok((f.display().to_string(), read_shard(f).map_err(bad_input)?)))
        .collect::<Result<Vec<_>>>()?;
    let (suite, outcomes) = merge(&parts).map_err(bad_input)?;
    if let Some(d) = &a.output {
        check_output_dir(d, "-o")?;
    }
    Ok(AllPlan::Merge {
        seed: suite.seed,
        outcomes,
        dir: a.output,
    })
}

/// `--slurm`: the shards and the merge run this executable with these options.
fn slurm(a: &ReproduceArgs, suite: &Suite, options: &RunOptions) -> Result<Submission> {
    let (shards, dir) = (
        a.shards.expect("clap requires it"),
        a.dir.as_deref().expect("clap requires it"),
    );
    let mut shard_args = vec!["reproduce".to_string(), "all".into()];
    shard_args.extend(forwarded(options));
    shard_args.extend(["--only".into(), suite.experiments.join(",")]);
    Submission::new(
        "smtsched-reproduce-all".into(),
        shards,
        (suite.experiments.len(), "experiments"),
        dir,
        &shard_args,
        &["reproduce", "all", "--merge"],
        "report",
        a.output.clone(),
    )
}

/// The options a shard must run with, as arguments (what it prints is not among them).
fn forwarded(o: &RunOptions) -> Vec<String> {
    o.flags()
        .into_iter()
        .filter(|(flag, _)| *flag != "--json")
        .flat_map(|(flag, value)| [flag.to_string(), value])
        .collect()
}

impl RunAll {
    fn execute(self) -> Result<()> {
        let shard = self.shard.unwrap_or(Shard { index: 1, count: 1 });
        let total = self.suite.shard_items(shard).len();
        let kept = self.kept(shard)?;
        let earlier = kept.as_ref().map_or_else(Vec::new, Kept::done);
        let mine: Vec<(usize, usize, Experiment)> = self
            .experiments
            .into_iter()
            .enumerate()
            .filter(|(i, _)| shard.takes(*i))
            // Numbered by place in the shard, so that a continued run numbers as the first did.
            .enumerate()
            .filter(|(_, (i, _))| !earlier.iter().any(|(j, _)| j == i))
            .map(|(n, (i, e))| (n, i, e))
            .collect();
        let started = std::time::Instant::now();
        let keep =
            |i: usize, o: &Outcome| kept.as_ref().map_or(Ok(()), |k| k.keep(&(i, o.clone())));
        let mut outcomes = run_side_by_side(mine, total, &self.options, &keep)?;
        // A run that continued an interrupted one did not run as one: it has no wall time.
        let ran = match earlier.len() {
            0 => Ran::Together(started.elapsed().as_secs_f64()),
            n => Ran::Continued { earlier: n },
        };
        outcomes.extend(earlier);
        outcomes.sort_by_key(|(i, _)| *i);
        match (self.shard, self.output) {
            (Some(s), Some(f)) => {
                let file = SuiteShard::new(self.suite, s, outcomes);
                let text = serde_json::to_string(&file)? + "\n";
                // Before printing: a closed pipe ends the program quietly.
                write_files_then(&[(&f, text)], || kept.map_or(Ok(()), Kept::remove))?;
                let done: Vec<Outcome> = file.outcomes.into_iter().map(|(_, o)| o).collect();
                out(&summary_table(&report(self.options.seed, &done, ran)))
            }
            (_, output) => {
                let done: Vec<Outcome> = outcomes.into_iter().map(|(_, o)| o).collect();
                finish(self.options.seed, &done, ran, output.as_deref(), kept)
            }
        }
    }

    /// A run writing its report (or a shard its file) keeps the experiments it finishes beside
    /// it, so that the same command, stopped, continues from there.
    fn kept(&self, shard: Shard) -> Result<Option<KeptExperiments>> {
        let at = match (self.shard, &self.output) {
            (None, Some(dir)) => Some((dir.join(PROGRESS_FILE), Some(dir.clone()))),
            (Some(_), Some(file)) => progress_beside(file).map(|p| (p, None)),
            (_, None) => None,
        };
        let Some((path, dir)) = at else {
            return Ok(None);
        };
        let places: Vec<usize> = self
            .suite
            .shard_items(shard)
            .iter()
            .map(|(i, _)| *i)
            .collect();
        let run = KeptRun {
            format: SUITE_PROGRESS_FORMAT,
            run: ShardRun {
                run: self.suite.clone(),
                shard: self.shard,
            },
            inputs: self.suite.inputs.clone(),
            places: &places,
            unit: "experiment(s)",
            output: self
                .output
                .as_deref()
                .expect("a journal is kept beside an output"),
        };
        Kept::open(path, run, dir).map(Some)
    }
}

/// The experiments a run (or a shard) of a suite has finished: (place in the suite, outcome).
type KeptExperiments = Kept<(usize, Outcome)>;

/// The progress file's name in the report directory.
const PROGRESS_FILE: &str = "reproduce-progress.json";

/// Experiments run side by side, as many as the host has cores: most have serial stretches
/// (one seed's scheduler run, a merge of samples) that another experiment's work fills. Each
/// runs on threads of its own, so that the CPU time it reports is its own (on one shared pool a
/// thread waiting for its experiment's parallel part runs another experiment's work, and the
/// first experiment's time would include it). Each experiment's result does not depend on what
/// runs beside it; they are kept in order, each with its index in the suite. After a failure no
/// further experiment starts.
fn run_side_by_side(
    mine: Vec<(usize, usize, Experiment)>,
    total: usize,
    options: &RunOptions,
    keep: &(dyn Fn(usize, &Outcome) -> Result<()> + Sync),
) -> Result<Vec<(usize, Outcome)>> {
    let multi = indicatif::MultiProgress::new();
    let threads = rayon::current_num_threads();
    let queue = Mutex::new(mine.into_iter());
    let failed = AtomicBool::new(false);
    let next = || {
        let job = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
        job.filter(|_| !failed.load(Ordering::SeqCst))
    };
    let results: Vec<Result<(usize, Outcome)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    while let Some((n, i, e)) = next() {
                        let bars = Bars::in_multi(&multi);
                        let place = format!("[{}/{total}]", n + 1);
                        let r = run_one(e, &place, options, &bars, threads)
                            .and_then(|o| keep(i, &o).map(|()| o));
                        failed.fetch_or(r.is_err(), Ordering::SeqCst);
                        done.push(r.map(|o| (i, o)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("an experiment's worker panicked"))
            .collect()
    });
    let mut outcomes = results.into_iter().collect::<Result<Vec<_>>>()?;
    outcomes.sort_by_key(|(i, _)| *i);
    Ok(outcomes)
}

/// One experiment on `threads` threads of its own, announced as `place` when it starts and ends.
fn run_one(
    e: Experiment,
    place: &str,
    options: &RunOptions,
    bars: &Bars,
    threads: usize,
) -> Result<Outcome> {
    bars.say(&format!("{place} {} ...", e.name));
    let o = run_on_own_threads(e, options, bars, threads)?;
    let cpu = o
        .cpu_seconds
        .map_or(String::new(), |c| format!(" ({c:.1} CPU s)"));
    bars.say(&format!(
        "{place} {}: {} claim(s), {:.1} s{cpu}",
        o.name,
        o.claims.len(),
        o.seconds
    ));
    Ok(o)
}

/// The report of `outcomes` (run as `ran` says): written into `dir` if given (then what was
/// `kept` for it goes), and its summary printed.
fn finish(
    seed: u64,
    outcomes: &[Outcome],
    ran: Ran,
    dir: Option<&Path>,
    kept: Option<KeptExperiments>,
) -> Result<()> {
    let r = report(seed, outcomes, ran);
    // Before printing: a closed pipe ends the program quietly.
    let remove = || kept.map_or(Ok(()), Kept::remove);
    match dir {
        Some(d) => {
            make_output_dir(d, "-o")?;
            write_report(d, &r, outcomes, remove)?;
        }
        None => remove()?,
    }
    out(&summary_table(&r))
}
