//! The child side of a measurement: a process that pins itself, then runs one workload again and
//! again, writing one JSON line per completed run (start, end, counters) to its standard output.
//! The harness (`measure`) starts one looper per workload of a pair, as a child process of the
//! `smtsched` binary itself (`smtsched host loop …`, a hidden command), so that the two
//! workloads are separate processes as in the thesis.

use crate::affinity;
use crate::error::{HostError, Result};
use crate::kernels::KernelSpec;
use crate::perf::{CounterSet, Event, EventStatus, Reading, Target};
use serde::{Deserialize, Serialize};
use smtsched_model::CpuSet;
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a looper runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Work {
    /// A built-in kernel, run in the looper process itself.
    Kernel(KernelSpec),
    /// A program, started afresh for every run; `argv[0]` is resolved in `PATH`.
    Command(Vec<String>),
    /// A placeholder that holds a CPU without touching memory (a PAUSE loop) and never reports
    /// a run: with `--realtime` it keeps other processes off CPUs an experiment leaves idle.
    Hold,
}

/// A looper's instructions (passed to the child as JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopSpec {
    pub work: Work,
    /// CPUs to pin to (None: leave the affinity alone).
    pub cpus: Option<CpuSet>,
    /// Completed runs after which to exit (0: loop until killed).
    pub runs: u32,
    /// Sleep before the first run, in milliseconds (the staggered start).
    pub delay_ms: f64,
    pub events: Vec<Event>,
    pub seed: u64,
    /// The harness's process id, checked at start-up (the looper must not outlive it).
    #[serde(default)]
    pub parent_pid: Option<i32>,
    /// Run in the SCHED_RR real-time class at this priority (commands inherit it).
    #[serde(default)]
    pub rr_priority: Option<i32>,
}

/// One line of a looper's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum LoopMessage {
    /// Pinned, data prepared, counters opened; the delay and the runs follow.
    Ready {
        pid: i32,
        cpus: Option<String>,
        setup_seconds: f64,
        events: Vec<(Event, EventStatus)>,
    },
    /// One completed run. Times are CLOCK_MONOTONIC nanoseconds, comparable across processes.
    Run {
        index: u32,
        start_ns: u64,
        end_ns: u64,
        #[serde(default)]
        checksum: u64,
        /// Raw readings over the run, per counted event.
        #[serde(default)]
        counters: BTreeMap<Event, Reading>,
    },
    /// The looper cannot go on.
    Error { message: String },
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Finds a program as `execvp` would: a path with a slash is taken as is, a bare name is looked
/// up in `PATH`. The error names the command.
pub fn resolve_command(argv: &[String]) -> Result<PathBuf> {
    let Some(name) = argv.first().filter(|n| !n.is_empty()) else {
        return Err(HostError::bad("empty command"));
    };
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.is_file()
            && std::fs::metadata(p)
                .map(|m| m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return if executable(&p) {
            Ok(p)
        } else {
            Err(HostError::bad(format!(
                "command {name:?} does not exist or is not executable"
            )))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| executable(p))
        .ok_or_else(|| HostError::bad(format!("command {name:?} not found in PATH")))
}

/// Splits a command line into words as a POSIX shell would for simple cases: whitespace
/// separates, single quotes keep everything, double quotes keep everything but `\"` and `\\`,
/// a backslash outside quotes escapes the next character.
pub fn split_command(line: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => cur.push(ch),
                        None => {
                            return Err(HostError::bad(format!(
                                "unterminated single quote in {line:?}"
                            )))
                        }
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch @ ('"' | '\\' | '$' | '`')) => cur.push(ch),
                            Some(ch) => {
                                cur.push('\\');
                                cur.push(ch);
                            }
                            None => {
                                return Err(HostError::bad(format!(
                                    "unterminated double quote in {line:?}"
                                )))
                            }
                        },
                        Some(ch) => cur.push(ch),
                        None => {
                            return Err(HostError::bad(format!(
                                "unterminated double quote in {line:?}"
                            )))
                        }
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(ch) => cur.push(ch),
                    None => return Err(HostError::bad(format!("trailing backslash in {line:?}"))),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    if words.is_empty() {
        return Err(HostError::bad("empty command"));
    }
    Ok(words)
}

/// `exe ARGS…` as a child of the harness: in a process group of its own, and killed by the
/// kernel (SIGKILL) if the harness dies for any reason. Standard streams are the caller's to set.
pub fn child_command(exe: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(args).process_group(0);
    // SAFETY: the closure only calls prctl, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            die_with_parent(libc::SIGKILL);
            Ok(())
        });
    }
    cmd
}

/// Asks the kernel to send `signal` to the calling process when its parent exits.
pub fn die_with_parent(signal: i32) {
    // SAFETY: prctl with these arguments only sets a flag of the calling process.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) };
}

extern "C" fn kill_own_group(_: libc::c_int) {
    // SAFETY: kill(2) is async-signal-safe; 0 names the caller's own process group, which the
    // harness created for this looper and the commands it starts.
    unsafe { libc::kill(0, libc::SIGKILL) };
}

/// Sets up the calling process as a looper: on SIGTERM, or when its parent (the harness) dies
/// for any reason, it kills its whole process group — itself and every command it started,
/// with their children. Fails if the parent is already gone.
pub fn become_looper(parent_pid: Option<i32>) -> Result<()> {
    // SAFETY: installs a handler that only calls an async-signal-safe function.
    unsafe {
        libc::signal(
            libc::SIGTERM,
            kill_own_group as *const () as libc::sighandler_t,
        )
    };
    die_with_parent(libc::SIGTERM);
    if let Some(parent) = parent_pid {
        // SAFETY: getppid has no preconditions.
        if unsafe { libc::getppid() } != parent {
            return Err(HostError::Child(format!(
                "the harness (process {parent}) is gone"
            )));
        }
    }
    Ok(())
}

/// Runs the loop, writing messages to `out`. Returns after `spec.runs` runs, or on an error
/// (which is also written as a message).
pub fn run(spec: &LoopSpec, out: &mut dyn Write) -> Result<()> {
    let result = run_inner(spec, out);
    if let Err(e) = &result {
        let _ = emit(
            out,
            &LoopMessage::Error {
                message: e.to_string(),
            },
        );
    }
    result
}

fn emit(out: &mut dyn Write, m: &LoopMessage) -> Result<()> {
    let line = serde_json::to_string(m).expect("loop messages serialise");
    writeln!(out, "{line}")
        .and_then(|_| out.flush())
        .map_err(|e| HostError::os("writing to the harness", e))
}

fn run_inner(spec: &LoopSpec, out: &mut dyn Write) -> Result<()> {
    let t0 = Instant::now();
    if let Some(cpus) = &spec.cpus {
        affinity::set_affinity(0, cpus)?;
        affinity::verify_affinity(std::process::id() as i32, cpus)?;
    }
    let mut kernel = match &spec.work {
        Work::Kernel(k) => Some(k.prepare(spec.seed)?),
        Work::Command(argv) => {
            resolve_command(argv)?;
            None
        }
        Work::Hold => None,
    };
    if let Some(priority) = spec.rr_priority {
        affinity::set_round_robin(0, priority)?;
    }
    if spec.work == Work::Hold {
        emit(
            out,
            &LoopMessage::Ready {
                pid: std::process::id() as i32,
                cpus: spec.cpus.as_ref().map(|c| c.to_string()),
                setup_seconds: t0.elapsed().as_secs_f64(),
                events: Vec::new(),
            },
        )?;
        loop {
            for _ in 0..1024 {
                std::hint::spin_loop();
            }
        }
    }
    let mut counters = CounterSet::open(&spec.events, Target::SelfAndDescendants)?;
    counters.enable()?;
    emit(
        out,
        &LoopMessage::Ready {
            pid: std::process::id() as i32,
            cpus: spec.cpus.as_ref().map(|c| c.to_string()),
            setup_seconds: t0.elapsed().as_secs_f64(),
            events: counters.status().to_vec(),
        },
    )?;
    std::thread::sleep(Duration::from_secs_f64(spec.delay_ms.max(0.0) / 1000.0));
    let mut index = 0u32;
    while spec.runs == 0 || index < spec.runs {
        let before = counters.read()?;
        let start_ns = monotonic_ns();
        let checksum = match (&mut kernel, &spec.work) {
            (Some(k), _) => std::hint::black_box(k.run()),
            (None, Work::Command(argv)) => run_command(argv)?,
            (None, Work::Kernel(_)) => unreachable!("kernel prepared above"),
            (None, Work::Hold) => unreachable!("placeholders never run"),
        };
        let end_ns = monotonic_ns();
        let after = counters.read()?;
        let counters = after.since(&before).0;
        emit(
            out,
            &LoopMessage::Run {
                index,
                start_ns,
                end_ns,
                checksum,
                counters,
            },
        )?;
        index += 1;
    }
    Ok(())
}

/// Runs a command to completion (stdin and stdout to /dev/null, stderr inherited); its exit
/// status must be 0.
fn run_command(argv: &[String]) -> Result<u64> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    // SAFETY: the closure only calls prctl, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            die_with_parent(libc::SIGKILL);
            Ok(())
        });
    }
    let status = cmd
        .status()
        .map_err(|e| HostError::bad(format!("cannot run command {:?}: {e}", argv.join(" "))))?;
    if !status.success() {
        return Err(HostError::Child(format!(
            "command {:?} failed: {status}",
            argv.join(" ")
        )));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_a_shell() {
        let w = |s: &str| split_command(s).unwrap();
        assert_eq!(w("gzip -c  file"), vec!["gzip", "-c", "file"]);
        assert_eq!(w("sh -c 'a | b'"), vec!["sh", "-c", "a | b"]);
        assert_eq!(
            w(r#"echo "x \"y\" z" a\ b"#),
            vec!["echo", r#"x "y" z"#, "a b"]
        );
        assert_eq!(w("''"), vec![""]);
        assert!(split_command("'open").is_err());
        assert!(split_command("   ").is_err());
    }

    #[test]
    fn commands_are_resolved_or_named_in_the_error() {
        assert!(resolve_command(&["sh".into()]).unwrap().ends_with("sh"));
        let e = resolve_command(&["no-such-command-xyz".into()]).unwrap_err();
        assert!(
            e.is_bad_input() && e.to_string().contains("\"no-such-command-xyz\""),
            "{e}"
        );
        let e = resolve_command(&["/nonexistent/tool".into()]).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/tool"));
    }

    #[test]
    fn a_kernel_loop_reports_each_run() {
        let spec = LoopSpec {
            work: Work::Kernel(KernelSpec {
                kind: crate::KernelKind::DenseFp,
                work: 10_000,
                footprint_bytes: 3 * 8 * 64,
            }),
            cpus: None,
            runs: 3,
            delay_ms: 0.0,
            events: vec![Event::TaskClockNs],
            seed: 1,
            parent_pid: None,
            rr_priority: None,
        };
        let mut buf = Vec::new();
        run(&spec, &mut buf).unwrap();
        let msgs: Vec<LoopMessage> = String::from_utf8(buf)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(msgs.len(), 4);
        assert!(matches!(msgs[0], LoopMessage::Ready { .. }));
        let mut last_end = 0;
        for (i, m) in msgs[1..].iter().enumerate() {
            let LoopMessage::Run {
                index,
                start_ns,
                end_ns,
                ..
            } = m
            else {
                panic!("{m:?}")
            };
            assert_eq!(*index, i as u32);
            assert!(*start_ns >= last_end && end_ns > start_ns);
            last_end = *end_ns;
        }
    }

    #[test]
    fn a_failing_command_is_reported() {
        let spec = LoopSpec {
            work: Work::Command(vec!["false".into()]),
            cpus: None,
            runs: 1,
            delay_ms: 0.0,
            events: vec![],
            seed: 1,
            parent_pid: None,
            rr_priority: None,
        };
        let mut buf = Vec::new();
        let e = run(&spec, &mut buf).unwrap_err();
        assert!(e.to_string().contains("\"false\" failed"), "{e}");
        assert!(String::from_utf8(buf)
            .unwrap()
            .contains("\"type\":\"error\""));
    }
}
