//! Performance counters through `perf_event_open(2)`: per process (and its threads), per process
//! and its descendants, or per logical CPU.
//!
//! Each event is opened on its own, so the kernel multiplexes hardware events when there are more
//! than the PMU has counters, and every reading carries `time_enabled`/`time_running` for
//! scaling. An event that cannot be opened is reported as unsupported with the kernel's reason;
//! an event that was never scheduled onto the PMU reads as "not counted". No value is ever
//! estimated or filled in.

use crate::error::{HostError, Result};
use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware, Software};
use perf_event::{Builder, Counter};
use serde::{Deserialize, Serialize};
use smtsched_model::events::CounterEvent;
use std::collections::BTreeMap;

macro_rules! events {
    ($($variant:ident = $name:literal, $hw:expr, $desc:literal;)*) => {
        /// An event smtsched knows how to count. Names follow the simulator's counters where the
        /// meaning is the same (`cycles`, `instructions`, `branch_mispredicts`, `l1d_misses`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Event { $($variant),* }

        impl Event {
            /// Every event, hardware first.
            pub const ALL: &'static [Event] = &[$(Event::$variant),*];

            /// The name used in files and on the command line.
            pub fn name(self) -> &'static str {
                match self { $(Event::$variant => $name),* }
            }

            /// Counted by the CPU's PMU (as opposed to the kernel's software events).
            pub fn is_hardware(self) -> bool {
                match self { $(Event::$variant => $hw),* }
            }

            pub fn description(self) -> &'static str {
                match self { $(Event::$variant => $desc),* }
            }
        }
    };
}

events! {
    Cycles = "cycles", true, "core clock cycles (PERF_COUNT_HW_CPU_CYCLES)";
    Instructions = "instructions", true, "retired instructions";
    Branches = "branches", true, "retired branch instructions";
    BranchMispredicts = "branch_mispredicts", true, "mispredicted branches (PERF_COUNT_HW_BRANCH_MISSES)";
    CacheReferences = "cache_references", true, "cache references as the PMU defines them (usually last-level accesses)";
    CacheMisses = "cache_misses", true, "cache misses as the PMU defines them (usually last-level misses)";
    L1dAccesses = "l1d_accesses", true, "level-1 data cache read accesses";
    L1dMisses = "l1d_misses", true, "level-1 data cache read misses";
    L1iMisses = "l1i_misses", true, "level-1 instruction cache read misses";
    LlcAccesses = "llc_accesses", true, "last-level cache read accesses";
    LlcMisses = "llc_misses", true, "last-level cache read misses";
    DtlbMisses = "dtlb_misses", true, "data TLB read misses";
    ItlbMisses = "itlb_misses", true, "instruction TLB misses";
    StalledCyclesFrontend = "stalled_cycles_frontend", true, "cycles the front end delivered nothing";
    StalledCyclesBackend = "stalled_cycles_backend", true, "cycles the back end could not accept work";
    TaskClockNs = "task_clock_ns", false, "CPU time of the observed tasks, nanoseconds (software)";
    ContextSwitches = "context_switches", false, "context switches (software)";
    CpuMigrations = "cpu_migrations", false, "migrations between logical CPUs (software)";
    PageFaults = "page_faults", false, "page faults, minor and major (software)";
    MajorFaults = "major_faults", false, "page faults that needed I/O (software)";
    Syscalls = "syscalls", false, "system calls entered (tracepoint raw_syscalls:sys_enter)";
}

impl Event {
    /// What `smtsched measure` counts unless told otherwise: fewer hardware events than a
    /// typical PMU has counters, so nothing is multiplexed.
    pub const DEFAULT: &'static [Event] = &[
        Event::Cycles,
        Event::Instructions,
        Event::BranchMispredicts,
        Event::L1dMisses,
        Event::LlcMisses,
        Event::CacheMisses,
        Event::TaskClockNs,
        Event::ContextSwitches,
        Event::CpuMigrations,
        Event::PageFaults,
    ];

    /// Accepts the name, the same with dashes, and perf(1)'s spelling of it.
    pub fn parse(s: &str) -> Option<Event> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        let alias = match norm.as_str() {
            "cpu_cycles" => "cycles",
            "branch_instructions" => "branches",
            "branch_misses" => "branch_mispredicts",
            "l1_dcache_loads" => "l1d_accesses",
            "l1_dcache_load_misses" => "l1d_misses",
            "l1_icache_load_misses" => "l1i_misses",
            "llc_loads" => "llc_accesses",
            "llc_load_misses" => "llc_misses",
            "dtlb_load_misses" => "dtlb_misses",
            "itlb_load_misses" => "itlb_misses",
            "task_clock" => "task_clock_ns",
            "cs" => "context_switches",
            "migrations" => "cpu_migrations",
            "faults" => "page_faults",
            other => other,
        };
        Event::ALL.iter().copied().find(|e| e.name() == alias)
    }

    /// Parses a comma-separated list; `default` is [`Event::DEFAULT`], `all` every event,
    /// `none` nothing.
    pub fn parse_list(s: &str) -> Result<Vec<Event>> {
        match s.trim() {
            "default" => return Ok(Event::DEFAULT.to_vec()),
            "all" => return Ok(Event::ALL.to_vec()),
            "none" | "" => return Ok(Vec::new()),
            _ => {}
        }
        let mut out = Vec::new();
        for part in s.split(',') {
            let e = Event::parse(part).ok_or_else(|| {
                HostError::bad(format!(
                    "unknown event {:?} (known: {})",
                    part.trim(),
                    Event::ALL
                        .iter()
                        .map(|e| e.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            if !out.contains(&e) {
                out.push(e);
            }
        }
        Ok(out)
    }

    /// The estimator's event this perf event counts, if any (the one vocabulary of
    /// [`CounterEvent`]). `cycles` is the denominator of every rate, not an event of its own.
    pub fn counter_event(self) -> Option<CounterEvent> {
        Some(match self {
            Event::Instructions => CounterEvent::Instructions,
            Event::BranchMispredicts => CounterEvent::BranchMispredicts,
            Event::L1dMisses => CounterEvent::L1dMisses,
            Event::L1iMisses => CounterEvent::L1iMisses,
            Event::LlcMisses => CounterEvent::LlcMisses,
            _ => return None,
        })
    }

    /// The perf event that counts `e`, if the PMU interface has one (it has no generic event
    /// for floating-point operations, loads or stores).
    pub fn of_counter_event(e: CounterEvent) -> Option<Event> {
        Event::ALL
            .iter()
            .copied()
            .find(|ev| ev.counter_event() == Some(e))
    }

    fn configure(self, b: &mut Builder) -> std::result::Result<(), String> {
        let cache = |which, operation, result| Cache {
            which,
            operation,
            result,
        };
        match self {
            Event::Cycles => b.event(Hardware::CPU_CYCLES),
            Event::Instructions => b.event(Hardware::INSTRUCTIONS),
            Event::Branches => b.event(Hardware::BRANCH_INSTRUCTIONS),
            Event::BranchMispredicts => b.event(Hardware::BRANCH_MISSES),
            Event::CacheReferences => b.event(Hardware::CACHE_REFERENCES),
            Event::CacheMisses => b.event(Hardware::CACHE_MISSES),
            Event::L1dAccesses => b.event(cache(CacheId::L1D, CacheOp::READ, CacheResult::ACCESS)),
            Event::L1dMisses => b.event(cache(CacheId::L1D, CacheOp::READ, CacheResult::MISS)),
            Event::L1iMisses => b.event(cache(CacheId::L1I, CacheOp::READ, CacheResult::MISS)),
            Event::LlcAccesses => b.event(cache(CacheId::LL, CacheOp::READ, CacheResult::ACCESS)),
            Event::LlcMisses => b.event(cache(CacheId::LL, CacheOp::READ, CacheResult::MISS)),
            Event::DtlbMisses => b.event(cache(CacheId::DTLB, CacheOp::READ, CacheResult::MISS)),
            Event::ItlbMisses => b.event(cache(CacheId::ITLB, CacheOp::READ, CacheResult::MISS)),
            Event::StalledCyclesFrontend => b.event(Hardware::STALLED_CYCLES_FRONTEND),
            Event::StalledCyclesBackend => b.event(Hardware::STALLED_CYCLES_BACKEND),
            Event::TaskClockNs => b.event(Software::TASK_CLOCK),
            Event::ContextSwitches => b.event(Software::CONTEXT_SWITCHES),
            Event::CpuMigrations => b.event(Software::CPU_MIGRATIONS),
            Event::PageFaults => b.event(Software::PAGE_FAULTS),
            Event::MajorFaults => b.event(Software::PAGE_FAULTS_MAJ),
            Event::Syscalls => b.event(perf_event::events::Tracepoint::with_id(tracepoint_id(
                "raw_syscalls",
                "sys_enter",
            )?)),
        };
        Ok(())
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What to observe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The calling thread and every process and thread it creates afterwards (counts of
    /// descendants are added when they exit).
    SelfAndDescendants,
    /// A running process: each of its current threads, and threads they create afterwards.
    Process(i32),
    /// The commands this process starts from now on, from their exec, and what they start: not
    /// this process, whose own work (forking, waiting, reading /proc) is not theirs. The kernel
    /// enables the counters in each command as it execs ([`CounterSet::enable`] does nothing).
    CommandsStarted,
    /// Everything that runs on one logical CPU (needs root or `perf_event_paranoid` <= 0).
    Cpu(u32),
    /// One thread only (not the threads it creates): the agent's per-task counters.
    Thread(i32),
}

/// Whether an event could be opened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum EventStatus {
    /// Counting; `user_only` where the kernel refused to count kernel mode too.
    Supported {
        user_only: bool,
    },
    Unsupported {
        reason: String,
    },
}

impl EventStatus {
    pub fn is_supported(&self) -> bool {
        matches!(self, EventStatus::Supported { .. })
    }
}

impl std::fmt::Display for EventStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EventStatus::Supported { user_only: false } => f.write_str("supported"),
            EventStatus::Supported { user_only: true } => f.write_str("supported (user mode only)"),
            EventStatus::Unsupported { reason } => write!(f, "unsupported: {reason}"),
        }
    }
}

/// One raw reading of one event (summed over the observed threads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reading {
    pub count: u64,
    pub enabled_ns: u64,
    pub running_ns: u64,
}

impl Reading {
    /// The count scaled for multiplexing (`count × enabled / running`); `None` if the event never
    /// ran on the PMU during the interval, so that nothing can be said.
    pub fn scaled(&self) -> Option<f64> {
        if self.running_ns == 0 {
            return None;
        }
        if self.running_ns >= self.enabled_ns {
            return Some(self.count as f64);
        }
        Some(self.count as f64 * self.enabled_ns as f64 / self.running_ns as f64)
    }

    /// Fraction of the enabled time the event was on the PMU (1 = not multiplexed).
    pub fn running_fraction(&self) -> Option<f64> {
        (self.enabled_ns > 0).then(|| (self.running_ns as f64 / self.enabled_ns as f64).min(1.0))
    }

    /// `self - earlier`, for an interval.
    pub fn since(&self, earlier: &Reading) -> Reading {
        Reading {
            count: self.count.saturating_sub(earlier.count),
            enabled_ns: self.enabled_ns.saturating_sub(earlier.enabled_ns),
            running_ns: self.running_ns.saturating_sub(earlier.running_ns),
        }
    }
}

/// Readings of every supported event at one moment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot(pub BTreeMap<Event, Reading>);

impl Snapshot {
    /// Interval from `earlier` to `self`.
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        Snapshot(
            self.0
                .iter()
                .map(|(e, r)| (*e, earlier.0.get(e).map_or(*r, |o| r.since(o))))
                .collect(),
        )
    }

    /// Scaled values of the events that were counted; events that never ran are left out.
    pub fn scaled(&self) -> BTreeMap<Event, f64> {
        self.0
            .iter()
            .filter_map(|(e, r)| Some((*e, r.scaled()?)))
            .collect()
    }
}

/// A set of open counters and the status of every requested event.
pub struct CounterSet {
    target: Target,
    counters: Vec<(Event, Vec<Counter>)>,
    status: Vec<(Event, EventStatus)>,
}

impl CounterSet {
    /// Opens every event for `target`. Never fails as a whole: an event that cannot be opened is
    /// recorded as unsupported with the reason. Counters start disabled.
    pub fn open(events: &[Event], target: Target) -> Result<CounterSet> {
        let threads: Vec<i32> = match target {
            Target::Process(pid) => process_threads(pid)?,
            _ => Vec::new(),
        };
        let mut set = CounterSet {
            target,
            counters: Vec::new(),
            status: Vec::new(),
        };
        let mut unique: Vec<Event> = Vec::new();
        for &e in events {
            if !unique.contains(&e) {
                unique.push(e);
            }
        }
        for e in unique {
            match open_event(e, target, &threads) {
                Ok((counters, user_only)) => {
                    set.counters.push((e, counters));
                    set.status.push((e, EventStatus::Supported { user_only }));
                }
                Err(reason) => set.status.push((e, EventStatus::Unsupported { reason })),
            }
        }
        Ok(set)
    }

    /// Status of every requested event, in request order.
    pub fn status(&self) -> &[(Event, EventStatus)] {
        &self.status
    }

    /// The events being counted.
    pub fn supported(&self) -> Vec<Event> {
        self.counters.iter().map(|(e, _)| *e).collect()
    }

    /// Starts counting (for [`Target::CommandsStarted`], the kernel does at each exec).
    pub fn enable(&mut self) -> Result<()> {
        if self.target == Target::CommandsStarted {
            return Ok(());
        }
        for (e, cs) in &mut self.counters {
            for c in cs {
                c.enable()
                    .map_err(|err| HostError::os(format!("enabling counter {e}"), err))?;
            }
        }
        Ok(())
    }

    pub fn disable(&mut self) -> Result<()> {
        for (e, cs) in &mut self.counters {
            for c in cs {
                c.disable()
                    .map_err(|err| HostError::os(format!("disabling counter {e}"), err))?;
            }
        }
        Ok(())
    }

    /// Reads every counter (summing the threads of a process).
    pub fn read(&mut self) -> Result<Snapshot> {
        let mut snap = Snapshot::default();
        for (e, cs) in &mut self.counters {
            let mut total = Reading::default();
            for c in cs {
                let r = c
                    .read_count_and_time()
                    .map_err(|err| HostError::os(format!("reading counter {e}"), err))?;
                total.count += r.count;
                total.enabled_ns += r.time_enabled;
                total.running_ns += r.time_running;
            }
            snap.0.insert(*e, total);
        }
        Ok(snap)
    }
}

fn open_event(
    e: Event,
    target: Target,
    threads: &[i32],
) -> std::result::Result<(Vec<Counter>, bool), String> {
    // Count kernel mode too where allowed (the thesis counted both); fall back to user mode only.
    let mut last_err = String::new();
    for user_only in [false, true] {
        let mut out = Vec::new();
        let mut failed = None;
        let pids: Vec<Option<i32>> = match target {
            Target::SelfAndDescendants | Target::CommandsStarted => vec![None],
            Target::Process(_) => threads.iter().map(|&t| Some(t)).collect(),
            Target::Cpu(_) => vec![None],
            Target::Thread(tid) => vec![Some(tid)],
        };
        for pid in pids {
            let mut b = Builder::new(Software::DUMMY);
            e.configure(&mut b)?;
            b.exclude_kernel(user_only).exclude_hv(true).enabled(false);
            match target {
                Target::SelfAndDescendants => {
                    b.observe_self().any_cpu().inherit(true);
                }
                Target::CommandsStarted => {
                    // This process's copy stays disabled; a child's inherited copy is enabled
                    // at its exec, and its counts join this one when it exits.
                    b.observe_self()
                        .any_cpu()
                        .inherit(true)
                        .enable_on_exec(true);
                }
                Target::Process(_) => {
                    b.observe_pid(pid.unwrap()).any_cpu().inherit(true);
                }
                Target::Cpu(cpu) => {
                    b.any_pid().one_cpu(cpu as usize);
                }
                Target::Thread(tid) => {
                    b.observe_pid(tid).any_cpu();
                }
            }
            match b.build() {
                Ok(c) => out.push(c),
                Err(err) => {
                    failed = Some(err);
                    break;
                }
            }
        }
        match failed {
            None => return Ok((out, user_only)),
            Some(err) => {
                let code = err.raw_os_error();
                last_err = explain(e, &err);
                if !matches!(code, Some(libc::EACCES) | Some(libc::EPERM)) {
                    break;
                }
            }
        }
    }
    Err(last_err)
}

/// Where tracefs is normally mounted, newest first.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The id of tracepoint `category:name`, from tracefs. If tracefs is not mounted and this
/// process may mount it, it is mounted at /sys/kernel/tracing for the lookup and unmounted again
/// (the id stays valid: it names the tracepoint, not the mount).
pub fn tracepoint_id(category: &str, name: &str) -> std::result::Result<u64, String> {
    let read = |root: &str| {
        std::fs::read_to_string(format!("{root}/events/{category}/{name}/id"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
    };
    if let Some(id) = TRACEFS.iter().find_map(|r| read(r)) {
        return Ok(id);
    }
    let target = TRACEFS[0];
    let mounted = mount_tracefs(target);
    let id = read(target);
    if mounted {
        // SAFETY: a NUL-terminated path.
        unsafe { libc::umount2(c"/sys/kernel/tracing".as_ptr(), 0) };
    }
    id.ok_or_else(|| {
        format!(
            "tracepoint {category}:{name} not found: tracefs is not mounted at {target} and could              not be mounted{} (mount -t tracefs nodev {target})",
            if unsafe { libc::geteuid() } != 0 {
                " without root"
            } else {
                ""
            }
        )
    })
}

fn mount_tracefs(target: &str) -> bool {
    debug_assert_eq!(target, "/sys/kernel/tracing");
    // SAFETY: NUL-terminated strings; no data argument.
    unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            c"/sys/kernel/tracing".as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        ) == 0
    }
}

/// The kernel's errno turned into a reason a person can act on.
fn explain(e: Event, err: &std::io::Error) -> String {
    let no_pmu = e.is_hardware() && !hardware_pmu_present();
    let why = match err.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) if no_pmu => {
            "no hardware PMU is exposed to this system (virtual machines often have none)"
        }
        Some(libc::ENOENT) => "this CPU's PMU has no such event (ENOENT)",
        Some(libc::EOPNOTSUPP) => "not supported by this kernel or PMU (EOPNOTSUPP)",
        Some(libc::ENODEV) => "no such PMU (ENODEV)",
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "not permitted: run as root, grant CAP_PERFMON, or lower /proc/sys/kernel/perf_event_paranoid"
        }
        Some(libc::EINVAL) => "rejected by the kernel (EINVAL)",
        Some(libc::ESRCH) => "the process is gone (ESRCH)",
        Some(libc::EMFILE) => "too many open files (EMFILE)",
        Some(libc::ENOSYS) => "perf_event_open is not available in this kernel (ENOSYS)",
        _ => return err.to_string(),
    };
    why.to_string()
}

/// True if the kernel lists a CPU performance-monitoring unit under
/// `/sys/bus/event_source/devices` (`cpu`, `cpu_core`, `armv8_pmuv3_0`, …).
pub fn hardware_pmu_present() -> bool {
    std::fs::read_dir("/sys/bus/event_source/devices")
        .into_iter()
        .flatten()
        .flatten()
        .any(|d| {
            let n = d.file_name().to_string_lossy().to_string();
            n == "cpu"
                || n.starts_with("cpu_")
                || n.starts_with("armv")
                || n.contains("pmu") && !n.contains("uncore")
        })
}

/// Thread ids of a process from /proc/PID/task.
pub fn process_threads(pid: i32) -> Result<Vec<i32>> {
    let dir = format!("/proc/{pid}/task");
    let mut tids: Vec<i32> = std::fs::read_dir(&dir)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => HostError::bad(format!("--pid {pid}: no such process")),
            _ => HostError::Read {
                path: dir.clone().into(),
                source: e,
            },
        })?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// Probes which events this machine can count for the calling process.
pub fn probe(events: &[Event]) -> Vec<(Event, EventStatus)> {
    match CounterSet::open(events, Target::SelfAndDescendants) {
        Ok(set) => set.status.clone(),
        Err(e) => events
            .iter()
            .map(|&ev| {
                (
                    ev,
                    EventStatus::Unsupported {
                        reason: e.to_string(),
                    },
                )
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_events_map_onto_the_estimators_vocabulary_by_name() {
        // Where the meaning is the same the names are the same, so the mapping is by name.
        for &e in Event::ALL {
            match e.counter_event() {
                Some(c) => assert_eq!(c.name(), e.name()),
                None => assert!(CounterEvent::parse(e.name()).is_none(), "{e} unmapped"),
            }
        }
        assert_eq!(
            Event::of_counter_event(CounterEvent::LlcMisses),
            Some(Event::LlcMisses)
        );
        assert_eq!(Event::of_counter_event(CounterEvent::FpOps), None);
    }

    #[test]
    fn scaling_is_hand_checkable() {
        // Ran half the time it was enabled: the count doubles.
        let r = Reading {
            count: 1000,
            enabled_ns: 10,
            running_ns: 5,
        };
        assert_eq!(r.scaled(), Some(2000.0));
        assert_eq!(r.running_fraction(), Some(0.5));
        // Never ran: nothing can be said.
        assert_eq!(
            Reading {
                count: 0,
                enabled_ns: 10,
                running_ns: 0
            }
            .scaled(),
            None
        );
        assert_eq!(Reading::default().scaled(), None);
        // Not multiplexed: the raw count.
        assert_eq!(
            Reading {
                count: 7,
                enabled_ns: 10,
                running_ns: 10
            }
            .scaled(),
            Some(7.0)
        );
        let later = Reading {
            count: 3000,
            enabled_ns: 30,
            running_ns: 15,
        };
        assert_eq!(
            later.since(&r),
            Reading {
                count: 2000,
                enabled_ns: 20,
                running_ns: 10
            }
        );
    }

    #[test]
    fn event_names_and_aliases() {
        assert_eq!(
            Event::parse("branch-misses"),
            Some(Event::BranchMispredicts)
        );
        assert_eq!(Event::parse("task-clock"), Some(Event::TaskClockNs));
        assert_eq!(Event::parse("LLC-load-misses"), Some(Event::LlcMisses));
        assert_eq!(Event::parse("bogus"), None);
        for e in Event::ALL {
            assert_eq!(Event::parse(e.name()), Some(*e));
        }
        assert!(Event::parse_list("cycles,bogus")
            .unwrap_err()
            .to_string()
            .contains("\"bogus\""));
        assert_eq!(Event::parse_list("none").unwrap(), vec![]);
        assert_eq!(
            Event::parse_list("cycles,cycles,cs").unwrap(),
            vec![Event::Cycles, Event::ContextSwitches]
        );
    }
}
