//! What a command leaves behind if it is killed: a state file of the process groups it started
//! and the system settings (files under /proc or /sys) it changed, written before each change,
//! so that after a SIGKILL the next start of a command that keeps one stops those processes and
//! puts the settings back. A process group is identified by its leader's pid and start time: a
//! process whose group id was reused later is never touched; a file (`NAME-PID.json`) whose
//! writer is alive is left alone.

use crate::error::{HostError, Result};
use crate::procgroup::{group_members, proc_stat_field};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const FORMAT: &str = "smtsched-leftovers/1";

/// A file-backed setting changed, and its value before.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileSetting {
    pub path: PathBuf,
    pub original: String,
}

impl FileSetting {
    /// Reads the current value of `path` (trimmed).
    pub fn read(path: &Path) -> std::io::Result<FileSetting> {
        Ok(FileSetting {
            path: path.to_path_buf(),
            original: std::fs::read_to_string(path)?.trim().to_string(),
        })
    }

    /// Writes `value` to the setting's file.
    pub fn set(&self, value: &str) -> Result<()> {
        std::fs::write(&self.path, format!("{value}\n"))
            .map_err(|e| HostError::os(format!("writing {}", self.path.display()), e))
    }

    /// Puts the original value back.
    pub fn restore(&self) -> Result<()> {
        self.set(&self.original)
    }
}

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
    #[serde(default)]
    pub settings: Vec<FileSetting>,
    /// Temporary directories it made (a server's configuration and files).
    #[serde(default)]
    pub dirs: Vec<PathBuf>,
}

/// The machine's lock named `name`: one command at a time changes a machine-wide setting (a
/// second would record the first one's value as the original), whatever state directories
/// they use.
pub fn lock(name: &str) -> Result<std::fs::File> {
    use std::os::unix::io::AsRawFd;
    let dir = if Path::new("/run/lock").is_dir() {
        PathBuf::from("/run/lock")
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("smtsched-{name}.lock"));
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| HostError::os(format!("opening {}", path.display()), e))?;
    // SAFETY: a valid descriptor; the lock goes with it.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(HostError::bad(format!(
            "another `{}` is running (it holds {}); wait for it to finish",
            name.replace('-', " "),
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
    /// A state file for this process of command `name` in `dir` (created 0700 if missing).
    pub fn create(dir: &Path, name: &str) -> Result<StateFile> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| HostError::os(format!("creating {}", dir.display()), e))?;
        let pid = std::process::id() as i32;
        let mut f = StateFile {
            path: dir.join(format!("{name}-{pid}.json")),
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

    /// Records a temporary directory to remove if the command dies.
    pub fn add_dir(&mut self, dir: &Path) -> Result<()> {
        self.state.dirs.push(dir.to_path_buf());
        self.save()
    }

    pub fn remove_dir(&mut self, dir: &Path) -> Result<()> {
        self.state.dirs.retain(|d| d != dir);
        self.save()
    }

    /// Records a setting's original before it is changed.
    pub fn add_setting(&mut self, s: FileSetting) -> Result<()> {
        self.state.settings.push(s);
        self.save()
    }

    /// Everything is stopped and restored: the file goes.
    pub fn finish(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Puts right what commands that died without cleaning up left in `dir`: kills their process
/// groups, restores their settings, removes their files. Returns one line per thing done.
pub fn clean_up_after_dead(dir: &Path) -> Vec<String> {
    let mut done = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return done;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let Ok(state) = serde_json::from_str::<State>(&text) else {
            continue;
        };
        // A writer that exited but is not reaped yet (a zombie) is as dead as a gone one.
        let alive = start_time(state.harness_pid) == Some(state.harness_start_time)
            && !crate::procgroup::is_zombie(state.harness_pid);
        if state.format != FORMAT || alive {
            continue;
        }
        for g in &state.groups {
            let killed = kill_group(g);
            if killed > 0 {
                done.push(format!(
                    "killed {killed} process(es) of the {} left by process {}",
                    g.what, state.harness_pid
                ));
            }
        }
        for r in &state.settings {
            match r.restore() {
                Ok(()) => done.push(format!(
                    "restored {} to {} (left changed by process {})",
                    r.path.display(),
                    r.original,
                    state.harness_pid
                )),
                Err(err) => done.push(format!("could not restore: {err}")),
            }
        }
        for d in state.dirs.iter().filter(|d| is_ours(d)) {
            if std::fs::remove_dir_all(d).is_ok() {
                done.push(format!(
                    "removed {} (left by process {})",
                    d.display(),
                    state.harness_pid
                ));
            }
        }
        let _ = std::fs::remove_file(e.path());
    }
    done
}

/// Kills what is left of a recorded process group; returns how many processes. Members started
/// no earlier than the leader belong to it; an older process with the same group id is someone
/// else's.
pub fn kill_group(g: &GroupRecord) -> usize {
    let members: Vec<i32> = group_members(g.pgid)
        .into_iter()
        .filter(|&p| start_time(p).is_some_and(|t| t >= g.leader_start_time))
        .collect();
    for &p in &members {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    members.len()
}

/// Only a directory of ours under the temporary directory is removed, whatever a state file
/// says.
fn is_ours(d: &Path) -> bool {
    d.parent() == Some(std::env::temp_dir().as_path())
        && d.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("smtsched-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_that_exited_unreaped_is_dead_and_its_settings_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let setting = dir.path().join("setting");
        std::fs::write(&setting, "changed\n").unwrap();
        // A child that has exited and that nobody has reaped: a zombie, as a SIGKILLed
        // command is until its parent waits.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let ours = tempfile::Builder::new()
            .prefix("smtsched-test-")
            .tempdir()
            .unwrap();
        let theirs = tempfile::Builder::new().prefix("other-").tempdir().unwrap();
        let pid = child.id() as i32;
        while !crate::procgroup::is_zombie(pid) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let state = State {
            format: FORMAT.into(),
            harness_pid: pid,
            harness_start_time: start_time(pid).unwrap(),
            groups: Vec::new(),
            settings: vec![FileSetting {
                path: setting.clone(),
                original: "original".into(),
            }],
            // A directory of ours is removed; one that is not (whatever the file says) stays.
            dirs: vec![ours.path().to_path_buf(), theirs.path().to_path_buf()],
        };
        std::fs::write(
            dir.path().join(format!("x-{pid}.json")),
            serde_json::to_vec(&state).unwrap(),
        )
        .unwrap();
        let done = clean_up_after_dead(dir.path());
        assert_eq!(done.len(), 2, "{done:?}");
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "original\n");
        assert!(!ours.path().exists() && theirs.path().exists());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "state file removed"
        );
        child.wait().unwrap();
    }
}
