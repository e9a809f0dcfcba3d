//! What plans load from the user's names: machines, workloads, the measurement protocol and
//! the CPUs threads run on, each refused in one line (exit 2) when it cannot be.

use super::output::note_inputs;
use crate::args::{SimArgs, TimeshareArgs};
use crate::errors::bad_input;
use anyhow::Result;
use smtsched_model::{expand_workload_list, load_machine, load_workload, Preset};
use smtsched_model::{CpuSequence, MachineModel, Override, Placement};
use smtsched_model::{MACHINE_PRESETS, WORKLOAD_PRESETS};
use smtsched_uarch::protocol::{
    quantum_cycles, DEFAULT_TIMESHARE_ROUNDS, MAX_THREAD_INSTRUCTIONS, MAX_TIMESHARE_ROUNDS,
    QUANTUM_MS,
};
use smtsched_uarch::{Protocol, Workload};
use std::path::Path;

pub(crate) fn machine(name: &str, set: &[Override]) -> Result<MachineModel> {
    let m = load_machine(name, set)?;
    note_named_file(name, MACHINE_PRESETS)?;
    Ok(m)
}

/// A workload by preset name or file.
pub(crate) fn workload(name: &str) -> Result<Box<dyn Workload>> {
    // A recorded trace (`FILE` or `FILE@PROFILE`, told apart by the file's signature) replays
    // wherever a profile runs.
    if let Some(trace) = smtsched_trace::replay::load_trace_workload(name)? {
        let (file, profile) =
            smtsched_trace::replay::trace_spec(name).expect("a trace workload has a trace spec");
        note_inputs([Path::new(file)])?;
        if let Some(p) = profile {
            note_named_file(p, WORKLOAD_PRESETS)?;
        }
        return Ok(Box::new(trace));
    }
    let w = load_workload(name, &[])?;
    note_named_file(name, WORKLOAD_PRESETS)?;
    Ok(Box::new(w))
}

/// `--name`, if given, as headers and files can show it (the rule a description's `name` obeys).
pub(crate) fn check_name_flag(name: Option<&String>) -> Result<()> {
    match name.filter(|n| !smtsched_model::is_visible_name(n)) {
        Some(n) => Err(bad_input(format!(
            "--name {n:?}: must be a visible name (not empty, no control characters)"
        ))),
        None => Ok(()),
    }
}

/// Notes `name` as an input file of the command unless it names a preset (which a loader looks
/// up first): an output may not replace it.
pub(crate) fn note_named_file(name: &str, presets: &[Preset]) -> Result<()> {
    match presets.iter().any(|p| p.name == name) {
        true => Ok(()),
        false => note_inputs([Path::new(name)]),
    }
}

/// Workloads by preset name or file, in order.
pub(crate) fn workloads(names: &[String]) -> Result<Vec<Box<dyn Workload>>> {
    names.iter().map(|n| workload(n)).collect()
}

/// The names a workload list (`gzip-like,mcf-like`, `all`) stands for; `--workloads` must name
/// at least one.
pub(crate) fn workload_names(list: &str) -> Result<Vec<String>> {
    let names = expand_workload_list(list);
    if names.is_empty() {
        return Err(bad_input(format!(
            "--workloads {list:?}: names no workloads"
        )));
    }
    Ok(names)
}

/// Borrowed views of loaded workloads, as the simulator takes them.
pub(crate) fn refs(loaded: &[Box<dyn Workload>]) -> Vec<&dyn Workload> {
    loaded.iter().map(|w| w.as_ref()).collect()
}

/// The co-run protocol `sim` and `timeshare` give. `sharing`: where threads share a logical CPU,
/// in words (`None`: none does). Only then do the quantum, the rounds and `--full-quanta` apply
/// (`timeshare` is `None` for commands that never time-share), and only otherwise the
/// instruction window: an option given where it does not apply is refused, as it would change
/// nothing.
pub(crate) fn protocol(
    sim: &SimArgs,
    timeshare: Option<&TimeshareArgs>,
    machine: &MachineModel,
    sharing: Option<&str>,
) -> Result<Protocol> {
    let ts = timeshare.cloned().unwrap_or_default();
    let (not_applying, why) = match sharing {
        Some(where_) => (
            vec![
                ("--instructions", sim.instructions.is_some()),
                ("--warmup", sim.warmup.is_some()),
            ],
            format!(
                "does not apply here ({where_}): threads that share a logical CPU are measured \
                 over rounds of quanta"
            ),
        ),
        None => (
            vec![
                ("--quantum-ms", ts.quantum_ms.is_some()),
                ("--rounds", ts.rounds.is_some()),
                ("--full-quanta", ts.full_quanta),
            ],
            "applies to threads that share a logical CPU, and none does here".to_string(),
        ),
    };
    if let Some((flag, _)) = not_applying.iter().find(|(_, given)| *given) {
        return Err(bad_input(format!("{flag} {why}")));
    }
    let quantum_ms = ts.quantum_ms.unwrap_or(10.0);
    if !QUANTUM_MS.contains(&quantum_ms) {
        return Err(bad_input(format!(
            "--quantum-ms {quantum_ms}: must be {} to {} milliseconds",
            QUANTUM_MS.start(),
            QUANTUM_MS.end()
        )));
    }
    let rounds = ts.rounds.unwrap_or(DEFAULT_TIMESHARE_ROUNDS);
    if !(1..=MAX_TIMESHARE_ROUNDS).contains(&rounds) {
        return Err(bad_input(format!(
            "--rounds {rounds}: must be 1 to {MAX_TIMESHARE_ROUNDS} measured rounds"
        )));
    }
    let instructions = sim.instructions.unwrap_or(2_000_000);
    let warmup = sim.warmup.unwrap_or(1_000_000);
    for (flag, n) in [("--instructions", instructions), ("--warmup", warmup)] {
        if n > MAX_THREAD_INSTRUCTIONS {
            return Err(bad_input(format!(
                "{flag} {n}: at most {:e} instructions per thread",
                MAX_THREAD_INSTRUCTIONS as f64
            )));
        }
    }
    Ok(Protocol {
        seed: sim.seed,
        warmup_instructions: warmup,
        measure_instructions: instructions,
        quantum_cycles: quantum_cycles(quantum_ms, machine),
        timeshare_rounds: rounds,
        refill_only: !ts.full_quanta,
    })
}

/// The logical CPU of each of `threads` threads, from `--cpus`: one per thread, each on `m`.
pub(crate) fn thread_cpus(
    m: &MachineModel,
    list: &CpuSequence,
    threads: usize,
) -> Result<Vec<u32>> {
    let cpus = list.cpus();
    if let Some(cpu) = cpus.iter().find(|&&c| c >= m.logical_cpus()) {
        return Err(bad_input(format!(
            "--cpus {:?}: CPU {cpu} does not exist on machine {} (CPUs 0-{})",
            list.to_string(),
            m.name,
            m.logical_cpus() - 1
        )));
    }
    if cpus.len() != threads {
        return Err(bad_input(format!(
            "--cpus names {} CPU(s) for {} workloads; give one CPU per workload",
            cpus.len(),
            threads
        )));
    }
    Ok(cpus)
}

/// `--estimator`: machine, thesis, perfect, matrix:FILE or a model file (for runs on `machine`).
pub(crate) fn estimator(
    spec: &smtsched_os::EstimatorSpec,
    machine: Option<&MachineModel>,
) -> Result<smtsched_os::sim::Estimator> {
    let e = smtsched_os::sim::Estimator::from_spec(spec, machine)
        .map_err(|e| bad_input(format!("--estimator {e}")))?;
    use smtsched_os::EstimatorSpec::{Matrix, Model};
    if let Matrix(file) | Model(file) = spec {
        note_inputs([file.as_path()])?;
    }
    Ok(e)
}

/// A counter model file (JSON or TOML, as `train fit` writes it).
pub(crate) fn linear_model(file: &std::path::Path) -> Result<smtsched_os::LinearModel> {
    let model =
        smtsched_os::LinearModel::load(file).map_err(|e| bad_input(format!("--estimator {e}")))?;
    note_inputs([file])?;
    Ok(model)
}

/// Simulated time an OS run lasts, at most (time stays bounded).
pub(crate) const MAX_SIMULATED_SECONDS: f64 = smtsched_os::sim::MAX_DURATION_S;

/// Real time a command waits or measures, at most: a day.
pub(crate) const MAX_REAL_SECONDS: f64 = 86_400.0;

/// Checks a length of time given as `flag`: finite, above 0 (or 0 itself where `zero_ok`) and at
/// most `max` (in the unit `unit`), so that it becomes a timer without overflow and a run ends.
pub(crate) fn check_time(flag: &str, v: f64, zero_ok: bool, max: f64, unit: &str) -> Result<()> {
    let above = if zero_ok { v >= 0.0 } else { v > 0.0 };
    if above && v <= max {
        return Ok(());
    }
    let least = if zero_ok { "0" } else { "above 0" };
    Err(bad_input(format!(
        "{flag} {}: must be a number of {unit} {least} and at most {}",
        short_number(v),
        short_number(max)
    )))
}

/// A number as a person would write it: large ones as powers of ten (`1e300`, not 301 digits).
fn short_number(v: f64) -> String {
    if v.abs() >= 1e7 && v.is_finite() {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// What a pair's measurement window is: instructions, or for time-shared pairs rounds of quanta
/// (which `--instructions` and `--warmup` do not change).
pub(crate) fn window_text(proto: &Protocol, placement: Placement, m: &MachineModel) -> String {
    if placement == Placement::Timeshare {
        let quantum_ms = format!("{:.3}", proto.quantum_cycles as f64 / (m.clock_ghz * 1e6));
        let quantum_ms = quantum_ms.trim_end_matches('0').trim_end_matches('.');
        let simulated = if proto.refill_only {
            "each simulated while the thread's caches refill, the rest credited"
        } else {
            "every cycle simulated"
        };
        format!(
            "time-shared: {} round(s) of {quantum_ms} ms quanta after a round of warm-up \
             ({simulated})",
            proto.timeshare_rounds
        )
    } else {
        format!(
            "{} + {} instructions per window",
            proto.warmup_instructions, proto.measure_instructions
        )
    }
}
