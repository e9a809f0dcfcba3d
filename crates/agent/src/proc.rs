//! What `/proc` says about processes and threads: identity (start time), state, nice level,
//! scheduling class, the CPU a thread last ran on, its CPU time and run delay, its children and
//! owner. Per-thread files stay open between periods and are re-read with `pread`, which makes a
//! sample of 100 threads a few hundred system calls and no path lookups.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The fields of `/proc/PID/task/TID/stat` the agent uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadStat {
    /// `R` running or runnable, `S` sleeping, `D`, `T`, `Z`…
    pub state: u8,
    pub nice: i32,
    /// Clock ticks after boot: with the tid, an identity a reused id never has.
    pub start_time: u64,
    /// The CPU it last ran on.
    pub processor: u32,
    /// Scheduling policy (`SCHED_OTHER` 0, `SCHED_FIFO` 1, `SCHED_RR` 2, `SCHED_BATCH` 3,
    /// `SCHED_IDLE` 5, `SCHED_DEADLINE` 6).
    pub policy: i32,
}

impl ThreadStat {
    /// Parses a stat line. The command name is in parentheses and may hold spaces and
    /// parentheses itself, so fields are counted after the last `)`.
    pub fn parse(text: &str) -> Option<ThreadStat> {
        let rest = &text[text.rfind(')')? + 1..];
        // Field n (1-based, as proc(5) numbers them) is the (n - 3)th after the command name;
        // taken in order without collecting the line (this runs for every thread every period).
        let mut f = rest.split_ascii_whitespace();
        let mut at = 3;
        let mut field = |n: usize| {
            let v = f.nth(n - at);
            at = n + 1;
            v
        };
        let state = *field(3)?.as_bytes().first()?;
        let nice = field(19)?.parse().ok()?;
        let start_time = field(22)?.parse().ok()?;
        let processor = field(39)?.parse().ok()?;
        let policy = field(41)?.parse().ok()?;
        Some(ThreadStat {
            state,
            nice,
            start_time,
            processor,
            policy,
        })
    }

    /// Running or waiting to run.
    pub fn runnable(&self) -> bool {
        self.state == b'R'
    }
}

/// CPU time and run delay (`schedstat`), nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Schedstat {
    pub cpu_ns: u64,
    pub wait_ns: u64,
}

impl Schedstat {
    pub fn parse(text: &str) -> Option<Schedstat> {
        let mut f = text.split_ascii_whitespace().map(|v| v.parse::<u64>());
        Some(Schedstat {
            cpu_ns: f.next()?.ok()?,
            wait_ns: f.next()?.ok()?,
        })
    }
}

/// A thread's open `stat` and `schedstat`.
#[derive(Debug)]
pub struct ThreadFiles {
    stat: File,
    schedstat: File,
}

impl ThreadFiles {
    pub fn open(pid: i32, tid: i32) -> std::io::Result<ThreadFiles> {
        let dir = format!("/proc/{pid}/task/{tid}");
        Ok(ThreadFiles {
            stat: File::open(format!("{dir}/stat"))?,
            schedstat: File::open(format!("{dir}/schedstat"))?,
        })
    }

    /// Reads both files; `None` once the thread has exited (the kernel answers an open file of a
    /// dead thread with an error or nothing).
    pub fn read(&self, buf: &mut [u8]) -> Option<(ThreadStat, Schedstat)> {
        Some((self.read_stat(buf)?, self.read_schedstat(buf)?))
    }

    pub fn read_stat(&self, buf: &mut [u8]) -> Option<ThreadStat> {
        let n = self.stat.read_at(buf, 0).ok().filter(|&n| n > 0)?;
        ThreadStat::parse(std::str::from_utf8(&buf[..n]).ok()?)
    }

    pub fn read_schedstat(&self, buf: &mut [u8]) -> Option<Schedstat> {
        let n = self.schedstat.read_at(buf, 0).ok().filter(|&n| n > 0)?;
        Schedstat::parse(std::str::from_utf8(&buf[..n]).ok()?)
    }
}

/// One read of a thread's stat (without keeping the file).
pub fn thread_stat(pid: i32, tid: i32) -> Option<ThreadStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    ThreadStat::parse(&text)
}

/// The process's stat (its main thread).
pub fn process_stat(pid: i32) -> Option<ThreadStat> {
    thread_stat(pid, pid)
}

/// Thread ids of a process (empty once it is gone).
pub fn threads(pid: i32) -> Vec<i32> {
    let mut tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    tids
}

/// Child processes of threads `tids` of `pid` (`/proc/PID/task/TID/children`).
pub fn children_of_threads(pid: i32, tids: &[i32]) -> Vec<i32> {
    let mut out = Vec::new();
    for &tid in tids {
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/children")) {
            out.extend(
                text.split_ascii_whitespace()
                    .filter_map(|c| c.parse::<i32>().ok()),
            );
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The process's name (`comm`).
pub fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

/// Real and effective user ids of a process (`Uid:` of `/proc/PID/status`).
pub fn uids(pid: i32) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut f = line.split_ascii_whitespace().map(|v| v.parse::<u32>());
    Some((f.next()?.ok()?, f.next()?.ok()?))
}

/// The cgroup path of a thread in the hierarchy that has the `cpu` controller (v1), or the
/// unified one (v2, `0::`).
pub fn thread_cgroup(pid: i32, tid: i32, v2: bool) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/cgroup")).ok()?;
    smtsched_host::cgroup::cpu_cgroup_of(&text, v2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis() {
        // A line as Linux 6.x writes it, for a command named "a) b (c" (52 fields).
        let line = "4242 (a) b (c) R 1 4242 4242 0 -1 4194560 100 0 0 0 250 3 0 0 20 5 2 0 \
                    123456 10000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 3 \
                    0 0 0 0 0 0 0 0 0 0 0";
        let s = ThreadStat::parse(line).unwrap();
        assert_eq!(s.state, b'R');
        assert_eq!(s.nice, 5);
        assert_eq!(s.start_time, 123456);
        assert_eq!(s.processor, 1);
        assert_eq!(s.policy, 3);
        assert!(s.runnable());
    }

    #[test]
    fn this_threads_own_files_agree_with_the_kernel() {
        // SAFETY: getpid/gettid have no preconditions.
        let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
        let files = ThreadFiles::open(pid, tid).unwrap();
        // Run long enough for the scheduler to account some CPU time (it does at ticks and
        // switches) and to sleep once, so that a switch folds the running time in.
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(30) {
            std::hint::spin_loop();
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        let mut buf = vec![0u8; 4096];
        let (stat, sched) = files.read(&mut buf).unwrap();
        assert_eq!(stat.state, b'R', "the reading thread is running");
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
        let online = smtsched_model::CpuSet::parse(online.trim()).unwrap();
        assert!(online.contains(stat.processor));
        assert!(sched.cpu_ns > 0);
        assert!(threads(pid).contains(&tid));
        let me = uids(pid).unwrap();
        // SAFETY: getuid/geteuid have no preconditions.
        assert_eq!(me, unsafe { (libc::getuid(), libc::geteuid()) });
    }
}
