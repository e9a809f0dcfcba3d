//! Children in process groups of their own (so a server's workers or a command's children go
//! with their leader), optionally pinned before they run, and killed if this process dies
//! (`PR_SET_PDEATHSIG`; what the leader forked is caught by the group kill, or after a SIGKILL
//! of this process by the next start, from its state file: `leftovers`); the process table, and
//! the sweeps that reap what a group kill cannot reach (orphans re-parented to us as subreaper).

use crate::error::{HostError, Result};
use smtsched_model::CpuSet;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Starts `cmd` in a new process group, on `cpus`, dying with the harness.
pub fn spawn_pinned(cmd: &mut Command, cpus: &CpuSet) -> Result<Child> {
    spawn_group(cmd, Some(cpus))
}

/// Starts `cmd` in a new process group (its leader's pid), killed if this process dies, and
/// pinned to `cpus` if given.
pub fn spawn_group(cmd: &mut Command, cpus: Option<&CpuSet>) -> Result<Child> {
    // Built before the fork: nothing may allocate between fork and exec.
    let mask = cpus.map(crate::affinity::cpu_mask).transpose()?;
    let program = cmd.get_program().to_string_lossy().into_owned();
    cmd.process_group(0);
    // SAFETY: only async-signal-safe system calls run between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(mask) = &mask {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), mask) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    cmd.spawn()
        .map_err(|e| HostError::os(format!("starting {program}"), e))
}

/// The processes of group `pgid` now alive (from `/proc/*/stat`; zombies, which run nothing
/// and wait for whoever reaps them, are left out).
pub fn group_members(pgid: i32) -> Vec<i32> {
    proc_table()
        .into_iter()
        .filter(|&(pid, _, g)| g == pgid && !is_zombie(pid))
        .map(|(pid, _, _)| pid)
        .collect()
}

/// Whether `pid` has exited and waits to be reaped (or is gone).
pub fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| Some(t[t.rfind(')')? + 2..].starts_with('Z')))
        .unwrap_or(true)
}

/// Field `n` (1-based, as proc(5) numbers them) of `/proc/PID/stat`, for the numeric fields
/// after the command name.
pub fn proc_stat_field(pid: i32, n: usize) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace().nth(n - 3)?.parse().ok()
}

/// Stops process group `pgid` led by `child`: `signal` to the leader, up to `grace` for the
/// group to exit, then SIGKILL to the whole group; reaps the leader. Returns how many processes
/// had to be killed.
pub fn stop_group(child: &mut Child, signal: i32, grace: Duration) -> usize {
    let pgid = child.id() as i32;
    if child.try_wait().ok().flatten().is_none() {
        unsafe { libc::kill(pgid, signal) };
    }
    let deadline = Instant::now() + grace;
    loop {
        let _ = child.try_wait();
        let left = group_members(pgid);
        if left.is_empty() {
            return 0;
        }
        if Instant::now() >= deadline {
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
            let _ = child.wait();
            wait_until_gone(pgid, Duration::from_secs(5));
            return left.len();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until no process of group `pgid` remains (zombies of other parents included).
pub fn wait_until_gone(pgid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while !group_members(pgid).is_empty() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Makes the calling process the reaper of its orphaned descendants (a workload's own children
/// whose looper was killed), so that none is left behind as a zombie of init.
pub fn become_subreaper() {
    // SAFETY: sets a flag of the calling process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

/// On drop, kills and reaps every process re-parented to us: what a workload started and
/// detached from its process group (`setsid`, a daemon's double fork) escapes the group kill,
/// but as the subreaper we inherit it.
pub struct OrphanSweep;

impl Drop for OrphanSweep {
    fn drop(&mut self) {
        let me = std::process::id() as i32;
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let ours: Vec<i32> = proc_table()
                .into_iter()
                .filter(|&(_, ppid, _)| ppid == me)
                .map(|(pid, _, _)| pid)
                .collect();
            for &pid in &ours {
                // SAFETY: our own children: kill, then reap without blocking.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG);
                }
            }
            if ours.is_empty() || Instant::now() > deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Waits for processes that were in `groups` and have been re-parented to us.
pub fn reap_orphans(groups: &[i32]) {
    let me = std::process::id() as i32;
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let mut left = 0;
        for (pid, ppid, pgrp) in proc_table() {
            if ppid == me && groups.contains(&pgrp) {
                left += 1;
                // SAFETY: waiting for our own child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG);
                }
            }
        }
        if left == 0 || Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// (pid, ppid, process group) of every process, from /proc/PID/stat.
pub fn proc_table() -> Vec<(i32, i32, i32)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The command name is in parentheses and may contain spaces: split after the last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if let (Some(ppid), Some(pgrp)) = (
            f.get(1).and_then(|s| s.parse().ok()),
            f.get(2).and_then(|s| s.parse().ok()),
        ) {
            out.push((pid, ppid, pgrp));
        }
    }
    out
}
