//! Where the machine's time went during a load run: per-CPU user, system, softirq and idle time
//! from `/proc/stat`; the server processes' user and system time (`/proc/PID/stat`) and context
//! switches (`/proc/PID/status`); and system calls through a perf tracepoint where the kernel
//! allows it.

use crate::perf::{CounterSet, Event, EventStatus, Target};
use crate::procgroup::{group_members, proc_stat_field};
use serde::Serialize;
use smtsched_model::CpuSet;
use std::collections::BTreeMap;

/// Seconds per clock tick of `/proc` times.
fn tick_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    1.0 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// Time of the chosen CPUs by kind, seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CpuTime {
    pub user_s: f64,
    pub system_s: f64,
    pub irq_s: f64,
    pub softirq_s: f64,
    pub idle_s: f64,
}

impl CpuTime {
    /// The sum over `cpus` of `/proc/stat`'s `cpuN` lines.
    pub fn read(cpus: &CpuSet) -> std::io::Result<CpuTime> {
        Ok(Self::read_each(cpus)?
            .values()
            .fold(CpuTime::default(), |a, b| a.plus(b)))
    }

    /// `/proc/stat`'s `cpuN` line of each CPU of `cpus`.
    pub fn read_each(cpus: &CpuSet) -> std::io::Result<BTreeMap<u32, CpuTime>> {
        let text = std::fs::read_to_string("/proc/stat")?;
        let mut each = BTreeMap::new();
        let tick = tick_s();
        for line in text.lines() {
            let mut f = line.split_whitespace();
            let Some(cpu) = f
                .next()
                .and_then(|n| n.strip_prefix("cpu")?.parse::<u32>().ok())
            else {
                continue;
            };
            if !cpus.contains(cpu) {
                continue;
            }
            let v: Vec<f64> = f.map(|x| x.parse::<f64>().unwrap_or(0.0) * tick).collect();
            if v.len() < 7 {
                continue;
            }
            // user nice system idle iowait irq softirq [steal guest guest_nice]
            each.insert(
                cpu,
                CpuTime {
                    user_s: v[0] + v[1],
                    system_s: v[2],
                    idle_s: v[3] + v[4],
                    irq_s: v[5],
                    softirq_s: v[6],
                },
            );
        }
        Ok(each)
    }

    pub fn plus(&self, e: &CpuTime) -> CpuTime {
        CpuTime {
            user_s: self.user_s + e.user_s,
            system_s: self.system_s + e.system_s,
            irq_s: self.irq_s + e.irq_s,
            softirq_s: self.softirq_s + e.softirq_s,
            idle_s: self.idle_s + e.idle_s,
        }
    }

    pub fn since(&self, e: &CpuTime) -> CpuTime {
        CpuTime {
            user_s: self.user_s - e.user_s,
            system_s: self.system_s - e.system_s,
            irq_s: self.irq_s - e.irq_s,
            softirq_s: self.softirq_s - e.softirq_s,
            idle_s: self.idle_s - e.idle_s,
        }
    }
}

/// CPU time and context switches of a process group's members.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct GroupTime {
    pub user_s: f64,
    pub system_s: f64,
    pub context_switches: u64,
}

impl GroupTime {
    pub fn read(pgid: i32) -> GroupTime {
        let tick = tick_s();
        let mut g = GroupTime::default();
        for pid in group_members(pgid) {
            g.user_s += proc_stat_field(pid, 14).unwrap_or(0) as f64 * tick;
            g.system_s += proc_stat_field(pid, 15).unwrap_or(0) as f64 * tick;
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            for l in status.lines() {
                if let Some(v) = l
                    .strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
                {
                    g.context_switches += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
        g
    }

    pub fn since(&self, e: &GroupTime) -> GroupTime {
        GroupTime {
            user_s: self.user_s - e.user_s,
            system_s: self.system_s - e.system_s,
            context_switches: self.context_switches - e.context_switches,
        }
    }
}

/// Per-event counters on every process of a group (each process and its threads).
pub struct GroupCounters {
    sets: Vec<CounterSet>,
    pub status: Vec<(Event, EventStatus)>,
}

impl GroupCounters {
    /// Opens `events` on every member of group `pgid`; an event any member refuses is
    /// unsupported with the kernel's reason.
    pub fn open(pgid: i32, events: &[Event]) -> GroupCounters {
        let mut sets = Vec::new();
        let mut status: Vec<(Event, EventStatus)> = events
            .iter()
            .map(|&e| (e, EventStatus::Supported { user_only: false }))
            .collect();
        for pid in group_members(pgid) {
            match CounterSet::open(events, Target::Process(pid)) {
                Ok(set) => {
                    for (e, st) in set.status() {
                        if let Some(slot) = status.iter_mut().find(|(x, _)| x == e) {
                            if !st.is_supported() || slot.1.is_supported() && *st != slot.1 {
                                slot.1 = st.clone();
                            }
                        }
                    }
                    sets.push(set);
                }
                Err(err) => {
                    for slot in &mut status {
                        slot.1 = EventStatus::Unsupported {
                            reason: err.to_string(),
                        };
                    }
                }
            }
        }
        GroupCounters { sets, status }
    }

    pub fn enable(&mut self) {
        for s in &mut self.sets {
            let _ = s.enable();
        }
    }

    /// Totals of the supported events since `enable`, scaled by running time; an event that
    /// was never counted (or is unsupported) is left out.
    pub fn totals(&mut self) -> Vec<(Event, f64)> {
        let mut out: Vec<(Event, f64)> = Vec::new();
        for (e, st) in &self.status {
            if !st.is_supported() {
                continue;
            }
            let mut sum = Some(0.0);
            for s in &mut self.sets {
                // A task's counter is enabled only while the task runs: one that never ran has
                // no time and counted nothing.
                let v = s.read().ok().and_then(|snap| {
                    let r = snap.0.get(e)?;
                    if r.enabled_ns == 0 {
                        Some(r.count as f64)
                    } else {
                        r.scaled()
                    }
                });
                sum = sum.zip(v).map(|(a, b)| a + b);
            }
            if let Some(v) = sum {
                out.push((*e, v));
            }
        }
        out
    }
}
