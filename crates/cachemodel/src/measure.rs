//! Running groups of threads on the microarchitectural simulator over one window of simulated
//! time (so a slow thread does not stretch the run), and what the counters say about them.

use serde::Serialize;
use smtsched_model::MachineModel;
use smtsched_uarch::{
    PlanError, RunOptions, Simulation, ThreadCounters, ThreadPlan, Window, Workload,
};

use crate::error::CacheModelError;

/// A thread to run: copy `copy` of `workload` (copies have their own streams and data) on
/// logical CPU `cpu`.
#[derive(Clone, Copy)]
pub struct Placed<'a> {
    pub workload: &'a dyn Workload,
    pub copy: u32,
    pub cpu: u32,
}

/// The window of simulated time a group is measured over.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CycleWindow {
    pub warmup_cycles: u64,
    pub measure_cycles: u64,
}

/// Counters of every thread over one window.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Measured {
    pub threads: Vec<ThreadCounters>,
    pub cycles: f64,
}

impl Measured {
    fn total(&self) -> ThreadCounters {
        self.threads
            .iter()
            .fold(ThreadCounters::default(), |a, &b| a + b)
    }

    /// Instructions per cycle of the whole machine.
    pub fn ipc(&self) -> f64 {
        self.total().instructions as f64 / self.cycles.max(1.0)
    }

    /// L2 misses per L2 access (what a counter reports).
    pub fn l2_miss_ratio(&self) -> f64 {
        self.total().l2_miss_ratio()
    }

    /// L2 misses per data reference (what the reuse-distance model predicts).
    pub fn l2_misses_per_reference(&self) -> f64 {
        let t = self.total();
        ratio(t.l2_misses, t.loads + t.stores)
    }

    pub fn l1d_miss_ratio(&self) -> f64 {
        self.total().l1d_miss_ratio()
    }

    pub fn thread_ipc(&self, i: usize) -> f64 {
        self.threads[i].instructions as f64 / self.cycles.max(1.0)
    }

    /// These counters, for a miss ratio: refused where `window` held no memory reference, as
    /// every ratio would be 0 of 0, not a measurement. (IPC alone needs none: a compute-only
    /// workload is measured as it is.)
    pub fn for_miss_ratios(self, window: CycleWindow) -> Result<Measured, CacheModelError> {
        let t = self.total();
        if t.loads + t.stores > 0 {
            return Ok(self);
        }
        Err(CacheModelError::BadInput(format!(
            "measure_cycles = {}: the window holds no memory reference, so no miss ratio can be \
             measured; give a longer window",
            window.measure_cycles
        )))
    }
}

pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Runs `threads` together and measures them over `window`. Copies of one program share code,
/// as processes of one binary share text pages; every thread has its own data.
pub fn run_group(
    machine: &MachineModel,
    threads: &[Placed<'_>],
    seed: u64,
    window: CycleWindow,
) -> Result<Measured, PlanError> {
    let mut programs: Vec<&str> = Vec::new();
    let plans = threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let code = match programs.iter().position(|p| *p == t.workload.program()) {
                Some(k) => k,
                None => {
                    programs.push(t.workload.program());
                    programs.len() - 1
                }
            };
            ThreadPlan {
                source: t.workload.stream(seed, t.copy),
                cpu: t.cpu,
                data_space: i as u32 + 1,
                code_space: code as u32 + 1,
                warmup_instructions: 0,
                measure_instructions: 0,
            }
        })
        .collect();
    let start = window.warmup_cycles as f64;
    let end = start + window.measure_cycles as f64;
    let options = RunOptions::new(Window::Cycles { start, end }, u64::MAX / 4);
    let r = Simulation::new(machine, plans, options)?.run();
    Ok(Measured {
        threads: r.threads.iter().map(|t| t.window).collect(),
        cycles: end - start,
    })
}
