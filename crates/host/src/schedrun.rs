//! `measure sched`: a task set of busy loops and compute/sleep loops run on this machine's real
//! kernel, with nice levels, affinity masks and cgroup weights, and each task's share of CPU time
//! measured from `/proc/PID/schedstat` — what the simulator's present-day baseline is checked
//! against.
//!
//! Every task is a child process of the `smtsched` binary (`smtsched host sched-task`, hidden),
//! started stopped: the harness sets its nice level, affinity and cgroup, then starts every task
//! at once. The measurement covers `duration` after a `warmup`. Time the hypervisor stole and
//! CPU time other processes used on the CPUs in use are measured from `/proc/stat`; when they
//! exceed [`DISTURBED_FRACTION`] of the CPU time available, the result says the machine was
//! disturbed. Children die with the harness (`PR_SET_PDEATHSIG`), are killed and reaped on
//! success, error, SIGINT and SIGTERM, and cgroups are removed (a killed harness's groups by the
//! next run).

use crate::affinity;
use crate::cgroup::{Cgroup, CpuController};
use crate::error::{HostError, Result};
use crate::kernels::SplitMix;
use crate::shutdown::Shutdown;
use serde::{Deserialize, Serialize};
use smtsched_model::CpuSet;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Other processes and the hypervisor may take at most this share of the CPUs in use before a
/// run is called disturbed.
pub const DISTURBED_FRACTION: f64 = 0.05;

/// What one task does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Behaviour {
    /// Spins without pause.
    Busy,
    /// Computes for an exponentially distributed CPU time of mean `run_ms`, then sleeps for an
    /// exponentially distributed time of mean `wait_ms`, again and again (as the simulator's
    /// `block`).
    ComputeSleep { run_ms: f64, wait_ms: f64 },
}

/// One task of the set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RealTask {
    pub name: String,
    pub behaviour: Behaviour,
    pub nice: i32,
    /// Affinity; every CPU in use when `None`.
    pub cpus: Option<CpuSet>,
    /// Index into the set's groups.
    pub group: Option<usize>,
}

/// A cgroup and its weight (cgroup v2 `cpu.weight` units).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RealGroup {
    pub name: String,
    pub weight: u32,
}

#[derive(Clone, Debug)]
pub struct SchedRunConfig {
    pub tasks: Vec<RealTask>,
    pub groups: Vec<RealGroup>,
    /// CPUs the set runs on (tasks without affinity get these).
    pub cpus: CpuSet,
    pub warmup: Duration,
    pub duration: Duration,
    pub seed: u64,
    /// The `smtsched` binary, which runs each task.
    pub exe: PathBuf,
}

/// One task's outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskShare {
    pub name: String,
    /// CPU time and time waiting to run over the measured interval (schedstat).
    pub cpu_ns: u64,
    pub wait_ns: u64,
    /// CPU time as a fraction of one CPU over the interval.
    pub share: f64,
}

/// What a run measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SchedRunResult {
    pub tasks: Vec<TaskShare>,
    pub wall_ns: u64,
    /// Of the CPU time of the CPUs in use over the interval: the share the hypervisor stole and
    /// the share other processes (and the kernel's own threads) used.
    pub steal_fraction: f64,
    pub others_fraction: f64,
    /// Why the run is not trustworthy, if it is not.
    pub disturbed: Option<String>,
    /// Which cgroup interface carried the group weights.
    pub cgroup: Option<String>,
}

/// The instructions of one task process (passed as JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskProcessSpec {
    pub behaviour: Behaviour,
    pub seed: u64,
    pub parent_pid: i32,
}

/// The task process: says `ready`, waits for a line on standard input, then runs forever.
pub fn run_task_process(spec: &TaskProcessSpec) -> Result<()> {
    crate::looper::become_looper(Some(spec.parent_pid))?;
    println!("ready");
    std::io::stdout()
        .flush()
        .map_err(|e| HostError::os("writing to the harness", e))?;
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| HostError::os("reading from the harness", e))?;
    match spec.behaviour {
        Behaviour::Busy => loop {
            for _ in 0..4096 {
                std::hint::spin_loop();
            }
        },
        Behaviour::ComputeSleep { run_ms, wait_ms } => {
            let mut rng = SplitMix(spec.seed);
            let mut exp = |mean_ms: f64| {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                Duration::from_secs_f64(-mean_ms * 1e-3 * (1.0 - u).ln())
            };
            loop {
                let until = thread_cpu() + exp(run_ms);
                while thread_cpu() < until {
                    // About 20 µs of work between clock reads.
                    for _ in 0..20_000 {
                        std::hint::spin_loop();
                    }
                }
                std::thread::sleep(exp(wait_ms));
            }
        }
    }
}

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time and run delay of a process, nanoseconds (`/proc/PID/schedstat`).
pub fn schedstat(pid: i32) -> Result<(u64, u64)> {
    let path = format!("/proc/{pid}/schedstat");
    let text = std::fs::read_to_string(&path).map_err(|e| HostError::Read {
        path: path.clone().into(),
        source: e,
    })?;
    let mut f = text.split_whitespace().map(|v| v.parse::<u64>());
    match (f.next(), f.next()) {
        (Some(Ok(cpu)), Some(Ok(wait))) => Ok((cpu, wait)),
        _ => Err(HostError::Parse {
            path: path.into(),
            reason: format!("expected two numbers, found {text:?}"),
        }),
    }
}

/// Per CPU: (busy, steal) clock ticks from `/proc/stat`.
fn cpu_ticks() -> Result<Vec<(u32, u64, u64)>> {
    let text = std::fs::read_to_string("/proc/stat").map_err(|e| HostError::Read {
        path: "/proc/stat".into(),
        source: e,
    })?;
    let mut out = Vec::new();
    for l in text.lines() {
        let Some(rest) = l.strip_prefix("cpu") else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let Some(Ok(cpu)) = f.next().map(|c| c.parse::<u32>()) else {
            continue;
        };
        let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
        // user nice system idle iowait irq softirq steal …
        if v.len() >= 8 {
            out.push((cpu, v[0] + v[1] + v[2] + v[5] + v[6], v[7]));
        }
    }
    Ok(out)
}

/// Clock ticks per second of `/proc/stat`.
fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The running task processes: killed and reaped when dropped.
struct Tasks {
    children: Vec<Child>,
}

impl Drop for Tasks {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
        }
        for c in &mut self.children {
            let _ = c.wait();
        }
    }
}

/// The cgroups of a run: removed when dropped.
struct Groups {
    own: Option<Cgroup>,
}

impl Drop for Groups {
    fn drop(&mut self) {
        if let Some(g) = &self.own {
            let _ = g.remove();
        }
    }
}

fn validate(cfg: &SchedRunConfig) -> Result<()> {
    if cfg.tasks.is_empty() {
        return Err(HostError::bad("the task set is empty"));
    }
    for (i, t) in cfg.tasks.iter().enumerate() {
        if !(-20..=19).contains(&t.nice) {
            return Err(HostError::bad(format!(
                "task[{i}].nice = {}: nice must be -20 to 19",
                t.nice
            )));
        }
        if let Some(c) = &t.cpus {
            if c.is_empty() || !c.is_subset(&cfg.cpus) {
                return Err(HostError::bad(format!(
                    "task[{i}].cpus = {c}: not within the CPUs in use ({})",
                    cfg.cpus
                )));
            }
        }
        if let Behaviour::ComputeSleep { run_ms, wait_ms } = t.behaviour {
            if !(run_ms > 0.0 && wait_ms >= 0.0 && run_ms.is_finite() && wait_ms.is_finite()) {
                return Err(HostError::bad(format!(
                    "task[{i}].block: run_ms must be positive and wait_ms non-negative"
                )));
            }
        }
    }
    Ok(())
}

/// Runs the set and measures each task's CPU share.
pub fn run(cfg: &SchedRunConfig, stop: &Shutdown) -> Result<SchedRunResult> {
    validate(cfg)?;
    let controller = if cfg.groups.is_empty() {
        // No groups of its own; still, a killed run's groups go (as the README promises of the
        // next run, whichever set it runs).
        if let Ok(c) = CpuController::detect() {
            c.remove_stale();
        }
        None
    } else {
        Some(CpuController::detect().map_err(|e| {
            HostError::Unsupported(format!("the task set has [[group]] weights, but {e}"))
        })?)
    };
    let mut groups = Groups { own: None };
    let mut group_dirs = Vec::new();
    if let Some(c) = &controller {
        let own = c.create_own()?;
        groups.own = Some(own.clone());
        for g in &cfg.groups {
            let cg = own.child(&g.name)?;
            cg.set_weight(g.weight)?;
            group_dirs.push(cg);
        }
    }
    let mut tasks = Tasks {
        children: Vec::new(),
    };
    let mut readers = Vec::new();
    for (i, t) in cfg.tasks.iter().enumerate() {
        let spec = TaskProcessSpec {
            behaviour: t.behaviour.clone(),
            seed: cfg.seed.wrapping_add(i as u64 * 0x9e37_79b9),
            parent_pid: std::process::id() as i32,
        };
        let json = serde_json::to_string(&spec).expect("task specs serialise");
        let mut child =
            crate::looper::child_command(&cfg.exe, &["host", "sched-task", "--spec", &json])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| {
                    HostError::os(
                        format!("starting {} for task {}", cfg.exe.display(), t.name),
                        e,
                    )
                })?;
        readers.push(BufReader::new(child.stdout.take().expect("piped")));
        tasks.children.push(child);
    }
    // Each child says it is ready; then it gets its settings.
    for (i, r) in readers.iter_mut().enumerate() {
        let mut line = String::new();
        r.read_line(&mut line)
            .map_err(|e| HostError::os("reading from a task", e))?;
        if line.trim() != "ready" {
            return Err(HostError::Child(format!(
                "task {} did not start (it said {:?})",
                cfg.tasks[i].name,
                line.trim()
            )));
        }
    }
    for (i, t) in cfg.tasks.iter().enumerate() {
        let pid = tasks.children[i].id() as i32;
        affinity::set_nice(pid, t.nice)?;
        let mask = t.cpus.clone().unwrap_or_else(|| cfg.cpus.clone());
        affinity::set_affinity(pid, &mask)?;
        affinity::verify_affinity(pid, &mask)?;
        if let Some(g) = t.group {
            group_dirs[g].attach(pid)?;
        }
    }
    for c in &mut tasks.children {
        let stdin = c.stdin.as_mut().expect("piped");
        stdin
            .write_all(b"go\n")
            .and_then(|_| stdin.flush())
            .map_err(|e| HostError::os("starting a task", e))?;
    }
    let pids: Vec<i32> = tasks.children.iter().map(|c| c.id() as i32).collect();
    wait(cfg.warmup, stop, tasks.children.len())?;
    let before: Vec<(u64, u64)> = pids.iter().map(|&p| schedstat(p)).collect::<Result<_>>()?;
    let ticks_before = cpu_ticks()?;
    let t0 = Instant::now();
    wait(cfg.duration, stop, tasks.children.len())?;
    let after: Vec<(u64, u64)> = pids.iter().map(|&p| schedstat(p)).collect::<Result<_>>()?;
    let ticks_after = cpu_ticks()?;
    let wall_ns = t0.elapsed().as_nanos() as u64;
    for (i, c) in tasks.children.iter_mut().enumerate() {
        if let Ok(Some(status)) = c.try_wait() {
            return Err(HostError::Child(format!(
                "task {} exited during the run ({status})",
                cfg.tasks[i].name
            )));
        }
    }
    drop(tasks);
    let cgroup = controller.map(|c| format!("{:?} at {}", c.version, c.base.display()));
    drop(groups);
    let shares: Vec<TaskShare> = cfg
        .tasks
        .iter()
        .zip(before.iter().zip(&after))
        .map(|(t, (b, a))| {
            let cpu_ns = a.0.saturating_sub(b.0);
            TaskShare {
                name: t.name.clone(),
                cpu_ns,
                wait_ns: a.1.saturating_sub(b.1),
                share: cpu_ns as f64 / wall_ns.max(1) as f64,
            }
        })
        .collect();
    // Disturbance is what others took of the CPUs the tasks may use: a busy process on a CPU
    // none of them may run on takes nothing from them.
    let used = cfg
        .tasks
        .iter()
        .map(|t| {
            t.cpus
                .as_ref()
                .map_or(cfg.cpus.clone(), |m| m.intersection(&cfg.cpus))
        })
        .fold(CpuSet::new(), |all, m| all.union(&m));
    let (busy_s, steal_s) = ticks_after
        .iter()
        .filter(|(c, _, _)| used.contains(*c))
        .map(|&(c, busy, steal)| {
            let (b0, s0) = ticks_before
                .iter()
                .find(|x| x.0 == c)
                .map_or((busy, steal), |x| (x.1, x.2));
            (busy.saturating_sub(b0), steal.saturating_sub(s0))
        })
        .fold((0u64, 0u64), |a, x| (a.0 + x.0, a.1 + x.1));
    let hz = clock_ticks();
    let capacity_s = wall_ns as f64 * 1e-9 * used.len().max(1) as f64;
    let ours_s: f64 = shares.iter().map(|s| s.cpu_ns as f64 * 1e-9).sum();
    let steal_fraction = steal_s as f64 / hz / capacity_s;
    // Busy ticks count our tasks too; tick sampling makes the difference rough, never below 0.
    let others_fraction = ((busy_s as f64 / hz - ours_s) / capacity_s).max(0.0);
    let disturbed = (steal_fraction + others_fraction > DISTURBED_FRACTION).then(|| {
        format!(
            "the machine was disturbed: the hypervisor stole {:.1}% and other processes used {:.1}% of CPUs {} (more than {:.0}%)",
            steal_fraction * 100.0,
            others_fraction * 100.0,
            used,
            DISTURBED_FRACTION * 100.0
        )
    });
    Ok(SchedRunResult {
        tasks: shares,
        wall_ns,
        steal_fraction,
        others_fraction,
        disturbed,
        cgroup,
    })
}

/// Sleeps for `d`, in steps, returning early with an error on a shutdown request.
fn wait(d: Duration, stop: &Shutdown, children: usize) -> Result<()> {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if let Some(signal) = stop.requested() {
            return Err(HostError::Interrupted { signal, children });
        }
        std::thread::sleep(Duration::from_millis(50).min(end - Instant::now()));
    }
    Ok(())
}
