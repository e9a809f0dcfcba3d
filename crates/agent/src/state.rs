//! The state file: every thread's settings from before the agent changed them, written
//! atomically before the first change, so that they can be put back — on SIGINT, SIGTERM and
//! normal exit by the agent itself, and after SIGKILL or a crash by the next agent that starts
//! with the same state directory (or `smtsched agent restore`). A thread is identified by its id
//! and start time: one whose id now names another thread is never touched.

use crate::control::{self, Outcome, Settings, Touched};
use serde::{Deserialize, Serialize};
use smtsched_host::cgroup::{Cgroup, CpuController};
use smtsched_host::leftovers::GroupRecord;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const STATE_FORMAT: &str = "smtsched-agent-state/1";

/// One managed thread and what it had before.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadRecord {
    pub pid: i32,
    pub tid: i32,
    pub start_time: u64,
    pub label: String,
    pub original: Settings,
    /// What the agent has changed of it: only that is put back.
    #[serde(default = "Touched::all")]
    pub touched: Touched,
}

/// What the agent created in a `cpu` cgroup hierarchy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CgroupRecord {
    pub version: smtsched_host::cgroup::CgroupVersion,
    pub mount: PathBuf,
    pub base: PathBuf,
    /// The agent's own group (removed on restore).
    pub own: PathBuf,
}

impl CgroupRecord {
    pub fn controller(&self) -> CpuController {
        CpuController {
            version: self.version,
            mount: self.mount.clone(),
            base: self.base.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateFile {
    pub format: String,
    /// The agent that wrote it: pid and start time.
    pub agent_pid: i32,
    pub agent_start_time: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<CgroupRecord>,
    /// The agent's status socket (removed with the file by whoever restores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<PathBuf>,
    pub threads: Vec<ThreadRecord>,
    /// The process groups of the commands it launched: after a SIGKILL of the agent, what is
    /// left of them is killed by whoever restores.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupRecord>,
}

/// This agent's state file.
pub struct StateStore {
    pub path: PathBuf,
    pub state: StateFile,
}

/// The default state directory: `/run/smtsched` for root, else `$XDG_RUNTIME_DIR/smtsched`, else
/// `/tmp/smtsched-<uid>`.
pub fn default_dir() -> PathBuf {
    smtsched_host::rundir::default_state_dir()
}

fn create_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

impl StateStore {
    /// Starts this agent's state file in `dir` (written at the first [`StateStore::save`]).
    pub fn new(dir: &Path, cgroup: Option<CgroupRecord>) -> std::io::Result<StateStore> {
        create_dir(dir)?;
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        let start = crate::proc::process_stat(pid).map_or(0, |s| s.start_time);
        Ok(StateStore {
            path: dir.join(format!("agent-{pid}.json")),
            state: StateFile {
                format: STATE_FORMAT.into(),
                agent_pid: pid,
                agent_start_time: start,
                cgroup,
                socket: None,
                threads: Vec::new(),
                groups: Vec::new(),
            },
        })
    }

    /// Writes the file atomically (a temporary file renamed over it).
    pub fn save(&self) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(&self.state).expect("state serialises");
        smtsched_report::write::write_atomic(&self.path, &json)
    }

    /// Removes the file (everything was restored).
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What restoring a state file did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RestoreReport {
    pub file: PathBuf,
    pub agent_pid: i32,
    /// Threads put back as they were.
    pub restored: usize,
    /// Threads that had exited (or whose id now names another thread): left alone.
    pub gone: usize,
    /// Processes of launched commands' groups still running, killed.
    #[serde(default)]
    pub killed: usize,
    pub errors: Vec<String>,
}

impl std::fmt::Display for RestoreReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: restored {} thread(s) of agent {} ({} had exited)",
            self.file.display(),
            self.restored,
            self.agent_pid,
            self.gone
        )?;
        if self.killed > 0 {
            write!(
                f,
                "; killed {} process(es) of its launched commands",
                self.killed
            )?;
        }
        for e in &self.errors {
            write!(f, "; {e}")?;
        }
        Ok(())
    }
}

/// Puts every thread of `state` that still exists back as it was and removes the agent's
/// cgroups.
pub fn restore(state: &StateFile, file: &Path) -> RestoreReport {
    let mut report = RestoreReport {
        file: file.to_path_buf(),
        agent_pid: state.agent_pid,
        ..Default::default()
    };
    let controller = state.cgroup.as_ref().map(CgroupRecord::controller);
    // A thread the agent changed nothing of is left as it is (the user may have changed it).
    for t in state
        .threads
        .iter()
        .filter(|t| t.touched != Touched::default())
    {
        let alive = crate::proc::thread_stat(t.pid, t.tid)
            .is_some_and(|s| s.start_time == t.start_time && s.state != b'Z');
        if !alive {
            report.gone += 1;
            continue;
        }
        match control::restore(t.pid, t.tid, &t.original, t.touched, controller.as_ref()) {
            Ok(Outcome::Done) => report.restored += 1,
            Ok(Outcome::Gone) => report.gone += 1,
            Err(e) => report.errors.push(e),
        }
    }
    for g in &state.groups {
        report.killed += smtsched_host::leftovers::kill_group(g);
    }
    if let Some(c) = &state.cgroup {
        let own = Cgroup {
            version: c.version,
            path: c.own.clone(),
        };
        if let Err(e) = own.remove() {
            report.errors.push(e.to_string());
        }
    }
    report
}

/// Whether the agent that wrote `state` is still running.
fn writer_alive(state: &StateFile) -> bool {
    crate::proc::process_stat(state.agent_pid)
        .is_some_and(|s| s.start_time == state.agent_start_time && s.state != b'Z')
}

/// The agents' state files in `dir`, in name order.
fn state_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("agent-") && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    files
}

fn read_state(path: &Path) -> Result<StateFile, String> {
    std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
}

/// The threads, as (id, start time), that other agents still running manage, from their state
/// files in `dir` (`own` is this agent's, skipped), each with the agent's pid. A second agent
/// must leave them alone: it would take the first one's changes for the thread's own settings
/// and put those back.
pub fn managed_by_others(dir: &Path, own: &Path) -> BTreeMap<(i32, u64), i32> {
    state_files(dir)
        .into_iter()
        .filter(|p| p != own)
        .filter_map(|p| read_state(&p).ok())
        .filter(writer_alive)
        .flat_map(|s| {
            let agent = s.agent_pid;
            s.threads
                .into_iter()
                .map(move |t| ((t.tid, t.start_time), agent))
        })
        .collect()
}

/// Restores what agents that are no longer running left in `dir` (killed or crashed), removing
/// their files. A file that cannot be read is reported and kept.
pub fn restore_stale(dir: &Path) -> Vec<Result<RestoreReport, String>> {
    let mut out = Vec::new();
    for path in state_files(dir) {
        let state = match read_state(&path) {
            Ok(s) => s,
            Err(e) => {
                out.push(Err(format!("{}: {e}", path.display())));
                continue;
            }
        };
        if writer_alive(&state) {
            continue;
        }
        let report = restore(&state, &path);
        if let Some(sock) = &state.socket {
            let _ = std::fs::remove_file(sock);
        }
        if report.errors.is_empty() {
            let _ = std::fs::remove_file(&path);
        }
        out.push(Ok(report));
    }
    out
}
