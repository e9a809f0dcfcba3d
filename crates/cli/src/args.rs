//! Command-line arguments: one definition per flag; the doc comment is the help.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "smtsched",
    version = env!("SMTSCHED_VERSION"),
    about = "Operating-system support for simultaneous-multithreaded processors: simulate SMT/CMT \
             machines, measure how co-running threads slow each other, and schedule them.",
    after_help = "Examples:\n  smtsched matrix                         # pairwise PR matrix of the 22 SPEC stand-ins on northwood\n  smtsched solo mcf-like --machine prescott\n  smtsched machines show northwood"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the machine presets, or show one.
    ///
    /// Example: smtsched machines show cmt-fedorova --set cache.L2.size_bytes=98304
    Machines(ListShow),
    /// List the workload presets, or show one.
    ///
    /// Example: smtsched workloads show mcf-like
    Workloads(ListShow),
    /// Run one workload alone and report its counters.
    ///
    /// Example: smtsched solo mcf-like --machine northwood --instructions 5000000
    Solo(SoloArgs),
    /// Run workloads together on chosen logical CPUs and report each one's performance ratio.
    ///
    /// Example: smtsched corun mcf-like mesa-like --cpus 2,3
    Corun(CorunArgs),
    /// Pairwise performance-ratio matrix (thesis §3.3): every pair, including self-pairs.
    ///
    /// Example: smtsched matrix --workloads gzip-like,mcf-like,swim-like --svg m.svg
    Matrix(MatrixArgs),
    /// Simulate an OS scheduling a task set under chosen policies and compare them.
    ///
    /// Example: smtsched run --tasks gzip-like,crafty-like,swim-like,art-like --cpus 2-3 --policies naive,plan
    Run(RunArgs),
    /// Run an experiment of the seed papers and print the result beside the paper's.
    ///
    /// Example: smtsched reproduce thesis-set-a
    Reproduce(ReproduceArgs),
    /// Measure simulator speed: simulated instructions per second on one host core.
    ///
    /// Example: smtsched bench
    Bench(BenchArgs),
    /// This real machine: topology, performance counters, native benchmark kernels.
    ///
    /// Example: smtsched host topology
    Host(crate::commands::host::HostArgs),
    /// Record, import, inspect and profile traces of real programs.
    ///
    /// Example: smtsched trace record -o sort.smtt -- sort /etc/services
    Trace(crate::commands::trace::TraceArgs),
    /// Measure co-run interference on this real machine (thesis §3.3.1 protocol).
    ///
    /// Example: smtsched measure pairs --workloads pointer-chase,stream-triad
    Measure(crate::commands::measure::MeasureArgs),
    /// Reuse-distance cache models (Fedorova et al. 2005): histograms, predicted against simulated
    /// miss ratios of thread groups, and the balance-set group search.
    ///
    /// Example: smtsched cachemodel predict gzip-like art-like parser-like ammp-like --set topology.cores_per_package=1
    Cachemodel(crate::commands::cachemodel::CachemodelArgs),
    /// The performance-ratio estimator: training windows, the least-squares fit (thesis Table 3.8),
    /// validation on held-out workloads, other estimators, and an ablation over the schedulers.
    ///
    /// Example: smtsched train windows -w thesis-train -o train.csv && smtsched train fit train.csv -o model.toml
    Train(crate::commands::train::TrainArgs),
    /// Apply a policy to live processes: affinity, weights and core scheduling, sampled and
    /// decided every period, every setting put back at the end (and after a crash).
    ///
    /// Example: smtsched agent run --policy plan --matrix pairs.json --tasks kernels.toml --duration 60
    Agent(crate::commands::agent::AgentArgs),
    /// Sweeps: machines × overrides × workloads × placements or policies × seeds as
    /// independent jobs, run whole or in shards (on this host or a Slurm job array) and merged.
    ///
    /// Example: smtsched sweep run sweeps/l2-size.toml -o l2.json
    Sweep(crate::commands::sweep::SweepArgs),
    /// Draw a saved PR matrix (a heatmap) or schedule timeline again, as SVG.
    ///
    /// Example: smtsched plot pairs.json -o pairs.svg
    Plot(PlotArgs),
    /// Compare two PR matrices (two machines, or simulated against measured): B − A per cell,
    /// agreement, the largest differences.
    ///
    /// Example: smtsched diff northwood.json prescott.json --svg d.svg
    Diff(DiffArgs),
    /// Print a shell completion script, generated from this command line's definition.
    ///
    /// Example: smtsched completions bash > /etc/bash_completion.d/smtsched
    Completions(CompletionsArgs),
    /// Write man pages (roff), generated from this command line's definition: smtsched.1 and
    /// one page per command (smtsched-matrix.1, …).
    ///
    /// Example: smtsched man -o /usr/local/share/man/man1
    Man(ManArgs),
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// A matrix file (`matrix -o`, `measure pairs -o`) or a timeline file (`run --timeline`).
    pub file: PathBuf,
    /// Write the SVG here (default: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// A timeline: the seconds drawn from the start of the measured window [default: 2] (not
    /// for a matrix).
    #[arg(
        long = "timeline-seconds",
        alias = "seconds",
        value_name = "TIMELINE_SECONDS",
        value_parser = positive_seconds
    )]
    pub timeline_seconds: Option<f64>,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// Matrix A (JSON, as `matrix -o` or `measure pairs -o` write it).
    pub a: PathBuf,
    /// Matrix B; differences are B − A.
    pub b: PathBuf,
    /// Write a heatmap of B − A.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Directory to write the pages into (created if missing).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub struct ListShow {
    #[command(subcommand)]
    pub action: Option<ShowAction>,
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum ShowAction {
    /// Show one description (a preset name or a TOML file), with overrides applied.
    ///
    /// Example: smtsched machines show northwood --set cache.L2.size_bytes=1048576
    ///
    /// Example: smtsched workloads show workloads/spec2000/mcf-like.toml --set name=mcf-variant
    Show {
        name: String,
        /// Override a field before use: KEY=VALUE with a dotted key of the description shown,
        /// e.g. `machines show northwood --set cache.L2.size_bytes=1048576`, `workloads show
        /// mcf-like --set name=mcf-variant`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<smtsched_model::Override>,
    },
}

/// The machine a command simulates: a preset or file, with field overrides.
#[derive(Args, Debug, Clone)]
pub struct MachineArgs {
    /// Machine preset or TOML file.
    #[arg(
        long = "machine",
        short = 'm',
        value_name = "MACHINE",
        default_value = "northwood"
    )]
    pub name: String,
    /// Override a machine field: KEY=VALUE with a dotted key (repeatable),
    /// e.g. --set topology.cores_per_package=2.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<smtsched_model::Override>,
}

impl MachineArgs {
    pub fn load(&self) -> anyhow::Result<smtsched_model::MachineModel> {
        crate::commands::machine(&self.name, &self.set)
    }
}

/// Options every simulation shares.
#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    #[command(flatten)]
    pub machine: MachineArgs,
    /// Seed from which every instruction stream derives.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Instructions in each thread's measured window [default: 2000000] (not where threads
    /// time-share a CPU: they are measured over rounds of quanta).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub instructions: Option<u64>,
    /// Instructions each thread runs before its window, to warm the caches [default: 1000000]
    /// (not where threads time-share a CPU: a round of quanta warms them).
    #[arg(long)]
    pub warmup: Option<u64>,
}

/// Options of threads that time-share a logical CPU (`corun`, `matrix`), refused where none does.
#[derive(Args, Debug, Clone, Default)]
pub struct TimeshareArgs {
    /// Time slice for threads sharing one logical CPU, in milliseconds of simulated time,
    /// 0.1 to 1000 [default: 10].
    #[arg(long)]
    pub quantum_ms: Option<f64>,
    /// Measured rounds of a time-shared run, after one round of warm-up (each thread runs one
    /// quantum per round) [default: 2].
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Time-shared threads: simulate every cycle of every quantum. By default a quantum is
    /// simulated only while the thread's caches refill; once its miss rates are its solo rates
    /// and its rate has settled, the rest of the quantum is credited at the rates of an interval
    /// measured then (validated against this flag on every pair of the 22 SPEC stand-ins).
    #[arg(long)]
    pub full_quanta: bool,
}

#[derive(Args, Debug)]
pub struct SoloArgs {
    /// Workload preset or TOML file.
    pub workload: String,
    #[command(flatten)]
    pub sim: SimArgs,
    /// Logical CPU to run on (one; the others idle).
    #[arg(long = "cpus", alias = "cpu", value_name = "CPU", default_value_t = 0)]
    pub cpu: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CorunArgs {
    /// Workloads (presets or TOML files), one thread each.
    #[arg(required = true, num_args = 1..)]
    pub workloads: Vec<String>,
    #[command(flatten)]
    pub sim: SimArgs,
    #[command(flatten)]
    pub timeshare: TimeshareArgs,
    /// Logical CPU of each thread in order, kernel list syntax (`2,3`, `0-3`); a CPU named twice
    /// is time-shared. Default: two threads on sibling threads of one core, else CPUs 0, 1, ….
    #[arg(long, alias = "placement", value_name = "LIST")]
    pub cpus: Option<smtsched_model::CpuSequence>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct MatrixArgs {
    /// Workloads: a comma-separated list of presets or files; `all` is the 22 SPEC CPU2000
    /// stand-ins of thesis Table 3.3, `fedorova-cpi` the CPI microbenchmarks.
    #[arg(long, short = 'w', default_value = "all")]
    pub workloads: String,
    #[command(flatten)]
    pub sim: SimArgs,
    #[command(flatten)]
    pub timeshare: TimeshareArgs,
    /// Where the pair runs: siblings (the two threads of one core), cores (two cores, separate
    /// packages where possible) or timeshare (one logical CPU, time-sliced).
    #[arg(long, short_alias = 'p', default_value = "siblings")]
    pub placement: smtsched_model::Placement,
    /// Print JSON (summary and matrix) instead of tables.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub files: MatrixOutputArgs,
    /// Host threads to use, at most 1024 (default: all cores). The result does not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Machine presets or TOML files, comma-separated; `all` for every preset.
    #[arg(long, short = 'm', default_value = "northwood")]
    pub machine: String,
    /// Workloads (profiles or trace files) to co-run: two go on a core's sibling threads, more
    /// on one CPU each (time-shared where the machine has too few).
    #[arg(long, short = 'w', default_value = "swim-like,mcf-like")]
    pub workloads: String,
    /// Instructions in each thread's window (the run simulates more: warm-up and overrun).
    #[arg(long, default_value_t = 4_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub instructions: u64,
    /// Repetitions; the best is reported.
    #[arg(
        long = "repetitions",
        alias = "repeat",
        value_name = "REPETITIONS",
        default_value_t = 3,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub repeat: u32,
    /// Also time a small matrix on one host thread and on all of them (the speed-up), on the
    /// first machine given.
    #[arg(long)]
    pub scaling: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Task set: a TOML file (a task set, or an experiment of kind `policies` from experiments/:
    /// its tasks, and its CPUs unless --cpus is given), or a comma-separated workload list (each
    /// a task looping forever at nice 0; `all` = the 22 SPEC stand-ins).
    #[arg(
        long,
        short = 't',
        default_value = "gzip-like,crafty-like,swim-like,art-like"
    )]
    pub tasks: String,
    /// Policies to compare, comma-separated.
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = "naive,basic,tryhard,plan,fair,ipc",
        value_parser = policy_name()
    )]
    pub policies: Vec<smtsched_os::PolicyName>,
    /// Base scheduler: linux24 (the thesis's 2.4.19, steered by the thesis policies' goodness
    /// hooks) or modern (a present-day Linux: EEVDF, load balancing, cgroup weights, core
    /// scheduling; policies act through their decisions).
    #[arg(long, default_value = "linux24")]
    pub baseline: smtsched_os::Baseline,
    #[command(flatten)]
    pub machine: MachineArgs,
    /// Logical CPUs the OS uses, kernel list syntax (the thesis's 1x2 = one package: 2-3 on northwood).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<smtsched_model::CpuSet>,
    /// Simulated seconds.
    #[arg(long, default_value_t = smtsched_os::sim::DEFAULT_DURATION_S, allow_negative_numbers = true)]
    pub duration: f64,
    /// Length of one run of each task, in seconds alone, for a workload list [default: 60] (a
    /// task-set or experiment file sets each task's own).
    #[arg(long)]
    pub run_seconds: Option<f64>,
    /// Tasks start at random times in the first seconds; runs count after this many seconds.
    #[arg(long, default_value_t = 10.0)]
    pub stagger: f64,
    /// Timer interrupts per second (default: 100 on linux24, 250 on modern).
    #[arg(long)]
    pub hz: Option<f64>,
    /// Repetitions with seeds seed, seed+1, … (mean and spread are reported); with the simulated
    /// oracle each repetition also draws its own samples from its seed.
    #[arg(long = "repetitions", alias = "repeat", value_name = "REPETITIONS", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Interaction oracle: `simulated` or `measured:FILE` (a PR matrix from `smtsched matrix -o`
    /// or `smtsched measure pairs -o`).
    #[arg(long, default_value = "simulated")]
    pub oracle: smtsched_os::oracle::OracleSpec,
    /// Kernel build the workloads' kernel work runs on: `smp` (spinlocks and atomics execute
    /// locked instructions) or `up` (they compile away), as Ruan et al.'s 1T-SMP and 1T-UP
    /// [default: smp]. It shapes the simulated oracle (a measured matrix was measured on one).
    #[arg(long, value_parser = kernel_build())]
    pub kernel: Option<smtsched_model::KernelBuild>,
    /// Estimator for the policies: `machine` (the regression fitted on the machine simulated by
    /// the thesis's method, `models/MACHINE.toml`; the default where one is shipped), `thesis`
    /// (the published Northwood regression; the default elsewhere), `perfect` (the oracle's true
    /// PR), `matrix:FILE` (a measured PR matrix looked up by each task's workload, as the agent
    /// does without hardware counters), or a model FILE (JSON/TOML written by `smtsched train
    /// fit`).
    #[arg(long = "estimator", alias = "model", value_name = "ESTIMATOR")]
    pub model: Option<smtsched_os::EstimatorSpec>,
    /// Cost of one estimate as a fraction of a tick, 0 to 1 (the thesis measured ~2% per tick).
    #[arg(long, default_value_t = 0.02, value_parser = fraction)]
    pub estimate_cost: f64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Write the schedule timeline (every context switch) of the first policy's first repetition as JSON.
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<std::path::PathBuf>,
    /// Write that timeline as an SVG (the first `--timeline-seconds` seconds).
    #[arg(long, value_name = "FILE")]
    pub timeline_svg: Option<std::path::PathBuf>,
    /// Seconds of the timeline the SVG draws [default: 2] (only with --timeline-svg).
    #[arg(long, value_parser = positive_seconds)]
    pub timeline_seconds: Option<f64>,
    /// Write that schedule as a Perfetto trace (Chrome trace-event JSON: a track per CPU, a
    /// slice per task run, a counter track per task's PR estimates; open in ui.perfetto.dev).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// Write per-task results as CSV.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<std::path::PathBuf>,
    /// What decision views say of co-runners: `exact` (what the simulator knows) or `inferred`
    /// (estimated from CPU time and last CPU, as the live agent must).
    #[arg(long, default_value = "exact")]
    pub corunners: smtsched_os::sim::Corunners,
    /// Write each decision period's view and decisions as JSON lines (the first policy's first
    /// repetition; the format of `agent run --log`).
    #[arg(long, value_name = "FILE")]
    pub decisions: Option<std::path::PathBuf>,
}

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Experiment name (see --list), an experiment TOML file, or `all`: every experiment, with
    /// a report (`-o DIR`).
    pub name: Option<String>,
    /// List the experiments (alone: no other argument applies to a list).
    #[arg(long, exclusive = true)]
    pub list: bool,
    /// Override the experiment's repetitions.
    #[arg(long, value_parser = repetitions())]
    pub repetitions: Option<u32>,
    /// While a claim's 95% interval straddles its bound, run more repetitions (further seeds),
    /// up to this many in all (default: the experiment's max_repetitions, else 10; at most the
    /// repetitions given: exactly those).
    #[arg(long, value_parser = repetitions())]
    pub max_repetitions: Option<u32>,
    /// Override the experiment's simulated seconds.
    #[arg(long, allow_negative_numbers = true)]
    pub duration: Option<f64>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Override the experiment's estimator: machine (fitted on the machine simulated, the
    /// default where one is shipped), thesis (the published Northwood model), perfect,
    /// matrix:FILE (a measured PR matrix) or a model file.
    #[arg(long = "estimator", alias = "model", value_name = "ESTIMATOR")]
    pub model: Option<smtsched_os::EstimatorSpec>,
    /// Override the experiment's base scheduler: linux24 (the thesis's, steered through the
    /// policies' goodness hooks) or modern (present-day Linux; policies act through decisions).
    #[arg(long)]
    pub baseline: Option<smtsched_os::Baseline>,
    /// Override the experiment's policies (comma-separated).
    #[arg(long, short = 'p', value_delimiter = ',', value_parser = policy_name())]
    pub policies: Option<Vec<smtsched_os::PolicyName>>,
    /// Print JSON; with `all`, the report's JSON holds every run, not only their summaries.
    #[arg(long)]
    pub json: bool,
    /// Also write what is printed (the report, or its JSON) to this file; with `all`, a
    /// directory for report.html (self-contained), report.md and report.json. Finished
    /// experiments are kept until then (in DIR/reproduce-progress.json; with --shard in
    /// FILE.progress): the same command, stopped, continues from them.
    #[arg(long, short = 'o', value_name = "FILE|DIR")]
    pub output: Option<std::path::PathBuf>,
    /// With `all`: only these experiments (comma-separated names).
    #[arg(long, value_name = "LIST")]
    pub only: Option<String>,
    /// With `all`: run shard I of N of the experiments (the I-th, I+N-th, …) and write its
    /// outcomes to `-o FILE` for `--merge`.
    #[arg(long, value_name = "I/N", conflicts_with_all = ["merge", "slurm"])]
    pub shard: Option<smtsched_experiments::shards::Shard>,
    /// With `all`: merge every shard's file into the report one run writes (`-o DIR`); the
    /// shards' options decide the results, so run options are refused here.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with_all = [
        "slurm", "only", "repetitions", "max_repetitions", "duration", "seed", "model", "baseline",
        "policies", "json",
    ])]
    pub merge: Vec<std::path::PathBuf>,
    /// With `all`: write a script that submits the experiments to Slurm as a job array of
    /// `--shards` shards and a merge job writing the report into `--dir`/report (script to `-o`
    /// or standard output).
    #[arg(long, requires_all = ["shards", "dir"])]
    pub slurm: bool,
    /// With `--slurm`: how many shards.
    #[arg(long, requires = "slurm", value_parser = clap::value_parser!(u32).range(1..))]
    pub shards: Option<u32>,
    /// With `--slurm`: where shard files, logs and the report go.
    #[arg(long, requires = "slurm", value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

/// A count of repetitions, 1 to the most an experiment may run.
fn repetitions() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=smtsched_experiments::run::MAX_REPETITIONS as i64)
}

/// `--kernel`: a kernel build, its possible values listed in the help.
fn kernel_build() -> impl clap::builder::TypedValueParser<Value = smtsched_model::KernelBuild> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(["smp", "up"]).map(|s| s.parse().expect("a possible value"))
}

/// A number from 0 to 1 (finite).
fn fraction(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{text} is not a fraction from 0 to 1"))
    }
}

/// A length of time in seconds, above 0 and finite (a drawing of no time is empty).
fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        Ok(_) => Err(format!("{text} is not a number of seconds above 0")),
        Err(_) => Err(format!("{text:?} is not a number")),
    }
}

/// Policy names, every one the simulator has listed in `--help` (from the one list it keeps).
pub(crate) fn policy_name() -> impl clap::builder::TypedValueParser<Value = smtsched_os::PolicyName>
{
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(smtsched_os::ALL_POLICIES.iter().map(|p| p.as_str()))
        .map(|s| s.parse().expect("a possible value"))
}

/// The files a PR matrix is written to, the same for the simulated (`matrix`) and the measured
/// (`measure pairs`) matrix.
#[derive(Args, Debug)]
pub struct MatrixOutputArgs {
    /// Write the matrix file (the format `matrix` and `measure pairs` write, `plot` and `diff`
    /// read, and the OS simulator's matrix oracle uses).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write the subject × background grid as CSV.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write one CSV row per pair (both PRs and the system speedup).
    #[arg(long, value_name = "FILE")]
    pub pairs_csv: Option<PathBuf>,
    /// Write an SVG heatmap in the style of thesis Fig. 3.3.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::{CommandFactory, Parser};

    /// Every command and subcommand's help has an example (hidden ones are the program's own
    /// helpers), and each example that is one plain command line (no pipe, redirection or
    /// quoting) is one this parser takes.
    #[test]
    fn every_command_has_an_example_that_parses() {
        fn walk(cmd: &mut clap::Command, path: &str, missing: &mut Vec<String>) {
            let help = cmd.render_long_help().to_string();
            let examples: Vec<&str> = help
                .lines()
                .filter_map(|l| l.trim().strip_prefix("Example: "))
                .collect();
            if examples.is_empty() {
                missing.push(path.to_string());
            }
            for example in examples {
                if example.contains(['|', '>', '\'', '"']) {
                    continue;
                }
                for line in example.split(" && ") {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    if let Err(e) = Cli::try_parse_from(&words) {
                        panic!("{path}: example {line:?} does not parse: {e}");
                    }
                }
            }
            let shown = |s: &&mut clap::Command| s.get_name() != "help" && !s.is_hide_set();
            for sub in cmd.get_subcommands_mut().filter(shown) {
                let name = format!("{path} {}", sub.get_name());
                walk(sub, &name, missing);
            }
        }
        let mut missing = Vec::new();
        let mut cli = Cli::command();
        for sub in cli.get_subcommands_mut().filter(|s| s.get_name() != "help") {
            let name = sub.get_name().to_string();
            walk(sub, &name, &mut missing);
        }
        assert!(missing.is_empty(), "no example in the help of: {missing:?}");
    }
}
