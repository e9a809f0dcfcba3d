//! Training windows from the simulator, by the thesis's protocol (§3.4): every ordered pair of
//! distinct workloads on the two sibling threads of one core, `runs` runs per pair with the
//! background at another seed and offset each time, the subject's counters sampled every
//! `sample_cycles` and its measured instructions cut into `windows` windows against a solo run of
//! the very same instruction stream.

use crate::error::EstimateError;
use crate::windows::{cut_windows, events_of_counters, label, Series, WindowRecord};
use rayon::prelude::*;
use smtsched_model::{CacheContents, MachineModel, Placement};
use smtsched_uarch::protocol::placement_cpus;
use smtsched_uarch::{RunOptions, Simulation, ThreadPlan, ThreadResult, Window, Workload};

/// The training workloads of the thesis (§3.4): four integer, four floating point.
pub const THESIS_TRAIN: &[&str] = &[
    "gzip-like",
    "mcf-like",
    "crafty-like",
    "vortex-like",
    "swim-like",
    "mesa-like",
    "art-like",
    "sixtrack-like",
];

/// The workloads the thesis held out to test the model (§3.4.1, Fig. 3.18).
pub const THESIS_HELDOUT: &[&str] = &["vpr-like", "eon-like", "wupwise-like", "equake-like"];

/// How the windows are made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowProtocol {
    pub seed: u64,
    /// Instructions the subject runs before its first window (both threads warm the caches).
    pub warmup_instructions: u64,
    /// Instructions the windows cover.
    pub measure_instructions: u64,
    /// Windows per run (the thesis: 100).
    pub windows: u32,
    /// Runs per ordered pair (the thesis: 3).
    pub runs: u32,
    /// Counter sampling interval in cycles.
    pub sample_cycles: f64,
}

impl WindowProtocol {
    pub fn check(&self) -> Result<(), EstimateError> {
        let bad = |m: String| Err(EstimateError::Invalid(m));
        if self.windows == 0 {
            return bad("--windows 0: at least one window per run is needed".into());
        }
        if self.runs == 0 {
            return bad("--runs 0: at least one run per pair is needed".into());
        }
        if self.measure_instructions < self.windows as u64 {
            return bad(format!(
                "--instructions {}: fewer than one instruction per window ({} windows)",
                self.measure_instructions, self.windows
            ));
        }
        if !(self.sample_cycles >= 1.0 && self.sample_cycles.is_finite()) {
            return bad(format!(
                "--sample-cycles {}: must be at least 1",
                self.sample_cycles
            ));
        }
        Ok(())
    }
}

/// The simulator runs the protocol needs for `n` workloads (for a progress bar).
pub fn run_count(n: usize, runs: u32) -> usize {
    n + n * n.saturating_sub(1) * runs as usize
}

/// One pair's run: which workloads, which run.
#[derive(Clone, Copy, Debug)]
struct Job {
    subject: usize,
    background: usize,
    run: u32,
}

fn series_of(t: &ThreadResult, llc_level: u8) -> Series {
    // A thread alone on its hardware context from the start runs all the time, so its own
    // cycle count is the time of the sample, to the instruction.
    let mut s = Series::default();
    if t.samples.first().is_none_or(|x| x.counters.cycles > 0.0) {
        s.push(0.0, [0.0; crate::windows::NE]);
    }
    for x in &t.samples {
        let c = x.counters.cycles;
        if s.cycles.last().is_some_and(|&last| c <= last) {
            continue;
        }
        s.push(c, events_of_counters(&x.counters, llc_level));
    }
    s
}

/// Every window of every run of every ordered pair of distinct `workloads`, in the order
/// (subject, background, run, window). Runs spread over rayon's threads; the result does not
/// depend on how many. `progress` is called once per finished simulator run.
pub fn simulate_windows(
    machine: &MachineModel,
    workloads: &[&dyn Workload],
    proto: &WindowProtocol,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<WindowRecord>, EstimateError> {
    proto.check()?;
    if workloads.len() < 2 {
        return Err(EstimateError::Empty(format!(
            "{} workload(s): pairs need at least two",
            workloads.len()
        )));
    }
    let cpus = placement_cpus(machine, Placement::Siblings)?;
    let llc_level = machine
        .cache_path(CacheContents::Data)
        .last()
        .map_or(1, |(_, c)| c.level);
    // One window past the measured ones, so the samples reach past the last boundary.
    let margin = (proto.measure_instructions / proto.windows as u64).max(1);
    let options = RunOptions {
        window: Window::Instructions,
        quantum_cycles: u64::MAX / 4,
        sample_cycles: Some(proto.sample_cycles),
    };
    let subject_plan = |w: &dyn Workload, cpu: u32| ThreadPlan {
        // The same stream alone and in every co-run: windows compare the same instructions.
        source: w.stream(proto.seed, 0),
        cpu,
        data_space: 1,
        code_space: 1,
        warmup_instructions: proto.warmup_instructions,
        measure_instructions: proto.measure_instructions + margin,
    };
    let solos: Vec<Series> = (0..workloads.len())
        .into_par_iter()
        .map(|i| {
            let r = Simulation::new(machine, vec![subject_plan(workloads[i], cpus[0])], options)
                .map_err(smtsched_uarch::ProtocolError::from)?
                .run();
            progress();
            Ok(series_of(&r.threads[0], llc_level))
        })
        .collect::<Result<_, EstimateError>>()?;
    let jobs: Vec<Job> = (0..workloads.len())
        .flat_map(|s| {
            (0..workloads.len())
                .filter(move |&b| b != s)
                .flat_map(move |b| {
                    (0..proto.runs).map(move |run| Job {
                        subject: s,
                        background: b,
                        run,
                    })
                })
        })
        .collect();
    let start = proto.warmup_instructions as f64;
    let end = start + proto.measure_instructions as f64;
    let per_job: Vec<Vec<WindowRecord>> = jobs
        .par_iter()
        .map(|j| {
            let (s, b) = (workloads[j.subject], workloads[j.background]);
            let same_program = s.program() == b.program();
            let back_plan = ThreadPlan {
                // Copy 1 + run: its own seed and, for a profile with phases, its own start in
                // the phase cycle — the thesis's background looping out of phase with the
                // subject.
                source: b.stream(proto.seed, 1 + j.run),
                cpu: cpus[1],
                data_space: 2,
                code_space: if same_program { 1 } else { 2 },
                warmup_instructions: 0,
                measure_instructions: 1,
            };
            let r = Simulation::new(machine, vec![subject_plan(s, cpus[0]), back_plan], options)
                .map_err(smtsched_uarch::ProtocolError::from)?
                .run();
            progress();
            let subj = series_of(&r.threads[0], llc_level);
            let back = series_of(&r.threads[1], llc_level);
            let values = cut_windows(&solos[j.subject], &subj, &back, start, end, proto.windows)
                .map_err(|e| {
                    EstimateError::Internal(format!(
                        "{} with {}, run {}: {e} (lower --sample-cycles)",
                        s.name(),
                        b.name(),
                        j.run
                    ))
                })?;
            Ok(label(values, s.name(), b.name(), j.run))
        })
        .collect::<Result<_, EstimateError>>()?;
    Ok(per_job.into_iter().flatten().collect())
}
