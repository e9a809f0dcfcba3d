//! How fast the simulator runs on this host: simulated instructions per second of a co-run on
//! one host thread, and how a small matrix scales over host threads (with the same result).

use rayon::ThreadPoolBuildError;
use serde::Serialize;
use smtsched_model::{load_workload, MachineModel, ModelError, Placement, SPEC2000};
use smtsched_uarch::protocol::{default_cpus, matrix, quantum_cycles, run_together};
use smtsched_uarch::{Protocol, ProtocolError, Window, Workload};

/// Time slice when a machine has fewer logical CPUs than the bench has workloads.
const TIMESHARE_QUANTUM_MS: f64 = 10.0;
/// The scaling matrix: the first SPEC stand-ins, short windows.
const SCALING_WORKLOADS: usize = 8;
const SCALING_WARMUP: u64 = 250_000;
const SCALING_MEASURE: u64 = 500_000;
/// The scaling matrix's time slice where it must time-share (short: a pair takes four).
const SCALING_QUANTUM_MS: f64 = 1.0;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    #[error("cannot start worker threads: {0}")]
    Threads(#[from] ThreadPoolBuildError),
    #[error("cannot compare the results: {0}")]
    Json(#[from] serde_json::Error),
}

impl BenchError {
    /// Whether the user's input is at fault (the CLI exits 2), not the program.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, BenchError::Model(_) | BenchError::Protocol(_))
    }
}

/// The best of a co-run's repetitions.
#[derive(Clone, Debug, Serialize)]
pub struct SpeedRun {
    pub machine: String,
    pub workloads: Vec<String>,
    /// Where the threads ran: alone, siblings of one core, one per CPU, or time-shared.
    pub placement: String,
    pub instructions_simulated: u64,
    pub seconds: f64,
    pub instructions_per_second: f64,
}

/// A small matrix timed on one host thread and on all of them.
#[derive(Clone, Debug, Serialize)]
pub struct Scaling {
    pub machine: String,
    pub workloads: usize,
    pub runs: usize,
    pub host_threads: usize,
    pub seconds_one_thread: f64,
    pub seconds_all_threads: f64,
    pub speedup: f64,
    pub identical_results: bool,
}

/// `workloads` (named `names`) co-running on `m` (see [`default_cpus`]), `instructions` in each
/// window after half as many of warm-up, timed `repeat` times on the calling thread; the fastest
/// is kept.
pub fn speed(
    m: &MachineModel,
    names: &[String],
    workloads: &[&dyn Workload],
    instructions: u64,
    repeat: u32,
) -> Result<SpeedRun, BenchError> {
    let (cpus, placement) = default_cpus(m, workloads.len())?;
    let threads: Vec<(&dyn Workload, u32)> = workloads.iter().copied().zip(cpus).collect();
    let proto = Protocol {
        seed: 1,
        warmup_instructions: instructions / 2,
        measure_instructions: instructions,
        quantum_cycles: quantum_cycles(TIMESHARE_QUANTUM_MS, m),
        timeshare_rounds: 1,
        refill_only: false,
    };
    let mut best: Option<(f64, u64, f64)> = None;
    for _ in 0..repeat.max(1) {
        let t = std::time::Instant::now();
        let r = run_together(m, &threads, &proto, Window::Instructions)?;
        let secs = t.elapsed().as_secs_f64();
        let rate = r.instructions_simulated as f64 / secs;
        if best.is_none_or(|b| rate > b.0) {
            best = Some((rate, r.instructions_simulated, secs));
        }
    }
    let (rate, n, secs) = best.expect("at least one repetition");
    Ok(SpeedRun {
        machine: m.name.clone(),
        workloads: names.to_vec(),
        placement: placement.into(),
        instructions_simulated: n,
        seconds: secs,
        instructions_per_second: rate,
    })
}

/// A small sibling matrix on one host thread and on all of them (separate cores where the cores
/// have one thread; time-shared, in short quanta, on a machine of one CPU).
pub fn scaling(m: &MachineModel) -> Result<Scaling, BenchError> {
    let (placement, quantum_cycles) = if m.topology.threads_per_core >= 2 {
        (Placement::Siblings, 1 << 40)
    } else if m.cores() >= 2 {
        (Placement::Cores, 1 << 40)
    } else {
        (Placement::Timeshare, quantum_cycles(SCALING_QUANTUM_MS, m))
    };
    let profiles = SPEC2000[..SCALING_WORKLOADS]
        .iter()
        .map(|n| load_workload(n, &[]))
        .collect::<Result<Vec<_>, _>>()?;
    let refs: Vec<&dyn Workload> = profiles.iter().map(|p| p as &dyn Workload).collect();
    let proto = Protocol {
        seed: 1,
        warmup_instructions: SCALING_WARMUP,
        measure_instructions: SCALING_MEASURE,
        quantum_cycles,
        timeshare_rounds: 1,
        refill_only: false,
    };
    let host_threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut timed = Vec::new();
    for threads in [1, host_threads] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        let t = std::time::Instant::now();
        let result = pool.install(|| matrix(m, &refs, placement, &proto, &|| {}))?;
        timed.push((t.elapsed().as_secs_f64(), serde_json::to_value(&result)?));
    }
    let n = SCALING_WORKLOADS;
    Ok(Scaling {
        machine: m.name.clone(),
        workloads: n,
        runs: 2 * n + n * (n + 1) / 2,
        host_threads,
        seconds_one_thread: timed[0].0,
        seconds_all_threads: timed[1].0,
        speedup: timed[0].0 / timed[1].0,
        identical_results: timed[0].1 == timed[1].1,
    })
}
