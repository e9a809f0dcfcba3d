//! CPU weights for groups of processes through the kernel's `cpu` cgroup controller: cgroup v2
//! (`cpu.weight`, 1–10000) where its hierarchy has the controller, else cgroup v1 (`cpu.shares`).
//! Only the `cpu` hierarchy is ever touched. Groups are created under one directory named after
//! the creating process (`smtsched-<pid>`), removed when done, and — if that process was killed —
//! removed by the next run that finds its owner gone.

use crate::error::{HostError, Result};
use std::path::{Path, PathBuf};

/// Which cgroup interface holds the `cpu` controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CgroupVersion {
    V1,
    V2,
}

/// A `cpu` controller hierarchy where this process may create groups.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuController {
    pub version: CgroupVersion,
    /// Where the hierarchy is mounted (a `/proc/PID/cgroup` path is relative to it).
    pub mount: PathBuf,
    /// The directory groups are created in.
    pub base: PathBuf,
}

/// One cgroup this process created.
#[derive(Clone, Debug, PartialEq)]
pub struct Cgroup {
    pub version: CgroupVersion,
    pub path: PathBuf,
}

/// One line of `/proc/self/mountinfo` that mounts a cgroup hierarchy: mount point, whether it is
/// cgroup2, and the super options (v1 controllers).
fn cgroup_mounts(mountinfo: &str) -> Vec<(PathBuf, bool, Vec<String>)> {
    mountinfo
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let mount_point = pre.split_whitespace().nth(4)?;
            let mut post = post.split_whitespace();
            let fstype = post.next()?;
            let _source = post.next();
            let opts: Vec<String> = post
                .next()
                .unwrap_or("")
                .split(',')
                .map(str::to_string)
                .collect();
            match fstype {
                "cgroup2" => Some((PathBuf::from(mount_point), true, opts)),
                "cgroup" => Some((PathBuf::from(mount_point), false, opts)),
                _ => None,
            }
        })
        .collect()
}

/// The cgroup path in a `/proc/PID/cgroup` text of the hierarchy with the `cpu` controller (v1:
/// the line naming `cpu`; v2: `0::`).
pub fn cpu_cgroup_of(proc_cgroup: &str, v2: bool) -> Option<String> {
    proc_cgroup.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (id, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let hit = if v2 {
            id == "0" && controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == "cpu")
        };
        hit.then(|| path.to_string())
    })
}

impl CpuController {
    /// Finds a writable `cpu` controller: cgroup v2 if its root delegates `cpu` to children
    /// (`cgroup.subtree_control`), else a cgroup v1 hierarchy with `cpu` (groups go under this
    /// process's own cgroup there). The error says why neither is usable.
    pub fn detect() -> Result<CpuController> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| HostError::os("reading /proc/self/mountinfo", e))?;
        let proc_cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mounts = cgroup_mounts(&mountinfo);
        let mut why = Vec::new();
        for (mp, v2, _) in mounts.iter().filter(|m| m.1) {
            let control =
                std::fs::read_to_string(mp.join("cgroup.subtree_control")).unwrap_or_default();
            if control.split_whitespace().any(|c| c == "cpu") {
                let base = mp.clone();
                if writable(&base) {
                    return Ok(CpuController {
                        version: CgroupVersion::V2,
                        mount: mp.clone(),
                        base,
                    });
                }
                why.push(format!("cgroup v2 at {} is not writable", mp.display()));
            } else if *v2 {
                why.push(format!(
                    "cgroup v2 at {} does not delegate the cpu controller (cgroup.subtree_control: {:?})",
                    mp.display(),
                    control.trim()
                ));
            }
        }
        for (mp, _, opts) in mounts.iter().filter(|m| !m.1) {
            if !opts.iter().any(|o| o == "cpu") {
                continue;
            }
            let own = cpu_cgroup_of(&proc_cgroup, false).unwrap_or_else(|| "/".into());
            let base = mp.join(own.trim_start_matches('/'));
            if writable(&base) && base.join("cpu.shares").exists() {
                return Ok(CpuController {
                    version: CgroupVersion::V1,
                    mount: mp.clone(),
                    base,
                });
            }
            why.push(format!(
                "cgroup v1 cpu at {} is not writable",
                base.display()
            ));
        }
        if why.is_empty() {
            why.push("no cgroup hierarchy with the cpu controller is mounted".into());
        }
        Err(HostError::Unsupported(format!(
            "cgroup cpu weights unavailable: {}",
            why.join("; ")
        )))
    }

    /// The `cpu` controller of the hierarchy that `dir` (an existing cgroup directory) is in,
    /// creating groups in `dir`. The error says what `dir` is not.
    pub fn at(dir: &Path) -> Result<CpuController> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| HostError::os("reading /proc/self/mountinfo", e))?;
        if !dir.is_dir() {
            return Err(HostError::bad(format!(
                "cgroup {}: no such directory",
                dir.display()
            )));
        }
        let dir = dir
            .canonicalize()
            .map_err(|e| HostError::os(format!("resolving {}", dir.display()), e))?;
        let mount = cgroup_mounts(&mountinfo)
            .into_iter()
            .filter(|(mp, _, _)| dir.starts_with(mp))
            .max_by_key(|(mp, _, _)| mp.as_os_str().len());
        let Some((mp, v2, opts)) = mount else {
            return Err(HostError::bad(format!(
                "{} is not inside a mounted cgroup hierarchy",
                dir.display()
            )));
        };
        let has_cpu = if v2 {
            // The parent must offer `cpu` to its children (its own controllers list it).
            std::fs::read_to_string(dir.join("cgroup.controllers"))
                .unwrap_or_default()
                .split_whitespace()
                .any(|c| c == "cpu")
        } else {
            opts.iter().any(|o| o == "cpu")
        };
        if !has_cpu {
            return Err(HostError::Unsupported(format!(
                "cgroup {} is in a hierarchy without the cpu controller",
                dir.display()
            )));
        }
        if !writable(&dir) {
            return Err(HostError::Unsupported(format!(
                "cgroup {} is not writable by this user",
                dir.display()
            )));
        }
        Ok(CpuController {
            version: if v2 {
                CgroupVersion::V2
            } else {
                CgroupVersion::V1
            },
            mount: mp,
            base: dir,
        })
    }

    /// The directory of a cgroup path as `/proc/PID/cgroup` gives it.
    pub fn path_of(&self, cgroup: &str) -> PathBuf {
        self.mount.join(cgroup.trim_start_matches('/'))
    }

    /// The directory this process's groups live in.
    pub fn own_dir(&self) -> PathBuf {
        self.base.join(format!("smtsched-{}", std::process::id()))
    }

    /// Creates this process's directory (removing what killed earlier runs left).
    pub fn create_own(&self) -> Result<Cgroup> {
        self.remove_stale();
        let path = self.own_dir();
        std::fs::create_dir(&path)
            .map_err(|e| HostError::os(format!("creating cgroup {}", path.display()), e))?;
        let own = Cgroup {
            version: self.version,
            path,
        };
        if self.version == CgroupVersion::V2 {
            // cgroup v2: the groups inside get `cpu.weight` only if this one delegates `cpu`.
            if let Err(e) = write(&own.path.join("cgroup.subtree_control"), "+cpu") {
                let _ = own.remove();
                return Err(e);
            }
        }
        Ok(own)
    }

    /// Removes `smtsched-<pid>` groups whose process is gone (left by a run that was killed).
    /// Returns the groups removed.
    pub fn remove_stale(&self) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        let Ok(dir) = std::fs::read_dir(&self.base) else {
            return removed;
        };
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(pid) = name
                .strip_prefix("smtsched-")
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            // A live owner keeps its groups; one with this process's own pid was left by a
            // killed run whose pid this process now has.
            if pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            let g = Cgroup {
                version: self.version,
                path: e.path(),
            };
            if g.remove().is_ok() {
                removed.push(e.path());
            }
        }
        removed
    }
}

fn writable(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: access(2) only reads the path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

impl Cgroup {
    /// A child group (created).
    pub fn child(&self, name: &str) -> Result<Cgroup> {
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return Err(HostError::bad(format!(
                "cgroup name {name:?} is not a plain name"
            )));
        }
        let path = self.path.join(name);
        std::fs::create_dir(&path)
            .map_err(|e| HostError::os(format!("creating cgroup {}", path.display()), e))?;
        Ok(Cgroup {
            version: self.version,
            path,
        })
    }

    /// Sets the group's weight, given as cgroup v2 `cpu.weight` (1–10000, 100 = nice 0); on v1
    /// it is written as `cpu.shares` = weight × 1024 / 100.
    pub fn set_weight(&self, weight: u32) -> Result<()> {
        let (file, value) = match self.version {
            CgroupVersion::V2 => ("cpu.weight", weight.clamp(1, 10_000) as u64),
            CgroupVersion::V1 => ("cpu.shares", (weight as u64 * 1024 / 100).max(2)),
        };
        write(&self.path.join(file), &value.to_string())
    }

    /// The weight as the kernel reads it back (cgroup v2 units).
    pub fn weight(&self) -> Result<u32> {
        let (file, scale) = match self.version {
            CgroupVersion::V2 => ("cpu.weight", 100.0),
            CgroupVersion::V1 => ("cpu.shares", 1024.0),
        };
        let p = self.path.join(file);
        let text = std::fs::read_to_string(&p)
            .map_err(|e| HostError::os(format!("reading {}", p.display()), e))?;
        let v: f64 = text
            .trim()
            .parse()
            .map_err(|_| HostError::Child(format!("{}: {text:?} is not a number", p.display())))?;
        Ok((v * 100.0 / scale).round() as u32)
    }

    /// A child group whose threads may come from processes outside it: on cgroup v2 a threaded
    /// group (`cgroup.type`), on v1 any group.
    pub fn threaded_child(&self, name: &str) -> Result<Cgroup> {
        let g = self.child(name)?;
        if self.version == CgroupVersion::V2 {
            if let Err(e) = write(&g.path.join("cgroup.type"), "threaded") {
                let _ = g.remove();
                return Err(e);
            }
        }
        Ok(g)
    }

    /// Sets the group's weight in load-weight units (nice 0 = 1024): `cpu.shares` on v1;
    /// `cpu.weight` on v2, or `cpu.idle` for `SCHED_IDLE`'s weight where the kernel has it.
    pub fn set_load_weight(&self, weight: u32, idle: bool) -> Result<()> {
        match self.version {
            CgroupVersion::V1 => write(
                &self.path.join("cpu.shares"),
                &weight.clamp(2, 262_144).to_string(),
            ),
            CgroupVersion::V2 => {
                let idle_file = self.path.join("cpu.idle");
                if idle_file.exists() {
                    write(&idle_file, if idle { "1" } else { "0" })?;
                }
                let w = ((weight as u64 * 100 + 512) / 1024).clamp(1, 10_000);
                write(&self.path.join("cpu.weight"), &w.to_string())
            }
        }
    }

    /// Moves one thread into the group (`tasks` on v1, `cgroup.threads` on v2).
    pub fn attach_thread(&self, tid: i32) -> Result<()> {
        let file = match self.version {
            CgroupVersion::V1 => "tasks",
            CgroupVersion::V2 => "cgroup.threads",
        };
        write(&self.path.join(file), &tid.to_string())
    }

    /// Moves process `pid` (all its threads) into the group.
    pub fn attach(&self, pid: i32) -> Result<()> {
        write(&self.path.join("cgroup.procs"), &pid.to_string())
    }

    /// Processes in the group.
    pub fn procs(&self) -> Vec<i32> {
        std::fs::read_to_string(self.path.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Removes the group and its children, moving any process still inside to the parent.
    pub fn remove(&self) -> Result<()> {
        if let Ok(dir) = std::fs::read_dir(&self.path) {
            for e in dir.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    Cgroup {
                        version: self.version,
                        path: e.path(),
                    }
                    .remove()?;
                }
            }
        }
        if let Some(parent) = self.path.parent() {
            for pid in self.procs() {
                let _ = write(&parent.join("cgroup.procs"), &pid.to_string());
            }
        }
        // A process that just exited may keep the group busy for a moment.
        let mut last = None;
        for _ in 0..50 {
            match std::fs::remove_dir(&self.path) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Err(HostError::os(
            format!("removing cgroup {}", self.path.display()),
            last.expect("an attempt failed"),
        ))
    }
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value)
        .map_err(|e| HostError::os(format!("writing {value} to {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_and_own_groups_are_read_from_the_kernels_files() {
        // Lines as /proc/self/mountinfo writes them (from this machine and a systemd v2 one).
        let mi = "33 25 0:29 / /sys/fs/cgroup/cpu rw,relatime shared:14 - cgroup cgroup rw,cpu\n\
                  34 25 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                  40 25 0:35 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
                  22 1 0:20 / /proc rw - proc proc rw\n";
        let m = cgroup_mounts(mi);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].0, PathBuf::from("/sys/fs/cgroup/cpu"));
        assert!(!m[0].1 && m[0].2.contains(&"cpu".to_string()));
        assert!(m[2].1);
        let pc = "4:memory:/process_api/x\n1:cpu,cpuacct:/user.slice\n0::/init.scope\n";
        assert_eq!(cpu_cgroup_of(pc, false).as_deref(), Some("/user.slice"));
        assert_eq!(cpu_cgroup_of(pc, true).as_deref(), Some("/init.scope"));
    }
}
