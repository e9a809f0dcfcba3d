//! The simulation loop: software threads on hardware contexts, contexts on cores, cores sharing
//! caches and memory. Cores advance in simulated-time order, so shared-cache and bus contention
//! interleave as they would in time. Everything is deterministic: no host clock, no host threads.

use crate::counters::ThreadCounters;
use crate::memory::{MemorySystem, Requester};
use crate::share::share_bandwidth;
use crate::stream::{InstrKind, InstructionSource, PhaseTiming};
use smtsched_model::{CoreSpec, InorderCoreSpec, MachineModel, OooCoreSpec};
use std::collections::VecDeque;

/// How far (in cycles) a core may run ahead of the slowest other core before yielding.
const CORE_SLACK_CYCLES: f64 = 16.0;
/// Instructions a core executes per turn at most (bounds the time between termination checks).
const TURN_INSTRUCTIONS: u32 = 512;
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
}

/// Measured result of one thread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThreadResult {
    /// Counters over the window (`cycles` here is the thread's own running time).
    pub window: ThreadCounters,
    /// Simulated time at the start and end of the window (includes time descheduled).
    pub start_cycle: f64,
    pub end_cycle: f64,
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
    /// Simulated cycles at the end of the run.
    pub total_cycles: f64,
    /// Instructions simulated in all, warm-up and overrun included (for speed reports).
    pub instructions_simulated: u64,
}

struct SwThread {
    source: Box<dyn InstructionSource>,
    who: Requester,
    counters: ThreadCounters,
    warmup: u64,
    end: u64,
    start_snapshot: Option<(ThreadCounters, f64)>,
    end_snapshot: Option<(ThreadCounters, f64)>,
}

impl SwThread {
    fn done(&self) -> bool {
        self.end_snapshot.is_some()
    }
}

#[derive(Clone, Copy, Debug)]
struct Miss {
    uop_seq: f64,
    load_seq: u64,
    complete: f64,
}

/// A hardware thread context and its timing state.
struct Context {
    /// Software threads time-sharing this context; `current` indexes into it.
    queue: Vec<usize>,
    current: usize,
    quantum_end: f64,
    now: f64,
    // Out-of-order window state.
    uop_seq: f64,
    load_seq: u64,
    inflight: VecDeque<Miss>,
    store_misses: VecDeque<f64>,
    /// Outstanding level-1 data misses as (issue, complete), sorted by completion.
    l1_misses: VecDeque<(f64, f64)>,
    chase_ready: f64,
    stalls: [(f64, f64); STALL_HISTORY],
    stall_next: usize,
    // In-order state.
    ready_at: f64,
    pending: Option<crate::stream::Instr>,
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
}

impl Context {
    fn thread(&self) -> Option<usize> {
        self.queue.get(self.current).copied()
    }

    fn record_stall(&mut self, from: f64, until: f64) {
        if until > from {
            self.stalls[self.stall_next] = (from, until);
            self.stall_next = (self.stall_next + 1) % STALL_HISTORY;
        }
    }

    #[inline]
    fn cached_dt(&self, mask: u64, epoch: u64) -> Option<f64> {
        if self.rate_epoch != epoch {
            return None;
        }
        self.rates.iter().find(|&&(m, _)| m == mask).map(|&(_, dt)| dt)
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
        !self.queue.is_empty() && !self.stalls.iter().any(|&(a, b)| a <= t && t < b)
    }
}

enum CoreKind {
    Ooo(OooCoreSpec),
    Inorder(InorderCoreSpec, f64),
}

struct Core {
    kind: CoreKind,
    contexts: Vec<Context>,
    /// Bumped whenever a phase or a running thread changes on this core (invalidates rates).
    epoch: u64,
    rr_next: usize,
    penalty: f64,
}

impl Core {
    fn active(&self) -> bool {
        self.contexts.iter().any(|c| !c.queue.is_empty())
    }

    fn now(&self) -> f64 {
        match self.kind {
            CoreKind::Ooo(_) => self
                .contexts
                .iter()
                .filter(|c| !c.queue.is_empty())
                .map(|c| c.now)
                .fold(f64::INFINITY, f64::min),
            CoreKind::Inorder(_, now) => now,
        }
    }

    fn running(&self) -> u32 {
        self.contexts.iter().filter(|c| !c.queue.is_empty()).count() as u32
    }
}

/// Errors in a run plan.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error("logical CPU {cpu} does not exist on machine {machine} (it has CPUs 0-{last})")]
    NoSuchCpu { cpu: u32, machine: String, last: u32 },
    #[error("nothing to run: no threads")]
    Empty,
    #[error("too many threads ({0}); at most 127")]
    TooMany(usize),
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
    pub fn new(machine: &MachineModel, plans: Vec<ThreadPlan>, options: RunOptions) -> Result<Self, PlanError> {
        if plans.is_empty() {
            return Err(PlanError::Empty);
        }
        if plans.len() > 127 {
            return Err(PlanError::TooMany(plans.len()));
        }
        for p in &plans {
            if p.cpu >= machine.logical_cpus() {
                return Err(PlanError::NoSuchCpu {
                    cpu: p.cpu,
                    machine: machine.name.clone(),
                    last: machine.logical_cpus() - 1,
                });
            }
        }
        let mem = MemorySystem::new(machine, plans.len());
        let tpc = machine.topology.threads_per_core;
        let mut cores: Vec<Core> = (0..machine.cores())
            .map(|core| Core {
                kind: match &machine.core {
                    CoreSpec::SmtOoo(s) => CoreKind::Ooo(s.clone()),
                    CoreSpec::FgmtInorder(s) => CoreKind::Inorder(s.clone(), 0.0),
                },
                contexts: (0..tpc)
                    .map(|t| {
                        let cpu = machine.cpu_at(core, t);
                        Context {
                            queue: Vec::new(),
                            current: 0,
                            quantum_end: options.quantum_cycles as f64,
                            now: 0.0,
                            uop_seq: 0.0,
                            load_seq: 0,
                            inflight: VecDeque::new(),
                            store_misses: VecDeque::new(),
                            l1_misses: VecDeque::new(),
                            chase_ready: 0.0,
                            stalls: [(0.0, 0.0); STALL_HISTORY],
                            stall_next: 0,
                            ready_at: 0.0,
                            pending: None,
                            phase: u16::MAX,
                            timing: PhaseTiming { ilp: 1.0, uops_per_instruction: 1.0, loads: 0.0, stores: 0.0, fp_ops: 0.0 },
                            last_fetch_line: u64::MAX,
                            rates: Vec::new(),
                            rate_epoch: u64::MAX,
                            fetch_levels: mem.fetch_levels(cpu),
                            data_levels: mem.data_levels(cpu),
                            fetch_shift: mem.fetch_line_shift(cpu),
                        }
                    })
                    .collect(),
                epoch: 0,
                rr_next: 0,
                penalty: match &machine.core {
                    CoreSpec::SmtOoo(s) => s.branch_mispredict_penalty_cycles as f64,
                    CoreSpec::FgmtInorder(s) => s.branch_penalty_cycles as f64,
                },
            })
            .collect();
        let mut threads = Vec::with_capacity(plans.len());
        for (slot, p) in plans.into_iter().enumerate() {
            let loc = machine.cpu_location(p.cpu).expect("checked above");
            cores[loc.core as usize].contexts[loc.thread as usize].queue.push(slot);
            threads.push(SwThread {
                source: p.source,
                who: Requester { slot: slot as u8, cpu: p.cpu, data_space: p.data_space, code_space: p.code_space },
                counters: ThreadCounters::default(),
                warmup: p.warmup_instructions,
                end: p.warmup_instructions + p.measure_instructions,
                start_snapshot: None,
                end_snapshot: None,
            });
        }
        Ok(Simulation {
            mem,
            threads,
            cores,
            options,
            switch_cycles: machine.os.context_switch_cycles as f64,
        })
    }

    /// Runs until every thread's window is complete.
    pub fn run(mut self) -> RunResult {
        let active: Vec<usize> = (0..self.cores.len()).filter(|&c| self.cores[c].active()).collect();
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
            match core.kind {
                CoreKind::Ooo(_) => run_ooo(core, &mut self.threads, &mut self.mem, limit, &self.options, self.switch_cycles),
                CoreKind::Inorder(..) => run_inorder(core, &mut self.threads, &mut self.mem, limit, &self.options, self.switch_cycles),
            }
        }
        let total_cycles = self.cores.iter().filter(|c| c.active()).map(Core::now).fold(0.0, f64::max);
        let threads = self
            .threads
            .iter()
            .map(|t| {
                let (s, st) = t.start_snapshot.expect("window started");
                let (e, et) = t.end_snapshot.expect("window ended");
                ThreadResult { window: e - s, start_cycle: st, end_cycle: et }
            })
            .collect();
        let instructions_simulated = self.threads.iter().map(|t| t.counters.instructions).sum();
        RunResult { threads, total_cycles, instructions_simulated }
    }

    /// Cache accesses and misses of software thread `slot` at each data-path cache of its CPU.
    pub fn memory(&self) -> &MemorySystem {
        &self.mem
    }
}

/// Window bookkeeping after a thread retired an instruction at time `now`.
#[inline]
fn note_progress(t: &mut SwThread, now: f64, window: Window) {
    if let Window::Instructions = window {
        let n = t.counters.instructions;
        if n == t.warmup && t.start_snapshot.is_none() {
            t.start_snapshot = Some((t.counters, now));
        }
        if n == t.end && t.end_snapshot.is_none() {
            t.end_snapshot = Some((t.counters, now));
        }
    }
}

/// In a cycle window, snapshot every thread of a context once its time passes a boundary.
#[inline]
fn note_time(ctx: &Context, threads: &mut [SwThread], window: Window) {
    if let Window::Cycles { start, end } = window {
        if ctx.now >= start {
            for &s in &ctx.queue {
                let t = &mut threads[s];
                if t.start_snapshot.is_none() {
                    t.start_snapshot = Some((t.counters, start));
                }
            }
        }
        if ctx.now >= end {
            for &s in &ctx.queue {
                let t = &mut threads[s];
                if t.end_snapshot.is_none() {
                    t.end_snapshot = Some((t.counters, end));
                }
            }
        }
    }
}

/// Time-slicing: switch to the next thread of the context's queue when its quantum is over.
fn maybe_switch(ctx: &mut Context, epoch: &mut u64, options: &RunOptions, switch_cycles: f64) {
    if ctx.queue.len() > 1 && ctx.now >= ctx.quantum_end {
        // The outgoing thread's outstanding misses complete before the switch.
        let drain = ctx.inflight.iter().map(|m| m.complete).fold(ctx.now, f64::max).max(ctx.ready_at);
        let from = ctx.now;
        ctx.now = drain + switch_cycles;
        ctx.ready_at = ctx.now;
        ctx.record_stall(from, ctx.now);
        ctx.inflight.clear();
        ctx.store_misses.clear();
        ctx.l1_misses.clear();
        ctx.pending = None;
        ctx.current = (ctx.current + 1) % ctx.queue.len();
        ctx.quantum_end = ctx.now + options.quantum_cycles as f64;
        ctx.last_fetch_line = u64::MAX;
        ctx.phase = u16::MAX;
        *epoch += 1;
    }
}

fn run_ooo(core: &mut Core, threads: &mut [SwThread], mem: &mut MemorySystem, limit: f64, options: &RunOptions, switch_cycles: f64) {
    let CoreKind::Ooo(spec) = &core.kind else { unreachable!() };
    let running = core.running();
    let rob = spec.rob.per_thread(running) as f64;
    let load_buf = spec.load_buffer.per_thread(running) as u64;
    let store_buf = spec.store_buffer.per_thread(running) as usize;
    let miss_buf = spec.miss_buffers.per_thread(running) as usize;
    let shared_miss_buf = spec.miss_buffers.smt == smtsched_model::SmtSharing::Shared;
    let penalty = core.penalty;
    for _ in 0..TURN_INSTRUCTIONS {
        // The context furthest behind goes next.
        let mut ci = usize::MAX;
        let mut best = f64::INFINITY;
        for (i, c) in core.contexts.iter().enumerate() {
            if !c.queue.is_empty() && c.now < best {
                best = c.now;
                ci = i;
            }
        }
        if ci == usize::MAX || best > limit {
            return;
        }
        maybe_switch(&mut core.contexts[ci], &mut core.epoch, options, switch_cycles);
        let slot = core.contexts[ci].thread().expect("active context has a thread");
        let t = &mut threads[slot];
        let instr = t.source.next_instr();
        let began = core.contexts[ci].now;

        // Phase change: new timing characteristics for this thread and new rates for the core.
        if instr.phase != core.contexts[ci].phase {
            core.contexts[ci].phase = instr.phase;
            core.contexts[ci].timing = t.source.phase_timing(instr.phase);
            core.epoch += 1;
        }

        // Bandwidth share: depends on which siblings are dispatching right now.
        let now = core.contexts[ci].now;
        let mut mask = 0u64;
        for (j, c) in core.contexts.iter().enumerate() {
            if j != ci && c.issuing_at(now) {
                mask |= 1 << j;
            }
        }
        let dt = match core.contexts[ci].cached_dt(mask, core.epoch) {
            Some(dt) => dt,
            None => {
                let mut phases = vec![core.contexts[ci].timing];
                for (j, c) in core.contexts.iter().enumerate() {
                    if mask & (1 << j) != 0 {
                        phases.push(c.timing);
                    }
                }
                let dt = 1.0 / share_bandwidth(spec, &phases, rob)[0];
                core.contexts[ci].cache_dt(mask, core.epoch, dt);
                dt
            }
        };
        // Siblings' outstanding misses, when the miss buffers are one shared pool.
        let mut core_misses: Vec<(f64, f64)> = Vec::new();
        if shared_miss_buf {
            for (j, c) in core.contexts.iter().enumerate() {
                if j != ci {
                    core_misses.extend(c.l1_misses.iter().copied().filter(|&(_, done)| done > now));
                }
            }
        }
        let ctx = &mut core.contexts[ci];
        let uops = ctx.timing.uops_per_instruction;

        // Fetch: one lookup per new fetch line; a miss stalls the front end.
        let fline = instr.pc >> ctx.fetch_shift;
        if fline != ctx.last_fetch_line {
            ctx.last_fetch_line = fline;
            let found = mem.fetch(t.who, instr.pc, ctx.now);
            t.counters.record_path(true, &ctx.fetch_levels, found.depth);
            if found.depth > 0 {
                let from = ctx.now;
                ctx.now = mem.ready_time(t.who.cpu, true, found, ctx.now);
                ctx.record_stall(from, ctx.now);
                t.counters.stall_cycles += (ctx.now - from) as u64;
            }
        }

        // The window: retire completed misses; stall while the oldest incomplete miss holds a full
        // reorder buffer or load buffer.
        loop {
            while ctx.inflight.front().is_some_and(|m| m.complete <= ctx.now) {
                ctx.inflight.pop_front();
            }
            match ctx.inflight.front() {
                Some(m) if ctx.uop_seq - m.uop_seq + uops > rob || ctx.load_seq - m.load_seq >= load_buf => {
                    let from = ctx.now;
                    ctx.now = m.complete;
                    ctx.record_stall(from, ctx.now);
                    t.counters.stall_cycles += (ctx.now - from) as u64;
                }
                _ => break,
            }
        }

        // Dispatch.
        ctx.now += dt;
        ctx.uop_seq += uops;
        let now = ctx.now;
        match instr.kind {
            InstrKind::Load => {
                t.counters.loads += 1;
                ctx.load_seq += 1;
                let found = mem.data(t.who, instr.addr, false, now);
                t.counters.record_path(false, &ctx.data_levels, found.counted_depth(now));
                let mut issue = now;
                if instr.dependent && ctx.chase_ready > issue {
                    issue = ctx.chase_ready;
                }
                if found.depth > 0 {
                    // A miss needs a free miss buffer; waiting for one delays the access.
                    issue = free_miss_buffer(&core_misses, ctx, issue, miss_buf);
                    let ready = mem.ready_time(t.who.cpu, false, found, issue);
                    insert_by_completion(&mut ctx.l1_misses, (issue, ready));
                    ctx.inflight.push_back(Miss { uop_seq: ctx.uop_seq - uops, load_seq: ctx.load_seq - 1, complete: ready });
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
                if ctx.store_misses.len() >= store_buf {
                    let from = ctx.now;
                    ctx.now = ctx.store_misses.pop_front().expect("non-empty");
                    ctx.record_stall(from, ctx.now);
                    t.counters.stall_cycles += (ctx.now - from) as u64;
                }
                let found = mem.data(t.who, instr.addr, true, ctx.now);
                t.counters.record_path(false, &ctx.data_levels, found.counted_depth(ctx.now));
                if found.depth > 0 {
                    let ready = mem.ready_time(t.who.cpu, false, found, ctx.now);
                    insert_sorted(&mut ctx.store_misses, ready);
                }
            }
            InstrKind::Branch => {
                t.counters.branches += 1;
                if instr.mispredict {
                    t.counters.branch_mispredicts += 1;
                    let from = ctx.now;
                    ctx.now += penalty;
                    ctx.record_stall(from, ctx.now);
                    t.counters.stall_cycles += penalty as u64;
                }
            }
            InstrKind::Fp => t.counters.fp_ops += 1,
            InstrKind::Int => {}
        }
        t.counters.instructions += 1;
        t.counters.uops = ctx.uop_seq as u64;
        t.counters.cycles += ctx.now - began;
        note_progress(t, ctx.now, options.window);
        note_time(ctx, threads, options.window);
    }
}

/// The earliest time at or after `t` when a miss buffer is free, given this context's outstanding
/// misses and (for a shared pool) its siblings'.
fn free_miss_buffer(siblings: &[(f64, f64)], ctx: &mut Context, t: f64, limit: usize) -> f64 {
    while ctx.l1_misses.front().is_some_and(|&(_, done)| done <= t) {
        ctx.l1_misses.pop_front();
    }
    let mut busy: Vec<f64> = ctx
        .l1_misses
        .iter()
        .chain(siblings.iter())
        .filter(|&&(issue, done)| issue <= t && t < done)
        .map(|&(_, done)| done)
        .collect();
    if busy.len() < limit {
        return t;
    }
    busy.sort_by(f64::total_cmp);
    busy[busy.len() - limit]
}

fn insert_by_completion(q: &mut VecDeque<(f64, f64)>, v: (f64, f64)) {
    let pos = q.iter().rposition(|x| x.1 <= v.1).map_or(0, |p| p + 1);
    q.insert(pos, v);
}

fn insert_sorted(q: &mut VecDeque<f64>, v: f64) {
    let pos = q.iter().rposition(|&x| x <= v).map_or(0, |p| p + 1);
    q.insert(pos, v);
}

fn run_inorder(core: &mut Core, threads: &mut [SwThread], mem: &mut MemorySystem, limit: f64, options: &RunOptions, switch_cycles: f64) {
    let CoreKind::Inorder(spec, mut now) = core.kind.clone_spec() else { unreachable!() };
    let n = core.contexts.len();
    let penalty = core.penalty;
    let fp_latency = spec.fp_latency_cycles as f64;
    let mut issued_total = 0u32;
    while issued_total < TURN_INSTRUCTIONS && now <= limit {
        let mut issued_this_cycle = 0;
        let mut k = 0;
        while k < n && issued_this_cycle < spec.issue_per_cycle {
            // Least recently issued ready context first (round-robin).
            let ci = (core.rr_next + k) % n;
            k += 1;
            let ctx = &mut core.contexts[ci];
            if ctx.queue.is_empty() {
                continue;
            }
            if ctx.ready_at > now {
                continue;
            }
            ctx.now = now;
            maybe_switch(ctx, &mut core.epoch, options, switch_cycles);
            if ctx.ready_at > now {
                continue;
            }
            let slot = ctx.thread().expect("active");
            let t = &mut threads[slot];
            let instr = match ctx.pending.take() {
                Some(i) => i,
                None => {
                    let instr = t.source.next_instr();
                    let fline = instr.pc >> ctx.fetch_shift;
                    if fline != ctx.last_fetch_line {
                        ctx.last_fetch_line = fline;
                        let found = mem.fetch(t.who, instr.pc, now);
                        t.counters.record_path(true, &ctx.fetch_levels, found.depth);
                        if found.depth > 0 {
                            let ready = mem.ready_time(t.who.cpu, true, found, now);
                            ctx.pending = Some(instr);
                            ctx.ready_at = ready;
                            t.counters.stall_cycles += (ready - now) as u64;
                            continue;
                        }
                    }
                    instr
                }
            };
            issued_this_cycle += 1;
            core.rr_next = (ci + 1) % n;
            let mut ready = now + 1.0;
            match instr.kind {
                InstrKind::Load => {
                    t.counters.loads += 1;
                    let found = mem.data(t.who, instr.addr, false, now);
                    t.counters.record_path(false, &ctx.data_levels, found.counted_depth(now));
                    if found.depth > 0 {
                        ready = mem.ready_time(t.who.cpu, false, found, now).max(ready);
                    }
                }
                InstrKind::Store => {
                    t.counters.stores += 1;
                    let found = mem.data(t.who, instr.addr, true, now);
                    t.counters.record_path(false, &ctx.data_levels, found.counted_depth(now));
                    if found.depth > 0 {
                        // Stores drain through a store buffer; the transfer still uses the bus.
                        mem.ready_time(t.who.cpu, false, found, now);
                    }
                }
                InstrKind::Branch => {
                    t.counters.branches += 1;
                    if instr.mispredict {
                        t.counters.branch_mispredicts += 1;
                        ready += penalty;
                    }
                }
                InstrKind::Fp => {
                    t.counters.fp_ops += 1;
                    ready = ready.max(now + fp_latency);
                }
                InstrKind::Int => {}
            }
            t.counters.stall_cycles += (ready - now - 1.0) as u64;
            t.counters.instructions += 1;
            t.counters.uops += 1;
            ctx.ready_at = ready;
            note_progress(t, now + 1.0, options.window);
        }
        issued_total += issued_this_cycle.max(1);
        let before = now;
        if issued_this_cycle > 0 {
            now += 1.0;
        } else {
            // Nobody ready: skip to the first cycle someone is.
            let next = core
                .contexts
                .iter()
                .filter(|c| !c.queue.is_empty())
                .map(|c| c.ready_at)
                .fold(f64::INFINITY, f64::min);
            now = next.max(now + 1.0).floor().max(now + 1.0);
        }
        // Every running thread lived through these cycles.
        for ctx in core.contexts.iter_mut().filter(|c| !c.queue.is_empty()) {
            ctx.now = now;
            if let Some(&s) = ctx.queue.get(ctx.current) {
                threads[s].counters.cycles += now - before;
            }
        }
        for ctx in core.contexts.iter().filter(|c| !c.queue.is_empty()) {
            note_time(ctx, threads, options.window);
        }
    }
    if let CoreKind::Inorder(_, t) = &mut core.kind {
        *t = now;
    }
}

impl CoreKind {
    fn clone_spec(&self) -> CoreKind {
        match self {
            CoreKind::Ooo(s) => CoreKind::Ooo(s.clone()),
            CoreKind::Inorder(s, t) => CoreKind::Inorder(s.clone(), *t),
        }
    }
}
