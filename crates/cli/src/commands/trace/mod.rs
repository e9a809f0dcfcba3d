//! `trace`: record, import, inspect and profile traces of real programs, and cross-check the
//! simulator's caches against cachegrind. The work is in `smtsched-trace`; these modules
//! parse arguments, plan and print.

mod crosscheck;
mod info;
mod profile;
mod record;

use super::plan::Plan;
use super::{check_inputs_kept, check_outputs, progress_bar};
use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use indicatif::ProgressBar;
use smtsched_trace::crosscheck::cachegrind_machine;
use smtsched_trace::valgrind::{CacheConfig, Geometry, ProgramOutput, RecordOptions};
use smtsched_trace::TraceFile;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub action: TraceAction,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// `valgrind --tool=lackey --trace-mem=yes` output.
    Lackey,
}

#[derive(Subcommand, Debug)]
pub enum TraceAction {
    /// Run a program under valgrind's lackey and record its trace (the log is streamed through a
    /// pipe into the compressed trace, never stored). Address randomisation is turned off.
    ///
    /// Example: smtsched trace record -o sort.smtt -- sort /etc/services
    Record {
        /// The trace file to write (appears only when complete).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Stop after this many instructions (the program is then killed).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        max_instructions: Option<u64>,
        /// Discard the program's standard output and error (its input is /dev/null too).
        #[arg(long)]
        quiet: bool,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// The program and its arguments (after `--`).
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "CMD"
        )]
        command: Vec<String>,
    },
    /// Import a saved log (or `-` for standard input) into a trace file.
    ///
    /// Example: valgrind --tool=lackey --trace-mem=yes --vgdb=no --log-fd=3 ls 3>&1 >/dev/null | smtsched trace import - -o ls.smtt
    Import {
        /// Input format.
        #[arg(long, value_enum, default_value = "lackey")]
        format: LogFormat,
        /// The trace file to write (appears only when complete).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Keep only the first N instructions.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        max_instructions: Option<u64>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// The log file, or `-` for standard input.
        input: String,
    },
    /// Summarise a trace: instructions, loads, stores, footprint in lines and pages.
    ///
    /// Example: smtsched trace info sort.smtt
    Info {
        file: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Derive a synthetic workload profile from a trace (reuse distances, footprint, access mix,
    /// phases) and report how closely its miss ratios follow the trace's over a range of cache
    /// sizes (fully associative LRU, 64-byte lines).
    ///
    /// Example: smtsched trace profile gzip.smtt -o gzip-real.toml --timing gzip-like
    Profile {
        file: PathBuf,
        /// Where to write the profile (TOML; appears only when complete).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Profile name (default: the output file's stem).
        #[arg(long)]
        name: Option<String>,
        /// Take ILP, micro-ops, FP share and mispredictions from this profile (default: the
        /// replay defaults).
        #[arg(long, value_name = "PROFILE")]
        timing: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a program under cachegrind and under lackey, and compare cachegrind's miss counts with
    /// the smtsched simulator replaying the trace on the same caches (and with a replica of
    /// cachegrind's model, which checks the trace).
    ///
    /// Example: smtsched trace crosscheck --D1 32768,8,64 --LL 262144,8,64 -- gzip -c /etc/services
    Crosscheck {
        /// Level-1 instruction cache: SIZE,WAYS,LINE in bytes.
        #[arg(
            long = "I1",
            default_value = "32768,8,64",
            value_name = "SIZE,WAYS,LINE"
        )]
        i1: Geometry,
        /// Level-1 data cache: SIZE,WAYS,LINE in bytes.
        #[arg(
            long = "D1",
            default_value = "32768,8,64",
            value_name = "SIZE,WAYS,LINE"
        )]
        d1: Geometry,
        /// Last-level (unified) cache: SIZE,WAYS,LINE in bytes.
        #[arg(
            long = "LL",
            default_value = "262144,8,64",
            value_name = "SIZE,WAYS,LINE"
        )]
        ll: Geometry,
        /// Keep the recorded trace in this file.
        #[arg(long, value_name = "FILE")]
        keep: Option<PathBuf>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// The program and its arguments (after `--`).
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "CMD"
        )]
        command: Vec<String>,
    },
}

pub enum TracePlan {
    Record {
        options: RecordOptions,
        output: PathBuf,
        json: bool,
    },
    Import {
        /// A log file, or `-` for standard input.
        input: String,
        output: PathBuf,
        max_instructions: Option<u64>,
        json: bool,
    },
    Info {
        trace: TraceFile,
        json: bool,
    },
    Profile(profile::ProfilePlan),
    Crosscheck(crosscheck::CrosscheckPlan),
}

impl Plan for TracePlan {
    type Args = TraceArgs;

    fn from_args(a: TraceArgs) -> Result<Self> {
        Ok(match a.action {
            TraceAction::Record {
                output,
                max_instructions,
                quiet,
                json,
                command,
            } => {
                note_command_files(&command)?;
                check_outputs([Some(output.as_path())])?;
                let output_of_program = if quiet {
                    ProgramOutput::Null
                } else {
                    ProgramOutput::Inherit
                };
                TracePlan::Record {
                    options: RecordOptions {
                        command,
                        max_instructions,
                        output: output_of_program,
                    },
                    output,
                    json,
                }
            }
            TraceAction::Import {
                format: LogFormat::Lackey,
                output,
                max_instructions,
                json,
                input,
            } => {
                check_outputs([Some(output.as_path())])?;
                check_inputs_kept(&[std::path::Path::new(&input)], [Some(output.as_path())])?;
                TracePlan::Import {
                    input,
                    output,
                    max_instructions,
                    json,
                }
            }
            TraceAction::Info { file, json } => TracePlan::Info {
                trace: TraceFile::open(&file)?,
                json,
            },
            TraceAction::Profile {
                file,
                output,
                name,
                timing,
                json,
            } => TracePlan::Profile(profile::ProfilePlan::new(file, output, name, timing, json)?),
            TraceAction::Crosscheck {
                i1,
                d1,
                ll,
                keep,
                json,
                command,
            } => {
                let caches = CacheConfig { i1, d1, ll };
                note_command_files(&command)?;
                check_outputs([keep.as_deref()])?;
                TracePlan::Crosscheck(crosscheck::CrosscheckPlan {
                    machine: cachegrind_machine(&caches)?,
                    caches,
                    keep,
                    json,
                    command,
                })
            }
        })
    }

    fn execute(self) -> Result<()> {
        match self {
            TracePlan::Record {
                options,
                output,
                json,
            } => record::run_record(&options, &output, json),
            TracePlan::Import {
                input,
                output,
                max_instructions,
                json,
            } => record::run_import(&input, &output, max_instructions, json),
            TracePlan::Info { trace, json } => info::run_info(&trace, json),
            TracePlan::Profile(p) => p.execute(),
            TracePlan::Crosscheck(c) => c.execute(),
        }
    }
}

/// A spinner that shows how much log has been read (only on a terminal).
pub(super) fn log_spinner(what: &str) -> Result<ProgressBar> {
    let bar = progress_bar(
        None,
        "{spinner} {msg}: {binary_bytes} of lackey log read, {elapsed}",
    )?;
    bar.set_message(what.to_string());
    Ok(bar)
}

pub(super) fn interrupt_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    smtsched_host::shutdown::signals_handled_by_command();
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let _ = signal_hook::flag::register(sig, std::sync::Arc::clone(&flag));
    }
    flag
}

/// Notes the program a command runs and every argument that names a file as the command's
/// inputs: the trace must not replace the program traced or a file it reads (`trace record -o
/// data.txt -- cat data.txt`). An argument that is not a file (an option, a word) is no input.
fn note_command_files(command: &[String]) -> Result<()> {
    let program = smtsched_host::looper::resolve_command(command).ok();
    let args = command.iter().skip(1).map(std::path::Path::new);
    super::output::note_inputs(program.as_deref().into_iter().chain(args))
}
