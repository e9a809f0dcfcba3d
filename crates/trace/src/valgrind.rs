//! Running programs under valgrind: lackey for recording (its log streams through a pipe into the
//! importer, never to disk), and cachegrind for the cross-check. Both run with address-space
//! randomisation off (as `setarch -R` does), so that two runs of one program see the same
//! addresses.

use crate::error::{Result, TraceError};
use crate::format::{Summary, TraceMeta, TraceWriter};
use crate::lackey::{import_lackey, ImportStats};
use crate::output::AtomicFile;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::AtomicBool;

/// What to do with the traced program's standard output and error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ProgramOutput {
    /// Shared with ours (the user sees the program's output).
    #[default]
    Inherit,
    /// Discarded (tests; runs that must match byte for byte).
    Null,
}

impl ProgramOutput {
    /// The `Stdio` for a child's stdin, stdout or stderr.
    fn stdio(self) -> Stdio {
        match self {
            ProgramOutput::Inherit => Stdio::inherit(),
            ProgramOutput::Null => Stdio::null(),
        }
    }
}

/// Finds `name` as `execvp` would: a path if it contains a slash, else the first match on PATH.
pub fn resolve_command(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.is_empty() {
        return None;
    }
    if name.contains('/') {
        let p = PathBuf::from(name);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| executable(p))
}

fn valgrind() -> Result<PathBuf> {
    resolve_command("valgrind").ok_or(TraceError::ValgrindMissing)
}

/// A pipe whose ends close on exec (the child gets the write end by dup2 only).
fn pipe() -> std::io::Result<(std::fs::File, std::fs::File)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills two new descriptors that nothing else owns.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the descriptors are fresh and owned from here on by the Files.
    Ok(unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    })
}

/// Turns address-space randomisation off for the child (inherited across exec).
fn no_aslr(cmd: &mut Command) {
    // SAFETY: personality(2) is async-signal-safe and only changes this (child) process.
    unsafe {
        cmd.pre_exec(|| {
            let current = libc::personality(0xffff_ffff);
            if current != -1 {
                libc::personality((current | libc::ADDR_NO_RANDOMIZE) as libc::c_ulong);
            }
            Ok(())
        });
    }
}

/// A failed run as one line: how the program ended, and valgrind's own complaint if it made one
/// (lackey's closing `Exit code:` line is not the program's and is left out).
fn failure(command: &[String], status: ExitStatus, messages: &[String]) -> TraceError {
    use std::os::unix::process::ExitStatusExt;
    let status = match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => status.to_string(),
    };
    let detail = messages
        .iter()
        .rev()
        .find(|m| m.starts_with("valgrind:"))
        .map(|m| format!(" ({m})"))
        .unwrap_or_default();
    TraceError::CommandFailed {
        command: command.join(" "),
        status,
        detail,
    }
}

/// Valgrind's gdbserver is never used: without `--vgdb=no` every valgrind process creates three
/// `vgdb-pipe-*` files in TMPDIR and leaves them when it is killed.
const NO_GDBSERVER: &str = "--vgdb=no";

/// Starts `cmd` in a process group of its own (stopped whole by [`stop_group`]; a Ctrl-C on the
/// terminal reaches us only) that the kernel kills if we die.
fn spawn_group(cmd: &mut Command) -> Result<Child> {
    cmd.process_group(0);
    // SAFETY: prctl is async-signal-safe and only changes the child.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            TraceError::ValgrindMissing
        } else {
            TraceError::Invalid(format!("cannot start valgrind: {e}"))
        }
    })
}

/// Kills the process group of a child started by [`spawn_group`], reaps the child, and removes
/// the scratch files its valgrind processes left in TMPDIR.
fn stop_group(child: &mut Child) {
    stop_group_cleaning(child, &std::env::temp_dir());
}

/// [`stop_group`], valgrind's scratch files being in `tmpdir`. A starting valgrind creates
/// `valgrind_proc_<pid>_auxv_…` there and unlinks it a moment later: one killed in between (a
/// child process that starts as the trace is refused, more often on a loaded machine) leaves it.
fn stop_group_cleaning(child: &mut Child, tmpdir: &Path) {
    let group = child.id() as i32;
    let members = group_members(group);
    // SAFETY: kill(2) on the group we created; its leader is not reaped yet.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let _ = child.wait();
    // A killed process may still finish a system call: clean once every one has died.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while members.iter().any(|&pid| alive(pid)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let prefixes: Vec<String> = members
        .iter()
        .map(|pid| format!("valgrind_proc_{pid}_"))
        .collect();
    let Ok(entries) = std::fs::read_dir(tmpdir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if prefixes.iter().any(|p| name.starts_with(p.as_str())) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The processes of process group `group` (from /proc; empty where it cannot be read).
fn group_members(group: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| stat_fields(pid).is_some_and(|(_, pgrp)| pgrp == group))
        .collect()
}

/// Whether `pid` still runs (a zombie or a vanished process does not).
fn alive(pid: i32) -> bool {
    stat_fields(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// A process's state and process group, from `/proc/<pid>/stat` ("pid (comm) state ppid pgrp …";
/// the command name may hold spaces and parentheses, so fields are counted after the last ')').
fn stat_fields(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let pgrp = rest.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

/// Waits for `child`; if `interrupted` is set meanwhile, stops its group and returns
/// `Interrupted` (of `origin`).
fn wait_or_stop(
    child: &mut Child,
    interrupted: Option<&AtomicBool>,
    origin: &str,
) -> Result<ExitStatus> {
    loop {
        if interrupted.is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed)) {
            stop_group(child);
            return Err(TraceError::Interrupted {
                origin: origin.into(),
            });
        }
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) => return Err(TraceError::Invalid(format!("waiting for valgrind: {e}"))),
        }
    }
}

fn check_command(command: &[String]) -> Result<()> {
    let Some(first) = command.first() else {
        return Err(TraceError::Invalid("no command given to run".into()));
    };
    if resolve_command(first).is_none() {
        if first.contains('/') && Path::new(first).exists() {
            return Err(TraceError::Invalid(format!(
                "{first}: not an executable file (no execute permission, or a directory)"
            )));
        }
        return Err(TraceError::CommandNotFound(first.clone()));
    }
    Ok(())
}

/// Counts the bytes read through it and reports them.
struct Counting<'p, R> {
    inner: R,
    bytes: u64,
    progress: &'p dyn Fn(u64),
}

impl<R: std::io::Read> std::io::Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        (self.progress)(self.bytes);
        Ok(n)
    }
}

/// Options of [`record`].
#[derive(Clone, Debug, Default)]
pub struct RecordOptions {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Stop after this many instructions (the program is then killed).
    pub max_instructions: Option<u64>,
    pub output: ProgramOutput,
}

/// What a recording produced.
#[derive(Clone, Debug)]
pub struct RecordReport {
    pub import: ImportStats,
    pub summary: Summary,
    pub file_bytes: u64,
}

/// Runs `opts.command` under lackey and writes its trace to `dest` (atomically: on any error
/// nothing is left at `dest`). The log flows through a pipe straight into the importer.
/// `progress` is told how many bytes of lackey output have been read.
pub fn record(
    opts: &RecordOptions,
    dest: &Path,
    interrupted: Option<&AtomicBool>,
    progress: &dyn Fn(u64),
) -> Result<RecordReport> {
    check_command(&opts.command)?;
    let vg = valgrind()?;
    let mut file = AtomicFile::create(dest)?;
    let (reader, writer) = pipe().map_err(|e| TraceError::Invalid(format!("pipe: {e}")))?;
    let log_fd = std::os::fd::AsRawFd::as_raw_fd(&writer);
    let mut cmd = Command::new(vg);
    cmd.args([
        "--tool=lackey",
        "--trace-mem=yes",
        "--log-fd=3",
        NO_GDBSERVER,
    ])
    .args(FOLLOW_EXEC)
    .args(&opts.command)
    .stdin(opts.output.stdio())
    .stdout(opts.output.stdio())
    .stderr(opts.output.stdio());
    no_aslr(&mut cmd);
    // SAFETY: dup2 and fcntl are async-signal-safe; they only touch the child.
    unsafe {
        cmd.pre_exec(move || {
            if log_fd == 3 {
                let flags = libc::fcntl(3, libc::F_GETFD);
                if flags == -1 || libc::fcntl(3, libc::F_SETFD, flags & !libc::FD_CLOEXEC) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(log_fd, 3) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    // Valgrind and whatever the traced program starts form one process group, stopped together.
    let mut child = spawn_group(&mut cmd)?;
    drop(writer);
    let label = dest.display().to_string();
    let result = (|| {
        let mut w = TraceWriter::new(&mut file).map_err(|e| TraceError::write(dest, e))?;
        let input: Box<dyn std::io::Read + '_> = match interrupted {
            Some(flag) => Box::new(ReadUntil::new(reader, flag)),
            None => Box::new(reader),
        };
        let reader = Counting {
            inner: input,
            bytes: 0,
            progress,
        };
        let stats = import_lackey(
            reader,
            "valgrind lackey output",
            &label,
            &mut w,
            opts.max_instructions,
            interrupted,
        )?;
        Ok((w, stats))
    })();
    let (w, stats) = match result {
        Ok(x) => x,
        Err(e) => {
            stop_group(&mut child);
            return Err(e);
        }
    };
    if stats.stopped_at_limit {
        stop_group(&mut child);
    } else {
        let status = child
            .wait()
            .map_err(|e| TraceError::Invalid(format!("waiting for valgrind: {e}")))?;
        if !status.success() {
            return Err(failure(&opts.command, status, &stats.messages));
        }
    }
    if stats.instructions == 0 {
        return Err(TraceError::Empty {
            origin: "valgrind lackey output".into(),
        });
    }
    let meta = TraceMeta {
        format: "lackey".into(),
        command: opts.command.clone(),
        imported_from: String::new(),
        stopped_at_limit: stats.stopped_at_limit,
        written_by: concat!("smtsched ", env!("CARGO_PKG_VERSION")).into(),
    };
    let (_, summary) = w.finish(&meta).map_err(|e| TraceError::write(dest, e))?;
    file.commit()?;
    let file_bytes = std::fs::metadata(dest).map(|m| m.len()).unwrap_or(0);
    Ok(RecordReport {
        import: stats,
        summary,
        file_bytes,
    })
}

/// Imports a saved lackey log (`-` for standard input) into the trace file `dest`, atomically.
/// An input (standard input, valgrind's log pipe) read on a thread of its own, so that a
/// Ctrl-C or SIGTERM (which set `flag`) is seen while a read waits for input that may never
/// come: the read then reports `Interrupted`, and the importer stops without committing.
struct ReadUntil<'a> {
    flag: &'a AtomicBool,
    chunks: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    pending: Vec<u8>,
    at: usize,
}

impl<'a> ReadUntil<'a> {
    fn new(mut input: impl std::io::Read + Send + 'static, flag: &'a AtomicBool) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        std::thread::spawn(move || loop {
            let mut buf = vec![0u8; 1 << 16];
            let r = input.read(&mut buf).map(|n| {
                buf.truncate(n);
                buf
            });
            let end = matches!(&r, Ok(b) if b.is_empty()) || r.is_err();
            if tx.send(r).is_err() || end {
                return;
            }
        });
        ReadUntil {
            flag,
            chunks: rx,
            pending: Vec::new(),
            at: 0,
        }
    }
}

impl std::io::Read for ReadUntil<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.pending.len() {
            if self.flag.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(std::io::ErrorKind::Interrupted.into());
            }
            match self
                .chunks
                .recv_timeout(std::time::Duration::from_millis(50))
            {
                Ok(chunk) => {
                    self.pending = chunk?;
                    self.at = 0;
                    if self.pending.is_empty() {
                        return Ok(0);
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(0),
            }
        }
        let n = out.len().min(self.pending.len() - self.at);
        out[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

pub fn import_file(
    input: &str,
    dest: &Path,
    limit: Option<u64>,
    interrupted: Option<&AtomicBool>,
    progress: &dyn Fn(u64),
) -> Result<(ImportStats, Summary)> {
    let reader: Box<dyn std::io::Read + '_> = if input == "-" {
        match interrupted {
            Some(flag) => Box::new(ReadUntil::new(std::io::stdin(), flag)),
            None => Box::new(std::io::stdin().lock()),
        }
    } else {
        let p = Path::new(input);
        if p.canonicalize()
            .ok()
            .is_some_and(|c| dest.canonicalize().ok() == Some(c))
        {
            return Err(TraceError::Invalid(format!(
                "{input}: the output file would overwrite the input"
            )));
        }
        Box::new(std::fs::File::open(p).map_err(|e| TraceError::read(p, e))?)
    };
    let origin = if input == "-" { "<stdin>" } else { input };
    let mut file = AtomicFile::create(dest)?;
    let mut w = TraceWriter::new(&mut file).map_err(|e| TraceError::write(dest, e))?;
    let reader = Counting {
        inner: reader,
        bytes: 0,
        progress,
    };
    let stats = import_lackey(
        reader,
        origin,
        &dest.display().to_string(),
        &mut w,
        limit,
        interrupted,
    )?;
    if stats.instructions == 0 {
        return Err(TraceError::Empty {
            origin: origin.to_string(),
        });
    }
    let meta = TraceMeta {
        format: "lackey".into(),
        command: Vec::new(),
        imported_from: origin.to_string(),
        stopped_at_limit: stats.stopped_at_limit,
        written_by: concat!("smtsched ", env!("CARGO_PKG_VERSION")).into(),
    };
    let (_, summary) = w.finish(&meta).map_err(|e| TraceError::write(dest, e))?;
    file.commit()?;
    Ok((stats, summary))
}

/// A cache geometry as cachegrind takes it (`--D1=size,assoc,line`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub size_bytes: u64,
    pub ways: u32,
    pub line_bytes: u32,
}

impl Geometry {
    pub fn sets(&self) -> u64 {
        self.size_bytes / (self.ways as u64 * self.line_bytes as u64)
    }

    fn arg(&self) -> String {
        format!("{},{},{}", self.size_bytes, self.ways, self.line_bytes)
    }

    /// Checks the geometry is one both cachegrind and the simulator take.
    pub fn validate(&self, name: &str) -> Result<()> {
        let ok = self.ways > 0
            && self.line_bytes.is_power_of_two()
            && self.line_bytes >= 16
            && self
                .size_bytes
                .is_multiple_of(self.ways as u64 * self.line_bytes as u64)
            && self.sets().is_power_of_two();
        if ok {
            Ok(())
        } else {
            Err(TraceError::Invalid(format!(
                "{name} = {}: need size = ways × line × sets with a power-of-two line (≥ 16) and set count",
                self.arg()
            )))
        }
    }
}

impl std::fmt::Display for Geometry {
    /// As cachegrind's options take it: `SIZE,WAYS,LINE`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.arg())
    }
}

impl std::str::FromStr for Geometry {
    type Err = TraceError;
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            TraceError::Invalid(format!(
                "cache geometry {s:?}: expected SIZE,WAYS,LINE in bytes"
            ))
        };
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        let [size, ways, line] = parts[..] else {
            return Err(bad());
        };
        Ok(Geometry {
            size_bytes: size.parse().map_err(|_| bad())?,
            ways: ways.parse().map_err(|_| bad())?,
            line_bytes: line.parse().map_err(|_| bad())?,
        })
    }
}

/// The three caches cachegrind simulates: I1 and D1 in front of one unified last level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    pub i1: Geometry,
    pub d1: Geometry,
    pub ll: Geometry,
}

/// Cachegrind's totals (the `summary:` line of its output file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CachegrindCounts {
    pub ir: u64,
    pub i1mr: u64,
    pub ilmr: u64,
    pub dr: u64,
    pub d1mr: u64,
    pub dlmr: u64,
    pub dw: u64,
    pub d1mw: u64,
    pub dlmw: u64,
}

impl CachegrindCounts {
    pub fn d1_misses(&self) -> u64 {
        self.d1mr + self.d1mw
    }

    pub fn ll_data_misses(&self) -> u64 {
        self.dlmr + self.dlmw
    }

    /// Parses a cachegrind output file's `events:` and `summary:` lines.
    pub fn parse(text: &str) -> Result<Self> {
        let line = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|s| s.split_whitespace().collect::<Vec<_>>())
        };
        let bad = |why: &str| TraceError::Invalid(format!("cachegrind output: {why}"));
        let events = line("events:").ok_or_else(|| bad("no events line"))?;
        let values = line("summary:").ok_or_else(|| bad("no summary line"))?;
        if events.len() != values.len() {
            return Err(bad("summary and events differ in length"));
        }
        let mut c = CachegrindCounts::default();
        for (e, v) in events.iter().zip(&values) {
            let v: u64 = v.parse().map_err(|_| bad("non-numeric summary"))?;
            let slot = match *e {
                "Ir" => &mut c.ir,
                "I1mr" => &mut c.i1mr,
                "ILmr" => &mut c.ilmr,
                "Dr" => &mut c.dr,
                "D1mr" => &mut c.d1mr,
                "DLmr" => &mut c.dlmr,
                "Dw" => &mut c.dw,
                "D1mw" => &mut c.d1mw,
                "DLmw" => &mut c.dlmw,
                _ => continue,
            };
            *slot = v;
        }
        if c.ir == 0 {
            return Err(bad(
                "no instructions counted (was --cache-sim=yes in effect?)",
            ));
        }
        Ok(c)
    }
}

/// Valgrind follows the program into whatever it execs (a wrapper script, `env`), so that a trace
/// and cachegrind's counts are of the program finally run; a child it forks stays silent until
/// it execs (and is then refused by the lackey import: its lines would mix with the first's).
const FOLLOW_EXEC: [&str; 2] = ["--trace-children=yes", "--child-silent-after-fork=yes"];

/// Runs `command` under `valgrind --tool=cachegrind --cache-sim=yes` with the given caches and
/// address randomisation off; returns its totals. If `interrupted` is set meanwhile, valgrind and
/// the program are stopped and `Interrupted` returned.
pub fn run_cachegrind(
    command: &[String],
    caches: &CacheConfig,
    output: ProgramOutput,
    interrupted: Option<&AtomicBool>,
) -> Result<CachegrindCounts> {
    check_command(command)?;
    for (n, g) in [("I1", caches.i1), ("D1", caches.d1), ("LL", caches.ll)] {
        g.validate(n)?;
    }
    let vg = valgrind()?;
    let dir = std::env::temp_dir().join(format!("smtsched-cg-{}-{}", std::process::id(), {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }));
    std::fs::create_dir_all(&dir).map_err(|e| TraceError::write(&dir, e))?;
    // One file per process (`%p`): the one read is the process valgrind started as.
    let out_file = |pid: &str| dir.join(format!("cachegrind.out.{pid}"));
    let mut cmd = Command::new(vg);
    cmd.arg("--tool=cachegrind")
        .arg("--cache-sim=yes")
        .arg(format!("--I1={}", caches.i1.arg()))
        .arg(format!("--D1={}", caches.d1.arg()))
        .arg(format!("--LL={}", caches.ll.arg()))
        .arg(format!(
            "--cachegrind-out-file={}",
            out_file("%p").display()
        ))
        .args(FOLLOW_EXEC)
        .args(["-q", NO_GDBSERVER])
        .args(command)
        .stdin(output.stdio())
        .stdout(output.stdio())
        .stderr(output.stdio());
    no_aslr(&mut cmd);
    let origin = format!("`{}` under cachegrind", command.join(" "));
    let status = spawn_group(&mut cmd).and_then(|mut child| {
        let status = wait_or_stop(&mut child, interrupted, &origin)?;
        Ok((status, child.id()))
    });
    let result = status.and_then(|(status, pid)| {
        if !status.success() {
            return Err(failure(command, status, &[]));
        }
        let out_file = out_file(&pid.to_string());
        let text =
            std::fs::read_to_string(&out_file).map_err(|e| TraceError::read(&out_file, e))?;
        CachegrindCounts::parse(&text)
    });
    let _ = std::fs::remove_dir_all(&dir);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_group_leaves_none_of_its_processes_scratch_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Another process's scratch file and a user's file stay.
        std::fs::write(d.join("valgrind_proc_1_auxv_0"), "").unwrap();
        std::fs::write(d.join("notes.txt"), "").unwrap();
        // The leader and a child it forks each leave one, as a valgrind killed while starting does.
        let mut cmd = Command::new("sh");
        cmd.env("D", d).arg("-c").arg(
            r#"sh -c 'touch "$D/valgrind_proc_$$_auxv_2"; exec sleep 30' &
               touch "$D/valgrind_proc_$$_auxv_1"; exec sleep 30"#,
        );
        let mut child = spawn_group(&mut cmd).unwrap();
        let names = || -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        let theirs = || {
            names()
                .iter()
                .filter(|n| n.starts_with("valgrind_proc_") && !n.starts_with("valgrind_proc_1_"))
                .count()
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while theirs() < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "the processes never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        stop_group_cleaning(&mut child, d);
        assert_eq!(names(), ["notes.txt", "valgrind_proc_1_auxv_0"]);
    }
}
