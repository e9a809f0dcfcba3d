//! `train windows`: training windows, simulated on sibling threads or cut from counters sampled
//! on a real machine.

use super::super::plan::Plan;
use super::super::{check_outputs, counting_bar, out, refs, workloads, write_file};
use crate::args::MachineArgs;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use clap::Args;
use smtsched_estimate::samples::{parse_samples, windows_from_samples, SampleFile};
use smtsched_estimate::simulate::{
    run_count, simulate_windows, WindowProtocol, THESIS_HELDOUT, THESIS_TRAIN,
};
use smtsched_estimate::windows::to_csv;
use smtsched_estimate::{EstimateError, WindowSet};
use smtsched_model::{expand_workload_list, MachineModel};
use smtsched_report::Summary;
use smtsched_uarch::Workload;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct WindowsArgs {
    /// Workloads, comma-separated presets or files (`all` = the 22 SPEC stand-ins); or
    /// `thesis-train` (gzip, mcf, crafty, vortex, swim, mesa, art, sixtrack) or
    /// `thesis-heldout` (vpr, eon, wupwise, equake).
    #[arg(long, short = 'w', default_value = "thesis-train")]
    pub workloads: String,
    #[command(flatten)]
    pub machine: MachineArgs,
    /// Seed from which every instruction stream derives.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Instructions of each subject run that are cut into windows. The thesis's windows were 1% of
    /// a whole benchmark run, long enough to average out transients; longer runs here mean
    /// quieter windows (see README) at proportionally more simulation time.
    #[arg(long, default_value_t = 4_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub instructions: u64,
    /// Instructions the subject runs (beside its background) before the first window.
    #[arg(long, default_value_t = 1_000_000)]
    pub warmup: u64,
    /// Windows per run (the thesis: 100).
    #[arg(long, default_value_t = 100)]
    pub windows: u32,
    /// Runs per ordered pair, each with the background at another seed and offset (the thesis: 3).
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Counter sampling interval in cycles (the thesis sampled every ~100 ms).
    #[arg(long, default_value_t = 2000.0)]
    pub sample_cycles: f64,
    /// Cut windows from counters sampled on a real machine instead (a CSV: subject,background,
    /// run,thread,cycles,instructions,… cumulative; see README); --windows applies.
    #[arg(long, value_name = "FILE")]
    pub samples: Option<PathBuf>,
    /// Write the windows CSV here (default: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Host threads to use, at most 1024 (default: all cores). The result does not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

/// Where the windows come from.
enum Source {
    /// Counters sampled on a real machine, read from `file`, cut into this many windows a run.
    Samples {
        file: String,
        samples: SampleFile,
        windows: u32,
    },
    /// Every ordered pair of `workloads` simulated on `machine`.
    Simulated {
        machine: Box<MachineModel>,
        names: Vec<String>,
        workloads: Vec<Box<dyn Workload>>,
        protocol: WindowProtocol,
        /// Host threads (0: all cores).
        threads: usize,
    },
}

pub struct WindowsPlan {
    source: Source,
    output: Option<PathBuf>,
}

impl Plan for WindowsPlan {
    type Args = WindowsArgs;

    fn from_args(a: WindowsArgs) -> Result<Self> {
        check_outputs([a.output.as_deref()])?;
        let source = match &a.samples {
            Some(path) => {
                super::super::output::note_inputs([path.as_path()])?;
                sampled(path, a.windows)?
            }
            None => simulated(&a)?,
        };
        Ok(WindowsPlan {
            source,
            output: a.output,
        })
    }

    fn execute(self) -> Result<()> {
        let started = std::time::Instant::now();
        let set = self.source.windows()?;
        let elapsed = started.elapsed().as_secs_f64();
        let csv = to_csv(&set);
        let Some(path) = &self.output else {
            return out(&csv);
        };
        write_file(path, csv.as_bytes())?;
        let prs: Vec<f64> = set.rows.iter().map(|r| r.pr).collect();
        let s = Summary::of(&prs).ok_or_else(|| bad_input("no windows"))?;
        out(&format!(
            "{} windows of {} subjects written to {} in {:.1} s\nwindow PR: mean {:.3}, sd {:.3}, min {:.3}, quartiles {:.3} {:.3} {:.3}, max {:.3}\n",
            set.rows.len(),
            set.subjects().len(),
            path.display(),
            elapsed,
            s.mean,
            s.sd,
            s.min,
            s.q1,
            s.median,
            s.q3,
            s.max
        ))
    }
}

fn sampled(path: &std::path::Path, windows: u32) -> Result<Source> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| EstimateError::Read {
        file: file.clone(),
        source,
    })?;
    if windows == 0 {
        return Err(bad_input(
            "--windows 0: at least one window per run is needed",
        ));
    }
    Ok(Source::Samples {
        samples: parse_samples(&text, &file)?,
        file,
        windows,
    })
}

fn simulated(a: &WindowsArgs) -> Result<Source> {
    let machine = a.machine.load()?;
    let names = workload_names(&a.workloads);
    if names.len() < 2 {
        return Err(bad_input(format!(
            "--workloads {:?}: pairs need at least two workloads",
            a.workloads
        )));
    }
    // Pairs are of distinct workloads, each ordered pair once: a name given twice would repeat
    // every window of its pairs.
    if let Some((_, twice)) = smtsched_model::first_repeat(&names) {
        return Err(bad_input(format!(
            "--workloads {:?}: {twice} is named twice",
            a.workloads
        )));
    }
    let workloads = workloads(&names)?;
    let protocol = WindowProtocol {
        seed: a.seed,
        warmup_instructions: a.warmup,
        measure_instructions: a.instructions,
        windows: a.windows,
        runs: a.runs,
        sample_cycles: a.sample_cycles,
    };
    protocol.check()?;
    Ok(Source::Simulated {
        machine: Box::new(machine),
        names,
        workloads,
        protocol,
        threads: a.threads.map_or(0, usize::from),
    })
}

/// `--workloads`: presets, files, `all`, `thesis-train` and `thesis-heldout`.
fn workload_names(spec: &str) -> Vec<String> {
    let mut names = Vec::new();
    for item in spec.split(',').map(str::trim) {
        match item {
            "thesis-train" => names.extend(THESIS_TRAIN.iter().map(|s| s.to_string())),
            "thesis-heldout" => names.extend(THESIS_HELDOUT.iter().map(|s| s.to_string())),
            other => names.extend(expand_workload_list(other)),
        }
    }
    names
}

impl Source {
    fn windows(&self) -> Result<WindowSet> {
        match self {
            Source::Samples {
                file,
                samples,
                windows,
            } => Ok(WindowSet {
                meta: vec![
                    ("source".into(), format!("measured samples {file}")),
                    ("windows_per_run".into(), windows.to_string()),
                ],
                rows: windows_from_samples(samples, file, *windows)?,
            }),
            Source::Simulated {
                machine: m,
                names,
                workloads,
                protocol: p,
                threads,
            } => {
                let bar = counting_bar(run_count(workloads.len(), p.runs) as u64, "runs")?;
                bar.set_message(format!("windows on {}", m.name));
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(*threads)
                    .build()
                    .context("cannot start worker threads")?;
                let rows =
                    pool.install(|| simulate_windows(m, &refs(workloads), p, &|| bar.inc()))?;
                bar.finish_and_clear();
                Ok(WindowSet {
                    meta: simulated_meta(m, names, p),
                    rows,
                })
            }
        }
    }
}

/// How simulated windows were made, for the CSV's header.
fn simulated_meta(m: &MachineModel, names: &[String], p: &WindowProtocol) -> Vec<(String, String)> {
    vec![
        ("source".into(), "simulated".into()),
        ("machine".into(), m.name.clone()),
        ("workloads".into(), names.join(" ")),
        ("seed".into(), p.seed.to_string()),
        (
            "warmup_instructions".into(),
            p.warmup_instructions.to_string(),
        ),
        (
            "measure_instructions".into(),
            p.measure_instructions.to_string(),
        ),
        ("windows_per_run".into(), p.windows.to_string()),
        ("runs".into(), p.runs.to_string()),
        ("sample_cycles".into(), p.sample_cycles.to_string()),
    ]
}
