//! The co-run measurement harness: the thesis §3.3.1 protocol on real CPUs.
//!
//! - **Solo baselines**: each workload alone on one logical CPU (its siblings idle), one warm-up
//!   run then N timed runs; the median is the baseline.
//! - **Pairs**: both workloads loop, each in its own process pinned to its CPU, after a random
//!   start delay (staggered start). Timing begins once both have completed one run: a run counts
//!   if it starts at or after that moment, and the first K such runs of each side are kept. A
//!   side that has its K runs keeps looping until the other has too, so that every kept run ran
//!   against a busy partner.
//! - **PR** of a side = median solo run time / median of its K timed co-run times (medians, so
//!   that one disturbed run — an interrupt storm, real-time throttling — does not move the ratio).
//! - **Placements**: sibling threads of one core (SMT), two cores (SMP; on separate packages
//!   where there are several), or both time-sharing one logical CPU.
//!
//! Every looper is a child process in its own process group, set to die with the harness. On
//! an error, a signal or a panic the harness kills each group and reaps every process, and it is
//! a child subreaper so that a workload's own children are reaped too.

use crate::affinity;
use crate::error::{HostError, Result};
use crate::looper::{LoopMessage, LoopSpec, Work};
use crate::perf::{Event, EventStatus, Reading};
use crate::procgroup::{become_subreaper, reap_orphans, OrphanSweep};
use crate::shutdown::Shutdown;
use crate::topology::{SysfsTopology, Topology};
use serde::Serialize;
use smtsched_model::matrix::{
    is_performance_ratio, PairRecord, Placement, PrMatrix, SoloRecord, MAX_PR, PR_MATRIX_FORMAT,
};
use smtsched_model::CpuSet;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A workload of the matrix: a name and what to run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadDef {
    pub name: String,
    pub work: Work,
}

impl WorkloadDef {
    /// How the workload is described in the matrix settings.
    pub fn describe(&self) -> String {
        match &self.work {
            Work::Kernel(k) => format!(
                "built-in kernel {}: {} {} per run, footprint {} bytes",
                k.kind,
                k.work,
                k.kind.work_unit(),
                k.footprint_bytes
            ),
            Work::Command(argv) => format!("command: {}", argv.join(" ")),
            Work::Hold => "placeholder".into(),
        }
    }
}

/// What to measure and how.
#[derive(Clone, Debug)]
pub struct MeasureConfig {
    pub workloads: Vec<WorkloadDef>,
    /// Placements asked for; those the machine cannot provide are skipped with a reason.
    pub placements: Vec<Placement>,
    /// Logical CPUs the harness may use (validated: online and allowed).
    pub cpus: CpuSet,
    /// Timed solo runs (after one warm-up run).
    pub solo_runs: u32,
    /// Timed runs of each side of a pair.
    pub timed_runs: u32,
    /// Largest random start delay; `None`: half the longer solo median of the pair.
    pub stagger_max: Option<Duration>,
    pub events: Vec<Event>,
    pub seed: u64,
    /// The `smtsched` binary, started as `smtsched host loop --spec JSON`.
    pub exe: PathBuf,
    /// Longest one experiment (a solo baseline or a pair) may take.
    pub timeout: Duration,
    /// Run the workloads in the SCHED_RR real-time class at this priority (the thesis's
    /// round-robin runs); `None`: the normal class.
    pub realtime: Option<i32>,
    /// With `realtime`: the SCHED_RR time slice to set for the measurement (milliseconds),
    /// restored afterwards; `None` leaves `sched_rr_timeslice_ms` alone.
    pub rr_slice_ms: Option<u32>,
    /// Where the state file lives (the slice's original, for the next start after a SIGKILL).
    pub state_dir: PathBuf,
}

/// The CPUs each placement uses.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlacementCpus {
    pub placement: Placement,
    pub cpu_a: u32,
    pub cpu_b: u32,
}

/// Which placements can run on the allowed CPUs, and on which CPUs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// Where solo baselines run.
    pub solo_cpu: u32,
    pub placements: Vec<PlacementCpus>,
    /// Placements that cannot run here, with the reason.
    pub skipped: Vec<(Placement, String)>,
}

/// Chooses CPUs for each requested placement among `allowed`.
pub fn plan(topo: &Topology, allowed: &CpuSet, requested: &[Placement]) -> Result<Plan> {
    let allowed = allowed.intersection(&topo.online);
    let Some(first) = allowed.first() else {
        return Err(HostError::bad("no online CPU is available to measure on"));
    };
    let core_key = |cpu: u32| topo.core_of(cpu).map(|c| c.cpus.first());
    let package_key = |cpu: u32| topo.packages.iter().position(|p| p.cpus.contains(cpu));
    // One CPU per core (the first allowed thread), so that sibling threads stay idle.
    let mut per_core: Vec<u32> = Vec::new();
    for c in allowed.iter() {
        if !per_core
            .iter()
            .any(|&p| core_key(p) == core_key(c) && core_key(c).is_some())
        {
            per_core.push(c);
        }
    }
    let siblings = topo.cores.iter().find_map(|core| {
        let mine: Vec<u32> = core.cpus.iter().filter(|c| allowed.contains(*c)).collect();
        (mine.len() >= 2).then(|| (mine[0], mine[1]))
    });
    let cores = {
        let a = per_core[0];
        per_core
            .iter()
            .skip(1)
            .find(|&&b| package_key(b) != package_key(a))
            .or_else(|| per_core.get(1))
            .map(|&b| (a, b))
    };
    let mut out = Plan {
        solo_cpu: cores.map_or(first, |c| c.0),
        placements: Vec::new(),
        skipped: Vec::new(),
    };
    for &p in requested {
        let cpus = match p {
            Placement::Siblings => siblings.ok_or_else(|| {
                if topo.has_smt() {
                    format!("no core has two of the allowed CPUs {allowed} as sibling threads")
                } else {
                    format!("no core has two online threads: this machine has no SMT ({} CPUs, 1 thread per core)", topo.online.len())
                }
            }),
            Placement::Cores => cores.ok_or_else(|| format!("needs two cores, but the allowed CPUs {allowed} are on one core")),
            Placement::Timeshare => Ok((out.solo_cpu, out.solo_cpu)),
        };
        match cpus {
            Ok((a, b)) => out.placements.push(PlacementCpus {
                placement: p,
                cpu_a: a,
                cpu_b: b,
            }),
            Err(why) => out.skipped.push((p, why)),
        }
    }
    Ok(out)
}

/// The CPUs to measure on: `requested` (checked to exist, be online and be allowed for this
/// process) or, by default, every online CPU this process may use.
pub fn allowed_cpus(topo: &Topology, requested: Option<&CpuSet>, what: &str) -> Result<CpuSet> {
    let mine = affinity::get_affinity(0)?;
    match requested {
        Some(req) => {
            topo.check_online(req, what)?;
            if let Some(c) = req.iter().find(|c| !mine.contains(*c)) {
                return Err(HostError::bad(format!(
                    "{what}: CPU {c} is not in this process's allowed CPUs ({mine})"
                )));
            }
            Ok(req.clone())
        }
        None => Ok(mine.intersection(&topo.online)),
    }
}

/// One side's kept runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideResult {
    pub pid: i32,
    pub cpu: u32,
    /// Durations of the kept runs, seconds.
    pub run_seconds: Vec<f64>,
    /// Mean per kept run of each event counted in every kept run, scaled for multiplexing.
    pub counters: BTreeMap<Event, f64>,
    pub events: Vec<(Event, EventStatus)>,
    /// CPU time over wall time of the kept runs (from `task_clock_ns`), if counted: about 1 for
    /// a CPU-bound workload that had its CPU to itself, about 0.5 when time-shared. Lower than
    /// expected means other processes competed for the CPU.
    pub cpu_share: Option<f64>,
}

/// A solo baseline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SoloResult {
    pub workload: String,
    pub median_seconds: f64,
    pub side: SideResult,
}

/// One pair in one placement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairResult {
    pub placement: Placement,
    pub a: usize,
    pub b: usize,
    pub pr_a: f64,
    pub pr_b: f64,
    pub side_a: SideResult,
    pub side_b: SideResult,
    /// Start delays drawn for the staggered start, milliseconds.
    pub delays_ms: [f64; 2],
}

/// Everything one `measure pairs` produced.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measurement {
    pub plan: Plan,
    pub solo: Vec<SoloResult>,
    pub pairs: Vec<PairResult>,
    /// One matrix per placement that ran.
    pub matrices: Vec<PrMatrix>,
}

/// Progress reports, for a progress bar.
pub trait Progress {
    /// The number of experiments (solo baselines + pairs × placements) about to run.
    fn start(&self, _experiments: u64) {}
    /// One experiment finished.
    fn done(&self, _label: &str) {}
}

/// No progress reports.
pub struct NoProgress;
impl Progress for NoProgress {}

/// Runs the whole protocol.
pub fn measure(
    topo: &Topology,
    cfg: &MeasureConfig,
    stop: &Shutdown,
    progress: &dyn Progress,
) -> Result<Measurement> {
    validate(cfg)?;
    let plan = plan(topo, &cfg.cpus, &cfg.placements)?;
    if plan.placements.is_empty() {
        let why: Vec<String> = plan
            .skipped
            .iter()
            .map(|(p, w)| format!("placement {p} is unavailable: {w}"))
            .collect();
        return Err(HostError::bad(why.join("; ")));
    }
    become_subreaper();
    // Declared first, dropped last: on every return, after every workload has been stopped.
    let _orphans = OrphanSweep;
    for line in crate::leftovers::clean_up_after_dead(&cfg.state_dir) {
        eprintln!("{line}");
    }
    // Only one command at a time may change the machine-wide time slice.
    let _lock = match cfg.rr_slice_ms {
        Some(_) => Some(crate::leftovers::lock("rr-slice")?),
        None => None,
    };
    let _slice = match (cfg.realtime, cfg.rr_slice_ms) {
        (Some(_), Some(ms)) => Some(affinity::RrSlice::set(ms, &cfg.state_dir)?),
        (None, Some(_)) => return Err(HostError::bad("--rr-slice-ms needs --realtime")),
        _ => None,
    };
    // Above the workloads, so that the harness (and the reader threads it starts) can always
    // read their reports and stop them, even where real-time throttling is off.
    let _harness_priority = match cfg.realtime {
        Some(p) => Some(affinity::RoundRobinThread::raise((p + 1).min(99))?),
        None => None,
    };
    let n = cfg.workloads.len();
    let pairs_per_placement = n * (n + 1) / 2;
    progress.start((n + pairs_per_placement * plan.placements.len()) as u64);

    let hold = WorkloadDef {
        name: "placeholder".into(),
        work: Work::Hold,
    };
    let mut solo = Vec::new();
    for w in &cfg.workloads {
        let mut specs = vec![(
            w,
            loop_spec(cfg, w, plan.solo_cpu, cfg.solo_runs + 1, 0.0, 0),
        )];
        let in_use: CpuSet = std::iter::once(plan.solo_cpu).collect();
        specs.extend(
            hold_specs(topo, cfg, &in_use)
                .into_iter()
                .map(|h| (&hold, h)),
        );
        let sides = run_loopers(cfg, &specs, 1, stop, |st| {
            st[0].runs.len() > cfg.solo_runs as usize
        })?;
        let mut side = sides.into_iter().next().unwrap();
        // The first run is the warm-up.
        let timed: Vec<RunRecord> = side.runs.split_off(1);
        let result = side.finish(plan.solo_cpu, &timed);
        let median = median(&result.run_seconds);
        solo.push(SoloResult {
            workload: w.name.clone(),
            median_seconds: median,
            side: result,
        });
        progress.done(&format!("solo {}", w.name));
    }

    let mut rng = crate::kernels::SplitMix(cfg.seed);
    let mut pairs = Vec::new();
    for pc in &plan.placements {
        for a in 0..n {
            for b in a..n {
                let (wa, wb) = (&cfg.workloads[a], &cfg.workloads[b]);
                let stagger_ms = match cfg.stagger_max {
                    Some(d) => d.as_secs_f64() * 1000.0,
                    None => 0.5 * 1000.0 * solo[a].median_seconds.max(solo[b].median_seconds),
                };
                let mut draw = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * stagger_ms;
                let delays = [draw(), draw()];
                let seed_b = if a == b { 1 } else { 0 };
                let mut specs = vec![
                    (wa, loop_spec(cfg, wa, pc.cpu_a, 0, delays[0], 0)),
                    (wb, loop_spec(cfg, wb, pc.cpu_b, 0, delays[1], seed_b)),
                ];
                let in_use: CpuSet = [pc.cpu_a, pc.cpu_b].into_iter().collect();
                specs.extend(
                    hold_specs(topo, cfg, &in_use)
                        .into_iter()
                        .map(|h| (&hold, h)),
                );
                let k = cfg.timed_runs as usize;
                let sides = run_loopers(cfg, &specs, 2, stop, |st| timed_runs(st, k).is_some())?;
                let (ta, tb) =
                    timed_runs(&sides, k).expect("loop ended when both sides had their runs");
                let side_a = sides[0].finish(pc.cpu_a, &ta);
                let side_b = sides[1].finish(pc.cpu_b, &tb);
                let label = format!("{} {} + {}", pc.placement, wa.name, wb.name);
                let pr_a = plausible_pr(&label, &solo[a], &side_a)?;
                let pr_b = plausible_pr(&label, &solo[b], &side_b)?;
                pairs.push(PairResult {
                    placement: pc.placement,
                    a,
                    b,
                    pr_a,
                    pr_b,
                    side_a,
                    side_b,
                    delays_ms: delays,
                });
                progress.done(&label);
            }
        }
    }
    let matrices = plan
        .placements
        .iter()
        .map(|pc| build_matrix(topo, cfg, &plan, pc, &solo, &pairs))
        .collect();
    Ok(Measurement {
        plan,
        solo,
        pairs,
        matrices,
    })
}

/// The side's performance ratio (solo median over paired median), or an error where it is
/// above `MAX_PR`: no co-runner makes a program ten times faster than alone, so such a figure
/// means one of the medians is not representative (a descheduled vCPU during runs of a
/// millisecond, or a command whose runs differ).
fn plausible_pr(pair: &str, solo: &SoloResult, side: &SideResult) -> Result<f64> {
    let paired = median(&side.run_seconds);
    let pr = solo.median_seconds / paired;
    if is_performance_ratio(pr) && pr > 0.0 {
        return Ok(pr);
    }
    Err(HostError::Unusable(format!(
        "{pair}: {} has a performance ratio of {pr:.2} (solo median {:.3} ms, paired median {:.3} ms), \
         outside 0 to {MAX_PR}, so its solo and paired runs are not comparable (timing noise, or runs \
         that differ from one another); nothing written; raise --work-scale, --solo-runs or --timed-runs",
        solo.workload,
        solo.median_seconds * 1e3,
        paired * 1e3
    )))
}

/// Sides that got clearly less CPU than their placement gives them (other processes were
/// running), as warnings for people.
pub fn contention_warnings(m: &Measurement, cfg: &MeasureConfig) -> Vec<String> {
    let name = |i: usize| cfg.workloads[i].name.as_str();
    let mut out = Vec::new();
    let low = |share: Option<f64>, expected: f64| share.filter(|s| *s < 0.85 * expected);
    for s in &m.solo {
        if let Some(sh) = low(s.side.cpu_share, 1.0) {
            out.push(format!(
                "solo {}: ran only {:.0}% of the time on its CPU",
                s.workload,
                sh * 100.0
            ));
        }
    }
    for p in &m.pairs {
        let expected = if p.placement == Placement::Timeshare {
            0.5
        } else {
            1.0
        };
        for (i, side) in [(p.a, &p.side_a), (p.b, &p.side_b)] {
            if let Some(sh) = low(side.cpu_share, expected) {
                out.push(format!(
                    "{} {} + {}: {} ran only {:.0}% of the time on CPU {} (expected about {:.0}%)",
                    p.placement,
                    name(p.a),
                    name(p.b),
                    name(i),
                    sh * 100.0,
                    side.cpu,
                    expected * 100.0
                ));
            }
        }
    }
    out
}

fn validate(cfg: &MeasureConfig) -> Result<()> {
    if cfg.workloads.is_empty() {
        return Err(HostError::bad("no workloads to measure"));
    }
    let mut seen = std::collections::BTreeSet::new();
    for w in &cfg.workloads {
        if !seen.insert(&w.name) {
            return Err(HostError::bad(format!(
                "workload {:?} is named twice",
                w.name
            )));
        }
        match &w.work {
            Work::Kernel(k) => k.validate()?,
            Work::Hold => {
                return Err(HostError::bad(format!(
                    "workload {:?}: a placeholder is not a workload",
                    w.name
                )))
            }
            Work::Command(argv) => {
                crate::looper::resolve_command(argv)
                    .map_err(|e| HostError::bad(format!("workload {:?}: {e}", w.name)))?;
            }
        }
    }
    if cfg.solo_runs == 0 || cfg.timed_runs == 0 {
        return Err(HostError::bad(
            "--solo-runs and --timed-runs must be at least 1",
        ));
    }
    Ok(())
}

fn loop_spec(
    cfg: &MeasureConfig,
    w: &WorkloadDef,
    cpu: u32,
    runs: u32,
    delay_ms: f64,
    seed_offset: u64,
) -> LoopSpec {
    LoopSpec {
        work: w.work.clone(),
        cpus: Some(std::iter::once(cpu).collect()),
        runs,
        delay_ms,
        events: cfg.events.clone(),
        seed: cfg.seed.wrapping_add(seed_offset),
        parent_pid: Some(std::process::id() as i32),
        rr_priority: cfg.realtime,
    }
}

/// One run as a looper reported it.
#[derive(Clone, Debug)]
struct RunRecord {
    start_ns: u64,
    end_ns: u64,
    counters: BTreeMap<Event, Reading>,
}

/// What the harness knows about one looper.
#[derive(Clone, Debug, Default)]
struct SideState {
    pid: i32,
    ready: bool,
    events: Vec<(Event, EventStatus)>,
    runs: Vec<RunRecord>,
}

impl SideState {
    fn finish(&self, cpu: u32, kept: &[RunRecord]) -> SideResult {
        let run_seconds: Vec<f64> = kept
            .iter()
            .map(|r| (r.end_ns - r.start_ns) as f64 / 1e9)
            .collect();
        let mut counters = BTreeMap::new();
        for (e, status) in &self.events {
            if !status.is_supported() {
                continue;
            }
            let values: Option<Vec<f64>> = kept
                .iter()
                .map(|r| r.counters.get(e).and_then(Reading::scaled))
                .collect();
            if let Some(v) = values.filter(|v| !v.is_empty()) {
                counters.insert(*e, mean(&v));
            }
        }
        let shares: Option<Vec<f64>> = kept
            .iter()
            .map(|r| {
                let cpu_ns = r
                    .counters
                    .get(&Event::TaskClockNs)
                    .and_then(Reading::scaled)?;
                Some(cpu_ns / (r.end_ns - r.start_ns).max(1) as f64)
            })
            .collect();
        let cpu_share = shares.filter(|v| !v.is_empty()).map(|v| mean(&v));
        SideResult {
            pid: self.pid,
            cpu,
            run_seconds,
            counters,
            events: self.events.clone(),
            cpu_share,
        }
    }
}

/// The thesis's timed runs: once both sides have completed a run, the first `k` runs of each
/// that start at or after that moment. `None` until both have `k`.
fn timed_runs(st: &[SideState], k: usize) -> Option<(Vec<RunRecord>, Vec<RunRecord>)> {
    let t0 = st
        .iter()
        .map(|s| s.runs.first().map(|r| r.end_ns))
        .collect::<Option<Vec<u64>>>()?
        .into_iter()
        .max()?;
    let pick = |s: &SideState| -> Option<Vec<RunRecord>> {
        let v: Vec<RunRecord> = s
            .runs
            .iter()
            .filter(|r| r.start_ns >= t0)
            .take(k)
            .cloned()
            .collect();
        (v.len() == k).then_some(v)
    };
    Some((pick(&st[0])?, pick(&st[1])?))
}

enum Msg {
    Line(LoopMessage),
    Garbage(String),
    Eof,
}

/// Child processes that are killed (whole process group) and reaped when dropped.
struct Children {
    kids: Vec<Child>,
}

impl Children {
    /// Kills and reaps every child and whatever its process group still holds; returns how
    /// many children there were.
    fn stop_all(&mut self) -> usize {
        let n = self.kids.len();
        let groups: Vec<i32> = self.kids.iter().map(|c| c.id() as i32).collect();
        for &g in &groups {
            // SAFETY: plain kill(2) on a process group we created (the looper is its leader and
            // is not yet reaped, so the id cannot have been reused).
            unsafe { libc::kill(-g, libc::SIGKILL) };
        }
        for c in &mut self.kids {
            let _ = c.wait();
        }
        self.kids.clear();
        reap_orphans(&groups);
        n
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Starts one looper per spec and feeds their reports to `done` until it says enough.
/// With `--realtime`, placeholders for the allowed CPUs an experiment leaves idle, so that no
/// other process runs there meanwhile. SMT siblings of the CPUs in use are left idle instead:
/// a spinning sibling would take a share of the core.
fn hold_specs(topo: &Topology, cfg: &MeasureConfig, in_use: &CpuSet) -> Vec<LoopSpec> {
    let Some(priority) = cfg.realtime else {
        return Vec::new();
    };
    let busy_cores: CpuSet = in_use
        .iter()
        .flat_map(|c| topo.siblings_of(c).iter().collect::<Vec<_>>())
        .collect();
    cfg.cpus
        .intersection(&topo.online)
        .iter()
        .filter(|c| !in_use.contains(*c) && !busy_cores.contains(*c))
        .map(|c| LoopSpec {
            work: Work::Hold,
            cpus: Some(std::iter::once(c).collect()),
            runs: 0,
            delay_ms: 0.0,
            events: Vec::new(),
            seed: 0,
            parent_pid: Some(std::process::id() as i32),
            rr_priority: Some(priority),
        })
        .collect()
}

/// Starts one looper per spec (the first `measured` are measured, the rest are placeholders)
/// and feeds the measured ones' reports to `done` until it says enough.
fn run_loopers(
    cfg: &MeasureConfig,
    specs: &[(&WorkloadDef, LoopSpec)],
    measured: usize,
    stop: &Shutdown,
    done: impl Fn(&[SideState]) -> bool,
) -> Result<Vec<SideState>> {
    let mut children = Children { kids: Vec::new() };
    let (tx, rx) = mpsc::channel::<(usize, Msg)>();
    let mut stderr_bufs = Vec::new();
    for (i, (w, spec)) in specs.iter().enumerate() {
        let json = serde_json::to_string(spec).expect("loop specs serialise");
        let mut child = crate::looper::child_command(&cfg.exe, &["host", "loop", "--spec", &json])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                HostError::os(
                    format!("starting {} for workload {}", cfg.exe.display(), w.name),
                    e,
                )
            })?;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        children.kids.push(child);
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let msg = match serde_json::from_str::<LoopMessage>(&line) {
                    Ok(m) => Msg::Line(m),
                    Err(_) => Msg::Garbage(line),
                };
                if tx.send((i, msg)).is_err() {
                    return;
                }
            }
            let _ = tx.send((i, Msg::Eof));
        });
        let buf = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&buf);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            let mut r = stderr;
            while let Ok(n) = r.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                let mut b = sink.lock().unwrap();
                if b.len() < 16 * 1024 {
                    b.push_str(&String::from_utf8_lossy(&chunk[..n]));
                }
            }
        });
        stderr_bufs.push(buf);
    }
    drop(tx);
    let mut st: Vec<SideState> = vec![SideState::default(); specs.len()];
    let deadline = Instant::now() + cfg.timeout;
    let names: Vec<&str> = specs.iter().map(|(w, _)| w.name.as_str()).collect();
    let stderr_of = |i: usize| {
        let s = stderr_bufs[i].lock().unwrap();
        let s = s.trim();
        if s.is_empty() {
            String::new()
        } else {
            format!(" (stderr: {})", s.lines().last().unwrap_or(""))
        }
    };
    loop {
        if let Some(signal) = stop.requested() {
            let n = children.stop_all();
            return Err(HostError::Interrupted {
                signal,
                children: n,
            });
        }
        if done(&st[..measured]) {
            break;
        }
        if Instant::now() > deadline {
            return Err(HostError::Child(format!(
                "{} did not finish within {} s (raise --timeout-s, or shorten the runs)",
                names.join(" + "),
                cfg.timeout.as_secs_f64()
            )));
        }
        let (i, msg) = match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(m) => m,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(HostError::Child(format!(
                    "{}: every looper exited early",
                    names.join(" + ")
                )));
            }
        };
        match msg {
            Msg::Line(LoopMessage::Ready { pid, events, .. }) => {
                let want = specs[i].1.cpus.clone().unwrap_or_default();
                affinity::verify_affinity(pid, &want)
                    .map_err(|e| HostError::Child(format!("workload {}: {e}", names[i])))?;
                if specs[i].1.rr_priority.is_some() && !affinity::is_round_robin(pid)? {
                    return Err(HostError::Child(format!(
                        "workload {}: process {pid} is not in SCHED_RR",
                        names[i]
                    )));
                }
                st[i].pid = pid;
                st[i].ready = true;
                st[i].events = events;
            }
            Msg::Line(LoopMessage::Run {
                start_ns,
                end_ns,
                counters,
                ..
            }) => {
                st[i].runs.push(RunRecord {
                    start_ns,
                    end_ns,
                    counters,
                });
            }
            Msg::Line(LoopMessage::Error { message }) => {
                return Err(child_error(&specs[i].0.work, names[i], message));
            }
            Msg::Garbage(line) => {
                return Err(HostError::Child(format!(
                    "workload {}: unexpected output from the looper: {line:?}",
                    names[i]
                )));
            }
            Msg::Eof => {
                if !done(&st[..measured]) {
                    // Give the reader a moment in case the status is what matters.
                    std::thread::sleep(Duration::from_millis(20));
                    return Err(HostError::Child(format!(
                        "workload {}: looper exited after {} run(s){}",
                        names[i],
                        st[i].runs.len(),
                        stderr_of(i)
                    )));
                }
            }
        }
    }
    children.stop_all();
    st.truncate(measured);
    Ok(st)
}

fn child_error(work: &Work, name: &str, message: String) -> HostError {
    let msg = format!("workload {name}: {message}");
    match work {
        Work::Command(_) if message.contains("not found") || message.contains("cannot run") => {
            HostError::BadInput(msg)
        }
        _ => HostError::Child(msg),
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Median (mean of the middle two for an even count).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn counter_names(c: &BTreeMap<Event, f64>) -> BTreeMap<String, f64> {
    c.iter().map(|(e, v)| (e.name().to_string(), *v)).collect()
}

/// A short description of the machine for the matrix's `machine` field.
pub fn machine_label(topo: &Topology) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    format!(
        "{} ({} logical CPUs, {} per core){}",
        topo.cpu_model.as_deref().unwrap_or("unknown CPU"),
        topo.online.len(),
        topo.threads_per_core(),
        if host.is_empty() {
            String::new()
        } else {
            format!(" on {host}")
        }
    )
}

fn build_matrix(
    topo: &Topology,
    cfg: &MeasureConfig,
    plan: &Plan,
    pc: &PlacementCpus,
    solo: &[SoloResult],
    pairs: &[PairResult],
) -> PrMatrix {
    let mut settings = BTreeMap::new();
    let mut set = |k: &str, v: String| {
        settings.insert(k.to_string(), v);
    };
    set(
        "protocol",
        "Bulpin thesis §3.3.1: solo baseline = median of the timed runs after 1 warm-up run; each pair loops with a \
         staggered start, timing starts once both have completed one run, the first timed_runs complete runs of each \
         side that start after that are kept"
            .into(),
    );
    set("solo_runs", cfg.solo_runs.to_string());
    set("warmup_runs", "1".into());
    set("timed_runs", cfg.timed_runs.to_string());
    set(
        "solo_rate_unit",
        "runs per second: 1 / median solo run time".into(),
    );
    set(
        "pr",
        "median solo run time / median run time of the timed co-runs".into(),
    );
    set(
        "counters",
        "mean per kept run, scaled for multiplexing (count x time_enabled / time_running); only events counted in \
         every kept run; user+kernel mode unless an event's status says user only"
            .into(),
    );
    set("cpus", format!("{},{}", pc.cpu_a, pc.cpu_b));
    set("solo_cpu", plan.solo_cpu.to_string());
    set(
        "affinity",
        "set by each process for itself and verified with sched_getaffinity and /proc/PID/status"
            .into(),
    );
    set(
        "stagger_max_ms",
        cfg.stagger_max
            .map_or("half the longer solo median of the pair".into(), |d| {
                format!("{}", d.as_secs_f64() * 1000.0)
            }),
    );
    set("seed", cfg.seed.to_string());
    set(
        "scheduling",
        match cfg.realtime {
            None => "SCHED_OTHER (the normal class; other processes may share the CPUs)".into(),
            Some(p) => format!(
                "SCHED_RR priority {p}, time slice {} ms (sched_rr_timeslice_ms); allowed CPUs that an experiment \
                 leaves idle (except SMT siblings of those in use) are held by real-time placeholders",
                affinity::rr_quantum_ms().map_or("unknown".into(), |q| q.to_string())
            ),
        },
    );
    set(
        "events_requested",
        cfg.events
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(","),
    );
    let unsupported: Vec<String> = solo
        .first()
        .map(|s| &s.side.events)
        .into_iter()
        .flatten()
        .filter_map(|(e, st)| match st {
            EventStatus::Unsupported { reason } => Some(format!("{e}: {reason}")),
            _ => None,
        })
        .collect();
    if !unsupported.is_empty() {
        set("events_unsupported", unsupported.join("; "));
    }
    if let Some(release) =
        crate::sysfs::read_opt(std::path::Path::new("/proc/sys/kernel/osrelease"))
    {
        set("linux", release);
    }
    for w in &cfg.workloads {
        set(&format!("workload.{}", w.name), w.describe());
    }
    for (p, why) in &plan.skipped {
        set(&format!("skipped.{p}"), why.clone());
    }
    PrMatrix {
        format: PR_MATRIX_FORMAT.to_string(),
        source: "measured".into(),
        machine: machine_label(topo),
        placement: pc.placement,
        settings,
        workloads: cfg.workloads.iter().map(|w| w.name.clone()).collect(),
        solo: solo
            .iter()
            .map(|s| SoloRecord {
                workload: s.workload.clone(),
                rate: 1.0 / s.median_seconds,
                counters: counter_names(&s.side.counters),
            })
            .collect(),
        pairs: pairs
            .iter()
            .filter(|p| p.placement == pc.placement)
            .map(|p| PairRecord {
                a: p.a,
                b: p.b,
                pr_a: p.pr_a,
                pr_b: p.pr_b,
                counters_a: counter_names(&p.side_a.counters),
                counters_b: counter_names(&p.side_b.counters),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::RawSysfs;

    fn run(start: u64, end: u64) -> RunRecord {
        RunRecord {
            start_ns: start,
            end_ns: end,
            counters: BTreeMap::new(),
        }
    }

    #[test]
    fn timed_runs_follow_the_thesis() {
        // Side 0: runs of 10 starting at 0; side 1 starts at 5 with runs of 25.
        // Both have completed a run at t0 = 30. Side 0's runs starting at >= 30: 30, 40, 50.
        // Side 1's: 30, 55, 80.
        let s0 = SideState {
            runs: (0..10).map(|i| run(i * 10, i * 10 + 10)).collect(),
            ..SideState::default()
        };
        let s1 = SideState {
            runs: vec![run(5, 30), run(30, 55), run(55, 80)],
            ..SideState::default()
        };
        let st = vec![s0.clone(), s1.clone()];
        assert!(timed_runs(&st, 3).is_none(), "side 1 has only 2 timed runs");
        let mut s1b = s1;
        s1b.runs.push(run(80, 105));
        let (a, b) = timed_runs(&[s0, s1b], 3).unwrap();
        assert_eq!(
            a.iter().map(|r| r.start_ns).collect::<Vec<_>>(),
            vec![30, 40, 50]
        );
        assert_eq!(
            b.iter().map(|r| r.start_ns).collect::<Vec<_>>(),
            vec![30, 55, 80]
        );
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    fn raw_cpu(
        id: u32,
        pkg: i64,
        core: i64,
        core_cpus: &str,
        pkg_cpus: &str,
    ) -> crate::topology::RawCpu {
        crate::topology::RawCpu {
            id,
            online_file: None,
            package_id: Some(pkg),
            core_id: Some(core),
            package_cpus: Some(CpuSet::parse(pkg_cpus).unwrap()),
            core_cpus: Some(CpuSet::parse(core_cpus).unwrap()),
            caches: vec![],
        }
    }

    #[test]
    fn placements_on_an_smt_machine_and_on_one_without() {
        // 2 packages x 1 core x 2 threads, Northwood-style numbering: siblings 0+2 and 1+3.
        let smt = Topology::assemble(RawSysfs {
            cpus: vec![
                raw_cpu(0, 0, 0, "0,2", "0,2"),
                raw_cpu(1, 1, 0, "1,3", "1,3"),
                raw_cpu(2, 0, 0, "0,2", "0,2"),
                raw_cpu(3, 1, 0, "1,3", "1,3"),
            ],
            ..RawSysfs::default()
        });
        let all = [Placement::Siblings, Placement::Cores, Placement::Timeshare];
        let p = plan(&smt, &CpuSet::parse("0-3").unwrap(), &all).unwrap();
        let cpus: Vec<(Placement, u32, u32)> = p
            .placements
            .iter()
            .map(|c| (c.placement, c.cpu_a, c.cpu_b))
            .collect();
        assert_eq!(
            cpus,
            vec![
                (Placement::Siblings, 0, 2),
                (Placement::Cores, 0, 1),
                (Placement::Timeshare, 0, 0)
            ]
        );
        assert!(p.skipped.is_empty());

        let flat = Topology::assemble(RawSysfs {
            cpus: vec![raw_cpu(0, 0, 0, "0", "0-1"), raw_cpu(1, 0, 1, "1", "0-1")],
            ..RawSysfs::default()
        });
        let p = plan(&flat, &CpuSet::parse("0-1").unwrap(), &all).unwrap();
        assert_eq!(p.placements.len(), 2);
        assert_eq!(p.skipped.len(), 1);
        assert!(p.skipped[0].1.contains("no SMT"), "{}", p.skipped[0].1);
        // One allowed CPU: only time-sharing is possible.
        let p = plan(&flat, &CpuSet::parse("1").unwrap(), &all).unwrap();
        assert_eq!(
            p.placements.iter().map(|c| c.placement).collect::<Vec<_>>(),
            vec![Placement::Timeshare]
        );
        assert_eq!(p.placements[0].cpu_a, 1);
    }
}
