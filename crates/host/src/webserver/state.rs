//! The harness's state file: the process groups it started and the settings it changed, written
//! before each change, so that after a SIGKILL the next start stops those processes and puts
//! the settings back. A process group is identified by its leader's pid and start time: a
//! process whose group id was reused later is never touched.

use super::process::{group_members, proc_stat_field};
use super::rps::{self, RpsSetting};
use crate::error::{HostError, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const FORMAT: &str = "smtsched-measure-server-state/1";

/// A process group the harness started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupRecord {
    pub what: String,
    pub pgid: i32,
    pub leader_start_time: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub format: String,
    pub harness_pid: i32,
    pub harness_start_time: u64,
    pub groups: Vec<GroupRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rps: Option<RpsSetting>,
}

/// The machine's lock: one harness at a time steers the softirq (a second would record the
/// first one's setting as the original), whatever state directories they use.
pub fn lock() -> Result<std::fs::File> {
    use std::os::unix::io::AsRawFd;
    let dir = if Path::new("/run/lock").is_dir() {
        PathBuf::from("/run/lock")
    } else {
        std::env::temp_dir()
    };
    let path = dir.join("smtsched-measure-server.lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| HostError::os(format!("opening {}", path.display()), e))?;
    // SAFETY: a valid descriptor; the lock goes with it.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(HostError::bad(format!(
            "another `measure server` is running (it holds {}); wait for it to finish",
            path.display()
        )));
    }
    Ok(f)
}

/// This harness's state file, kept current.
pub struct StateFile {
    path: PathBuf,
    pub state: State,
}

fn start_time(pid: i32) -> Option<u64> {
    proc_stat_field(pid, 22)
}

impl StateFile {
    /// A state file for this process in `dir` (created 0700 if missing).
    pub fn create(dir: &Path) -> Result<StateFile> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| HostError::os(format!("creating {}", dir.display()), e))?;
        let pid = std::process::id() as i32;
        let mut f = StateFile {
            path: dir.join(format!("server-{pid}.json")),
            state: State {
                format: FORMAT.into(),
                harness_pid: pid,
                harness_start_time: start_time(pid).unwrap_or(0),
                ..State::default()
            },
        };
        f.save()?;
        Ok(f)
    }

    pub fn save(&mut self) -> Result<()> {
        let json = serde_json::to_vec_pretty(&self.state).expect("serialisable");
        smtsched_report::write::write_atomic(&self.path, &json)
            .map_err(|e| HostError::os(format!("writing {}", self.path.display()), e))
    }

    /// Records a process group before anything depends on it.
    pub fn add_group(&mut self, what: &str, pgid: i32) -> Result<()> {
        self.state.groups.push(GroupRecord {
            what: what.into(),
            pgid,
            leader_start_time: start_time(pgid).unwrap_or(0),
        });
        self.save()
    }

    pub fn remove_group(&mut self, pgid: i32) -> Result<()> {
        self.state.groups.retain(|g| g.pgid != pgid);
        self.save()
    }

    /// Records the softirq steering's original before it is changed.
    pub fn set_rps(&mut self, rps: Option<RpsSetting>) -> Result<()> {
        self.state.rps = rps;
        self.save()
    }

    /// Everything is stopped and restored: the file goes.
    pub fn finish(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Puts right what harnesses that died without cleaning up left in `dir`: kills their process
/// groups, restores the steering, removes their files. Returns one line per thing done.
pub fn clean_up_after_dead(dir: &Path) -> Vec<String> {
    let mut done = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return done;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("server-") && name.ends_with(".json")) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let Ok(state) = serde_json::from_str::<State>(&text) else {
            continue;
        };
        let alive = start_time(state.harness_pid) == Some(state.harness_start_time);
        if state.format != FORMAT || alive {
            continue;
        }
        for g in &state.groups {
            // Members started no earlier than the leader belong to it; an older process
            // with the same group id is someone else's.
            let members: Vec<i32> = group_members(g.pgid)
                .into_iter()
                .filter(|&p| start_time(p).is_some_and(|t| t >= g.leader_start_time))
                .collect();
            for &p in &members {
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            if !members.is_empty() {
                done.push(format!(
                    "killed {} process(es) of the {} left by harness {}",
                    members.len(),
                    g.what,
                    state.harness_pid
                ));
            }
        }
        if let Some(r) = &state.rps {
            match rps::restore(r) {
                Ok(()) => done.push(format!(
                    "restored {} to {} (left changed by harness {})",
                    r.path.display(),
                    r.original,
                    state.harness_pid
                )),
                Err(err) => done.push(format!("could not restore: {err}")),
            }
        }
        let _ = std::fs::remove_file(e.path());
    }
    done
}
