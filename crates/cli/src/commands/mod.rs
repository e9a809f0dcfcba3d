//! One module per command, each with its plan (see [`plan`]); the modules after the commands
//! are what plans share.

pub mod agent;
mod bench;
pub mod cachemodel;
mod corun;
mod describe;
mod docs;
pub mod host;
mod matrix;
pub mod measure;
mod plot;
mod reproduce;
mod run;
mod solo;
pub mod sweep;
pub mod trace;
pub mod train;

mod inputs;
mod kept;
mod one_writer;
mod output;
mod plan;
mod progress;
mod slurm;

use crate::args::Command;
use anyhow::Result;

pub(crate) use inputs::{
    check_name_flag, check_time, estimator, machine, note_named_file, protocol, refs, thread_cpus,
    window_text, workload, workload_names, workloads, MAX_REAL_SECONDS, MAX_SIMULATED_SECONDS,
};
pub(crate) use output::{
    check_inputs_kept, check_outputs, json_out, out, write_file, write_files, write_files_then,
    MatrixFiles,
};
pub(crate) use progress::{counting_bar, progress_bar, spinner, Bars};

pub fn run(command: Command) -> Result<()> {
    match command {
        // Listing and showing presets: nothing to plan (see describe).
        Command::Machines(a) => describe::machines(a),
        Command::Workloads(a) => describe::workloads(a),
        Command::Solo(a) => plan::run::<solo::SoloPlan>(a),
        Command::Corun(a) => plan::run::<corun::CorunPlan>(a),
        Command::Matrix(a) => plan::run::<matrix::MatrixPlan>(a),
        Command::Run(a) => plan::run::<run::RunPlan>(a),
        Command::Reproduce(a) => plan::run::<reproduce::ReproducePlan>(a),
        Command::Bench(a) => plan::run::<bench::BenchPlan>(a),
        Command::Trace(a) => plan::run::<trace::TracePlan>(a),
        Command::Host(a) => host::run_host(a),
        Command::Measure(a) => measure::run_measure(a),
        Command::Cachemodel(a) => plan::run::<cachemodel::CachemodelPlan>(a),
        Command::Train(a) => train::run(a),
        Command::Sweep(a) => plan::run::<sweep::SweepPlan>(a),
        Command::Agent(a) => agent::run(a),
        Command::Plot(a) => plan::run::<plot::PlotPlan>(a),
        Command::Diff(a) => plan::run::<plot::DiffPlan>(a),
        // Generated from the command line's definition: nothing to plan (see docs).
        Command::Completions(a) => docs::completions(a),
        Command::Man(a) => docs::man(a),
    }
}
