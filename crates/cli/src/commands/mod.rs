//! One module per command.

mod bench;
pub mod cachemodel;
mod corun;
mod describe;
pub mod host;
mod matrix;
mod reproduce;
mod run;
mod solo;
pub mod trace;
pub mod train;

use crate::args::{Command, SimArgs};
use crate::errors::bad_input;
use anyhow::{Context, Result};
use smtsched_model::{load_machine, load_workload, MachineModel, Override};
use smtsched_uarch::{Protocol, Workload};
use std::io::Write;
use std::path::Path;

pub fn run(command: Command) -> Result<()> {
    match command {
        Command::Machines(a) => describe::machines(a),
        Command::Workloads(a) => describe::workloads(a),
        Command::Solo(a) => solo::run(a),
        Command::Corun(a) => corun::run(a),
        Command::Matrix(a) => matrix::run(a),
        Command::Run(a) => run::run(a),
        Command::Reproduce(a) => reproduce::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Trace(a) => trace::run(a),
        Command::Host(a) => host::run_host(a),
        Command::Measure(a) => host::run_measure(a),
        Command::Cachemodel(a) => cachemodel::run(a),
        Command::Train(a) => train::run(a),
    }
}

pub(crate) fn parse_overrides(set: &[String]) -> Result<Vec<Override>> {
    set.iter()
        .map(|s| s.parse::<Override>().map_err(anyhow::Error::new))
        .collect()
}

pub(crate) fn machine(name: &str, set: &[String]) -> Result<MachineModel> {
    Ok(load_machine(name, &parse_overrides(set)?)?)
}

/// A workload by preset name or file.
pub(crate) fn workload(name: &str) -> Result<Box<dyn Workload>> {
    // A recorded trace (`FILE` or `FILE@PROFILE`, told apart by the file's signature) replays
    // wherever a profile runs.
    if let Some(trace) = smtsched_trace::replay::load_trace_workload(name)? {
        return Ok(Box::new(trace));
    }
    Ok(Box::new(load_workload(name, &[])?))
}

/// The measurement protocol the simulation options describe.
pub(crate) fn protocol(sim: &SimArgs, machine: &MachineModel, rounds: u32) -> Result<Protocol> {
    if !(sim.quantum_ms > 0.0 && sim.quantum_ms.is_finite()) {
        return Err(bad_input(format!(
            "--quantum-ms {}: must be a positive number of milliseconds",
            sim.quantum_ms
        )));
    }
    if rounds == 0 {
        return Err(bad_input(
            "--rounds 0: at least one measured round is needed",
        ));
    }
    Ok(Protocol {
        seed: sim.seed,
        warmup_instructions: sim.warmup,
        measure_instructions: sim.instructions,
        quantum_cycles: (sim.quantum_ms * 1e6 * machine.clock_ghz).round().max(1.0) as u64,
        timeshare_rounds: rounds,
    })
}

/// Prints to stdout (a closed pipe ends the program quietly, see main).
pub(crate) fn out(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    Ok(())
}

pub(crate) fn json_out<T: serde::Serialize>(value: &T) -> Result<()> {
    out(&(serde_json::to_string_pretty(value)? + "\n"))
}

/// Writes an output file atomically, naming it in any error.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    smtsched_report::write_atomic(path, bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}
