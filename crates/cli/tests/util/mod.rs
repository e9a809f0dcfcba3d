//! Running the real binary as a user would, and reading its answers (shared by the CLI tests).
#![allow(dead_code)]

pub mod slurm;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `smtsched matrix` of `workloads` (a list) over 60,000-instruction windows after 30,000, with
/// `extra` arguments (where to write it): a matrix file in a fraction of a second.
pub fn small_matrix(d: &Path, workloads: &str, extra: &[&str]) {
    let mut args = vec![
        "matrix",
        "-w",
        workloads,
        "--instructions",
        "60000",
        "--warmup",
        "30000",
    ];
    args.extend(extra);
    let o = smtsched(d, &args);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A port free on 127.0.0.1 now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `smtsched ARGS` in `dir` and kills it (SIGKILL: no chance to tidy up) as soon as
/// `file` exists; fails if the command ends first or `file` takes over 300 s to appear.
pub fn killed_once_it_writes(dir: &Path, args: &[&str], file: &Path) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_smtsched"))
        .args(args)
        .current_dir(dir)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !file.exists() {
        let ended = child.try_wait().unwrap();
        assert!(ended.is_none(), "ended ({ended:?}) before writing {file:?}");
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no {file:?} in 300 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Runs `smtsched ARGS` in `dir`; prints command, directory, exit code and output, for failures.
pub fn smtsched(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_smtsched"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    eprintln!(
        "$ smtsched {}\n(cwd {})\nexit {:?}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        dir.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// The JSON a successful command printed.
pub fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "command failed");
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Bad input: exit code 2 and exactly one line on stderr that contains every `needle`.
pub fn assert_bad_input(o: &Output, needles: &[&str]) {
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    for n in needles {
        assert!(err.contains(n), "{err:?} should mention {n:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Processes

/// (pid, start time in clock ticks) of every descendant of `root`, from /proc.
pub fn descendants(root: u32) -> Vec<(u32, u64)> {
    let mut table = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        // After the command: state(0) ppid(1) … starttime is field 22 of the whole line, 19 here.
        table.push((
            pid,
            f[1].parse::<u32>().unwrap(),
            f[19].parse::<u64>().unwrap(),
        ));
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(pid, ppid, start) in &table {
            if ppid == p {
                out.push((pid, start));
                frontier.push(pid);
            }
        }
    }
    out
}

/// True if the process is still there (alive or an unreaped zombie) and is the same process.
pub fn exists(pid: u32, start: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let rest = &stat[stat.rfind(')').unwrap() + 2..];
            rest.split_whitespace()
                .nth(19)
                .and_then(|s| s.parse::<u64>().ok())
                == Some(start)
        }
    }
}

pub fn start_harness(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_smtsched"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `root` has at least `n` descendants whose command is `name`; returns all
/// descendants seen then.
pub fn wait_for(root: u32, name: &str, n: usize) -> Vec<(u32, u64)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let d = descendants(root);
        let matching = d
            .iter()
            .filter(|(pid, _)| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|c| c.trim() == name)
                    .unwrap_or(false)
            })
            .count();
        if matching >= n {
            return d;
        }
        assert!(
            Instant::now() < deadline,
            "never saw {n} {name} processes under {root}: {d:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn assert_all_gone(procs: &[(u32, u64)]) {
    // A hang detector: generous, since a loaded machine reaps slowly.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left: Vec<&(u32, u64)> = procs.iter().filter(|(p, s)| exists(*p, *s)).collect();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Processes whose command line contains `marker` (a unique argument), not zombies.
pub fn with_marker(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rfind(')')
                .is_some_and(|i| stat[i + 2..].starts_with('Z'));
            !zombie && String::from_utf8_lossy(&cmd).contains(marker)
        })
        .collect()
}

pub fn gone_within(marker: &str, limit: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while !with_marker(marker).is_empty() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

/// Waits until process `pid` catches SIGINT and SIGTERM (`SigCgt` in `/proc/PID/status`): a
/// signal sent before its handlers are installed would kill it outright, a case no program can
/// answer, however slowly a loaded machine starts it.
pub fn wait_for_signal_handlers(pid: u32) {
    let wanted = (1u64 << (libc::SIGINT - 1)) | (1u64 << (libc::SIGTERM - 1));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .unwrap_or(0);
        if caught & wanted == wanted {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "process {pid} never installed its SIGINT and SIGTERM handlers"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sends `sig` to `child` and waits for it: its status, what it wrote to its (piped) standard
/// error, and how long it took to end after the signal.
pub fn signal_and_wait(
    child: &mut Child,
    sig: i32,
) -> (std::process::ExitStatus, String, Duration) {
    // SAFETY: kill(2) on our own, not yet reaped, child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let sent = Instant::now();
    let status = child.wait().unwrap();
    let took = sent.elapsed();
    let mut err = String::new();
    if let Some(e) = child.stderr.as_mut() {
        std::io::Read::read_to_string(e, &mut err).unwrap();
    }
    (status, err, took)
}

/// Runs the command `args` in `dir` under strace, which delivers SIGTERM as a thread makes its
/// `when`-th rename (strace counts per thread; `every_thread` traces all of them, `-f`, else
/// the main thread alone), and checks that the command ended by that signal, as it would have.
pub fn ended_by_sigterm_at_rename(dir: &Path, args: &[&str], every_thread: bool, when: u32) {
    let inject = format!("inject=rename:signal=SIGTERM:when={when}");
    let mut strace = Command::new("strace");
    if every_thread {
        strace.arg("-f");
    }
    let out = strace
        .args(["-o", "/dev/null", "-e", &inject])
        .arg(env!("CARGO_BIN_EXE_smtsched"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("strace: {e} (install Debian's strace, as .ci/run does)"));
    // strace ends the way its tracee did: by SIGTERM.
    use std::os::unix::process::ExitStatusExt;
    assert!(
        out.status.signal() == Some(libc::SIGTERM) || out.status.code() == Some(128 + 15),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
