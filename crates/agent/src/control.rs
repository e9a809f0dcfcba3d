//! The kernel's controls over a thread, read and set: CPU affinity (`sched_setaffinity`, read back
//! and verified), weight (nice level and `SCHED_IDLE`, or a cgroup's `cpu.shares`/`cpu.weight`)
//! and core scheduling (`prctl(PR_SCHED_CORE)`). Every function takes a thread id; a thread that
//! exits while being changed gives [`Outcome::Gone`], not an error.

use serde::{Deserialize, Serialize};
use smtsched_host::affinity;
use smtsched_host::cgroup::{Cgroup, CgroupVersion, CpuController};
use smtsched_model::CpuSet;
use smtsched_os::policy::Weight;
use std::collections::BTreeMap;

/// A thread's settings that the agent may change, as the kernel reported them before it did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub affinity: CpuSet,
    pub nice: i32,
    /// Scheduling policy number (`SCHED_OTHER` 0, `SCHED_BATCH` 3, `SCHED_IDLE` 5, …).
    pub policy: i32,
    /// Its cgroup in the `cpu` hierarchy, where weights go through cgroups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// Its core-scheduling cookie, where the kernel has core scheduling (0 = none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_cookie: Option<u64>,
}

/// Which of a thread's settings the agent has changed (or was about to when it stopped): only
/// those are put back, so that what the user changed meanwhile stays.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Touched {
    pub affinity: bool,
    /// Nice and policy, or the cgroup, whichever carries weights.
    pub weight: bool,
    pub core_cookie: bool,
}

impl Touched {
    /// A record that does not say (written before this was kept): everything.
    pub fn all() -> Self {
        Touched {
            affinity: true,
            weight: true,
            core_cookie: true,
        }
    }
}

/// What happened to a thread that was being changed.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Done,
    /// It exited (or its id now names another thread): nothing to do.
    Gone,
}

pub const SCHED_OTHER: i32 = 0;
pub const SCHED_IDLE: i32 = 5;

/// A real-time or deadline class (`SCHED_FIFO`, `SCHED_RR`, `SCHED_DEADLINE`): the agent leaves
/// such a thread's weight alone.
pub fn realtime_policy(policy: i32) -> bool {
    matches!(policy, 1 | 2 | 6)
}

fn gone(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ESRCH)
}

/// Maps "no such thread" to [`Outcome::Gone`] and other failures to a message.
fn outcome(r: std::io::Result<()>, what: impl FnOnce() -> String) -> Result<Outcome, String> {
    match r {
        Ok(()) => Ok(Outcome::Done),
        Err(e) if gone(&e) => Ok(Outcome::Gone),
        Err(e) => Err(format!("{}: {e}", what())),
    }
}

fn last_error(rc: libc::c_int) -> std::io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Sets a thread's affinity and reads it back.
pub fn set_affinity(tid: i32, cpus: &CpuSet) -> Result<Outcome, String> {
    match affinity::set_affinity(tid, cpus) {
        Ok(()) => {}
        Err(smtsched_host::HostError::Os { source, .. }) if gone(&source) => {
            return Ok(Outcome::Gone)
        }
        Err(e) => return Err(format!("thread {tid}: {e}")),
    }
    match affinity::get_affinity(tid) {
        Ok(got) if &got == cpus => Ok(Outcome::Done),
        Ok(got) => Err(format!(
            "thread {tid}: affinity read back as {got}, not {cpus} (a cpuset cgroup may restrict it)"
        )),
        Err(smtsched_host::HostError::Os { source, .. }) if gone(&source) => Ok(Outcome::Gone),
        Err(e) => Err(format!("thread {tid}: {e}")),
    }
}

/// Sets a thread's scheduling policy (normal classes only; priority 0).
pub fn set_policy(tid: i32, policy: i32) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param.
    last_error(unsafe { libc::sched_setscheduler(tid, policy, &param) })
}

/// Sets a thread's nice level.
pub fn set_nice(tid: i32, nice: i32) -> std::io::Result<()> {
    // SAFETY: setpriority has no memory preconditions.
    last_error(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) })
}

/// Whether this process may set a thread back to nice `nice` (lowering nice needs
/// `CAP_SYS_NICE` or a high enough `RLIMIT_NICE`): weights through nice are used only if it can.
pub fn may_lower_nice_to(nice: i32) -> bool {
    let cap_sys_nice = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))?
                .trim()
                .to_string();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|caps| caps & (1 << 23) != 0);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to write into.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NICE, &mut lim) } == 0;
    cap_sys_nice || (ok && 20 - lim.rlim_cur as i64 <= nice as i64)
}

/// Core scheduling through `prctl(PR_SCHED_CORE)` (Linux 5.14+, `CONFIG_SCHED_CORE`).
#[derive(Clone, Copy, Debug)]
pub struct CoreScheduling;

const PR_SCHED_CORE: libc::c_int = 62;
const PR_SCHED_CORE_GET: libc::c_ulong = 0;
const PR_SCHED_CORE_CREATE: libc::c_ulong = 1;
const PR_SCHED_CORE_SHARE_TO: libc::c_ulong = 2;
const PR_SCHED_CORE_SHARE_FROM: libc::c_ulong = 3;
/// The scope of a `PR_SCHED_CORE` operation: one thread.
const PIDTYPE_PID: libc::c_ulong = 0;

fn core_prctl(op: libc::c_ulong, tid: i32, arg: libc::c_ulong) -> std::io::Result<()> {
    // SAFETY: PR_SCHED_CORE reads integers; GET writes a u64 at `arg`, which callers pass.
    last_error(unsafe { libc::prctl(PR_SCHED_CORE, op, tid as libc::c_ulong, PIDTYPE_PID, arg) })
}

impl CoreScheduling {
    /// Whether this kernel has core scheduling; the reason if not.
    pub fn probe() -> Result<CoreScheduling, String> {
        match Self::cookie(0) {
            Ok(_) => Ok(CoreScheduling),
            Err(e) => Err(match e.raw_os_error() {
                Some(libc::EINVAL) => "core scheduling unavailable: this kernel has no core scheduling (prctl(PR_SCHED_CORE) returned EINVAL; it needs CONFIG_SCHED_CORE, Linux 5.14 or later)".to_string(),
                Some(libc::ENODEV) => "core scheduling unavailable: SMT is absent or off on this machine (prctl(PR_SCHED_CORE) returned ENODEV)".to_string(),
                _ => format!("core scheduling unavailable: prctl(PR_SCHED_CORE): {e}"),
            }),
        }
    }

    /// The cookie of thread `tid` (0 = the caller; 0 = no cookie).
    pub fn cookie(tid: i32) -> std::io::Result<u64> {
        let mut cookie: u64 = 0;
        core_prctl(
            PR_SCHED_CORE_GET,
            tid,
            &mut cookie as *mut u64 as libc::c_ulong,
        )?;
        Ok(cookie)
    }

    /// Gives each group's threads one new cookie and clears the cookies of `untagged`. Done on a
    /// fresh helper thread, whose own cookie it borrows to share (`SHARE_FROM` then
    /// `SHARE_TO`): it starts without one, so it clears the untagged first.
    pub fn apply(groups: &[Vec<i32>], untagged: &[i32]) -> Vec<String> {
        let groups = groups.to_vec();
        let untagged = untagged.to_vec();
        std::thread::spawn(move || {
            let mut errors = Vec::new();
            let mut note = |r: std::io::Result<()>, what: String| {
                if let Err(e) = r {
                    if !gone(&e) {
                        errors.push(format!("{what}: {e}"));
                    }
                }
            };
            for &t in &untagged {
                note(
                    core_prctl(PR_SCHED_CORE_SHARE_TO, t, 0),
                    format!("clearing the core cookie of thread {t}"),
                );
            }
            for g in &groups {
                let Some((&leader, rest)) = g.split_first() else {
                    continue;
                };
                note(
                    core_prctl(PR_SCHED_CORE_CREATE, leader, 0),
                    format!("creating a core cookie for thread {leader}"),
                );
                if !rest.is_empty() {
                    note(
                        core_prctl(PR_SCHED_CORE_SHARE_FROM, leader, 0),
                        format!("taking the core cookie of thread {leader}"),
                    );
                    for &t in rest {
                        note(
                            core_prctl(PR_SCHED_CORE_SHARE_TO, t, 0),
                            format!("sharing a core cookie with thread {t}"),
                        );
                    }
                }
            }
            errors
        })
        .join()
        .unwrap_or_else(|_| vec!["the core-scheduling helper thread panicked".into()])
    }
}

/// How weights reach the kernel.
#[derive(Debug)]
pub enum WeightControl {
    /// Each thread's nice level; `SCHED_IDLE` for [`Weight::IDLE`].
    Nice,
    /// A cgroup per thread under the agent's own group.
    Cgroup(CgroupWeights),
}

/// Per-thread cgroups under the agent's own group in a `cpu` hierarchy.
#[derive(Debug)]
pub struct CgroupWeights {
    pub controller: CpuController,
    pub own: Cgroup,
    groups: BTreeMap<i32, Cgroup>,
    /// cgroup v2: processes moved into the agent's group (their threads may then move into the
    /// threaded groups inside it).
    moved: std::collections::BTreeSet<i32>,
}

impl CgroupWeights {
    /// Creates the agent's own group (`smtsched-<pid>`) in `controller`'s directory.
    pub fn new(controller: CpuController) -> Result<CgroupWeights, String> {
        let own = controller.create_own().map_err(|e| e.to_string())?;
        Ok(CgroupWeights {
            controller,
            own,
            groups: BTreeMap::new(),
            moved: Default::default(),
        })
    }

    fn set(&mut self, pid: i32, tid: i32, weight: Weight) -> Result<Outcome, String> {
        let v2 = self.controller.version == CgroupVersion::V2;
        if v2 && self.moved.insert(pid) {
            if let Err(e) = self.own.attach(pid) {
                return cgroup_outcome(e, pid);
            }
        }
        if !self.groups.contains_key(&tid) {
            let g = self
                .own
                .threaded_child(&format!("t{tid}"))
                .map_err(|e| e.to_string())?;
            if let Err(e) = g.attach_thread(tid) {
                let _ = g.remove();
                return cgroup_outcome(e, tid);
            }
            self.groups.insert(tid, g);
        }
        self.groups[&tid]
            .set_load_weight(weight.0, weight == Weight::IDLE)
            .map_err(|e| e.to_string())?;
        Ok(Outcome::Done)
    }

    /// Forgets an exited thread's group.
    pub fn forget(&mut self, tid: i32) {
        if let Some(g) = self.groups.remove(&tid) {
            let _ = g.remove();
        }
    }

    /// Whether the thread was moved into a group of the agent's.
    pub fn moved(&self, tid: i32) -> bool {
        self.groups.contains_key(&tid)
    }
}

fn cgroup_outcome(e: smtsched_host::HostError, id: i32) -> Result<Outcome, String> {
    match e {
        smtsched_host::HostError::Os { source, .. } if gone(&source) => Ok(Outcome::Gone),
        e => Err(format!("moving {id} into a cgroup: {e}")),
    }
}

impl WeightControl {
    /// Gives thread `tid` of process `pid` the weight `w`; `original` is what it had.
    pub fn set(
        &mut self,
        pid: i32,
        tid: i32,
        w: Weight,
        original: &Settings,
    ) -> Result<Outcome, String> {
        match self {
            WeightControl::Nice => {
                if w == Weight::IDLE {
                    return outcome(set_policy(tid, SCHED_IDLE), || {
                        format!("thread {tid}: SCHED_IDLE")
                    });
                }
                let policy = if original.policy == SCHED_IDLE {
                    SCHED_OTHER
                } else {
                    original.policy
                };
                if let o @ (Ok(Outcome::Gone) | Err(_)) = outcome(set_policy(tid, policy), || {
                    format!("thread {tid}: scheduling policy {policy}")
                }) {
                    return o;
                }
                let nice = w.nearest_nice();
                outcome(set_nice(tid, nice), || format!("thread {tid}: nice {nice}"))
            }
            WeightControl::Cgroup(c) => c.set(pid, tid, w),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            WeightControl::Nice => "nice levels (SCHED_IDLE for gang turns)".into(),
            WeightControl::Cgroup(c) => format!(
                "cgroup {:?} groups under {}",
                c.controller.version,
                c.own.path.display()
            ),
        }
    }
}

/// Puts back what the agent changed of a thread (`touched`): affinity, scheduling policy and
/// nice, cgroup, core cookie. `controller` is the hierarchy its cgroup is in (weights by cgroup
/// only).
pub fn restore(
    pid: i32,
    tid: i32,
    original: &Settings,
    touched: Touched,
    controller: Option<&CpuController>,
) -> Result<Outcome, String> {
    let mut errors = Vec::new();
    if touched.affinity {
        match set_affinity(tid, &original.affinity) {
            Ok(Outcome::Gone) => return Ok(Outcome::Gone),
            Ok(Outcome::Done) => {}
            Err(e) => errors.push(e),
        }
    }
    if touched.weight {
        restore_weight(pid, tid, original, controller, &mut errors);
    }
    if touched.core_cookie && original.core_cookie == Some(0) {
        errors.extend(CoreScheduling::apply(&[], &[tid]));
    }
    if errors.is_empty() {
        Ok(Outcome::Done)
    } else {
        Err(errors.join("; "))
    }
}

/// Puts back a thread's policy and nice, and its cgroup where weights go through cgroups.
fn restore_weight(
    pid: i32,
    tid: i32,
    original: &Settings,
    controller: Option<&CpuController>,
    errors: &mut Vec<String>,
) {
    let _ = set_policy(tid, original.policy).map_err(|e| {
        if !gone(&e) {
            errors.push(format!(
                "thread {tid}: restoring policy {}: {e}",
                original.policy
            ));
        }
    });
    let _ = set_nice(tid, original.nice).map_err(|e| {
        if !gone(&e) {
            errors.push(format!(
                "thread {tid}: restoring nice {}: {e}",
                original.nice
            ));
        }
    });
    if let (Some(path), Some(c)) = (&original.cgroup, controller) {
        let dir = c.path_of(path);
        let (file, id) = match c.version {
            CgroupVersion::V1 => ("tasks", tid),
            CgroupVersion::V2 => ("cgroup.procs", pid),
        };
        if let Err(e) = std::fs::write(dir.join(file), id.to_string()) {
            if !gone(&e) {
                errors.push(format!("moving {id} back to cgroup {}: {e}", dir.display()));
            }
        }
    }
}
