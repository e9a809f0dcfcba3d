//! The simulation loop: software threads on hardware contexts, contexts on cores, cores sharing
//! caches and memory. Cores advance in simulated-time order, so shared-cache and bus contention
//! interleave as they would in time. Everything is deterministic: no host clock, no host threads.

use crate::counters::ThreadCounters;
use crate::memory::{Lookup, MemorySystem, Requester};
use crate::refill::{dirty_share, tail_fills, Rates, RefillCheck, CHECK_CYCLES, MEASURE_CYCLES};
use crate::share::share_bandwidth;
use crate::stream::{Instr, InstrKind, InstructionSource, PhaseTiming};
use smtsched_model::{CoreSpec, InorderCoreSpec, MachineModel, OooCoreSpec, SmtSharing};
use std::collections::VecDeque;

/// How far (in cycles) a core may run ahead of the slowest other core before yielding.
const CORE_SLACK_CYCLES: f64 = 16.0;
/// Steps a core takes per turn at most (bounds the time between termination checks).
const TURN_STEPS: u32 = 256;
/// Stall intervals remembered per context (enough to cover the time a sibling runs ahead).
const STALL_HISTORY: usize = 8;

/// One software thread to run.
pub struct ThreadPlan {
    pub source: Box<dyn InstructionSource>,
    /// Logical CPU it is pinned to. Several threads on one CPU time-share it.
    pub cpu: u32,
    /// Data address space (one per process).
    pub data_space: u32,
    /// Code address space (copies of one program share their text).
    pub code_space: u32,
    /// Instructions before the measured window starts (cache warm-up).
    pub warmup_instructions: u64,
    /// Instructions in the measured window.
    pub measure_instructions: u64,
}

/// What is measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Window {
    /// Each thread's own window of `warmup` then `measure` instructions; the run ends when every
    /// thread has finished its window (threads that finish early keep running, as in the
    /// thesis's loop-until-both-done method).
    Instructions,
    /// One window of simulated time for all threads, [start, end) in cycles.
    Cycles { start: f64, end: f64 },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunOptions {
    pub window: Window,
    /// Time slice of threads sharing one logical CPU, in cycles.
    pub quantum_cycles: u64,
    /// Sample every thread's counters each time this many cycles pass (as the thesis read the
    /// counters every ~100 ms); `None` takes no samples.
    pub sample_cycles: Option<f64>,
}

impl RunOptions {
    pub fn new(window: Window, quantum_cycles: u64) -> Self {
        RunOptions {
            window,
            quantum_cycles,
            sample_cycles: None,
        }
    }
}

/// Counters of a thread as they stood at a point in simulated time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub cycle: f64,
    pub counters: ThreadCounters,
}

/// Measured result of one thread.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadResult {
    /// Counters over the window (`cycles` here is the thread's own running time).
    pub window: ThreadCounters,
    /// Simulated time at the start and end of the window (includes time descheduled).
    pub start_cycle: f64,
    pub end_cycle: f64,
    /// Periodic samples over the whole run (warm-up and overrun included), if asked for.
    pub samples: Vec<Sample>,
    /// Lines the thread held in the last cache level of its data path at the end of the run
    /// (its footprint there, for refill costs after migration).
    pub llc_lines: usize,
}

impl ThreadResult {
    /// Wall-clock cycles of the window.
    pub fn elapsed_cycles(&self) -> f64 {
        self.end_cycle - self.start_cycle
    }

    /// Instructions per wall-clock cycle over the window.
    pub fn ipc(&self) -> f64 {
        self.window.instructions as f64 / self.elapsed_cycles()
    }
}

#[derive(Clone, Debug)]
pub struct RunResult {
    pub threads: Vec<ThreadResult>,
    /// Instructions simulated in all, warm-up and overrun included (for speed reports).
    pub instructions_simulated: u64,
}

struct SwThread {
    source: Box<dyn InstructionSource>,
    who: Requester,
    counters: ThreadCounters,
    /// Micro-ops retired so far (fractional per instruction; copied into `counters` at snapshots).
    uops: f64,
    warmup: u64,
    end: u64,
    /// Instructions at which the next snapshot of an instruction window is due (`u64::MAX`:
    /// none), so that progress is checked with one comparison.
    next_boundary: u64,
    start_snapshot: Option<(ThreadCounters, f64)>,
    end_snapshot: Option<(ThreadCounters, f64)>,
    /// On an in-order core: the instruction being issued and how much of its run has gone.
    pending: Option<Instr>,
    run_issued: u32,
    samples: Vec<Sample>,
    /// Whether the instruction being executed is a kernel one.
    kernel: bool,
    /// Its rates alone, if its time-shared quanta are simulated only while it refills.
    solo: Option<Rates>,
}

impl SwThread {
    /// The thread of `plan` in `slot`, nothing run yet.
    fn new(slot: usize, p: ThreadPlan, options: &RunOptions) -> Self {
        let mut t = SwThread {
            source: p.source,
            who: Requester::new(slot as u8, p.cpu, p.data_space, p.code_space),
            counters: ThreadCounters::default(),
            uops: 0.0,
            warmup: p.warmup_instructions,
            end: p.warmup_instructions + p.measure_instructions,
            next_boundary: u64::MAX,
            // A window that starts at the first instruction starts before anything happens.
            start_snapshot: (p.warmup_instructions == 0 && options.window == Window::Instructions)
                .then(|| (ThreadCounters::default(), 0.0)),
            end_snapshot: None,
            pending: None,
            run_issued: 0,
            samples: Vec::new(),
            kernel: false,
            solo: None,
        };
        if options.window == Window::Instructions {
            t.next_boundary = t.boundary_after();
        }
        t
    }

    /// A copy of the thread as it stands; `None` if its source cannot be copied.
    fn try_clone(&self) -> Option<Self> {
        Some(SwThread {
            source: self.source.try_clone()?,
            who: self.who,
            counters: self.counters,
            uops: self.uops,
            warmup: self.warmup,
            end: self.end,
            next_boundary: self.next_boundary,
            start_snapshot: self.start_snapshot,
            end_snapshot: self.end_snapshot,
            pending: self.pending,
            run_issued: self.run_issued,
            samples: self.samples.clone(),
            kernel: self.kernel,
            solo: self.solo,
        })
    }

    /// Whether the thread has run: retired, stalled or spent time.
    fn ran(&self) -> bool {
        self.counters != ThreadCounters::default() || self.uops != 0.0
    }

    /// Whether a sample or a boundary of a window of simulated time recorded the thread (what a
    /// thread built afresh from a plan does not have).
    fn recorded(&self) -> bool {
        !self.samples.is_empty()
            || self.end_snapshot.is_some()
            || self.start_snapshot.is_some_and(|(_, at)| at > 0.0)
    }

    fn done(&self) -> bool {
        self.end_snapshot.is_some()
    }

    /// The counters as of now.
    fn snapshot(&self) -> ThreadCounters {
        ThreadCounters {
            uops: self.uops.round() as u64,
            ..self.counters
        }
    }

    /// Instructions until the next window boundary of an instruction window (u64::MAX if none).
    #[inline]
    fn to_boundary(&self) -> u64 {
        self.next_boundary
            .saturating_sub(self.counters.instructions)
    }

    /// Records a window boundary reached at time `now`.
    #[inline]
    fn note_progress(&mut self, now: f64) {
        if self.counters.instructions >= self.next_boundary {
            self.cross_boundary(now);
        }
    }

    fn cross_boundary(&mut self, now: f64) {
        let n = self.counters.instructions;
        if n >= self.warmup && self.start_snapshot.is_none() {
            self.start_snapshot = Some((self.snapshot(), now));
        }
        if n >= self.end && self.end_snapshot.is_none() {
            self.end_snapshot = Some((self.snapshot(), now));
        }
        self.next_boundary = self.boundary_after();
    }

    /// The instruction count of the next snapshot of an instruction window.
    fn boundary_after(&self) -> u64 {
        if self.start_snapshot.is_none() {
            self.warmup
        } else if self.end_snapshot.is_none() {
            self.end
        } else {
            u64::MAX
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Miss {
    uop_seq: f64,
    load_seq: u64,
    complete: f64,
}

/// A hardware thread context and its timing state.
#[derive(Clone)]
struct Context {
    /// Software threads time-sharing this context; `current` indexes into it.
    queue: Vec<usize>,
    current: usize,
    /// `queue[current]`, the thread running now.
    running: Option<usize>,
    quantum_end: f64,
    now: f64,
    // Out-of-order window state.
    uop_seq: f64,
    load_seq: u64,
    inflight: VecDeque<Miss>,
    store_misses: VecDeque<f64>,
    chase_ready: f64,
    stalls: [(f64, f64); STALL_HISTORY],
    stall_next: usize,
    /// Latest end of any remembered stall: after it the context is certainly dispatching.
    stalls_until: f64,
    /// In-order: the cycle the context can issue again.
    ready_at: f64,
    /// In-order: the cycle up to which the running thread has been credited the cycles it lived
    /// through (credited when something reads or changes what they count, not every cycle).
    credited_until: f64,
    /// Next sampling time.
    next_sample: f64,
    /// Time at which `note_time` next has something to record (a sample or a window boundary).
    next_note: f64,
    // Rate cache.
    phase: u16,
    timing: PhaseTiming,
    last_fetch_line: u64,
    /// Cycles per instruction for recent sibling masks, valid while `rate_epoch` matches.
    rates: Vec<(u64, f64)>,
    rate_epoch: u64,
    fetch_levels: Vec<u8>,
    data_levels: Vec<u8>,
    fetch_shift: u32,
    /// Refill-only quanta: the check of the running thread's rates.
    refill: RefillCheck,
}

impl Context {
    fn new(mem: &MemorySystem, cpu: u32, quantum: f64) -> Self {
        Context {
            queue: Vec::new(),
            current: 0,
            running: None,
            quantum_end: quantum,
            now: 0.0,
            uop_seq: 0.0,
            load_seq: 0,
            inflight: VecDeque::new(),
            store_misses: VecDeque::new(),
            chase_ready: 0.0,
            stalls: [(0.0, 0.0); STALL_HISTORY],
            stall_next: 0,
            stalls_until: 0.0,
            ready_at: 0.0,
            credited_until: 0.0,
            next_sample: 0.0,
            next_note: 0.0,
            phase: u16::MAX,
            timing: PhaseTiming {
                ilp: 1.0,
                uops_per_instruction: 1.0,
                loads: 0.0,
                stores: 0.0,
                fp_ops: 0.0,
            },
            last_fetch_line: u64::MAX,
            rates: Vec::new(),
            rate_epoch: u64::MAX,
            fetch_levels: mem.fetch_levels(cpu),
            data_levels: mem.data_levels(cpu),
            fetch_shift: mem.fetch_line_shift(cpu),
            refill: RefillCheck::default(),
        }
    }

    /// Whether a refill-only check may be due: the context time-shares its CPU and its time
    /// reached the current interval's end (or a new quantum began).
    #[inline]
    fn refill_due(&self) -> bool {
        self.queue.len() > 1
            && (self.now >= self.refill.until || self.refill.quantum_end != self.quantum_end)
    }

    fn thread(&self) -> Option<usize> {
        self.running
    }

    fn record_stall(&mut self, from: f64, until: f64) {
        if until > from {
            self.stalls[self.stall_next] = (from, until);
            self.stall_next = (self.stall_next + 1) % STALL_HISTORY;
            self.stalls_until = self.stalls_until.max(until);
        }
    }

    /// Moves this context's clock to `until`, counting the wait as a stall of thread `t` (a
    /// count that saturates: a machine description may make a wait astronomically long).
    fn stall(&mut self, t: &mut SwThread, until: f64) {
        if until > self.now {
            t.counters.stall_cycles = t
                .counters
                .stall_cycles
                .saturating_add((until - self.now) as u64);
            self.record_stall(self.now, until);
            self.now = until;
        }
    }

    #[inline]
    fn cached_dt(&self, mask: u64, epoch: u64) -> Option<f64> {
        if self.rate_epoch != epoch {
            return None;
        }
        self.rates
            .iter()
            .find(|&&(m, _)| m == mask)
            .map(|&(_, dt)| dt)
    }

    fn cache_dt(&mut self, mask: u64, epoch: u64, dt: f64) {
        if self.rate_epoch != epoch {
            self.rates.clear();
            self.rate_epoch = epoch;
        }
        self.rates.push((mask, dt));
    }

    /// Whether this context is dispatching at time `t` (not stalled, not idle).
    fn issuing_at(&self, t: f64) -> bool {
        if self.queue.is_empty() {
            return false;
        }
        if t >= self.stalls_until {
            return true;
        }
        // Stalls are recorded in time order: the newest one starting by `t` decides.
        for i in 1..=STALL_HISTORY {
            let (a, b) = self.stalls[(self.stall_next + STALL_HISTORY - i) % STALL_HISTORY];
            if a <= t {
                return t >= b;
            }
        }
        true
    }

    /// Looks up the data `instr` accesses (a store if `write`) and counts where it was found.
    #[inline(always)]
    fn data(
        &self,
        t: &mut SwThread,
        mem: &mut MemorySystem,
        instr: &Instr,
        write: bool,
        now: f64,
    ) -> Lookup {
        let found = mem.data(t.who, instr.addr, instr.access_bytes, write, now);
        t.counters
            .record_path(false, &self.data_levels, found.counted_depth(now), t.kernel);
        found
    }

    /// Drops the misses that have completed by now from the window.
    fn retire_completed(&mut self) {
        while self
            .inflight
            .front()
            .is_some_and(|m| m.complete <= self.now)
        {
            self.inflight.pop_front();
        }
    }

    /// Looks up every fetch line from `first_pc` to the byte `last_pc` not looked up already;
    /// returns the time the last of them is available (front-end misses are taken one after
    /// another).
    #[inline(always)]
    fn fetch(
        &mut self,
        t: &mut SwThread,
        mem: &mut MemorySystem,
        first_pc: u64,
        last_pc: u64,
        now: f64,
    ) -> f64 {
        // Most instructions lie in the line fetched last: nothing to look up.
        let line = first_pc >> self.fetch_shift;
        if line == self.last_fetch_line && last_pc >> self.fetch_shift == line {
            return now;
        }
        self.fetch_lines(t, mem, first_pc, last_pc, now)
    }

    #[inline(never)]
    fn fetch_lines(
        &mut self,
        t: &mut SwThread,
        mem: &mut MemorySystem,
        first_pc: u64,
        last_pc: u64,
        now: f64,
    ) -> f64 {
        let mut ready = now;
        let mut line = first_pc >> self.fetch_shift;
        let last = last_pc >> self.fetch_shift;
        // Only the first line can be the one fetched last: the lines after it are new.
        if line == self.last_fetch_line {
            line += 1;
        }
        self.last_fetch_line = last;
        // A plain loop: an inclusive range's iterator costs more than the lookups it skips.
        while line <= last {
            let found = mem.fetch(t.who, line << self.fetch_shift, ready);
            t.counters
                .record_path(true, &self.fetch_levels, found.depth, t.kernel);
            if found.depth > 0 {
                ready = mem.ready_time(t.who.cpu, true, found, ready);
            }
            line += 1;
        }
        ready
    }
}

#[derive(Clone)]
enum CoreKind {
    Ooo(OooCoreSpec),
    Inorder(InorderCoreSpec),
}

#[derive(Clone)]
struct Core {
    kind: CoreKind,
    contexts: Vec<Context>,
    /// The contexts with threads to run (fixed for the run), in order.
    busy: Vec<usize>,
    /// Level-1 data misses holding a miss buffer.
    miss_buffers: MissBuffers,
    /// Bumped whenever a phase or a running thread changes on this core (invalidates rates).
    epoch: u64,
    /// The in-order core's clock (an out-of-order core's contexts keep their own).
    cycle: f64,
    /// Steps left in an out-of-order core's turn (a turn paused before a switch keeps them).
    steps_left: u32,
    rr_next: usize,
    penalty: f64,
    /// Cycles of one kernel entry and return, and of one locked instruction.
    mode_switch: f64,
    locked: f64,
}

impl Core {
    fn active(&self) -> bool {
        !self.busy.is_empty()
    }

    fn now(&self) -> f64 {
        match self.kind {
            CoreKind::Ooo(_) => self
                .busy
                .iter()
                .map(|&i| self.contexts[i].now)
                .fold(f64::INFINITY, f64::min),
            CoreKind::Inorder(_) => self.cycle,
        }
    }

    fn running(&self) -> u32 {
        self.busy.len() as u32
    }
}

/// Errors in a run plan.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error("logical CPU {cpu} does not exist on machine {machine} (it has CPUs 0-{last})")]
    NoSuchCpu {
        cpu: u32,
        machine: String,
        last: u32,
    },
    #[error("nothing to run: no threads")]
    Empty,
    #[error("too many threads ({0}); at most 127")]
    TooMany(usize),
    #[error("address space {0} out of range (at most {max})", max = crate::memory::SPACES - 1)]
    NoSuchSpace(u32),
}

/// A machine with threads placed on it, ready to run.
pub struct Simulation {
    mem: MemorySystem,
    threads: Vec<SwThread>,
    cores: Vec<Core>,
    options: RunOptions,
    switch_cycles: f64,
}

impl Simulation {
    pub fn new(
        machine: &MachineModel,
        plans: Vec<ThreadPlan>,
        options: RunOptions,
    ) -> Result<Self, PlanError> {
        if plans.is_empty() {
            return Err(PlanError::Empty);
        }
        if plans.len() > 127 {
            return Err(PlanError::TooMany(plans.len()));
        }
        for p in &plans {
            if let Some(&space) = [p.data_space, p.code_space]
                .iter()
                .find(|&&s| s >= crate::memory::SPACES)
            {
                return Err(PlanError::NoSuchSpace(space));
            }
            if p.cpu >= machine.logical_cpus() {
                return Err(PlanError::NoSuchCpu {
                    cpu: p.cpu,
                    machine: machine.name.clone(),
                    last: machine.logical_cpus() - 1,
                });
            }
        }
        let mem = MemorySystem::new(machine, plans.len());
        let quantum = options.quantum_cycles as f64;
        let mut cores: Vec<Core> = (0..machine.cores())
            .map(|core| Core {
                kind: match &machine.core {
                    CoreSpec::SmtOoo(s) => CoreKind::Ooo(s.clone()),
                    CoreSpec::FgmtInorder(s) => CoreKind::Inorder(s.clone()),
                },
                contexts: (0..machine.topology.threads_per_core)
                    .map(|t| Context::new(&mem, machine.cpu_at(core, t), quantum))
                    .collect(),
                busy: Vec::new(),
                miss_buffers: MissBuffers::default(),
                epoch: 0,
                cycle: 0.0,
                rr_next: 0,
                steps_left: TURN_STEPS,
                penalty: match &machine.core {
                    CoreSpec::SmtOoo(s) => s.branch_mispredict_penalty_cycles as f64,
                    CoreSpec::FgmtInorder(s) => s.branch_penalty_cycles as f64,
                },
                mode_switch: machine.os.mode_switch_cycles as f64,
                locked: machine.os.locked_instruction_cycles as f64,
            })
            .collect();
        let mut threads = Vec::with_capacity(plans.len());
        for (slot, p) in plans.into_iter().enumerate() {
            let loc = machine.cpu_location(p.cpu).expect("checked above");
            cores[loc.core as usize].contexts[loc.thread as usize]
                .queue
                .push(slot);
            threads.push(SwThread::new(slot, p, &options));
        }
        for core in &mut cores {
            core.busy = (0..core.contexts.len())
                .filter(|&i| !core.contexts[i].queue.is_empty())
                .collect();
            for ctx in &mut core.contexts {
                ctx.running = ctx.queue.first().copied();
                if ctx.queue.len() < 2 {
                    ctx.quantum_end = f64::INFINITY;
                }
            }
        }
        Ok(Simulation {
            mem,
            threads,
            cores,
            options,
            switch_cycles: machine.os.context_switch_cycles as f64,
        })
    }

    /// Simulates the time-shared quanta of the threads given solo rates (in plan order) only while
    /// their caches refill: once an interval of a thread's quantum shows its solo miss rates and
    /// a settled rate, the rest of the quantum is credited at the rates of an interval measured
    /// then, and the caches are aged as it would have aged them (see [`crate::refill`]). Applies
    /// to a thread that time-shares a logical CPU of an out-of-order core whose other contexts
    /// are idle, in a window of simulated time; elsewhere, and on fine-grained in-order cores,
    /// every cycle is simulated.
    pub fn with_solo_rates(mut self, rates: Vec<Option<Rates>>) -> Self {
        for (t, r) in self.threads.iter_mut().zip(rates) {
            t.solo = r;
        }
        self
    }

    /// Runs until every thread's window is complete.
    pub fn run(mut self) -> RunResult {
        self.advance(false);
        self.finish()
    }

    /// Runs until the first quantum of a time-shared logical CPU is over, before it switches to
    /// its next thread: until then only its first thread has run, so a run that differs only in
    /// the threads after the first can continue from here ([`Simulation::try_clone`],
    /// [`Simulation::replace_unstarted`]) and count exactly what it would have counted from the
    /// start. `false`, nothing run, if no CPU is time-shared, a core is in-order (its cycles
    /// interleave every context) or more than one core is busy (resuming would pick the core
    /// furthest behind afresh); `false` too if the run ended before a switch or a sample or
    /// window boundary recorded a waiting thread (a quantum shorter than the warm-up round).
    pub fn run_first_quantum(&mut self) -> bool {
        let time_shared = self
            .cores
            .iter()
            .any(|c| c.contexts.iter().any(|x| x.queue.len() > 1));
        let all_ooo = self
            .cores
            .iter()
            .all(|c| matches!(c.kind, CoreKind::Ooo(_)));
        let one_core = self.cores.iter().filter(|c| c.active()).count() == 1;
        time_shared
            && all_ooo
            && one_core
            && self.advance(true)
            && self.threads.iter().all(|t| t.ran() || !t.recorded())
    }

    /// A copy of the simulation as it stands; `None` if a thread's source cannot be copied.
    pub fn try_clone(&self) -> Option<Simulation> {
        Some(Simulation {
            mem: self.mem.clone(),
            threads: self
                .threads
                .iter()
                .map(SwThread::try_clone)
                .collect::<Option<_>>()?,
            cores: self.cores.clone(),
            options: self.options,
            switch_cycles: self.switch_cycles,
        })
    }

    /// Replaces thread `slot`, which has not run yet, with the thread of `plan` on the same logical
    /// CPU and with solo rates `solo` (see [`Simulation::with_solo_rates`]): the run goes on as if
    /// built with it.
    pub fn replace_unstarted(&mut self, slot: usize, plan: ThreadPlan, solo: Option<Rates>) {
        let old = &self.threads[slot];
        assert!(
            !old.ran() && !old.recorded(),
            "thread {slot} has run: it cannot be replaced"
        );
        assert_eq!(old.who.cpu, plan.cpu, "a replacement runs on the same CPU");
        self.threads[slot] = SwThread::new(slot, plan, &self.options);
        self.threads[slot].solo = solo;
    }

    /// Runs core turns until every thread's window is complete, or with `pause_at_switch` until a
    /// time-sharing context is due to switch threads (then `true`).
    fn advance(&mut self, pause_at_switch: bool) -> bool {
        let active: Vec<usize> = (0..self.cores.len())
            .filter(|&c| self.cores[c].active())
            .collect();
        while !self.threads.iter().all(SwThread::done) {
            // The core furthest behind in time runs next, up to a little past the next one.
            let mut first = active[0];
            let mut first_t = f64::INFINITY;
            let mut second_t = f64::INFINITY;
            for &c in &active {
                let t = self.cores[c].now();
                if t < first_t {
                    second_t = first_t;
                    first_t = t;
                    first = c;
                } else if t < second_t {
                    second_t = t;
                }
            }
            let limit = second_t + CORE_SLACK_CYCLES;
            let core = &mut self.cores[first];
            let turn = Turn {
                limit,
                options: &self.options,
                switch_cycles: self.switch_cycles,
                pause_at_switch,
            };
            let paused = match core.kind {
                CoreKind::Ooo(_) => run_ooo(core, &mut self.threads, &mut self.mem, &turn),
                CoreKind::Inorder(_) => {
                    run_inorder(core, &mut self.threads, &mut self.mem, &turn);
                    false
                }
            };
            if paused {
                return true;
            }
        }
        false
    }

    /// The results of a run whose windows are complete.
    fn finish(mut self) -> RunResult {
        let instructions_simulated = self.threads.iter().map(|t| t.counters.instructions).sum();
        let mem = &self.mem;
        let threads = self
            .threads
            .iter_mut()
            .map(|t| {
                let llc = *mem.data_path(t.who.cpu).last().expect("a data path");
                let llc_lines = mem.cache(llc).occupancy(t.who.slot);
                let (s, st) = t.start_snapshot.expect("window started");
                let (e, et) = t.end_snapshot.expect("window ended");
                ThreadResult {
                    window: e - s,
                    start_cycle: st,
                    end_cycle: et,
                    samples: std::mem::take(&mut t.samples),
                    llc_lines,
                }
            })
            .collect();
        RunResult {
            threads,
            instructions_simulated,
        }
    }
}

/// What a core's turn may do.
struct Turn<'a> {
    /// Run until the core's time passes this.
    limit: f64,
    options: &'a RunOptions,
    switch_cycles: f64,
    /// Stop before a time-sharing context switches threads (see [`Simulation::run_first_quantum`]).
    pause_at_switch: bool,
}

/// Time-driven bookkeeping after a context advanced: periodic samples, and in a cycle window the
/// snapshots of every thread of the context once its time passes a boundary.
#[inline]
fn note_time(ctx: &mut Context, threads: &mut [SwThread], options: &RunOptions) {
    if ctx.now >= ctx.next_note {
        record_time(ctx, threads, options);
    }
}

fn record_time(ctx: &mut Context, threads: &mut [SwThread], options: &RunOptions) {
    if let Some(every) = options.sample_cycles {
        while ctx.now >= ctx.next_sample {
            for &s in &ctx.queue {
                let t = &mut threads[s];
                let counters = t.snapshot();
                t.samples.push(Sample {
                    cycle: ctx.next_sample,
                    counters,
                });
            }
            ctx.next_sample += every;
        }
    }
    if let Window::Cycles { start, end } = options.window {
        for (boundary, is_end) in [(start, false), (end, true)] {
            if ctx.now < boundary {
                continue;
            }
            for &s in &ctx.queue {
                let t = &mut threads[s];
                let snap = Some((t.snapshot(), boundary));
                let slot = if is_end {
                    &mut t.end_snapshot
                } else {
                    &mut t.start_snapshot
                };
                if slot.is_none() {
                    *slot = snap;
                }
            }
        }
    }
    ctx.next_note = next_record(ctx, options);
}

fn switch(ctx: &mut Context, epoch: &mut u64, turn: &Turn) {
    {
        // The outgoing thread's outstanding misses complete before the switch.
        let drain = ctx
            .inflight
            .iter()
            .map(|m| m.complete)
            .fold(ctx.now, f64::max)
            .max(ctx.ready_at);
        let from = ctx.now;
        ctx.now = drain + turn.switch_cycles;
        ctx.ready_at = ctx.now;
        ctx.record_stall(from, ctx.now);
        ctx.inflight.clear();
        ctx.store_misses.clear();
        ctx.current = (ctx.current + 1) % ctx.queue.len();
        ctx.running = ctx.queue.get(ctx.current).copied();
        ctx.quantum_end = ctx.now + turn.options.quantum_cycles as f64;
        ctx.last_fetch_line = u64::MAX;
        ctx.phase = u16::MAX;
        *epoch += 1;
    }
}

/// Refill-only quanta: at the end of each interval of a time-sharing context's quantum, checks
/// whether its running thread has refilled (misses at its solo rates) and settled (the rate of the
/// interval before); the interval after that measures the rates at which the rest of the quantum
/// is credited, and the caches are aged as its fills would have aged them. `running` counts the
/// core's busy contexts. Returns whether it moved the context's time.
#[inline(never)]
fn refill_step(
    ctx: &mut Context,
    running: u32,
    threads: &mut [SwThread],
    mem: &mut MemorySystem,
    turn: &Turn,
) -> bool {
    let Some(slot) = ctx.thread() else {
        return false;
    };
    let Some(solo) = threads[slot].solo else {
        return false;
    };
    let timed_window = matches!(turn.options.window, Window::Cycles { .. });
    if ctx.queue.len() < 2 || running > 1 || !timed_window {
        return false;
    }
    let Some(phase_left) = threads[slot].source.steady_instructions() else {
        return false;
    };
    // A new quantum, or a new phase since the interval began (its instructions left grew):
    // the check starts again.
    if ctx.refill.quantum_end != ctx.quantum_end || phase_left > ctx.refill.phase_left {
        ctx.refill = RefillCheck {
            quantum_end: ctx.quantum_end,
            ..RefillCheck::default()
        };
        start_interval(ctx, &threads[slot], mem);
        return false;
    }
    if ctx.now < ctx.refill.until || ctx.now >= ctx.quantum_end {
        return false;
    }
    let t = &threads[slot];
    let last = t.snapshot() - ctx.refill.start;
    if !ctx.refill.measuring {
        let ipc = last.ipc();
        ctx.refill.measuring = solo.settled(&last, ctx.refill.previous_ipc);
        ctx.refill.previous_ipc = ipc;
        start_interval(ctx, t, mem);
        return false;
    }
    let Some(rates) = Rates::new(last) else {
        start_interval(ctx, t, mem);
        return false;
    };
    // Credited up to the quantum's end, or to the end of the thread's phase, where its rates
    // change and the check starts again.
    let end = ctx
        .quantum_end
        .min(ctx.now + phase_left as f64 / rates.instructions_per_cycle());
    let interval = ctx.now - ctx.refill.since;
    for &(idx, before) in &ctx.refill.turnover {
        let turnover = mem.cache(idx).turnover(t.who.slot) - before;
        let more = tail_fills(turnover.fills, interval, end - ctx.now);
        let dirty = dirty_share(&turnover);
        mem.age(t.who.cpu, idx, t.who.slot, more, dirty, ctx.now);
    }
    let mut credited = 0;
    while ctx.now < end {
        let stop = next_record(ctx, turn.options).min(end);
        let t = &mut threads[slot];
        let c = rates.over(stop - ctx.now);
        let uops = rates.uops_per_cycle() * (stop - ctx.now);
        t.counters = t.counters + ThreadCounters { uops: 0, ..c };
        t.uops += uops;
        ctx.uop_seq += uops;
        credited += c.instructions;
        ctx.now = stop;
        note_time(ctx, threads, turn.options);
    }
    threads[slot].source.skip(credited);
    if ctx.now < ctx.quantum_end {
        ctx.refill = RefillCheck {
            quantum_end: ctx.quantum_end,
            ..RefillCheck::default()
        };
        start_interval(ctx, &threads[slot], mem);
    }
    true
}

/// Starts an interval of the refill check at the context's time.
fn start_interval(ctx: &mut Context, t: &SwThread, mem: &MemorySystem) {
    ctx.refill.since = ctx.now;
    ctx.refill.until = ctx.now
        + if ctx.refill.measuring {
            MEASURE_CYCLES
        } else {
            CHECK_CYCLES
        };
    ctx.refill.phase_left = t.source.steady_instructions().unwrap_or(0);
    ctx.refill.start = t.snapshot();
    ctx.refill.turnover = mem
        .instances_of(t.who.cpu)
        .into_iter()
        .map(|i| (i, mem.cache(i).turnover(t.who.slot)))
        .collect();
}

/// The next time after the context's at which `note_time` records something: a sample or a
/// boundary of a window of time.
fn next_record(ctx: &Context, options: &RunOptions) -> f64 {
    let mut next = f64::INFINITY;
    if options.sample_cycles.is_some() {
        next = next.min(ctx.next_sample);
    }
    if let Window::Cycles { start, end } = options.window {
        for b in [start, end] {
            if b > ctx.now {
                next = next.min(b);
            }
        }
    }
    next
}

/// Per-thread limits of an out-of-order core's buffers, given how many threads run on it.
struct OooLimits {
    rob: f64,
    load_buffer: u64,
    store_buffer: usize,
    miss_buffers: usize,
    shared_miss_buffers: bool,
}

/// Dispatches `k` plain instructions: each costs `dt` cycles, and the reorder buffer stalls the
/// thread while the oldest incomplete miss holds it full.
fn dispatch_plain(ctx: &mut Context, t: &mut SwThread, mut k: u32, uops: f64, dt: f64, rob: f64) {
    while k > 0 {
        ctx.retire_completed();
        let room = match ctx.inflight.front() {
            None => k,
            Some(m) => {
                let free = rob - (ctx.uop_seq - m.uop_seq);
                if free >= (k as f64 + 1.0) * uops {
                    // Room for all k beyond rounding doubt: no division on the time chain.
                    k
                } else {
                    // Truncation is the floor here: the value is clamped non-negative first.
                    ((free / uops).max(0.0) as u32).min(k)
                }
            }
        };
        if room == 0 {
            let until = ctx
                .inflight
                .front()
                .expect("room is only short with a miss in flight")
                .complete;
            ctx.stall(t, until);
            continue;
        }
        ctx.now += room as f64 * dt;
        ctx.uop_seq += room as f64 * uops;
        k -= room;
    }
}

/// Returns whether it paused before a switch (see [`Turn::pause_at_switch`]).
fn run_ooo(core: &mut Core, threads: &mut [SwThread], mem: &mut MemorySystem, turn: &Turn) -> bool {
    let CoreKind::Ooo(spec) = &core.kind else {
        unreachable!()
    };
    let running = core.running();
    let lim = OooLimits {
        rob: spec.rob.per_thread(running) as f64,
        load_buffer: spec.load_buffer.per_thread(running) as u64,
        store_buffer: spec.store_buffer.per_thread(running) as usize,
        miss_buffers: spec.miss_buffers.per_thread(running) as usize,
        shared_miss_buffers: spec.miss_buffers.smt == SmtSharing::Shared,
    };
    // A turn paused before a switch resumes with the steps it had left, so that the run ends
    // where it would have ended unpaused.
    let mut steps_left = std::mem::replace(&mut core.steps_left, TURN_STEPS);
    while steps_left > 0 {
        // The context furthest behind goes next.
        // The first of the earliest (selects, not branches: which one is behind is a coin toss).
        let Some((&first, rest)) = core.busy.split_first() else {
            return false;
        };
        let mut ci = first;
        let mut oldest = core.contexts[first].now;
        for &i in rest {
            let now = core.contexts[i].now;
            let earlier = now < oldest;
            ci = if earlier { i } else { ci };
            oldest = if earlier { now } else { oldest };
        }
        if oldest > turn.limit {
            return false;
        }
        // Time-slicing: the next thread of the context's queue when the quantum is over (a
        // context with one thread never ends its quantum).
        if core.contexts[ci].now >= core.contexts[ci].quantum_end {
            if turn.pause_at_switch {
                core.steps_left = steps_left;
                return true;
            }
            switch(&mut core.contexts[ci], &mut core.epoch, turn);
        }
        steps_left -= 1;
        if core.contexts[ci].refill_due()
            && refill_step(&mut core.contexts[ci], running, threads, mem, turn)
        {
            continue;
        }
        let began = core.contexts[ci].now;
        // Bandwidth share: depends on which siblings are dispatching right now.
        let mut mask = 0u64;
        for &j in &core.busy {
            if j != ci && core.contexts[j].issuing_at(began) {
                mask |= 1 << j;
            }
        }
        let ctx = &mut core.contexts[ci];
        let slot = ctx.thread().expect("active context has a thread");
        let t = &mut threads[slot];
        let instr = t.source.next_instr();
        t.kernel = instr.kernel;

        // Phase or mode change: new timing characteristics for this thread and new rates for
        // the core.
        let key = instr.timing_key();
        if key != ctx.phase {
            ctx.phase = key;
            ctx.timing = t.source.phase_timing(key);
            core.epoch += 1;
        }
        let dt = match ctx.cached_dt(mask, core.epoch) {
            Some(dt) => dt,
            None => {
                let mut phases = vec![core.contexts[ci].timing];
                phases.extend(
                    core.contexts
                        .iter()
                        .enumerate()
                        .filter(|(j, _)| mask & (1 << j) != 0)
                        .map(|(_, c)| c.timing),
                );
                let dt = 1.0 / share_bandwidth(spec, &phases, lim.rob)[0];
                core.contexts[ci].cache_dt(mask, core.epoch, dt);
                dt
            }
        };
        let ctx = &mut core.contexts[ci];
        let uops = ctx.timing.uops_per_instruction;

        // A kernel entry drains the pipeline on the way in and on the way out.
        if instr.entry {
            t.counters.kernel_entries += 1;
            let until = ctx.now + core.mode_switch;
            ctx.stall(t, until);
        }

        // Front end: fetch lines not yet looked up; a miss stalls dispatch.
        let ready = ctx.fetch(t, mem, instr.run_pc, instr.last_byte(), ctx.now);
        ctx.stall(t, ready);

        // The run of plain instructions, split where a measurement window starts or ends.
        let mut left = instr.run;
        let mut fp_left = instr.run_fp;
        while left > 0 {
            let k = (t.to_boundary().max(1)).min(left as u64) as u32;
            dispatch_plain(ctx, t, k, uops, dt, lim.rob);
            let fp = fp_left.min(k);
            fp_left -= fp;
            left -= k;
            t.counters.fp_ops += fp as u64;
            t.counters.instructions += k as u64;
            t.uops += k as f64 * uops;
            t.note_progress(ctx.now);
        }

        // The event instruction: wait for the window to have room for it.
        loop {
            ctx.retire_completed();
            match ctx.inflight.front() {
                Some(m)
                    if ctx.uop_seq - m.uop_seq + uops > lim.rob
                        || ctx.load_seq - m.load_seq >= lim.load_buffer =>
                {
                    let until = m.complete;
                    ctx.stall(t, until);
                }
                _ => break,
            }
        }
        ctx.now += dt;
        ctx.uop_seq += uops;
        let now = ctx.now;
        match instr.kind {
            InstrKind::Load => {
                t.counters.loads += 1;
                ctx.load_seq += 1;
                let found = ctx.data(t, mem, &instr, false, now);
                let mut issue = now;
                if instr.dependent && ctx.chase_ready > issue {
                    issue = ctx.chase_ready;
                }
                if found.depth > 0 {
                    // A miss needs a free miss buffer; waiting for one delays the access.
                    let owner = if lim.shared_miss_buffers {
                        None
                    } else {
                        Some(ci)
                    };
                    issue = core
                        .miss_buffers
                        .free_at(issue, owner, lim.miss_buffers, oldest);
                    let ready = mem.ready_time(t.who.cpu, false, found, issue);
                    core.miss_buffers.add(issue, ready, ci);
                    ctx.inflight.push_back(Miss {
                        uop_seq: ctx.uop_seq - uops,
                        load_seq: ctx.load_seq - 1,
                        complete: ready,
                    });
                    if instr.dependent {
                        ctx.chase_ready = ready;
                    }
                } else if instr.dependent {
                    ctx.chase_ready = issue;
                }
            }
            InstrKind::Store => {
                t.counters.stores += 1;
                while ctx.store_misses.front().is_some_and(|&d| d <= ctx.now) {
                    ctx.store_misses.pop_front();
                }
                if ctx.store_misses.len() >= lim.store_buffer {
                    let until = ctx.store_misses.pop_front().expect("non-empty");
                    ctx.stall(t, until);
                }
                let found = ctx.data(t, mem, &instr, true, ctx.now);
                if found.depth > 0 {
                    let ready = mem.ready_time(t.who.cpu, false, found, ctx.now);
                    insert_sorted(&mut ctx.store_misses, ready);
                }
            }
            InstrKind::Branch => {
                t.counters.branches += 1;
                if instr.mispredict {
                    t.counters.branch_mispredicts += 1;
                    let until = ctx.now + core.penalty;
                    ctx.stall(t, until);
                }
            }
            InstrKind::Locked => {
                // A locked read-modify-write waits for every earlier access, then holds the line.
                t.counters.locked_instructions += 1;
                let found = ctx.data(t, mem, &instr, true, ctx.now);
                let mut until = ctx
                    .inflight
                    .iter()
                    .map(|m| m.complete)
                    .fold(ctx.now, f64::max);
                if found.depth > 0 {
                    until = until.max(mem.ready_time(t.who.cpu, false, found, ctx.now));
                }
                ctx.stall(t, until + core.locked);
                ctx.inflight.clear();
            }
            InstrKind::Fp => t.counters.fp_ops += 1,
            InstrKind::Int => {}
        }
        t.counters.instructions += 1;
        t.uops += uops;
        t.counters.cycles += ctx.now - began;
        if instr.kernel {
            t.counters.kernel_instructions += instr.run as u64 + 1;
            t.counters.kernel_cycles += ctx.now - began;
        }
        t.note_progress(ctx.now);
        note_time(ctx, threads, turn.options);
    }
    false
}

/// Level-1 data misses in flight on one core, each holding a miss buffer from issue to
/// completion.
#[derive(Clone, Default)]
struct MissBuffers {
    /// (issue, complete, context); unordered.
    entries: Vec<(f64, f64, usize)>,
    /// Completion times of the buffers busy at a request (reused, not reallocated).
    busy: Vec<f64>,
}

/// Busy buffers a request looks at, at most (more than any core has).
const MISS_BUFFERS_SEEN: usize = 64;

impl MissBuffers {
    /// The earliest time at or after `t` at which fewer than `limit` buffers are busy, counting
    /// only `owner`'s misses (a per-thread share) or everyone's (`None`, one shared pool).
    /// `horizon` is the time of the core's slowest context: no request comes from before it, so
    /// misses complete by then are forgotten.
    fn free_at(&mut self, t: f64, owner: Option<usize>, limit: usize, horizon: f64) -> f64 {
        // One pass: forget what completed by the horizon, note what is busy at `t`.
        let busy = &mut self.busy;
        busy.clear();
        self.entries.retain(|&(issue, done, ctx)| {
            let kept = done > horizon;
            let busy_now = issue <= t && t < done && owner.is_none_or(|o| o == ctx);
            if kept && busy_now && busy.len() < MISS_BUFFERS_SEEN {
                busy.push(done);
            }
            kept
        });
        let n = self.busy.len();
        if n < limit {
            return t;
        }
        // The (n - limit + 1)-th completion: from then on fewer than `limit` are busy.
        *self
            .busy
            .select_nth_unstable_by(n - limit, f64::total_cmp)
            .1
    }

    fn add(&mut self, issue: f64, complete: f64, ctx: usize) {
        self.entries.push((issue, complete, ctx));
    }
}

fn insert_sorted(q: &mut VecDeque<f64>, v: f64) {
    let pos = q.iter().rposition(|&x| x <= v).map_or(0, |p| p + 1);
    q.insert(pos, v);
}

/// One cycle-stepped turn of a fine-grained multithreaded in-order core: each cycle it issues from
/// the next ready context in round-robin order; a context waits out its misses, branch penalties
/// and floating-point latencies while the others issue.
fn run_inorder(core: &mut Core, threads: &mut [SwThread], mem: &mut MemorySystem, turn: &Turn) {
    let CoreKind::Inorder(spec) = &core.kind else {
        unreachable!()
    };
    let n = core.contexts.len();
    let fp_latency = spec.fp_latency_cycles as f64;
    let width = spec.issue_per_cycle;
    let mut now = core.cycle;
    // The earliest time a busy context has something to record (see `note_time`).
    let mut next_note = core
        .contexts
        .iter()
        .filter(|c| !c.queue.is_empty())
        .map(|c| c.next_note)
        .fold(f64::INFINITY, f64::min);
    let mut steps = 0;
    while steps < TURN_STEPS && now <= turn.limit {
        steps += 1;
        let mut issued = 0;
        // The context that issued a plain instruction this cycle and is ready again the next.
        let mut plain = None;
        // Round-robin: the busy contexts from the first at or after `rr_next`, wrapping round,
        // each once.
        let busy = &core.busy;
        let first = busy.partition_point(|&i| i < core.rr_next);
        for j in first..first + busy.len() {
            if issued == width {
                break;
            }
            // (first + j) mod the busy count, without a division.
            let ci = busy[if j >= busy.len() { j - busy.len() } else { j }];
            let ctx = &mut core.contexts[ci];
            if ctx.ready_at > now {
                continue;
            }
            ctx.now = now;
            if ctx.now >= ctx.quantum_end {
                credit_cycles(ctx, threads, now);
                switch(ctx, &mut core.epoch, turn);
            }
            if ctx.ready_at > now {
                continue;
            }
            let t = &mut threads[ctx.thread().expect("active")];
            if t.pending.is_none() {
                let i = t.source.next_instr();
                t.pending = Some(i);
                t.run_issued = 0;
                if i.kernel != t.kernel {
                    // This cycle on counts in the new mode.
                    credit_thread(t, &mut ctx.credited_until, now);
                    t.kernel = i.kernel;
                }
                if i.entry {
                    // The kernel entry's mode switch: the context waits, the others issue.
                    t.counters.kernel_entries += 1;
                    ctx.ready_at = now + core.mode_switch;
                    t.counters.stall_cycles = t
                        .counters
                        .stall_cycles
                        .saturating_add(core.mode_switch as u64);
                    if core.mode_switch > 0.0 {
                        continue;
                    }
                }
            }
            // The next of the run's plain instructions, or the event that ends it (read in
            // place: the instruction is copied out only when the event issues).
            let (in_run, pc, last, run_fp) = {
                let i = t.pending.as_ref().expect("an instruction to issue");
                if t.run_issued < i.run {
                    let pc = i.run_pc + t.run_issued as u64 * i.instr_bytes as u64;
                    (true, pc, pc + i.instr_bytes.max(1) as u64 - 1, i.run_fp)
                } else {
                    (false, i.pc, i.last_byte(), 0)
                }
            };
            // Fetch; a miss makes the context wait and it issues this instruction later.
            let fetched = ctx.fetch(t, mem, pc, last, now);
            if fetched > now {
                t.counters.stall_cycles = t
                    .counters
                    .stall_cycles
                    .saturating_add((fetched - now) as u64);
                ctx.ready_at = fetched;
                continue;
            }
            issued += 1;
            core.rr_next = if ci + 1 == n { 0 } else { ci + 1 };
            let mut ready = now + 1.0;
            if in_run {
                // Plain instruction; the run's FP operations come first.
                if t.run_issued < run_fp {
                    t.counters.fp_ops += 1;
                    ready = ready.max(now + fp_latency);
                }
                t.run_issued += 1;
                if ready == now + 1.0 {
                    plain = Some(ci);
                }
            } else {
                let instr = t.pending.take().expect("an instruction to issue");
                match instr.kind {
                    InstrKind::Load => {
                        t.counters.loads += 1;
                        let found = ctx.data(t, mem, &instr, false, now);
                        if found.depth > 0 {
                            ready = mem.ready_time(t.who.cpu, false, found, now).max(ready);
                        }
                    }
                    InstrKind::Store => {
                        t.counters.stores += 1;
                        let found = ctx.data(t, mem, &instr, true, now);
                        if found.depth > 0 {
                            // Stores drain through a store buffer; the transfer still uses the bus.
                            mem.ready_time(t.who.cpu, false, found, now);
                        }
                    }
                    InstrKind::Branch => {
                        t.counters.branches += 1;
                        if instr.mispredict {
                            t.counters.branch_mispredicts += 1;
                            ready += core.penalty;
                        }
                    }
                    InstrKind::Fp => {
                        t.counters.fp_ops += 1;
                        ready = ready.max(now + fp_latency);
                    }
                    InstrKind::Locked => {
                        t.counters.locked_instructions += 1;
                        let found = ctx.data(t, mem, &instr, true, now);
                        if found.depth > 0 {
                            ready = mem.ready_time(t.who.cpu, false, found, now).max(ready);
                        }
                        ready += core.locked;
                    }
                    InstrKind::Int => {}
                }
            }
            if ready > now + 1.0 {
                t.counters.stall_cycles = t
                    .counters
                    .stall_cycles
                    .saturating_add((ready - now - 1.0) as u64);
            }
            t.counters.instructions += 1;
            if t.kernel {
                t.counters.kernel_instructions += 1;
            }
            t.uops += 1.0;
            ctx.ready_at = ready;
            if t.counters.instructions >= t.next_boundary {
                credit_thread(t, &mut ctx.credited_until, now);
                t.cross_boundary(now + 1.0);
            }
        }
        if issued > 0 {
            now += 1.0;
        } else {
            // Nobody ready: skip to the first cycle someone is.
            let next = core
                .contexts
                .iter()
                .filter(|c| !c.queue.is_empty())
                .map(|c| c.ready_at)
                .fold(f64::INFINITY, f64::min);
            now = next.ceil().max(now + 1.0);
        }
        if now >= next_note {
            next_note = f64::INFINITY;
            for ctx in core.contexts.iter_mut().filter(|c| !c.queue.is_empty()) {
                ctx.now = now;
                credit_cycles(ctx, threads, now);
                note_time(ctx, threads, turn.options);
                next_note = next_note.min(ctx.next_note);
            }
        }
        if let (Some(ci), 1) = (plain, issued) {
            let k = plain_cycles_alone(core, threads, ci, now, next_note, turn.limit)
                .min((TURN_STEPS - steps) as u64);
            if k > 0 {
                let ctx = &mut core.contexts[ci];
                let t = &mut threads[ctx.thread().expect("active")];
                // What k passes of the loop would do: one plain instruction a cycle (whole
                // numbers of cycles and micro-ops, so the sums are exact).
                t.counters.instructions += k;
                if t.kernel {
                    t.counters.kernel_instructions += k;
                }
                t.uops += k as f64;
                t.run_issued += k as u32;
                ctx.now = now + (k - 1) as f64;
                now += k as f64;
                ctx.ready_at = now;
                steps += k as u32;
            }
        }
    }
    // Every running thread lived through the turn's cycles.
    for ctx in core.contexts.iter_mut().filter(|c| !c.queue.is_empty()) {
        ctx.now = now;
        credit_cycles(ctx, threads, now);
    }
    core.cycle = now;
}

/// Cycles from `now` (a whole number) in which the cycle-by-cycle loop would only have in-order
/// context `ci` issue the next plain instruction of its run, one a cycle: no other context is
/// ready, the instructions are not floating-point (which wait out their latency) and lie in the
/// line fetched last, and no window boundary, record, quantum end or turn limit falls among them.
fn plain_cycles_alone(
    core: &Core,
    threads: &[SwThread],
    ci: usize,
    now: f64,
    next_note: f64,
    limit: f64,
) -> u64 {
    let ctx = &core.contexts[ci];
    let Some(slot) = ctx.thread() else {
        return 0;
    };
    let t = &threads[slot];
    let Some(i) = t.pending.as_ref() else {
        return 0;
    };
    if t.run_issued < i.run_fp || t.run_issued >= i.run || ctx.last_fetch_line == u64::MAX {
        return 0;
    }
    let mut k = (i.run - t.run_issued) as u64;
    // The instruction that reaches a window boundary goes through the loop (its snapshot).
    k = k.min(t.to_boundary().saturating_sub(1));
    // In the line fetched last: a later line needs a lookup.
    let bytes = i.instr_bytes as u64;
    let pc = i.run_pc + t.run_issued as u64 * bytes;
    if pc >> ctx.fetch_shift != ctx.last_fetch_line {
        return 0;
    }
    if bytes > 0 {
        let line_end = (ctx.last_fetch_line + 1) << ctx.fetch_shift;
        let last = pc + bytes - 1;
        k = k.min(line_end.saturating_sub(last).div_ceil(bytes));
    }
    // Cycle c (a whole number) comes in the turn (c <= limit), before the quantum ends
    // (c < quantum_end), while every other context waits (c < its ready_at), and its end comes
    // before the next record (c + 1 < next_note); for whole c, c < x is c < ceil(x).
    let others_ready = core
        .busy
        .iter()
        .filter(|&&j| j != ci)
        .map(|&j| core.contexts[j].ready_at)
        .fold(f64::INFINITY, f64::min);
    let end = (limit.floor() + 1.0)
        .min(ctx.quantum_end.ceil())
        .min(others_ready.ceil())
        .min(next_note.ceil() - 1.0);
    if end <= now {
        return 0;
    }
    // A float to integer cast saturates: an infinite end leaves the other bounds.
    k.min((end - now) as u64)
}

/// Credits the cycles an in-order context's running thread lived through since its last credit,
/// up to `now`, in the mode it runs in. Cycles are whole numbers, so crediting them together
/// sums exactly what crediting each would.
fn credit_cycles(ctx: &mut Context, threads: &mut [SwThread], now: f64) {
    match ctx.thread() {
        Some(s) => credit_thread(&mut threads[s], &mut ctx.credited_until, now),
        None => ctx.credited_until = now,
    }
}

fn credit_thread(t: &mut SwThread, credited_until: &mut f64, now: f64) {
    let lived = now - *credited_until;
    t.counters.cycles += lived;
    if t.kernel {
        t.counters.kernel_cycles += lived;
    }
    *credited_until = now;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_miss_waits_for_the_buffer_that_frees_first_enough_room() {
        let mut b = MissBuffers::default();
        // Three misses in flight at t = 5, completing at 30, 10 and 20; one of context 1.
        for (issue, done, ctx) in [(0.0, 30.0, 0), (1.0, 10.0, 0), (2.0, 20.0, 1)] {
            b.add(issue, done, ctx);
        }
        // Two buffers shared: fewer than two are busy once two misses complete, at 20.
        assert_eq!(b.free_at(5.0, None, 2, 0.0), 20.0);
        // Four shared: one is free now.
        assert_eq!(b.free_at(5.0, None, 4, 0.0), 5.0);
        // Two per context: context 0's two misses hold its share until the first completes (10).
        assert_eq!(b.free_at(5.0, Some(0), 2, 0.0), 10.0);
        // Misses complete by the horizon are forgotten: at 25 only the one ending at 30 is busy.
        assert_eq!(b.free_at(25.0, None, 1, 21.0), 30.0);
        assert_eq!(b.entries.len(), 1);
    }
}
