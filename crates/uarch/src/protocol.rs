//! The co-run measurement protocol of the thesis §3.3.1, in simulation: solo baselines, pairs on
//! sibling threads, separate cores or one time-shared CPU, and the pairwise PR matrix.

use crate::engine::{
    PlanError, RunOptions, RunResult, Simulation, ThreadPlan, ThreadResult, Window,
};
use crate::refill::{Rates, CHECK_CYCLES};
use crate::workload::Workload;
use crate::ThreadCounters;
use rayon::prelude::*;
use smtsched_model::matrix::counter_map;
use smtsched_model::{MachineModel, PairRecord, Placement, PrMatrix, SoloRecord, PR_MATRIX_FORMAT};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// How every run is measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Protocol {
    /// The one seed every stream derives from.
    pub seed: u64,
    /// Instructions each thread runs before its window (cache warm-up).
    pub warmup_instructions: u64,
    /// Instructions in each thread's measured window.
    pub measure_instructions: u64,
    /// Time slice for threads sharing a logical CPU.
    pub quantum_cycles: u64,
    /// Time-shared runs measure this many rounds (each thread runs one quantum per round) after
    /// one warm-up round.
    pub timeshare_rounds: u32,
    /// Time-shared pairs simulate each quantum only while the thread's caches refill, crediting
    /// the rest at the rates measured once it has settled (see [`crate::refill`]); `false`
    /// simulates every cycle.
    pub refill_only: bool,
}

/// Time slices a protocol may use, in ms: from finer than any OS's (a thread still gets work
/// done in one) up to a second.
pub const QUANTUM_MS: std::ops::RangeInclusive<f64> = 0.1..=1000.0;
/// Measured rounds of a time-shared run: by default, and at most (with the longest quantum,
/// hours of simulated time).
pub const DEFAULT_TIMESHARE_ROUNDS: u32 = 2;
pub const MAX_TIMESHARE_ROUNDS: u32 = 1000;
/// A time slice of `ms` milliseconds in cycles of `machine` (at least one).
pub fn quantum_cycles(ms: f64, machine: &MachineModel) -> u64 {
    (ms * 1e6 * machine.clock_ghz).round().max(1.0) as u64
}

/// Instructions of a thread's warm-up, and of its window, at most (about 15 hours of simulation
/// each).
pub const MAX_THREAD_INSTRUCTIONS: u64 = 1_000_000_000_000;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProtocolError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("placement {placement} is not available on machine {machine}: {reason}")]
    Unavailable {
        placement: Placement,
        machine: String,
        reason: String,
    },
    #[error("{0} threads run together: at most {max} can", max = THREADED_SPACES - 1)]
    TooManyThreads(usize),
}

/// Address spaces: processes take 1…, the shared memory of threaded programs this many on.
const THREADED_SPACES: u32 = 1024;

/// Runs `threads` (profile, logical CPU) together. Copies of one profile are numbered in order of
/// appearance; copies of one program share code, as processes of one binary share text pages.
pub fn run_together(
    machine: &MachineModel,
    threads: &[(&dyn Workload, u32)],
    proto: &Protocol,
    window: Window,
) -> Result<RunResult, ProtocolError> {
    run_with_rates(machine, threads, proto, window, Vec::new())
}

/// [`run_together`], the threads given solo rates simulated only while they refill.
fn run_with_rates(
    machine: &MachineModel,
    threads: &[(&dyn Workload, u32)],
    proto: &Protocol,
    window: Window,
    solo_rates: Vec<Option<Rates>>,
) -> Result<RunResult, ProtocolError> {
    let plans = plans(threads, proto)?;
    let options = RunOptions::new(window, proto.quantum_cycles);
    Ok(Simulation::new(machine, plans, options)?
        .with_solo_rates(solo_rates)
        .run())
}

/// The plans of `threads` (profile, logical CPU) run together: copies of one profile numbered in
/// order of appearance, copies of one program sharing code.
fn plans(
    threads: &[(&dyn Workload, u32)],
    proto: &Protocol,
) -> Result<Vec<ThreadPlan>, ProtocolError> {
    if threads.len() >= THREADED_SPACES as usize {
        return Err(ProtocolError::TooManyThreads(threads.len()));
    }
    let mut copies: BTreeMap<&str, u32> = BTreeMap::new();
    let mut programs: Vec<&str> = Vec::new();
    let plans = threads
        .iter()
        .enumerate()
        .map(|(i, &(profile, cpu))| {
            let copy = copies.entry(profile.name()).or_insert(0);
            let stream = profile.stream(proto.seed, *copy);
            *copy += 1;
            let code_space = match programs.iter().position(|p| *p == profile.program()) {
                Some(k) => k,
                None => {
                    programs.push(profile.program());
                    programs.len() - 1
                }
            } as u32
                + 1;
            // Threads of one process share its memory: one data space per program, numbered
            // apart from the processes' (one per thread, 1…).
            let data_space = if profile.threads_share_memory() {
                THREADED_SPACES + code_space
            } else {
                i as u32 + 1
            };
            ThreadPlan {
                source: stream,
                cpu,
                data_space,
                code_space,
                warmup_instructions: proto.warmup_instructions,
                measure_instructions: proto.measure_instructions,
            }
        })
        .collect();
    Ok(plans)
}

/// Copy `copy` of `profile` alone on logical CPU `cpu`, every other CPU idle (halted), measured
/// over the protocol's instruction window.
pub fn solo(
    machine: &MachineModel,
    profile: &dyn Workload,
    copy: u32,
    cpu: u32,
    proto: &Protocol,
) -> Result<ThreadResult, ProtocolError> {
    let options = RunOptions::new(Window::Instructions, proto.quantum_cycles);
    solo_in(machine, profile, copy, cpu, proto, options)
}

/// The solo baseline that matches a pair measured under `placement`: the instruction window, or
/// for time sharing the same running time as each thread gets in the shared window, after the
/// same one quantum of warm-up it has had by then.
pub fn solo_for(
    machine: &MachineModel,
    profile: &dyn Workload,
    copy: u32,
    cpu: u32,
    proto: &Protocol,
    placement: Placement,
) -> Result<ThreadResult, ProtocolError> {
    let mut options = RunOptions::new(Window::Instructions, proto.quantum_cycles);
    if placement == Placement::Timeshare {
        let q = proto.quantum_cycles as f64;
        options.window = Window::Cycles {
            start: q,
            end: q * (1 + proto.timeshare_rounds.max(1)) as f64,
        };
        // The spread of its rate steers the pairs' refill-only check (`Rates::of_solo`).
        if proto.refill_only {
            options.sample_cycles = Some(CHECK_CYCLES);
        }
    }
    solo_in(machine, profile, copy, cpu, proto, options)
}

fn solo_in(
    machine: &MachineModel,
    profile: &dyn Workload,
    copy: u32,
    cpu: u32,
    proto: &Protocol,
    options: RunOptions,
) -> Result<ThreadResult, ProtocolError> {
    // A copy's stream depends only on (seed, name, copy), so that copy is built directly.
    let plan = ThreadPlan {
        source: profile.stream(proto.seed, copy),
        cpu,
        data_space: 1,
        code_space: 1,
        warmup_instructions: proto.warmup_instructions,
        measure_instructions: proto.measure_instructions,
    };
    Ok(Simulation::new(machine, vec![plan], options)?
        .run()
        .threads
        .swap_remove(0))
}

/// One thread of a co-run: its window beside the others, its window alone, and its PR.
#[derive(Clone, Debug)]
pub struct CorunThread {
    pub together: ThreadResult,
    pub solo: ThreadResult,
    /// Solo time over co-run time for the same instructions.
    pub pr: f64,
}

/// Runs `threads` (profile, logical CPU) together, and each alone first: its own copy of its
/// workload (copies numbered in order, as [`run_together`] numbers them) on its CPU. Where a
/// CPU is named more than once its threads time-share it, and all are measured as a
/// time-shared pair is: over the protocol's rounds after one round of warm-up, a round giving
/// each thread of the most shared CPU one quantum (an instruction window would fit in a
/// thread's first quantum, before its partners ran at all).
pub fn corun(
    machine: &MachineModel,
    threads: &[(&dyn Workload, u32)],
    proto: &Protocol,
) -> Result<Vec<CorunThread>, ProtocolError> {
    let mut per_cpu: BTreeMap<u32, u32> = BTreeMap::new();
    for &(_, cpu) in threads {
        *per_cpu.entry(cpu).or_insert(0) += 1;
    }
    let turns = per_cpu.values().copied().max().unwrap_or(1);
    let window = if turns > 1 {
        let round = turns as f64 * proto.quantum_cycles as f64;
        Window::Cycles {
            start: round,
            end: round * (1 + proto.timeshare_rounds.max(1)) as f64,
        }
    } else {
        Window::Instructions
    };
    let mut copies: BTreeMap<&str, u32> = BTreeMap::new();
    let mut solos = Vec::new();
    for &(w, cpu) in threads {
        let copy = copies.entry(w.name()).or_insert(0);
        solos.push(match window {
            Window::Instructions => solo(machine, w, *copy, cpu, proto)?,
            Window::Cycles { .. } => solo_for(machine, w, *copy, cpu, proto, Placement::Timeshare)?,
        });
        *copy += 1;
    }
    let cpus: Vec<u32> = threads.iter().map(|&(_, cpu)| cpu).collect();
    let rates = match window {
        Window::Cycles { .. } if corun_refills_only(proto, &cpus) => solos
            .iter()
            .map(|s| solo_rates(s, Placement::Timeshare, proto))
            .collect(),
        _ => Vec::new(),
    };
    let r = run_with_rates(machine, threads, proto, window, rates)?;
    Ok(r.threads
        .into_iter()
        .zip(solos)
        .map(|(together, solo)| CorunThread {
            pr: performance_ratio(window, &solo, &together),
            together,
            solo,
        })
        .collect())
}

/// Whether a co-run of threads on `cpus` simulates its quanta only while they refill: where the
/// protocol asks for it and every thread time-shares one CPU, the rest idle, as a matrix's pair
/// does (where it was validated); beside a busy CPU every cycle is simulated.
pub fn corun_refills_only(proto: &Protocol, cpus: &[u32]) -> bool {
    proto.refill_only && cpus.len() > 1 && cpus.iter().all(|&c| c == cpus[0])
}

/// A thread's PR over `window`: for the same instructions, its solo time over its co-run time;
/// for the same time, its co-run rate over its solo rate.
fn performance_ratio(window: Window, solo: &ThreadResult, together: &ThreadResult) -> f64 {
    match window {
        Window::Instructions => solo.elapsed_cycles() / together.elapsed_cycles(),
        Window::Cycles { .. } => together.ipc() / solo.ipc(),
    }
}

/// Where `threads` threads go when no CPUs are named: two on the sibling threads of a core if
/// the machine has them, else one CPU each in order, round the CPUs again (time-shared) when
/// there are more threads than CPUs. With the layout in words.
pub fn default_cpus(
    machine: &MachineModel,
    threads: usize,
) -> Result<(Vec<u32>, &'static str), ProtocolError> {
    if threads == 2 && machine.topology.threads_per_core >= 2 {
        return Ok((
            placement_cpus(machine, Placement::Siblings)?.to_vec(),
            "siblings",
        ));
    }
    let cpus = machine.logical_cpus() as usize;
    let layout = match threads {
        1 => "alone",
        t if t <= cpus => "one per CPU",
        _ => "time-shared",
    };
    Ok(((0..threads).map(|i| (i % cpus) as u32).collect(), layout))
}

/// The two logical CPUs a pair uses under `placement` (the same CPU twice for time sharing). As in
/// the thesis, siblings use the last core (package 1 on Northwood) and cores use the first thread
/// of the first and last cores.
pub fn placement_cpus(
    machine: &MachineModel,
    placement: Placement,
) -> Result<[u32; 2], ProtocolError> {
    let unavailable = |reason: &str| ProtocolError::Unavailable {
        placement,
        machine: machine.name.clone(),
        reason: reason.to_string(),
    };
    let last_core = machine.cores() - 1;
    match placement {
        Placement::Siblings => {
            if machine.topology.threads_per_core < 2 {
                return Err(unavailable("its cores have one hardware thread"));
            }
            Ok([machine.cpu_at(last_core, 0), machine.cpu_at(last_core, 1)])
        }
        Placement::Cores => {
            if machine.cores() < 2 {
                return Err(unavailable("it has one core"));
            }
            Ok([machine.cpu_at(0, 0), machine.cpu_at(last_core, 0)])
        }
        Placement::Timeshare => Ok([machine.cpu_at(last_core, 0); 2]),
    }
}

/// Outcome of one pair.
#[derive(Clone, Debug)]
pub struct PairOutcome {
    pub pr: [f64; 2],
    pub window: [ThreadCounters; 2],
}

/// Measures `a` and `b` together under `placement`, given their solo windows (`solo_b` must be
/// of copy 1 when `a` and `b` are the same profile).
pub fn pair(
    machine: &MachineModel,
    a: &dyn Workload,
    b: &dyn Workload,
    placement: Placement,
    proto: &Protocol,
    solo: [&ThreadResult; 2],
) -> Result<PairOutcome, ProtocolError> {
    let cpus = placement_cpus(machine, placement)?;
    let window = pair_window(placement, proto);
    let rates = solo
        .iter()
        .map(|s| solo_rates(s, placement, proto))
        .collect();
    let r = run_with_rates(machine, &[(a, cpus[0]), (b, cpus[1])], proto, window, rates)?;
    Ok(pair_outcome(&r, window, solo))
}

/// The window a pair is measured over: each thread's instructions, or for time sharing the
/// measured rounds after one round of warm-up.
fn pair_window(placement: Placement, proto: &Protocol) -> Window {
    match placement {
        Placement::Timeshare => {
            let round = 2.0 * proto.quantum_cycles as f64;
            Window::Cycles {
                start: round,
                end: round * (1 + proto.timeshare_rounds.max(1)) as f64,
            }
        }
        _ => Window::Instructions,
    }
}

/// The rates a pair's thread is credited at once it refills, if its quanta are simulated only
/// while it does.
fn solo_rates(solo: &ThreadResult, placement: Placement, proto: &Protocol) -> Option<Rates> {
    (placement == Placement::Timeshare && proto.refill_only)
        .then(|| Rates::of_solo(solo))
        .flatten()
}

fn pair_outcome(r: &RunResult, window: Window, solo: [&ThreadResult; 2]) -> PairOutcome {
    let pr = |i: usize| performance_ratio(window, solo[i], &r.threads[i]);
    PairOutcome {
        pr: [pr(0), pr(1)],
        window: [r.threads[0].window, r.threads[1].window],
    }
}

/// A time-shared pair's first quantum, which its first thread `a` runs alone: the same whatever
/// the partner, so [`matrix`] runs it once per first workload and continues a copy of it for each
/// partner ([`pair_after`]), counting exactly what each pair run whole counts. `None` where the
/// stream cannot be copied, nothing is time-shared or a core is in-order, or the quantum is
/// shorter than the warm-up round (see [`Simulation::run_first_quantum`]): then each pair runs
/// whole.
fn first_quantum(
    machine: &MachineModel,
    a: &dyn Workload,
    placement: Placement,
    proto: &Protocol,
    solo_a: &ThreadResult,
) -> Result<Option<Simulation>, ProtocolError> {
    if placement != Placement::Timeshare {
        return Ok(None);
    }
    let cpu = placement_cpus(machine, placement)?[0];
    // The partner's place is held by a second copy of `a`, replaced before it runs.
    let plans = plans(&[(a, cpu), (a, cpu)], proto)?;
    if plans[0].source.try_clone().is_none() {
        return Ok(None);
    }
    let options = RunOptions::new(pair_window(placement, proto), proto.quantum_cycles);
    let mut sim = Simulation::new(machine, plans, options)?
        .with_solo_rates(vec![solo_rates(solo_a, placement, proto), None]);
    Ok(sim.run_first_quantum().then_some(sim))
}

/// [`pair`] continued from (a copy of) the first quantum of `a` (see [`first_quantum`]).
fn pair_after(
    mut sim: Simulation,
    machine: &MachineModel,
    [a, b]: [&dyn Workload; 2],
    placement: Placement,
    proto: &Protocol,
    solo: [&ThreadResult; 2],
) -> Result<PairOutcome, ProtocolError> {
    let cpus = placement_cpus(machine, placement)?;
    let plan_b = plans(&[(a, cpus[0]), (b, cpus[1])], proto)?
        .pop()
        .expect("two plans");
    sim.replace_unstarted(1, plan_b, solo_rates(solo[1], placement, proto));
    let r = sim.run();
    Ok(pair_outcome(&r, pair_window(placement, proto), solo))
}

fn counters_of(c: &ThreadCounters) -> BTreeMap<String, f64> {
    counter_map(c.named())
}

/// The pairwise PR matrix of `profiles` under `placement`: every unordered pair including each
/// workload against a copy of itself. Runs spread over the host's cores with rayon; the result does
/// not depend on how many. `progress` is called once per finished run.
pub fn matrix(
    machine: &MachineModel,
    profiles: &[&dyn Workload],
    placement: Placement,
    proto: &Protocol,
    progress: &(dyn Fn() + Sync),
) -> Result<PrMatrix, ProtocolError> {
    let cpus = placement_cpus(machine, placement)?;
    // Solo baselines: copy 0 of everything, and copy 1 for the self-pairs.
    let solo_jobs: Vec<(usize, u32)> = (0..profiles.len()).flat_map(|i| [(i, 0), (i, 1)]).collect();
    let solos: Vec<ThreadResult> = solo_jobs
        .par_iter()
        .map(|&(i, copy)| {
            let r = solo_for(machine, profiles[i], copy, cpus[0], proto, placement);
            progress();
            r
        })
        .collect::<Result<_, _>>()?;
    let solo_of = |i: usize, copy: u32| &solos[i * 2 + copy as usize];
    let pairs: Vec<(usize, usize)> = (0..profiles.len())
        .flat_map(|a| (a..profiles.len()).map(move |b| (a, b)))
        .collect();
    // Grouped by first workload, whose first quantum of time sharing is run once per group.
    let groups: Vec<Vec<PairOutcome>> = (0..profiles.len())
        .into_par_iter()
        .map(|a| {
            // Behind a lock: a stream is not shared between threads, only sent (copies are).
            let first = first_quantum(machine, profiles[a], placement, proto, solo_of(a, 0))?
                .map(Mutex::new);
            (a..profiles.len())
                .into_par_iter()
                .map(|b| {
                    let copy_b = if a == b { 1 } else { 0 };
                    let solo = [solo_of(a, 0), solo_of(b, copy_b)];
                    let both = [profiles[a], profiles[b]];
                    let copy = first
                        .as_ref()
                        .and_then(|f| f.lock().expect("no panic while copying").try_clone());
                    let r = match copy {
                        Some(sim) => pair_after(sim, machine, both, placement, proto, solo)?,
                        None => pair(machine, both[0], both[1], placement, proto, solo)?,
                    };
                    progress();
                    Ok(r)
                })
                .collect::<Result<Vec<_>, ProtocolError>>()
        })
        .collect::<Result<_, _>>()?;
    let outcomes: Vec<PairOutcome> = groups.into_iter().flatten().collect();
    let mut settings = BTreeMap::new();
    settings.insert("seed".into(), proto.seed.to_string());
    // A time-shared pair is measured over rounds of quanta, not instruction windows: only the
    // settings that decided it are recorded.
    if placement != Placement::Timeshare {
        settings.insert(
            "warmup_instructions".into(),
            proto.warmup_instructions.to_string(),
        );
        settings.insert(
            "measure_instructions".into(),
            proto.measure_instructions.to_string(),
        );
    } else {
        settings.insert("quantum_cycles".into(), proto.quantum_cycles.to_string());
        settings.insert(
            "timeshare_rounds".into(),
            proto.timeshare_rounds.to_string(),
        );
        settings.insert("refill_only".into(), proto.refill_only.to_string());
    }
    settings.insert("cpus".into(), format!("{},{}", cpus[0], cpus[1]));
    Ok(PrMatrix {
        format: PR_MATRIX_FORMAT.into(),
        source: "simulated".into(),
        machine: machine.name.clone(),
        placement,
        settings,
        workloads: profiles.iter().map(|p| p.name().to_string()).collect(),
        solo: profiles
            .iter()
            .enumerate()
            .map(|(i, p)| SoloRecord {
                workload: p.name().to_string(),
                rate: solo_of(i, 0).ipc(),
                counters: counters_of(&solo_of(i, 0).window),
            })
            .collect(),
        pairs: pairs
            .iter()
            .zip(&outcomes)
            .map(|(&(a, b), o)| PairRecord {
                a,
                b,
                pr_a: o.pr[0],
                pr_b: o.pr[1],
                counters_a: counters_of(&o.window[0]),
                counters_b: counters_of(&o.window[1]),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtsched_model::{load_machine, load_workload};

    fn proto(quantum_cycles: u64) -> Protocol {
        Protocol {
            seed: 1,
            warmup_instructions: 1_000,
            measure_instructions: 1_000,
            quantum_cycles,
            timeshare_rounds: 1,
            refill_only: false,
        }
    }

    #[test]
    fn a_first_quantum_is_shared_only_where_it_is_run_by_its_first_thread_alone() {
        let w = load_workload("mcf-like", &[]).unwrap();
        let first = |machine: &str, placement: Placement, quantum_cycles: u64| {
            let m = load_machine(machine, &[]).unwrap();
            let p = proto(quantum_cycles);
            let cpu = placement_cpus(&m, Placement::Timeshare).unwrap()[0];
            let solo = solo_for(&m, &w, 0, cpu, &p, placement).unwrap();
            first_quantum(&m, &w, placement, &p, &solo)
                .unwrap()
                .is_some()
        };
        assert!(first("northwood", Placement::Timeshare, 100_000));
        assert!(!first("northwood", Placement::Siblings, 100_000));
        assert!(!first("cmt-fedorova", Placement::Timeshare, 100_000));
        // One cycle: the first access outlasts the warm-up round, whose end records the
        // waiting partner too.
        assert!(!first("northwood", Placement::Timeshare, 1));
    }
}
