//! `measure pairs`: pairwise co-run performance ratios on this machine (thesis §3.3.1); the
//! work is in `smtsched_host::measure`.

use super::super::host::values::{
    ByteSize, Events, Kernels, NamedCommand, PerKernel, Placements, Work,
};
use super::super::plan::Plan;
use super::super::{
    check_time, json_out, out, progress_bar, write_files, MatrixFiles, MAX_REAL_SECONDS,
};
use crate::errors::bad_input;
use anyhow::{Context, Result};
use clap::Args;
use indicatif::ProgressBar;
use smtsched_host::kernels::{KernelKind, KernelSpec};
use smtsched_host::looper::{self, Work as LoopWork};
use smtsched_host::measure::{self, MeasureConfig, Measurement, Plan as MeasurePlan, WorkloadDef};
use smtsched_host::perf::Event;
use smtsched_host::{Shutdown, SysfsTopology, Topology};
use smtsched_model::{CpuSet, Placement};
use smtsched_report::matrix::{render_grid, render_summary, summarize};
use smtsched_report::Table;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct PairsArgs {
    /// Built-in kernels to measure, comma-separated, or `all`. Default: all kernels, unless
    /// --command is given (then only the commands).
    #[arg(long, short = 'w')]
    pub workloads: Option<Kernels>,
    /// A command workload NAME=COMMAND LINE (repeatable), started afresh for every run; its
    /// standard output is discarded. Example: --command gz='gzip -9 -c big.tar'.
    #[arg(long = "command", value_name = "NAME=CMD")]
    pub commands: Vec<NamedCommand>,
    /// Placements: siblings (SMT threads of one core), cores (two cores, separate packages
    /// where possible), timeshare (both on one CPU), a comma-separated list, or `all`.
    /// Placements the machine cannot provide are skipped with the reason.
    #[arg(long, short_alias = 'p', default_value = "all")]
    pub placement: Placements,
    /// Logical CPUs the measurement may use (kernel list syntax); default: every online CPU
    /// this process may run on.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<CpuSet>,
    /// Directory standing in for `/` when reading the topology (for testing).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub sysfs_root: PathBuf,
    /// Timed solo runs of each workload (after one warm-up run); the median is the baseline.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub solo_runs: u32,
    /// Timed runs kept for each side of a pair.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub timed_runs: u32,
    /// Multiply every kernel's default work per run by this (0.5 halves every run).
    #[arg(long, default_value_t = 1.0)]
    pub work_scale: f64,
    /// Work per run of one kernel, KERNEL=N (repeatable); overrides --work-scale for it.
    #[arg(long = "work", value_name = "KERNEL=N")]
    pub work: Vec<PerKernel<Work>>,
    /// Footprint of one kernel, KERNEL=SIZE (repeatable), e.g. pointer-chase=16MiB.
    #[arg(long = "footprint", value_name = "KERNEL=SIZE")]
    pub footprint: Vec<PerKernel<ByteSize>>,
    /// Largest random start delay of a pair's workloads, in milliseconds (0 starts both at
    /// once). Default: half the longer solo run time of the pair.
    #[arg(long)]
    pub stagger_ms: Option<f64>,
    /// Events to count per run: a comma-separated list, `default`, `all` or `none`.
    #[arg(long, short = 'e', default_value = "default")]
    pub events: Events,
    /// Seed of the start delays and of the kernels' data.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run the workloads in the SCHED_RR real-time class at this priority (1-99), as the
    /// thesis's round-robin runs did, and hold the allowed CPUs an experiment leaves idle
    /// (except SMT siblings of those in use) with real-time placeholders: other processes then
    /// get only the kernel's real-time throttling share (5% by default) of --cpus. A time-shared
    /// pair alternates every sched_rr_timeslice_ms (100 ms by default), so make runs much
    /// longer than that (--work-scale). Needs root or CAP_SYS_NICE.
    #[arg(long, value_name = "PRIORITY", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub realtime: Option<i32>,
    /// With --realtime: set the SCHED_RR time slice (sched_rr_timeslice_ms) to this many
    /// milliseconds for the measurement, as the thesis's patched kernel did (it used 10 ms);
    /// the old value is restored at the end, after an error and on Ctrl-C. Needs root.
    #[arg(long, value_name = "MS", requires = "realtime", value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub rr_slice_ms: Option<u32>,
    /// Where the state file lives (the time slice's original value, restored by the next start
    /// after a SIGKILL).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Longest one experiment (a solo baseline or one pair) may take, in seconds.
    #[arg(long, default_value_t = 300.0)]
    pub timeout_s: f64,
    /// Print JSON (plan, solo baselines, every pair with its run times, matrices, summaries).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub files: crate::args::MatrixOutputArgs,
}

pub struct PairsPlan {
    topology: Topology,
    config: MeasureConfig,
    /// Which placements run on which CPUs, and which are skipped and why.
    plan: MeasurePlan,
    files: MatrixFiles,
    json: bool,
}

impl Plan for PairsPlan {
    type Args = PairsArgs;

    fn from_args(a: PairsArgs) -> Result<Self> {
        let workloads = workload_defs(&a)?;
        let topology = Topology::from_sysfs(&a.sysfs_root)?;
        let what = format!(
            "--cpus {}",
            a.cpus.as_ref().map_or(String::new(), |c| c.to_string())
        );
        let cpus = measure::allowed_cpus(&topology, a.cpus.as_ref(), &what)?;
        check_times(&a)?;
        let config = MeasureConfig {
            workloads,
            placements: a.placement.0,
            cpus,
            solo_runs: a.solo_runs,
            timed_runs: a.timed_runs,
            stagger_max: a.stagger_ms.map(|ms| Duration::from_secs_f64(ms / 1000.0)),
            events: a.events.0,
            seed: a.seed,
            exe: std::env::current_exe()
                .context("cannot find the smtsched binary to start workload processes")?,
            timeout: Duration::from_secs_f64(a.timeout_s),
            realtime: a.realtime,
            rr_slice_ms: a.rr_slice_ms,
            state_dir: a
                .state_dir
                .unwrap_or_else(smtsched_host::rundir::default_state_dir),
        };
        let plan = measure::plan(&topology, &config.cpus, &config.placements)?;
        let files = MatrixFiles::checked(a.files)?;
        Ok(PairsPlan {
            topology,
            config,
            plan,
            files,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        if !self.plan.placements.is_empty() {
            for (p, why) in &self.plan.skipped {
                eprintln!("smtsched: placement {p} skipped: {why}");
            }
        }
        let stop = Shutdown::install().context("cannot install the SIGINT/SIGTERM handler")?;
        let bar = progress_bar(
            None,
            "{msg:30} [{bar:30}] {pos}/{len} experiments, {elapsed} elapsed, ~{eta} left",
        )?;
        let started = std::time::Instant::now();
        let m = measure::measure(&self.topology, &self.config, &stop, &Bar(bar.clone()));
        bar.finish_and_clear();
        let m = m?;
        let elapsed = started.elapsed().as_secs_f64();
        self.write_outputs(&m)?;
        let warnings = measure::contention_warnings(&m, &self.config);
        if self.json {
            let summaries: BTreeMap<String, _> = m
                .matrices
                .iter()
                .map(|x| (x.placement.to_string(), summarize(x)))
                .collect();
            return json_out(
                &serde_json::json!({"measurement": m, "summaries": summaries, "warnings": warnings, "elapsed_seconds": elapsed}),
            );
        }
        print_measurement(&self.config, &m, elapsed)?;
        self.quantised_note(&m)?;
        if !warnings.is_empty() {
            out(&format!(
                "\nwarning: other processes competed for the CPUs, so these ratios are unreliable (the thesis minimised background activity; as root, --realtime keeps other processes off the CPUs):\n  {}\n",
                warnings.join("\n  ")
            ))?;
        }
        Ok(())
    }
}

/// `--stagger-ms` and `--timeout-s` are usable.
fn check_times(a: &PairsArgs) -> Result<()> {
    if let Some(s) = a.stagger_ms {
        check_time(
            "--stagger-ms",
            s,
            true,
            MAX_REAL_SECONDS * 1e3,
            "milliseconds",
        )?;
    }
    check_time(
        "--timeout-s",
        a.timeout_s,
        false,
        MAX_REAL_SECONDS,
        "seconds",
    )
}

/// The workloads: built-in kernels (scaled, with their own work and footprint where given) and
/// commands (found on PATH).
fn workload_defs(a: &PairsArgs) -> Result<Vec<WorkloadDef>> {
    if !(a.work_scale > 0.0 && a.work_scale.is_finite()) {
        return Err(bad_input(format!(
            "--work-scale {}: must be a positive number",
            a.work_scale
        )));
    }
    let kinds: Vec<KernelKind> = match &a.workloads {
        None if !a.commands.is_empty() => Vec::new(),
        None => KernelKind::ALL.to_vec(),
        Some(list) => list.0.clone(),
    };
    let mut specs: Vec<KernelSpec> = kinds
        .iter()
        .map(|&k| {
            let mut s = KernelSpec::new(k);
            s.work = ((s.work as f64 * a.work_scale).round() as u64).max(1);
            s
        })
        .collect();
    for w in &a.work {
        spec_of(&mut specs, "--work", w.kernel)?.work = w.value.0;
    }
    for f in &a.footprint {
        spec_of(&mut specs, "--footprint", f.kernel)?.footprint_bytes = f.value.0;
    }
    // Before anything is measured or said.
    for s in &specs {
        s.validate()?;
    }
    let mut defs: Vec<WorkloadDef> = specs
        .into_iter()
        .map(|s| WorkloadDef {
            name: s.kind.name().to_string(),
            work: LoopWork::Kernel(s),
        })
        .collect();
    for c in &a.commands {
        looper::resolve_command(&c.argv)
            .map_err(|e| bad_input(format!("--command {}: {e}", c.name)))?;
        defs.push(WorkloadDef {
            name: c.name.clone(),
            work: LoopWork::Command(c.argv.clone()),
        });
    }
    if defs.is_empty() {
        return Err(bad_input("no workloads: give --workloads and/or --command"));
    }
    Ok(defs)
}

/// The spec of kernel `k` among the workloads, for `opt` to change.
fn spec_of<'a>(
    specs: &'a mut [KernelSpec],
    opt: &str,
    k: KernelKind,
) -> Result<&'a mut KernelSpec> {
    specs.iter_mut().find(|s| s.kind == k).ok_or_else(|| {
        bad_input(format!(
            "{opt} {k}=…: kernel {k} is not among the workloads"
        ))
    })
}

/// `m.json` → `m.cores.json` when several placements are written.
fn per_placement(path: &Path, p: Placement, several: bool) -> PathBuf {
    if !several {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{p}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{p}"),
    };
    path.with_file_name(name)
}

struct Bar(ProgressBar);

impl measure::Progress for Bar {
    fn start(&self, n: u64) {
        self.0.set_length(n);
    }
    fn done(&self, label: &str) {
        self.0.set_message(label.to_string());
        self.0.inc(1);
    }
}

impl PairsPlan {
    fn write_outputs(&self, m: &Measurement) -> Result<()> {
        let several = m.matrices.len() > 1;
        // Render everything first, so that a failure leaves no partial set of files.
        let mut files: Vec<(PathBuf, String)> = Vec::new();
        for x in &m.matrices {
            files.extend(
                self.files
                    .render(x, |p| per_placement(p, x.placement, several))?,
            );
        }
        write_files(&files)
    }

    /// With --realtime, a note when time-shared runs are too short for the SCHED_RR slice.
    fn quantised_note(&self, m: &Measurement) -> Result<()> {
        let cfg = &self.config;
        let slice_ms = cfg
            .rr_slice_ms
            .map(u64::from)
            .or_else(smtsched_host::affinity::rr_quantum_ms);
        let (Some(_), Some(q)) = (cfg.realtime, slice_ms) else {
            return Ok(());
        };
        let shortest = m
            .solo
            .iter()
            .map(|s| s.median_seconds)
            .fold(f64::INFINITY, f64::min);
        let ts = m
            .plan
            .placements
            .iter()
            .any(|p| p.placement == Placement::Timeshare);
        if ts && shortest < 0.01 * q as f64 {
            out(&format!(
                "\nnote: the shortest solo run ({shortest:.3} s) is under 10 SCHED_RR time slices of {q} ms: time-shared ratios are quantised; raise --work-scale\n"
            ))?;
        }
        Ok(())
    }
}

fn print_measurement(cfg: &MeasureConfig, m: &Measurement, elapsed: f64) -> Result<()> {
    let x0 = &m.matrices[0];
    out(&format!(
        "Measured on {}: {} workloads, solo = median of {} runs after 1 warm-up, pairs = first {} runs of each side once both have completed one ({:.1} s)\n",
        x0.machine,
        cfg.workloads.len(),
        cfg.solo_runs,
        cfg.timed_runs,
        elapsed
    ))?;
    if let Some(sched) = x0.settings.get("scheduling") {
        out(&format!("scheduling: {sched}\n"))?;
    }
    for (p, why) in &m.plan.skipped {
        out(&format!("skipped placement {p}: {why}\n"))?;
    }
    let shown = [
        Event::Instructions,
        Event::Cycles,
        Event::TaskClockNs,
        Event::ContextSwitches,
    ];
    let mut t = Table::new([
        "workload",
        "median s",
        "runs",
        "min s",
        "max s",
        "IPC",
        "task-clock s",
        "ctx switches",
    ]);
    for s in &m.solo {
        let c = &s.side.counters;
        let ipc = match (c.get(&shown[0]), c.get(&shown[1])) {
            (Some(i), Some(cy)) if *cy > 0.0 => format!("{:.2}", i / cy),
            _ => "-".into(),
        };
        let min = s
            .side
            .run_seconds
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let max = s.side.run_seconds.iter().copied().fold(0.0, f64::max);
        t.row([
            s.workload.clone(),
            format!("{:.4}", s.median_seconds),
            s.side.run_seconds.len().to_string(),
            format!("{min:.4}"),
            format!("{max:.4}"),
            ipc,
            c.get(&shown[2])
                .map_or("-".into(), |v| format!("{:.4}", v / 1e9)),
            c.get(&shown[3]).map_or("-".into(), |v| format!("{v:.0}")),
        ]);
    }
    out(&format!("\nSolo baselines on CPU {}:\n", m.plan.solo_cpu))?;
    out(&t.render())?;
    if let Some(unsup) = x0.settings.get("events_unsupported") {
        out(&format!("counters not available: {unsup}\n"))?;
    }
    for x in &m.matrices {
        out(&format!(
            "\nPerformance ratio of the row workload running with the column workload, placement {} (CPUs {}):\n\n",
            x.placement,
            x.settings.get("cpus").map(String::as_str).unwrap_or("?")
        ))?;
        out(&render_grid(x))?;
        if let Some(s) = summarize(x) {
            out("\n")?;
            out(&render_summary(&s))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_names_per_placement() {
        let p = Path::new("out/m.json");
        assert_eq!(
            per_placement(p, Placement::Cores, true),
            PathBuf::from("out/m.cores.json")
        );
        assert_eq!(
            per_placement(p, Placement::Cores, false),
            PathBuf::from("out/m.json")
        );
        assert_eq!(
            per_placement(Path::new("m"), Placement::Timeshare, true),
            PathBuf::from("m.timeshare")
        );
    }
}
