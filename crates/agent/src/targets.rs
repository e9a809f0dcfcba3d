//! Which processes the agent manages: commands it launches, processes given by PID, and every
//! process of a cgroup — with all their threads, and the children they start. Each process is
//! known by its pid and start time, so a reused pid is never mistaken for it.

use crate::error::{AgentError, Result};
use crate::proc;
use smtsched_model::CpuSet;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A command to launch and manage.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub argv: Vec<String>,
    /// What it runs (the key of a measured PR matrix).
    pub label: String,
    pub trust: Option<String>,
    /// Its own nice level and CPUs, set before it starts.
    pub nice: i32,
    pub cpus: Option<CpuSet>,
    /// A built-in kernel (`smtsched host loop`): it runs in a process group of its own (it stops
    /// its whole group on SIGTERM), the agent waits for its `ready` report (its data prepared)
    /// before the first period, and its run reports are discarded.
    pub builtin: bool,
}

/// A running process the user named.
#[derive(Clone, Debug, PartialEq)]
pub struct PidTarget {
    pub pid: i32,
    pub label: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Targets {
    pub launch: Vec<Launch>,
    pub pids: Vec<PidTarget>,
    pub cgroups: Vec<PathBuf>,
}

/// A process the agent watches for threads and children.
#[derive(Clone, Debug, PartialEq)]
pub struct Root {
    pub pid: i32,
    pub start_time: u64,
    pub label: String,
    pub trust: Option<String>,
}

impl Root {
    pub fn alive(&self) -> bool {
        proc::process_stat(self.pid)
            .is_some_and(|s| s.start_time == self.start_time && s.state != b'Z')
    }
}

/// Whether this process may change process `pid`: the kernel's rule for `sched_setaffinity`
/// (our effective uid is its real or effective uid), or root with `allow_others`.
pub fn may_control(pid: i32, allow_others: bool) -> std::result::Result<(), String> {
    let Some((uid, euid)) = proc::uids(pid) else {
        return Err(format!("process {pid} does not exist"));
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if me == uid || me == euid {
        return Ok(());
    }
    if me == 0 && allow_others {
        return Ok(());
    }
    Err(if me == 0 {
        format!("process {pid} belongs to uid {uid}, not root: pass --allow-others to manage other users' processes")
    } else {
        format!(
            "process {pid} belongs to uid {uid}; this agent runs as uid {me} and may not change it"
        )
    })
}

/// Checks the named PIDs and cgroups before anything starts.
pub fn check(targets: &Targets, allow_others: bool) -> Result<()> {
    for p in &targets.pids {
        if p.pid <= 0 {
            return Err(AgentError::bad(format!(
                "--pid {}: not a process id",
                p.pid
            )));
        }
        may_control(p.pid, allow_others)
            .map_err(|e| AgentError::bad(format!("--pid {}: {e}", p.pid)))?;
    }
    for c in &targets.cgroups {
        if !c.join("cgroup.procs").is_file() {
            return Err(AgentError::bad(format!(
                "--cgroup {}: not a cgroup directory (no cgroup.procs)",
                c.display()
            )));
        }
    }
    Ok(())
}

/// Starts a command; returns the child and its root record.
pub fn launch(l: &Launch) -> Result<(Child, Root)> {
    let exe = smtsched_host::looper::resolve_command(&l.argv)?;
    let mut cmd = Command::new(exe);
    // A process group of its own, so that what the command starts stops with it (see
    // `Agent::stop_children`; after a SIGKILL of the agent, `state::restore`).
    cmd.args(&l.argv[1..]).stdin(Stdio::null()).process_group(0);
    if l.builtin {
        cmd.stdout(Stdio::piped());
    }
    let nice = l.nice;
    let cpus = l.cpus.clone();
    // SAFETY: the closure calls only async-signal-safe system calls (prctl, setpriority,
    // sched_setaffinity) on the child itself.
    unsafe {
        cmd.pre_exec(move || {
            // A launched command stops with the agent whatever stops it, SIGKILL included.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if nice != 0 && libc::setpriority(libc::PRIO_PROCESS, 0, nice) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(c) = &cpus {
                let mut mask: libc::cpu_set_t = std::mem::zeroed();
                for cpu in c.iter() {
                    libc::CPU_SET(cpu as usize, &mut mask);
                }
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mask) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| AgentError::os(format!("starting {}", l.argv.join(" ")), e))?;
    let pid = child.id() as i32;
    let start_time = proc::process_stat(pid).map_or(0, |s| s.start_time);
    Ok((
        child,
        Root {
            pid,
            start_time,
            label: l.label.clone(),
            trust: l.trust.clone(),
        },
    ))
}

/// Waits until every built-in kernel among `children` has reported `ready` (at most
/// `timeout`), then discards what they write. An error names the first that did not.
pub fn await_ready(children: &mut [Child], timeout: std::time::Duration) -> Result<()> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    let mut waiting = 0;
    for c in children.iter_mut() {
        let Some(out) = c.stdout.take() else {
            continue;
        };
        waiting += 1;
        let tx = tx.clone();
        let pid = c.id();
        std::thread::spawn(move || {
            let mut lines = std::io::BufReader::new(out);
            let mut first = String::new();
            let ok = lines.read_line(&mut first).is_ok() && first.contains("\"ready\"");
            let _ = tx.send((pid, ok, first));
            let _ = std::io::copy(&mut lines, &mut std::io::sink());
        });
    }
    let deadline = std::time::Instant::now() + timeout;
    for _ in 0..waiting {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok((_, true, _)) => {}
            Ok((pid, false, said)) => {
                return Err(AgentError::os(
                    format!(
                        "built-in kernel {pid} did not start (it said {:?})",
                        said.trim()
                    ),
                    std::io::Error::other("not ready"),
                ))
            }
            Err(_) => {
                return Err(AgentError::os(
                    "waiting for the built-in kernels to prepare their data",
                    std::io::Error::from(std::io::ErrorKind::TimedOut),
                ))
            }
        }
    }
    Ok(())
}

/// The root of a named PID (label: given, or its command name).
pub fn root_of_pid(p: &PidTarget) -> Option<Root> {
    let stat = proc::process_stat(p.pid)?;
    Some(Root {
        pid: p.pid,
        start_time: stat.start_time,
        label: p.label.clone().unwrap_or_else(|| proc::comm(p.pid)),
        trust: None,
    })
}

/// Every process of a cgroup now, each labelled by its command name.
pub fn cgroup_members(dir: &std::path::Path) -> Vec<Root> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = proc::process_stat(pid)?;
            Some(Root {
                pid,
                start_time: stat.start_time,
                label: proc::comm(pid),
                trust: None,
            })
        })
        .collect()
}
