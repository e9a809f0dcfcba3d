//! Each period's view of the managed threads, filled from `/proc` as the simulator fills it from
//! its own state: CPU time and run delay (`schedstat`), the CPU each thread last ran on, whether
//! it is runnable, counter rates where the PMU has them, and its co-runners.
//! Co-runners are estimated by [`smtsched_os::policy::corunners::infer_corunners`], as the
//! simulator can estimate them too.

use crate::proc::{Schedstat, ThreadFiles, ThreadStat};
use smtsched_host::perf::{CounterSet, Event, Snapshot, Target};
use smtsched_model::events::Epc;
use smtsched_model::CpuSet;
use smtsched_os::policy::{TaskKey, TaskSample};

/// Hardware events counted per thread where the PMU has them: cycles (the denominator) and the
/// events of the simulator's vocabulary.
pub fn counter_events() -> Vec<Event> {
    let mut v = vec![Event::Cycles];
    v.extend(
        smtsched_model::events::CounterEvent::ALL
            .iter()
            .filter_map(|&e| Event::of_counter_event(e))
            .filter(|e| *e != Event::Cycles),
    );
    v
}

/// One managed thread between periods.
pub struct Sampled {
    pub key: TaskKey,
    pub pid: i32,
    pub label: String,
    pub trust: Option<String>,
    /// Its nice level before the agent changed anything (the weight it has by itself).
    pub own_nice: i32,
    files: ThreadFiles,
    first: Schedstat,
    last: Schedstat,
    /// Its `stat` as last read.
    stat: ThreadStat,
    counters: Option<(CounterSet, Snapshot)>,
}

impl Sampled {
    /// Opens a thread's files (and counters, if `events` is not empty). `None` if it is gone or
    /// its id now names a thread started at another time.
    pub fn open(
        key: TaskKey,
        pid: i32,
        label: String,
        trust: Option<String>,
        own_nice: i32,
        events: &[Event],
    ) -> Option<Sampled> {
        let files = ThreadFiles::open(pid, key.pid as i32).ok()?;
        let mut buf = [0u8; 1024];
        let (stat, last) = files.read(&mut buf)?;
        if stat.start_time != key.start_time {
            return None;
        }
        let counters = (!events.is_empty())
            .then(|| {
                let mut set = CounterSet::open(events, Target::Thread(key.pid as i32)).ok()?;
                set.enable().ok()?;
                let snap = set.read().ok()?;
                Some((set, snap))
            })
            .flatten();
        Some(Sampled {
            key,
            pid,
            label,
            trust,
            own_nice,
            files,
            first: last,
            last,
            stat,
            counters,
        })
    }

    /// CPU time and run delay since the agent took the thread on, nanoseconds.
    pub fn since_adopted(&self) -> Schedstat {
        Schedstat {
            cpu_ns: self.last.cpu_ns.saturating_sub(self.first.cpu_ns),
            wait_ns: self.last.wait_ns.saturating_sub(self.first.wait_ns),
        }
    }

    /// The thread over the period since the last call; `None` once it has exited.
    pub fn sample(&mut self, buf: &mut [u8]) -> Option<(ThreadStat, TaskSample)> {
        let now = self.files.read_schedstat(buf)?;
        // A runnable thread that did not run is still runnable (it must run to sleep, stop or
        // exit) and still where it was: its `stat`, the costlier file, need not be read. Any
        // other thread's is — a sleeping thread may have been woken without running yet, which
        // `schedstat` does not show (the kernel adds run delay when it runs).
        let stat = if now == self.last && self.stat.runnable() {
            self.stat
        } else {
            let s = self.files.read_stat(buf)?;
            if s.start_time != self.key.start_time || s.state == b'Z' || s.state == b'X' {
                return None;
            }
            self.stat = s;
            s
        };
        let cpu_ns = now.cpu_ns.saturating_sub(self.last.cpu_ns);
        let wait_ns = now.wait_ns.saturating_sub(self.last.wait_ns);
        self.last = now;
        let counters = self.counters.as_mut().and_then(|(set, before)| {
            let snap = set.read().ok()?;
            let delta = snap.since(before).scaled();
            *before = snap;
            epc_of(&delta)
        });
        let sample = TaskSample {
            key: self.key,
            label: self.label.clone(),
            trust: self.trust.clone(),
            nice: self.own_nice,
            runnable: stat.runnable(),
            cpu_ns,
            wait_ns,
            total_cpu_ns: now.cpu_ns,
            cpus: if cpu_ns > 0 {
                CpuSet::from_iter([stat.processor])
            } else {
                CpuSet::default()
            },
            last_cpu: Some(stat.processor),
            corunners: Vec::new(),
            counters,
            pr_estimate: None,
        };
        Some((stat, sample))
    }
}

/// Events per cycle from scaled counts (`None` without cycles).
fn epc_of(counts: &std::collections::BTreeMap<Event, f64>) -> Option<Epc> {
    let cycles = *counts.get(&Event::Cycles)?;
    if cycles <= 0.0 {
        return None;
    }
    let mut epc = Epc::default();
    for (e, v) in counts {
        if let Some(c) = e.counter_event() {
            epc.set(c, v / cycles);
        }
    }
    Some(epc)
}
