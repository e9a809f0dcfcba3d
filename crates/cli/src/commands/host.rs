//! `host` and `measure`: the real machine (DESIGN §9). Arguments and output only; the work is in
//! the `smtsched-host` crate.

use super::progress_bar;
use super::{json_out, out, write_file, MatrixFiles};
use crate::errors::bad_input;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use indicatif::ProgressBar;
use smtsched_host::kernels::{KernelKind, KernelSpec};
use smtsched_host::looper::{self, LoopSpec, Work};
use smtsched_host::measure::{self, MeasureConfig, Measurement, WorkloadDef};
use smtsched_host::perf::{self, CounterSet, Event, EventStatus, Target};
use smtsched_host::{affinity, Shutdown, SysfsTopology, Topology};
use smtsched_model::{CpuSet, Placement};
use smtsched_report::matrix::{render_grid, render_summary, summarize};
use smtsched_report::Table;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct HostArgs {
    #[command(subcommand)]
    pub action: HostAction,
}

#[derive(Subcommand, Debug)]
pub enum HostAction {
    /// Logical CPUs, cores and their sibling threads, packages, caches and who shares them, NUMA
    /// nodes, offline CPUs — read from sysfs.
    ///
    /// Example: smtsched host topology --json
    Topology(TopologyArgs),
    /// Which performance-counter events this machine can count, and why not where it cannot.
    ///
    /// Example: smtsched host events
    Events(EventsArgs),
    /// Count events for a command (and its threads and children), a running process, or a CPU.
    ///
    /// Example: smtsched host counters --events cycles,instructions,task-clock -- gzip -9 -k big.tar
    Counters(CountersArgs),
    /// List the native benchmark kernels built into smtsched.
    ///
    /// Example: smtsched host kernels
    Kernels(KernelsArgs),
    /// Run one native benchmark kernel and report the time of each run.
    ///
    /// Example: smtsched host kernel pointer-chase --footprint 16MiB --runs 5 --cpus 1
    Kernel(KernelArgs),
    /// Internal: the per-workload process of `smtsched measure` (pins itself, loops, reports
    /// each run as a JSON line).
    #[command(hide = true)]
    Loop(LoopArgs),
    /// Internal: one task process of `smtsched measure sched`.
    #[command(hide = true)]
    SchedTask(SchedTaskArgs),
}

#[derive(Args, Debug)]
pub struct SchedTaskArgs {
    #[arg(long)]
    pub spec: String,
}

#[derive(Args, Debug)]
pub struct TopologyArgs {
    /// Directory standing in for `/` (a sysfs snapshot); the live machine by default.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub sysfs_root: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write this machine as a machine file to start from (named after the file): its
    /// topology and caches, and the `--template` preset's pipeline, latencies, memory and OS
    /// costs, each marked.
    #[arg(long, value_name = "FILE")]
    pub machine_toml: Option<PathBuf>,
    /// The machine preset whose values stand in for what sysfs does not describe.
    #[arg(long, default_value = "smt2-modern", requires = "machine_toml")]
    pub template: String,
}

#[derive(Args, Debug)]
pub struct EventsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CountersArgs {
    /// Events to count: a comma-separated list, `default`, or `all` (see `smtsched host events`).
    #[arg(long, short = 'e', default_value = "default")]
    pub events: String,
    /// Count an already running process (all its threads) for --duration-ms.
    #[arg(long, conflicts_with = "cpu")]
    pub pid: Option<i32>,
    /// Count everything that runs on this logical CPU for --duration-ms (needs root or
    /// perf_event_paranoid <= 0).
    #[arg(long = "cpus", alias = "cpu", value_name = "CPU")]
    pub cpu: Option<u32>,
    /// How long to count a --pid or a CPU (--cpus), in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub duration_ms: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The command to run and count (after `--`), with its threads and child processes.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct KernelsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct KernelArgs {
    /// Kernel name (see `smtsched host kernels`).
    pub name: String,
    /// Work per run, in the kernel's unit (default: the kernel's default, about 0.1-0.2 s).
    #[arg(long)]
    pub work: Option<u64>,
    /// Memory footprint: bytes, or with a unit (64KiB, 16MiB, 1GiB; K, M, G are binary too).
    #[arg(long, value_name = "SIZE")]
    pub footprint: Option<String>,
    /// Timed runs (after preparing the data; no warm-up run is discarded).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Pin to this logical CPU first (the affinity is read back and checked).
    #[arg(long = "cpus", alias = "cpu", value_name = "CPU")]
    pub cpu: Option<u32>,
    /// Events to count per run (`none` to skip counters).
    #[arg(long, short = 'e', default_value = "default")]
    pub events: String,
    /// Seed of the kernel's data.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct LoopArgs {
    /// The looper's instructions as JSON.
    #[arg(long)]
    pub spec: String,
}

#[derive(Args, Debug)]
pub struct MeasureArgs {
    #[command(subcommand)]
    pub action: MeasureAction,
}

#[derive(Subcommand, Debug)]
pub enum MeasureAction {
    /// Pairwise co-run performance ratios on this machine (thesis §3.3.1): solo baselines, then
    /// every pair (self-pairs too) on sibling threads, two cores and/or one time-shared CPU.
    ///
    /// Writes the same matrix format as `smtsched matrix` (source "measured"). With several
    /// placements, each output file gets the placement before its extension: -o m.json writes
    /// m.cores.json, m.timeshare.json, ….
    ///
    /// Example: smtsched measure pairs -w dense-fp,pointer-chase --command gz='gzip -9 -c big.tar' -p cores -o m.json
    Pairs(Box<PairsArgs>),
    /// A task set on this machine's real kernel — busy and compute/sleep loops with nice levels,
    /// affinity masks and cgroup weights — each task's share of CPU time (from
    /// /proc/PID/schedstat) beside the simulator's present-day baseline on the same file.
    ///
    /// Example: smtsched measure sched scenarios/nice-one-cpu.toml
    Sched(Box<super::sched::SchedArgs>),
    /// A real web server (nginx or lighttpd) under real load (oha) over loopback, with the
    /// thesis's Table 5.1 placements on this machine's CPUs: where the server's workers, the
    /// receive softirq (loopback RPS) and the load generator run. Throughput, latency
    /// percentiles and the kernel work of each request; every process stopped and every setting
    /// restored, also on Ctrl-C and SIGTERM (and after SIGKILL, by the next start).
    ///
    /// Example: smtsched measure server --rate auto --duration 5 --svg server.svg
    Server(Box<super::server::ServerArgs>),
}

#[derive(Args, Debug)]
pub struct PairsArgs {
    /// Built-in kernels to measure, comma-separated, or `all`. Default: all kernels, unless
    /// --command is given (then only the commands).
    #[arg(long, short = 'w')]
    pub workloads: Option<String>,
    /// A command workload NAME=COMMAND LINE (repeatable), started afresh for every run; its
    /// standard output is discarded. Example: --command gz='gzip -9 -c big.tar'.
    #[arg(long = "command", value_name = "NAME=CMD")]
    pub commands: Vec<String>,
    /// Placements: siblings (SMT threads of one core), cores (two cores, separate packages
    /// where possible), timeshare (both on one CPU), a comma-separated list, or `all`.
    /// Placements the machine cannot provide are skipped with the reason.
    #[arg(long, short_alias = 'p', default_value = "all")]
    pub placement: String,
    /// Logical CPUs the measurement may use (kernel list syntax); default: every online CPU
    /// this process may run on.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
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
    pub work: Vec<String>,
    /// Footprint of one kernel, KERNEL=SIZE (repeatable), e.g. pointer-chase=16MiB.
    #[arg(long = "footprint", value_name = "KERNEL=SIZE")]
    pub footprint: Vec<String>,
    /// Largest random start delay of a pair's workloads, in milliseconds (0 starts both at
    /// once). Default: half the longer solo run time of the pair.
    #[arg(long)]
    pub stagger_ms: Option<f64>,
    /// Events to count per run: a comma-separated list, `default`, `all` or `none`.
    #[arg(long, short = 'e', default_value = "default")]
    pub events: String,
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
    /// Write the matrix file (the format `smtsched matrix` writes and the OS simulator reads).
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

pub fn run_host(a: HostArgs) -> Result<()> {
    match a.action {
        HostAction::Topology(t) => topology(t),
        HostAction::Events(e) => events(e),
        HostAction::Counters(c) => counters(c),
        HostAction::Kernels(k) => kernels(k),
        HostAction::Kernel(k) => kernel(k),
        HostAction::Loop(l) => run_loop(l),
        HostAction::SchedTask(t) => {
            let spec: smtsched_host::schedrun::TaskProcessSpec =
                serde_json::from_str(&t.spec).map_err(|e| bad_input(format!("--spec: {e}")))?;
            Ok(smtsched_host::schedrun::run_task_process(&spec)?)
        }
    }
}

pub fn run_measure(a: MeasureArgs) -> Result<()> {
    match a.action {
        MeasureAction::Pairs(p) => pairs(*p),
        MeasureAction::Sched(s) => super::sched::sched(*s),
        MeasureAction::Server(s) => super::server::server(*s),
    }
}

/// Runs the counted command in a process group of its own that dies with us; stops it on
/// Ctrl-C or SIGTERM, and once it exits kills what it left running in its group.
fn run_counted_command(command: &[String]) -> Result<std::process::ExitStatus> {
    use smtsched_host::procgroup::{group_members, spawn_group, stop_group};
    let stop = Shutdown::install().context("installing signal handlers")?;
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..]);
    let mut child = spawn_group(&mut cmd, None)
        .with_context(|| format!("cannot run {:?}", command.join(" ")))?;
    let pgid = child.id() as i32;
    let status = loop {
        if let Some(sig) = stop.requested() {
            let killed = stop_group(&mut child, libc::SIGTERM, Duration::from_secs(2));
            return Err(smtsched_host::HostError::Interrupted {
                signal: sig,
                children: killed.max(1),
            }
            .into());
        }
        if let Some(s) = child.try_wait()? {
            break s;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let left = group_members(pgid);
    if !left.is_empty() {
        // SAFETY: kill has no memory preconditions; the group is the command's own.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
        eprintln!(
            "note: killed {} process(es) the command left running in its process group",
            left.len()
        );
    }
    Ok(status)
}

// ---------------------------------------------------------------------------------------------
// host topology

fn read_topology(root: &Path) -> Result<Topology> {
    Ok(Topology::from_sysfs(root)?)
}

fn size_text(bytes: Option<u64>) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    match bytes {
        None => "-".into(),
        Some(b) if b >= GIB && b % GIB == 0 => format!("{} GiB", b / GIB),
        Some(b) if b >= GIB => format!("{:.1} GiB", b as f64 / GIB as f64),
        Some(b) if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        Some(b) if b >= MIB => format!("{:.1} MiB", b as f64 / MIB as f64),
        Some(b) if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        Some(b) => format!("{b} B"),
    }
}

fn topology(a: TopologyArgs) -> Result<()> {
    let t = read_topology(&a.sysfs_root)?;
    if let Some(path) = &a.machine_toml {
        let template = super::machine(&a.template, &[])?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "this-machine".into());
        let text = smtsched_host::machine_file::machine_toml(&t, &name, &template)?;
        super::write_file(path, text.as_bytes())?;
    }
    if a.json {
        return json_out(&t);
    }
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    out(&format!(
        "{}: {} online ({}), {} offline{}; {}, {}, {} thread(s) per core{}; {}\n",
        t.cpu_model.as_deref().unwrap_or("unknown CPU"),
        plural(t.online.len(), "logical CPU"),
        t.online,
        t.offline.len(),
        if t.offline.is_empty() {
            String::new()
        } else {
            format!(" ({})", t.offline)
        },
        if t.packages.is_empty() {
            "packages unknown".to_string()
        } else {
            plural(t.packages.len(), "package")
        },
        plural(t.cores.len(), "core"),
        t.threads_per_core(),
        if t.has_smt() { " (SMT)" } else { " (no SMT)" },
        plural(t.numa_nodes.len(), "NUMA node"),
    ))?;
    let opt = |v: Option<u32>| v.map_or("-".to_string(), |x| x.to_string());
    let mut cores = Table::new([
        "core",
        "core_id",
        "package",
        "package_id",
        "threads",
        "cpus",
    ]);
    for (i, c) in t.cores.iter().enumerate() {
        cores.row([
            i.to_string(),
            opt(c.id),
            c.package.map_or("-".into(), |p| p.to_string()),
            c.package
                .and_then(|p| t.packages[p].id)
                .map_or("-".into(), |x| x.to_string()),
            c.cpus.len().to_string(),
            c.cpus.to_string(),
        ]);
    }
    out("\nCores (cpus = sibling threads):\n")?;
    out(&cores.render())?;
    let mut caches = Table::new(["cache", "size", "ways", "line", "instances", "shared by"]);
    let mut by_label: BTreeMap<(u8, smtsched_host::CacheKind), Vec<&smtsched_host::Cache>> =
        BTreeMap::new();
    for c in &t.caches {
        by_label.entry((c.level, c.kind)).or_default().push(c);
    }
    for list in by_label.values() {
        let c = list[0];
        let groups: Vec<String> = list.iter().map(|c| c.cpus.to_string()).collect();
        let shown = if groups.len() > 8 {
            format!("{} … ({} more)", groups[..8].join(" | "), groups.len() - 8)
        } else {
            groups.join(" | ")
        };
        caches.row([
            c.label(),
            size_text(c.size_bytes),
            opt(c.ways),
            c.line_bytes.map_or("-".into(), |l| format!("{l} B")),
            list.len().to_string(),
            shown,
        ]);
    }
    if !t.caches.is_empty() {
        out("\nCaches:\n")?;
        out(&caches.render())?;
    }
    let mut nodes = Table::new(["node", "memory", "cpus"]);
    for n in &t.numa_nodes {
        nodes.row([
            n.id.to_string(),
            size_text(n.memory_bytes),
            n.cpus.to_string(),
        ]);
    }
    out("\nNUMA nodes:\n")?;
    out(&nodes.render())?;
    for n in &t.notes {
        out(&format!("note: {n}\n"))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// host events / counters

fn status_text(s: &EventStatus) -> String {
    s.to_string()
}

fn events(a: EventsArgs) -> Result<()> {
    let status = perf::probe(Event::ALL);
    if a.json {
        let v: Vec<_> = status
            .iter()
            .map(|(e, s)| serde_json::json!({"event": e, "hardware": e.is_hardware(), "description": e.description(), "support": s}))
            .collect();
        return json_out(&v);
    }
    let mut t = Table::new(["event", "kind", "status", "description"]);
    for (e, s) in &status {
        t.row([
            e.name().to_string(),
            if e.is_hardware() {
                "hardware"
            } else {
                "software"
            }
            .to_string(),
            status_text(s),
            e.description().to_string(),
        ]);
    }
    out(&t.render())?;
    let hw = status
        .iter()
        .filter(|(e, s)| e.is_hardware() && s.is_supported())
        .count();
    if hw == 0 {
        out("\nNo hardware event can be counted here (no PMU, as in most virtual machines, or not permitted); software events still work.\n")?;
    }
    Ok(())
}

fn counters(a: CountersArgs) -> Result<()> {
    let events = Event::parse_list(&a.events)?;
    if events.is_empty() {
        return Err(bad_input("--events none: nothing to count"));
    }
    let (target, what) = match (a.pid, a.cpu, a.command.is_empty()) {
        (Some(_), _, false) | (_, Some(_), false) => {
            return Err(bad_input(
                "give either --pid/--cpus or a command after --, not both",
            ));
        }
        (Some(pid), None, true) => (
            Target::Process(pid),
            format!("process {pid} for {} ms", a.duration_ms),
        ),
        (None, Some(cpu), true) => {
            let topo = Topology::live()?;
            topo.check_online(&std::iter::once(cpu).collect(), &format!("--cpus {cpu}"))?;
            (
                Target::Cpu(cpu),
                format!("CPU {cpu} for {} ms", a.duration_ms),
            )
        }
        (None, None, false) => (
            Target::SelfAndDescendants,
            format!("command {:?}", a.command.join(" ")),
        ),
        (None, None, true) => {
            return Err(bad_input(
                "nothing to count: give --pid PID, --cpus N, or a command after --",
            ));
        }
        (Some(_), Some(_), _) => unreachable!("clap rejects --pid with --cpus"),
    };
    if !a.command.is_empty() {
        looper::resolve_command(&a.command)?;
    }
    let mut set = CounterSet::open(&events, target)?;
    let started = std::time::Instant::now();
    set.enable()?;
    let before = set.read()?;
    let mut exit = None;
    if a.command.is_empty() {
        std::thread::sleep(Duration::from_millis(a.duration_ms));
    } else {
        exit = Some(run_counted_command(&a.command)?);
    }
    let after = set.read()?;
    set.disable()?;
    let elapsed = started.elapsed().as_secs_f64();
    let delta = after.since(&before);
    if a.json {
        let rows: Vec<_> = set
            .status()
            .iter()
            .map(|(e, s)| {
                let r = delta.0.get(e);
                serde_json::json!({
                    "event": e,
                    "support": s,
                    "value": r.and_then(|r| r.scaled()),
                    "raw_count": r.map(|r| r.count),
                    "running_fraction": r.and_then(|r| r.running_fraction()),
                })
            })
            .collect();
        return json_out(
            &serde_json::json!({"target": what, "elapsed_seconds": elapsed, "exit_status": exit.map(|s| s.to_string()), "events": rows}),
        );
    }
    out(&format!("Counters of {what} ({elapsed:.3} s)\n\n"))?;
    let mut t = Table::new(["event", "value", "on PMU", "status"]);
    for (e, s) in set.status() {
        let r = delta.0.get(e);
        let value = match (s.is_supported(), r.and_then(|r| r.scaled())) {
            (false, _) => "-".to_string(),
            (true, Some(v)) => format!("{v:.0}"),
            (true, None) => "not counted".to_string(),
        };
        let frac = r
            .and_then(|r| r.running_fraction())
            .map_or("-".into(), |f| format!("{:.0}%", f * 100.0));
        t.row([e.name().to_string(), value, frac, status_text(s)]);
    }
    out(&t.render())?;
    if let Some(st) = exit.filter(|s| !s.success()) {
        out(&format!("note: the command exited with {st}\n"))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// host kernels / kernel / loop

fn kernels(a: KernelsArgs) -> Result<()> {
    if a.json {
        let v: Vec<_> = KernelKind::ALL
            .iter()
            .map(|k| {
                serde_json::json!({
                    "name": k.name(), "description": k.description(), "work_unit": k.work_unit(),
                    "default_work": k.default_work(), "default_footprint_bytes": k.default_footprint(),
                })
            })
            .collect();
        return json_out(&v);
    }
    let mut t = Table::new(["kernel", "work per run", "footprint", "what it stresses"]);
    for k in KernelKind::ALL {
        t.row([
            k.name().to_string(),
            format!("{} {}", k.default_work(), k.work_unit()),
            size_text(Some(k.default_footprint())),
            k.description().to_string(),
        ]);
    }
    out(&t.render())
}

/// Parses `4096`, `64KiB`, `16MiB`, `1GiB` (and `K`, `M`, `G`, `KB`… as binary units too).
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| {
        bad_input(format!(
            "size {text:?}: expected a number of bytes, e.g. 65536, 64KiB or 16MiB"
        ))
    })?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(bad_input(format!(
                "size {text:?}: unknown unit {unit:?} (use KiB, MiB or GiB)"
            )))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| bad_input(format!("size {text:?} is too large")))
}

fn kernel(a: KernelArgs) -> Result<()> {
    let kind = KernelKind::parse(&a.name)?;
    let mut spec = KernelSpec::new(kind);
    if let Some(w) = a.work {
        spec.work = w;
    }
    if let Some(f) = &a.footprint {
        spec.footprint_bytes = parse_size(f)?;
    }
    spec.validate()?;
    let events = Event::parse_list(&a.events)?;
    if let Some(cpu) = a.cpu {
        let topo = Topology::live()?;
        let set: CpuSet = std::iter::once(cpu).collect();
        topo.check_online(&set, &format!("--cpus {cpu}"))?;
        affinity::set_affinity(0, &set)?;
        affinity::verify_affinity(std::process::id() as i32, &set)?;
    }
    let mut counters = CounterSet::open(&events, Target::SelfAndDescendants)?;
    counters.enable()?;
    let t = std::time::Instant::now();
    let mut prepared = spec.prepare(a.seed)?;
    let setup = t.elapsed().as_secs_f64();
    let mut runs = Vec::new();
    for _ in 0..a.runs {
        let before = counters.read()?;
        let r = prepared.timed_run();
        let c = counters.read()?.since(&before).scaled();
        runs.push((r, c));
    }
    if a.json {
        let v: Vec<_> = runs
            .iter()
            .map(|(r, c)| {
                serde_json::json!({"seconds": r.seconds, "checksum": r.checksum, "work_per_second": spec.work as f64 / r.seconds,
                "counters": c.iter().map(|(e, v)| (e.name(), v)).collect::<BTreeMap<_, _>>()})
            })
            .collect();
        return json_out(
            &serde_json::json!({"kernel": spec, "setup_seconds": setup, "events": counters.status(), "runs": v}),
        );
    }
    out(&format!(
        "{}: {} {} per run, footprint {} ({} bytes), data prepared in {:.3} s\n\n",
        kind,
        spec.work,
        kind.work_unit(),
        size_text(Some(spec.footprint_bytes)),
        spec.footprint_bytes,
        setup
    ))?;
    let shown: Vec<Event> = counters.supported();
    let mut header = vec![
        "run".to_string(),
        "seconds".into(),
        format!("{}/s", kind.work_unit()),
        "checksum".into(),
    ];
    header.extend(shown.iter().map(|e| e.name().to_string()));
    let mut t = Table::new(header);
    for (i, (r, c)) in runs.iter().enumerate() {
        let mut row = vec![
            (i + 1).to_string(),
            format!("{:.4}", r.seconds),
            format!("{:.4e}", spec.work as f64 / r.seconds),
            format!("{:016x}", r.checksum),
        ];
        row.extend(
            shown
                .iter()
                .map(|e| c.get(e).map_or("not counted".into(), |v| format!("{v:.0}"))),
        );
        t.row(row);
    }
    out(&t.render())?;
    let unsupported: Vec<String> = counters
        .status()
        .iter()
        .filter(|(_, s)| !s.is_supported())
        .map(|(e, s)| format!("{e} ({s})"))
        .collect();
    if !unsupported.is_empty() {
        out(&format!("not counted: {}\n", unsupported.join("; ")))?;
    }
    Ok(())
}

fn run_loop(a: LoopArgs) -> Result<()> {
    let spec: LoopSpec =
        serde_json::from_str(&a.spec).map_err(|e| bad_input(format!("--spec: {e}")))?;
    looper::become_looper(spec.parent_pid)?;
    let mut stdout = std::io::stdout().lock();
    looper::run(&spec, &mut stdout)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// measure pairs

fn parse_placements(text: &str) -> Result<Vec<Placement>> {
    if text.trim() == "all" {
        return Ok(vec![
            Placement::Siblings,
            Placement::Cores,
            Placement::Timeshare,
        ]);
    }
    let mut out = Vec::new();
    for part in text.split(',') {
        let p: Placement = part
            .trim()
            .parse()
            .map_err(|e: String| bad_input(format!("--placement: {e}")))?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

fn key_value<'a>(opt: &str, s: &'a str) -> Result<(&'a str, &'a str)> {
    s.split_once('=')
        .map(|(k, v)| (k.trim(), v.trim()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| bad_input(format!("{opt} {s:?}: expected NAME=VALUE")))
}

fn workload_defs(a: &PairsArgs) -> Result<Vec<WorkloadDef>> {
    if !(a.work_scale > 0.0 && a.work_scale.is_finite()) {
        return Err(bad_input(format!(
            "--work-scale {}: must be a positive number",
            a.work_scale
        )));
    }
    let kinds: Vec<KernelKind> = match a.workloads.as_deref() {
        None if !a.commands.is_empty() => Vec::new(),
        None | Some("all") => KernelKind::ALL.to_vec(),
        Some(list) => list
            .split(',')
            .map(|n| KernelKind::parse(n.trim()).map_err(anyhow::Error::new))
            .collect::<Result<_>>()?,
    };
    let mut specs: Vec<KernelSpec> = kinds
        .iter()
        .map(|&k| {
            let mut s = KernelSpec::new(k);
            s.work = ((s.work as f64 * a.work_scale).round() as u64).max(1);
            s
        })
        .collect();
    let find = |specs: &mut Vec<KernelSpec>, opt: &str, name: &str| -> Result<usize> {
        let k = KernelKind::parse(name).map_err(|e| bad_input(format!("{opt} {name}=…: {e}")))?;
        specs.iter().position(|s| s.kind == k).ok_or_else(|| {
            bad_input(format!(
                "{opt} {name}=…: kernel {name} is not among the workloads"
            ))
        })
    };
    for w in &a.work {
        let (name, v) = key_value("--work", w)?;
        let i = find(&mut specs, "--work", name)?;
        specs[i].work = v
            .parse()
            .map_err(|_| bad_input(format!("--work {w:?}: {v:?} is not a whole number")))?;
    }
    for f in &a.footprint {
        let (name, v) = key_value("--footprint", f)?;
        let i = find(&mut specs, "--footprint", name)?;
        specs[i].footprint_bytes = parse_size(v)?;
    }
    let mut defs: Vec<WorkloadDef> = specs
        .into_iter()
        .map(|s| WorkloadDef {
            name: s.kind.name().to_string(),
            work: Work::Kernel(s),
        })
        .collect();
    for c in &a.commands {
        let (name, line) = key_value("--command", c)?;
        let argv =
            looper::split_command(line).map_err(|e| bad_input(format!("--command {name}: {e}")))?;
        looper::resolve_command(&argv).map_err(|e| bad_input(format!("--command {name}: {e}")))?;
        defs.push(WorkloadDef {
            name: name.to_string(),
            work: Work::Command(argv),
        });
    }
    if defs.is_empty() {
        return Err(bad_input("no workloads: give --workloads and/or --command"));
    }
    Ok(defs)
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

fn pairs(a: PairsArgs) -> Result<()> {
    let placements = parse_placements(&a.placement)?;
    let defs = workload_defs(&a)?;
    let events = Event::parse_list(&a.events)?;
    let topo = read_topology(&a.sysfs_root)?;
    let requested = match &a.cpus {
        Some(text) => Some(CpuSet::parse(text).map_err(|e| bad_input(format!("--cpus: {e}")))?),
        None => None,
    };
    let what = format!("--cpus {}", a.cpus.as_deref().unwrap_or(""));
    let cpus = measure::allowed_cpus(&topo, requested.as_ref(), &what)?;
    if let Some(s) = a.stagger_ms {
        if !(s >= 0.0 && s.is_finite()) {
            return Err(bad_input(format!(
                "--stagger-ms {s}: must be zero or a positive number"
            )));
        }
    }
    if !(a.timeout_s > 0.0 && a.timeout_s.is_finite()) {
        return Err(bad_input(format!(
            "--timeout-s {}: must be a positive number of seconds",
            a.timeout_s
        )));
    }
    let cfg = MeasureConfig {
        workloads: defs,
        placements: placements.clone(),
        cpus,
        solo_runs: a.solo_runs,
        timed_runs: a.timed_runs,
        stagger_max: a.stagger_ms.map(|ms| Duration::from_secs_f64(ms / 1000.0)),
        events,
        seed: a.seed,
        exe: std::env::current_exe()
            .context("cannot find the smtsched binary to start workload processes")?,
        timeout: Duration::from_secs_f64(a.timeout_s),
        realtime: a.realtime,
        rr_slice_ms: a.rr_slice_ms,
        state_dir: a
            .state_dir
            .clone()
            .unwrap_or_else(smtsched_host::rundir::default_state_dir),
    };
    let plan = measure::plan(&topo, &cfg.cpus, &cfg.placements)?;
    if !plan.placements.is_empty() {
        for (p, why) in &plan.skipped {
            eprintln!("smtsched: placement {p} skipped: {why}");
        }
    }
    let stop = Shutdown::install().context("cannot install the SIGINT/SIGTERM handler")?;
    let bar = progress_bar(
        None,
        "{msg:30} [{bar:30}] {pos}/{len} experiments, {elapsed} elapsed, ~{eta} left",
    )?;
    let started = std::time::Instant::now();
    let m = measure::measure(&topo, &cfg, &stop, &Bar(bar.clone()));
    bar.finish_and_clear();
    let m = m?;
    let elapsed = started.elapsed().as_secs_f64();
    write_outputs(&a, &m)?;
    if a.json {
        let summaries: BTreeMap<String, _> = m
            .matrices
            .iter()
            .map(|x| (x.placement.to_string(), summarize(x)))
            .collect();
        let warnings = measure::contention_warnings(&m, &cfg);
        return json_out(
            &serde_json::json!({"measurement": m, "summaries": summaries, "warnings": warnings, "elapsed_seconds": elapsed}),
        );
    }
    print_measurement(&cfg, &m, elapsed)?;
    let slice_ms = cfg
        .rr_slice_ms
        .map(u64::from)
        .or_else(smtsched_host::affinity::rr_quantum_ms);
    if let (Some(_), Some(q)) = (cfg.realtime, slice_ms) {
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
    }
    let warnings = measure::contention_warnings(&m, &cfg);
    if !warnings.is_empty() {
        out(&format!(
            "\nwarning: other processes competed for the CPUs, so these ratios are unreliable (the thesis minimised background activity; as root, --realtime keeps other processes off the CPUs):\n  {}\n",
            warnings.join("\n  ")
        ))?;
    }
    Ok(())
}

fn write_outputs(a: &PairsArgs, m: &Measurement) -> Result<()> {
    let several = m.matrices.len() > 1;
    let wanted = MatrixFiles {
        json: a.output.as_deref(),
        csv: a.csv.as_deref(),
        pairs_csv: a.pairs_csv.as_deref(),
        svg: a.svg.as_deref(),
    };
    // Render everything first, so that a failure leaves no partial set of files.
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for x in &m.matrices {
        files.extend(wanted.render(x, |p| per_placement(p, x.placement, several))?);
    }
    for (path, text) in files {
        write_file(&path, text.as_bytes())?;
    }
    Ok(())
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
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_size("16M").unwrap(), 16 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("MiB").is_err());
    }

    #[test]
    fn sizes_for_people() {
        assert_eq!(size_text(Some(48 << 10)), "48 KiB");
        assert_eq!(size_text(Some(11 << 20)), "11 MiB");
        assert_eq!(size_text(Some(57088 << 20)), "55.8 GiB");
        assert_eq!(size_text(Some(64 << 30)), "64 GiB");
        assert_eq!(size_text(Some(1000)), "1000 B");
        assert_eq!(size_text(None), "-");
    }

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

    #[test]
    fn placements_parse() {
        assert_eq!(parse_placements("all").unwrap().len(), 3);
        assert_eq!(
            parse_placements("smp,rr").unwrap(),
            vec![Placement::Cores, Placement::Timeshare]
        );
        assert!(parse_placements("diagonal").is_err());
    }
}
