//! The OS scheduling simulator: tasks on logical CPUs, a tick, blocking and forking, one of two
//! baseline schedulers steered by a policy, and an oracle that says how fast each running task
//! progresses in the current situation. Time is simulated cycles; between events every running
//! task progresses at the rate the oracle gives for the situation, so the loop jumps from event
//! to event (ticks, blocks, wake-ups, ends of runs and phases).

use crate::estimate::LinearModel;
use crate::metrics::{Metrics, RunRecord, Switch};
use crate::oracle::{Occupant, Oracle, ThreadRate};
use crate::policy::{CpuId, Estimates, Goodness, Policy, SchedView, TaskId, TaskView};
use crate::taskset::{TaskSetSpec, TaskSpec};
use smtsched_model::{CpuSet, MachineModel};
use smtsched_uarch::rng::{derive_seed, SimRng};

/// Which base scheduler the policy steers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Baseline {
    /// Linux 2.4.19: one runqueue, epochs, goodness(), NICE_TO_TICKS, PROC_CHANGE_PENALTY.
    Linux24,
    /// A present-day Linux: per-CPU runqueues, EEVDF-like virtual time, wake-up onto a fully idle
    /// core first, SMT-aware balancing.
    Modern,
}

impl std::str::FromStr for Baseline {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "linux24" | "linux-2.4" => Ok(Baseline::Linux24),
            "modern" => Ok(Baseline::Modern),
            _ => Err(format!(
                "unknown baseline {s:?} (expected linux24 or modern)"
            )),
        }
    }
}

/// How estimates are made.
#[derive(Clone, Debug, PartialEq)]
pub enum Estimator {
    /// A counter-based model (thesis §3.4.1).
    Model(LinearModel),
    /// The oracle's true PR: what a perfect estimator would say.
    Perfect,
}

#[derive(Clone, Debug)]
pub struct SimConfig {
    pub baseline: Baseline,
    /// Timer interrupts per second.
    pub hz: f64,
    /// Simulated seconds in all.
    pub duration_s: f64,
    /// Tasks start at random times within this many seconds; runs count only if they start after
    /// it (the thesis's nominal start of the measurement window).
    pub stagger_s: f64,
    pub seed: u64,
    /// Cost of one performance estimate, as a fraction of a tick (the thesis measured about 2% of
    /// throughput when estimating on every CPU every tick).
    pub estimate_cost_ticks: f64,
    pub estimator: Estimator,
    /// Logical CPUs the OS uses (the thesis's chapter 4 uses one package); `None` = all.
    pub cpus: Option<CpuSet>,
    pub record_timeline: bool,
    /// Present-day baseline: the base slice in milliseconds.
    pub modern_slice_ms: f64,
}

impl SimConfig {
    pub fn new(baseline: Baseline, duration_s: f64, seed: u64) -> Self {
        SimConfig {
            baseline,
            hz: 100.0,
            duration_s,
            stagger_s: 10.0,
            seed,
            estimate_cost_ticks: 0.02,
            estimator: Estimator::Model(LinearModel::thesis_northwood()),
            cpus: None,
            record_timeline: false,
            modern_slice_ms: 3.0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Runnable,
    Blocked {
        until: f64,
    },
    /// A family parent waiting for its child.
    WaitingChild,
    Exited,
}

#[derive(Clone, Debug)]
struct Family {
    /// For a parent: children still to run in this run, child length (solo cycles), current child.
    children: u32,
    children_left: u32,
    child_cycles: f64,
    child: Option<TaskId>,
    /// For a child: its parent.
    parent: Option<TaskId>,
}

#[derive(Clone, Debug)]
struct Task {
    /// Index of the benchmark (task-set entry) it belongs to.
    bench: usize,
    name: String,
    pid: u32,
    workload: u32,
    nice: i32,
    mm: u32,
    allowed: Vec<bool>,
    state: State,
    running_on: Option<CpuId>,
    last_cpu: Option<CpuId>,
    /// When it last stopped running.
    stopped_at: f64,
    /// Linux 2.4 slice, in 1/256 ticks.
    counter: i64,
    vruntime: f64,
    deadline: f64,
    /// Solo cycles left in the current run (a family parent: unused), until the next block, and
    /// in the current phase.
    run_left: f64,
    block_left: f64,
    phase: u16,
    phase_left: f64,
    run_started: f64,
    family: Option<Family>,
    // Statistics.
    ticks_run: u64,
    cpu_cycles: f64,
    switches_in: u64,
    migrations: u64,
    ipc_average: f64,
    pr_estimate: Option<f64>,
}

#[derive(Clone, Debug, Default)]
struct Cpu {
    current: Option<TaskId>,
    need_resched: bool,
    /// Cycles of overhead (context switches, refills, estimates) still to pay before the current
    /// task progresses.
    debt: f64,
    idle_since: f64,
    /// Present-day baseline: runnable tasks waiting for this CPU.
    queue: Vec<TaskId>,
}

/// NICE_TO_TICKS at HZ = 100: `((20 - nice) >> 2) + 1` ticks (nice 0 → 6 = 60 ms).
pub fn nice_to_ticks(nice: i32) -> i64 {
    (((20 - nice) >> 2) + 1) as i64
}

/// The CFS/EEVDF load weight of a nice level (1024 at nice 0, ×1.25 per step).
pub fn nice_weight(nice: i32) -> f64 {
    1024.0 / 1.25f64.powi(nice)
}

const TICK_UNITS: i64 = 256;

/// One simulation of a task set under one policy.
pub struct OsSim<'a> {
    machine: &'a MachineModel,
    oracle: &'a dyn Oracle,
    config: SimConfig,
    policy: Box<dyn Policy>,
    specs: Vec<TaskSpec>,
    tasks: Vec<Task>,
    cpus: Vec<Cpu>,
    /// Logical CPUs in use.
    online: Vec<bool>,
    /// Per CPU, the other online CPUs of its core, and its package (fixed after `new`).
    siblings_of: Vec<Vec<CpuId>>,
    package_of: Vec<usize>,
    rng: SimRng,
    now: f64,
    tick_cycles: f64,
    tick: u64,
    next_pid: u32,
    fractional: bool,
    metrics: Metrics,
    rates: Vec<Option<ThreadRate>>,
    rates_valid: bool,
    /// Solo cycles of one run of each benchmark, and its solo elapsed time in seconds.
    run_cycles: Vec<f64>,
    solo_seconds: Vec<f64>,
    phase_cycles: Vec<Vec<f64>>,
    /// Statistics of exited tasks whose slots were reused: (bench, switches in, migrations, cycles).
    exited: Vec<(usize, u64, u64, f64)>,
}

impl<'a> OsSim<'a> {
    /// Prepares `set` (workload `i` of the oracle is the workload of task `i`) on `machine`.
    pub fn new(
        machine: &'a MachineModel,
        oracle: &'a dyn Oracle,
        set: &TaskSetSpec,
        policy: Box<dyn Policy>,
        config: SimConfig,
    ) -> Result<Self, String> {
        set.validate()?;
        let n = machine.logical_cpus() as usize;
        let online: Vec<bool> = match &config.cpus {
            Some(s) => {
                if let Some(bad) = s.iter().find(|&c| c as usize >= n) {
                    return Err(format!(
                        "cpus {s}: CPU {bad} does not exist on machine {} (CPUs 0-{})",
                        machine.name,
                        n - 1
                    ));
                }
                (0..n).map(|c| s.contains(c as u32)).collect()
            }
            None => vec![true; n],
        };
        if !online.iter().any(|&o| o) {
            return Err("cpus: no CPU to run on".into());
        }
        let location = |c: CpuId| machine.cpu_location(c as u32).expect("cpu exists");
        let siblings_of = (0..n)
            .map(|cpu| {
                let core = location(cpu).core;
                (0..n)
                    .filter(|&c| c != cpu && online[c] && location(c).core == core)
                    .collect()
            })
            .collect();
        let package_of = (0..n).map(|c| location(c).package as usize).collect();
        let hz_cycles = machine.clock_ghz * 1e9;
        let tick_cycles = hz_cycles / config.hz;
        let phase_cycles: Vec<Vec<f64>> = (0..set.tasks.len())
            .map(|i| oracle.phase_solo_cycles(i as u32))
            .collect();
        let mut run_cycles = Vec::new();
        let mut solo_seconds = Vec::new();
        for t in &set.tasks {
            match &t.fork {
                Some(f) => {
                    run_cycles.push(f.child_seconds * hz_cycles);
                    solo_seconds.push(f.child_seconds * f.children as f64);
                }
                None => {
                    run_cycles.push(t.run_seconds * hz_cycles);
                    let wait_share = t.block.as_ref().map_or(0.0, |b| b.wait_ms / b.run_ms);
                    solo_seconds.push(t.run_seconds * (1.0 + wait_share));
                }
            }
        }
        let sim = OsSim {
            machine,
            oracle,
            fractional: policy.fractional_slices(),
            policy,
            specs: set.tasks.clone(),
            tasks: Vec::new(),
            cpus: vec![Cpu::default(); n],
            online,
            siblings_of,
            package_of,
            rng: SimRng::new(derive_seed(config.seed, "os")),
            now: 0.0,
            tick_cycles,
            tick: 0,
            next_pid: 1000,
            metrics: Metrics::default(),
            rates: vec![None; n],
            rates_valid: false,
            run_cycles,
            solo_seconds,
            phase_cycles,
            exited: Vec::new(),
            config,
        };
        // Warm the oracle with every situation of up to one task per CPU of a core.
        sim.warm_oracle();
        Ok(sim)
    }

    fn warm_oracle(&self) {
        let n = self.specs.len() as u32;
        let tpc = self.machine.topology.threads_per_core as usize;
        let core0: Vec<usize> = (0..self.cpus.len()).filter(|&c| self.online[c]).collect();
        let first = core0[0];
        let loc = self
            .machine
            .cpu_location(first as u32)
            .expect("online CPU exists");
        let siblings: Vec<usize> = (0..self.cpus.len())
            .filter(|&c| {
                self.online[c]
                    && self
                        .machine
                        .cpu_location(c as u32)
                        .is_some_and(|l| l.core == loc.core)
            })
            .collect();
        let mut situations = Vec::new();
        for a in 0..n {
            for phase_a in 0..self.phase_cycles[a as usize].len() as u16 {
                let mut s = vec![None; self.cpus.len()];
                s[first] = Some(Occupant {
                    workload: a,
                    phase: phase_a,
                });
                situations.push(s.clone());
                if tpc >= 2 && siblings.len() >= 2 {
                    for b in a..n {
                        for phase_b in 0..self.phase_cycles[b as usize].len() as u16 {
                            let mut s2 = s.clone();
                            s2[siblings[1]] = Some(Occupant {
                                workload: b,
                                phase: phase_b,
                            });
                            situations.push(s2);
                        }
                    }
                }
            }
        }
        self.oracle.warm(&situations);
    }

    fn new_task(&mut self, bench: usize, workload_cycles: f64, parent: Option<TaskId>) -> TaskId {
        let block_left = self.next_block(bench);
        let spec = &self.specs[bench];
        let pid = self.next_pid;
        self.next_pid += 1;
        let allowed = match spec.cpus.as_deref().map(CpuSet::parse) {
            Some(Ok(s)) => (0..self.cpus.len())
                .map(|c| self.online[c] && s.contains(c as u32))
                .collect(),
            _ => self.online.clone(),
        };
        let phase_left = self.phase_cycles[bench][0];
        let task = Task {
            bench,
            name: spec.display_name(),
            pid,
            workload: bench as u32,
            nice: spec.nice,
            mm: pid,
            allowed,
            state: State::Runnable,
            running_on: None,
            last_cpu: parent.and_then(|p| self.tasks[p].last_cpu),
            stopped_at: self.now,
            counter: nice_to_ticks(spec.nice) * TICK_UNITS,
            vruntime: 0.0,
            deadline: 0.0,
            run_left: workload_cycles,
            block_left,
            phase: 0,
            phase_left,
            run_started: self.now,
            family: None,
            ticks_run: 0,
            cpu_cycles: 0.0,
            switches_in: 0,
            migrations: 0,
            ipc_average: 0.0,
            pr_estimate: None,
        };
        // The slot of an exited task (no longer on a CPU) is reused, so a family that forks
        // thousands of children keeps the task table small; its statistics are kept aside.
        match (0..self.tasks.len())
            .find(|&t| self.tasks[t].state == State::Exited && self.tasks[t].running_on.is_none())
        {
            Some(slot) => {
                let old = &self.tasks[slot];
                self.exited
                    .push((old.bench, old.switches_in, old.migrations, old.cpu_cycles));
                self.tasks[slot] = task;
                slot
            }
            None => {
                self.tasks.push(task);
                self.tasks.len() - 1
            }
        }
    }

    fn next_block(&mut self, bench: usize) -> f64 {
        match &self.specs[bench].block {
            Some(b) => {
                let mean = b.run_ms * 1e-3 * self.machine.clock_ghz * 1e9;
                -mean * (1.0 - self.rng.unit()).ln()
            }
            None => f64::INFINITY,
        }
    }

    fn wait_cycles(&mut self, bench: usize) -> f64 {
        match &self.specs[bench].block {
            Some(b) => {
                -(b.wait_ms * 1e-3 * self.machine.clock_ghz * 1e9) * (1.0 - self.rng.unit()).ln()
            }
            None => 0.0,
        }
    }

    /// Runs the whole simulation.
    pub fn run(mut self) -> Metrics {
        let end = self.config.duration_s * self.machine.clock_ghz * 1e9;
        let window_start = self.config.stagger_s * self.machine.clock_ghz * 1e9;
        // Staggered start: each task wakes at a random time in the first seconds.
        let n = self.specs.len();
        let mut starts: Vec<(f64, usize)> = (0..n)
            .map(|i| (self.rng.unit() * window_start * 0.5, i))
            .collect();
        starts.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (_, bench) in &starts {
            let run = self.run_cycles[*bench];
            let id = self.new_task(*bench, run, None);
            if let Some(f) = &self.specs[*bench].fork {
                self.tasks[id].family = Some(Family {
                    children: f.children,
                    children_left: f.children,
                    child_cycles: run,
                    child: None,
                    parent: None,
                });
            }
            self.tasks[id].state = State::Blocked {
                until: starts.iter().find(|s| s.1 == *bench).unwrap().0,
            };
        }
        self.metrics.window = (window_start, end);
        self.metrics.tick_cycles = self.tick_cycles;
        self.metrics.clock_hz = self.machine.clock_ghz * 1e9;
        self.metrics.benches = self.specs.iter().map(|s| s.display_name()).collect();
        self.metrics.solo_seconds = self.solo_seconds.clone();
        self.metrics.nice = self.specs.iter().map(|s| s.nice).collect();
        let mut next_tick = self.tick_cycles;
        let plan_period = self.policy.plan_period_ticks();
        while self.now < end {
            if !self.rates_valid {
                self.refresh_rates();
            }
            // The next event.
            let mut t_next = next_tick.min(end);
            for t in &self.tasks {
                if let State::Blocked { until } = t.state {
                    t_next = t_next.min(until.max(self.now));
                }
            }
            for (c, cpu) in self.cpus.iter().enumerate() {
                if let (Some(t), Some(r)) = (cpu.current, self.rates[c]) {
                    let task = &self.tasks[t];
                    let work = task.run_left.min(task.block_left).min(task.phase_left);
                    if r.pr > 0.0 {
                        t_next = t_next.min(self.now + cpu.debt + work / r.pr);
                    }
                }
            }
            let dt = (t_next - self.now).max(0.0);
            self.advance(dt);
            self.now = t_next;
            self.task_events();
            self.wake_ups();
            if self.now >= next_tick - 1e-6 {
                self.tick += 1;
                next_tick += self.tick_cycles;
                self.on_tick();
                if plan_period > 0 && self.tick.is_multiple_of(plan_period) {
                    let view = self.view(self.policy.needs_true_pairs());
                    self.policy.plan(&view);
                }
            }
            for c in 0..self.cpus.len() {
                if self.online[c] && self.cpus[c].need_resched {
                    self.schedule(c);
                }
            }
        }
        let mut stats = std::mem::take(&mut self.exited);
        stats.extend(
            self.tasks
                .iter()
                .map(|t| (t.bench, t.switches_in, t.migrations, t.cpu_cycles)),
        );
        self.metrics.finish(stats);
        self.metrics
    }

    fn situation(&self) -> Vec<Option<Occupant>> {
        self.cpus
            .iter()
            .map(|c| {
                c.current.map(|t| Occupant {
                    workload: self.tasks[t].workload,
                    phase: self.tasks[t].phase,
                })
            })
            .collect()
    }

    fn refresh_rates(&mut self) {
        self.rates = self.oracle.rates(&self.situation());
        self.rates_valid = true;
    }

    fn advance(&mut self, dt: f64) {
        if dt <= 0.0 {
            return;
        }
        for c in 0..self.cpus.len() {
            let Some(t) = self.cpus[c].current else {
                continue;
            };
            let paid = self.cpus[c].debt.min(dt);
            self.cpus[c].debt -= paid;
            let useful = dt - paid;
            let r = self.rates[c].expect("a running task has a rate");
            let task = &mut self.tasks[t];
            let work = useful * r.pr;
            task.run_left -= work;
            task.block_left -= work;
            task.phase_left -= work;
            task.cpu_cycles += dt;
            if self.config.baseline == Baseline::Modern {
                task.vruntime += dt * 1024.0 / nice_weight(task.nice);
            }
        }
    }

    /// Ends of runs, blocks and phase changes of running tasks.
    fn task_events(&mut self) {
        const EPS: f64 = 1e-3;
        for c in 0..self.cpus.len() {
            let Some(t) = self.cpus[c].current else {
                continue;
            };
            if self.tasks[t].phase_left <= EPS {
                let bench = self.tasks[t].bench;
                let n = self.phase_cycles[bench].len() as u16;
                let task = &mut self.tasks[t];
                task.phase = (task.phase + 1) % n;
                task.phase_left = self.phase_cycles[bench][task.phase as usize];
                self.rates_valid = false;
            }
            if self.tasks[t].run_left <= EPS {
                self.end_of_run(t, c);
                continue;
            }
            if self.tasks[t].block_left <= EPS {
                let bench = self.tasks[t].bench;
                let wait = self.wait_cycles(bench);
                self.tasks[t].block_left = self.next_block(bench);
                self.tasks[t].state = State::Blocked {
                    until: self.now + wait,
                };
                self.cpus[c].need_resched = true;
            }
        }
    }

    fn end_of_run(&mut self, t: TaskId, cpu: CpuId) {
        let family = self.tasks[t].family.clone();
        match family {
            // A child finished: it exits, and its parent wakes to fork the next one.
            Some(Family {
                parent: Some(p), ..
            }) => {
                self.tasks[t].state = State::Exited;
                self.cpus[cpu].need_resched = true;
                if let Some(pf) = self.tasks[p].family.as_mut() {
                    pf.child = None;
                }
                self.tasks[p].state = State::Runnable;
                self.wake(p);
            }
            // A plain task completes a run and starts the next.
            _ => {
                let bench = self.tasks[t].bench;
                self.metrics.runs.push(RunRecord {
                    bench,
                    start: self.tasks[t].run_started,
                    end: self.now,
                });
                self.tasks[t].run_started = self.now;
                self.tasks[t].run_left = self.run_cycles[bench];
            }
        }
    }

    fn wake_ups(&mut self) {
        for t in 0..self.tasks.len() {
            if let State::Blocked { until } = self.tasks[t].state {
                if until <= self.now + 1e-6 {
                    self.tasks[t].state = State::Runnable;
                    self.wake(t);
                }
            }
        }
        // Family parents that are runnable without a child fork one (or finish their run).
        for t in 0..self.tasks.len() {
            let ready = self.tasks[t].state == State::Runnable
                && matches!(
                    &self.tasks[t].family,
                    Some(Family {
                        parent: None,
                        child: None,
                        ..
                    })
                );
            if ready {
                self.fork_next(t);
            }
        }
    }

    /// A `make`-like parent: fork the next child, or complete a run when all have finished.
    fn fork_next(&mut self, p: TaskId) {
        let f = self.tasks[p].family.clone().expect("a family parent");
        if f.children_left == 0 {
            let bench = self.tasks[p].bench;
            self.metrics.runs.push(RunRecord {
                bench,
                start: self.tasks[p].run_started,
                end: self.now,
            });
            self.tasks[p].run_started = self.now;
            if let Some(ff) = self.tasks[p].family.as_mut() {
                ff.children_left = ff.children;
            }
            return self.fork_next(p);
        }
        let bench = self.tasks[p].bench;
        let child = self.new_task(bench, f.child_cycles, Some(p));
        self.tasks[child].family = Some(Family {
            children: 0,
            children_left: 0,
            child_cycles: f.child_cycles,
            child: None,
            parent: Some(p),
        });
        // Linux 2.4 fork: the parent's remaining slice is split with the child.
        let pc = self.tasks[p].counter;
        self.tasks[child].counter = ((pc / TICK_UNITS + 1) >> 1) * TICK_UNITS;
        self.tasks[p].counter = ((pc / TICK_UNITS) >> 1) * TICK_UNITS;
        self.tasks[child].vruntime = self.tasks[p].vruntime;
        if let Some(ff) = self.tasks[p].family.as_mut() {
            ff.children_left -= 1;
            ff.child = Some(child);
        }
        self.tasks[p].state = State::WaitingChild;
        if let Some(c) = self.tasks[p].running_on {
            self.cpus[c].need_resched = true;
        }
        self.metrics.forks += 1;
        self.wake(child);
    }

    fn on_tick(&mut self) {
        let estimates = self.policy.estimates();
        // Only a policy that charges fractions of a tick needs a view to charge by.
        let charge_view = self.fractional.then(|| self.view(false));
        for c in 0..self.cpus.len() {
            if !self.online[c] {
                continue;
            }
            let Some(t) = self.cpus[c].current else {
                continue;
            };
            let r = self.rates[c].expect("running task has a rate");
            self.tasks[t].ticks_run += 1;
            self.tasks[t].ipc_average = if self.tasks[t].ipc_average == 0.0 {
                r.ipc
            } else {
                0.9 * self.tasks[t].ipc_average + 0.1 * r.ipc
            };
            if estimates == Estimates::PerTick {
                let e = self.estimate(c);
                self.tasks[t].pr_estimate = Some(e);
                self.charge_estimate(c, 1);
            }
            match self.config.baseline {
                Baseline::Linux24 => {
                    let units = match &charge_view {
                        Some(view) => {
                            let charge = self.policy.tick_charge(t, c, view);
                            (charge * TICK_UNITS as f64).round() as i64
                        }
                        None => TICK_UNITS,
                    };
                    let task = &mut self.tasks[t];
                    task.counter -= units;
                    if task.counter <= 0 {
                        task.counter = 0;
                        self.cpus[c].need_resched = true;
                    }
                }
                Baseline::Modern => {
                    // `fair` on the present-day baseline: virtual time runs faster for tasks doing
                    // well under SMT.
                    let task = &mut self.tasks[t];
                    if let Some(view) = &charge_view {
                        let charge = self.policy.tick_charge(t, c, view);
                        task.vruntime +=
                            (charge - 1.0) * self.tick_cycles * 1024.0 / nice_weight(task.nice);
                    }
                    // Slice used up and someone else waiting: preempt.
                    if !self.cpus[c].queue.is_empty() && task.vruntime >= task.deadline {
                        self.cpus[c].need_resched = true;
                    }
                }
            }
        }
        let view = self.view(false);
        for c in 0..self.cpus.len() {
            if self.online[c] {
                self.policy.tick(c, &view);
            }
        }
        if self.policy.take_resched_request() {
            for c in 0..self.cpus.len() {
                self.cpus[c].need_resched |= self.online[c];
            }
        }
        if self.config.baseline == Baseline::Modern {
            self.balance();
        }
    }

    fn charge_estimate(&mut self, cpu: CpuId, n: u32) {
        self.cpus[cpu].debt += n as f64 * self.config.estimate_cost_ticks * self.tick_cycles;
        self.metrics.estimates += n as u64;
    }

    /// The estimated PR of the task on `cpu` in the current situation.
    fn estimate(&mut self, cpu: CpuId) -> f64 {
        if !self.rates_valid {
            self.refresh_rates();
        }
        let me = self.rates[cpu].expect("estimating a running task");
        match &self.config.estimator {
            Estimator::Perfect => me.pr,
            Estimator::Model(m) => {
                let back = self
                    .siblings(cpu)
                    .iter()
                    .find_map(|&s| self.rates[s])
                    .map(|r| r.epc)
                    .unwrap_or_default();
                m.estimate(&me.epc, &back)
            }
        }
    }

    /// The other online CPUs of `cpu`'s core.
    fn siblings(&self, cpu: CpuId) -> &[CpuId] {
        &self.siblings_of[cpu]
    }

    fn package(&self, cpu: CpuId) -> usize {
        self.package_of[cpu]
    }

    fn view(&self, with_pairs: bool) -> SchedView {
        let n = self.cpus.len();
        let mut view = SchedView {
            tick: self.tick,
            tasks: self
                .tasks
                .iter()
                .map(|t| TaskView {
                    pid: t.pid,
                    name: t.name.clone(),
                    nice: t.nice,
                    runnable: t.state == State::Runnable,
                    running_on: t.running_on,
                    last_cpu: t.last_cpu,
                    ticks_run: t.ticks_run,
                    slice_left: t.counter as f64 / TICK_UNITS as f64,
                    ipc_average: t.ipc_average,
                    pr_estimate: t.pr_estimate,
                })
                .collect(),
            current: self.cpus.iter().map(|c| c.current).collect(),
            package_of: self.package_of.clone(),
            online: self.online.clone(),
            siblings_of: self.siblings_of.clone(),
            pair_true: Default::default(),
        };
        if with_pairs {
            // True PRs of pairs of runnable tasks on the first online core (and alone).
            let first = (0..n).find(|&c| self.online[c]).expect("an online CPU");
            let sib = self.siblings(first).first().copied();
            let runnable: Vec<TaskId> = (0..self.tasks.len())
                .filter(|&t| self.tasks[t].state == State::Runnable)
                .collect();
            for (i, &a) in runnable.iter().enumerate() {
                let occ = |t: TaskId| {
                    Some(Occupant {
                        workload: self.tasks[t].workload,
                        phase: self.tasks[t].phase,
                    })
                };
                let mut s = vec![None; n];
                s[first] = occ(a);
                let alone = self.oracle.rates(&s)[first].map_or(1.0, |r| r.pr);
                view.pair_true.insert((a, a), (alone, alone));
                if let Some(sib) = sib {
                    for &b in &runnable[i + 1..] {
                        let mut s2 = s.clone();
                        s2[sib] = occ(b);
                        let r = self.oracle.rates(&s2);
                        if let (Some(ra), Some(rb)) = (r[first], r[sib]) {
                            view.pair_true.insert((a, b), (ra.pr, rb.pr));
                        }
                    }
                }
            }
        }
        view
    }

    fn goodness(&mut self, t: TaskId, cpu: CpuId, prev_mm: Option<u32>, view: &SchedView) -> i64 {
        let task = &self.tasks[t];
        let g = Goodness {
            counter: task.counter as f64 / TICK_UNITS as f64,
            nice: task.nice,
            same_cpu: task.last_cpu == Some(cpu),
            same_package: task
                .last_cpu
                .is_some_and(|l| self.package(l) == self.package(cpu)),
            same_mm: prev_mm == Some(task.mm),
        };
        if g.counter < 1.0 {
            return 0;
        }
        self.policy.goodness(t, cpu, g, view)
    }

    fn can_run(&self, t: TaskId, cpu: CpuId) -> bool {
        let task = &self.tasks[t];
        task.state == State::Runnable
            && task.allowed[cpu]
            && (task.running_on.is_none() || task.running_on == Some(cpu))
    }

    /// `schedule()` on `cpu`.
    fn schedule(&mut self, cpu: CpuId) {
        self.cpus[cpu].need_resched = false;
        let prev = self.cpus[cpu].current;
        let next = match self.config.baseline {
            Baseline::Linux24 => self.pick_linux24(cpu, prev),
            Baseline::Modern => self.pick_modern(cpu, prev),
        };
        if next != prev {
            self.switch(cpu, prev, next);
        }
    }

    fn pick_linux24(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        let view = self.view(false);
        let prev_mm = prev.map(|p| self.tasks[p].mm);
        loop {
            let mut best: Option<TaskId> = None;
            let mut c: i64 = -1000;
            let mut any = false;
            for t in 0..self.tasks.len() {
                if !self.can_run(t, cpu) {
                    continue;
                }
                any = true;
                let w = self.goodness(t, cpu, prev_mm, &view);
                if w > c {
                    c = w;
                    best = Some(t);
                }
            }
            if any && c == 0 {
                // Every runnable task has used its slice: a new epoch for all tasks.
                for task in &mut self.tasks {
                    if task.state != State::Exited {
                        let carried = if self.fractional {
                            task.counter >> 1
                        } else {
                            ((task.counter / TICK_UNITS) >> 1) * TICK_UNITS
                        };
                        task.counter = carried + nice_to_ticks(task.nice) * TICK_UNITS;
                    }
                }
                self.metrics.epochs += 1;
                continue;
            }
            return best;
        }
    }

    fn eligible_modern(&self, cpu: CpuId, prev: Option<TaskId>) -> Vec<TaskId> {
        let mut cands: Vec<TaskId> = self.cpus[cpu].queue.clone();
        if let Some(p) = prev {
            if self.tasks[p].state == State::Runnable && self.tasks[p].allowed[cpu] {
                cands.push(p);
            }
        }
        cands
    }

    fn pick_modern(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        let cands = self.eligible_modern(cpu, prev);
        if cands.is_empty() {
            return None;
        }
        let wsum: f64 = cands.iter().map(|&t| nice_weight(self.tasks[t].nice)).sum();
        let avg = cands
            .iter()
            .map(|&t| self.tasks[t].vruntime * nice_weight(self.tasks[t].nice))
            .sum::<f64>()
            / wsum;
        let eligible: Vec<TaskId> = cands
            .iter()
            .copied()
            .filter(|&t| self.tasks[t].vruntime <= avg + 1e-6)
            .collect();
        let view = self.view(false);
        let chosen = self
            .policy
            .dispatch(cpu, &eligible, &view)
            .filter(|t| eligible.contains(t));
        let pick = chosen.unwrap_or_else(|| {
            // Earliest virtual deadline; a goodness bonus from the policy breaks in first (the
            // present-day analogue of the thesis's goodness adjustments).
            let prev_mm = prev.map(|p| self.tasks[p].mm);
            let mut best = eligible[0];
            let mut key = (i64::MIN, f64::INFINITY);
            for &t in &eligible {
                let g = Goodness {
                    counter: 1.0,
                    nice: 0,
                    same_cpu: self.tasks[t].last_cpu == Some(cpu),
                    same_package: false,
                    same_mm: prev_mm == Some(self.tasks[t].mm),
                };
                let bonus = self.policy.goodness(t, cpu, g, &view) - g.stock();
                let k = (bonus, self.tasks[t].deadline);
                if k.0 > key.0 || (k.0 == key.0 && k.1 < key.1) {
                    key = k;
                    best = t;
                }
            }
            best
        });
        self.cpus[cpu].queue.retain(|&t| t != pick);
        if let Some(p) = prev {
            if p != pick
                && self.tasks[p].state == State::Runnable
                && !self.cpus[cpu].queue.contains(&p)
            {
                self.cpus[cpu].queue.push(p);
            }
        }
        let slice = self.config.modern_slice_ms * 1e-3 * self.machine.clock_ghz * 1e9;
        let task = &mut self.tasks[pick];
        if task.vruntime >= task.deadline || Some(pick) != prev {
            task.deadline = task.vruntime + slice * 1024.0 / nice_weight(task.nice);
        }
        Some(pick)
    }

    fn switch(&mut self, cpu: CpuId, prev: Option<TaskId>, next: Option<TaskId>) {
        // The policy's counter sample: estimates for the package's running tasks, before the switch.
        if self.policy.estimates() == Estimates::PerSwitch {
            let mut ests = Vec::new();
            let mut cpus = vec![cpu];
            cpus.extend(self.siblings(cpu));
            for &c in &cpus {
                if let Some(t) = self.cpus[c].current {
                    let e = self.estimate(c);
                    self.tasks[t].pr_estimate = Some(e);
                    ests.push((c, t, e));
                }
            }
            self.charge_estimate(cpu, ests.len() as u32);
            let view = self.view(false);
            self.policy.switching(cpu, prev, next, &ests, &view);
        } else {
            let view = self.view(false);
            self.policy.switching(cpu, prev, next, &[], &view);
        }
        if let Some(p) = prev {
            self.tasks[p].running_on = None;
            self.tasks[p].stopped_at = self.now;
            if self.config.baseline == Baseline::Modern
                && self.tasks[p].state == State::Runnable
                && !self.cpus[cpu].queue.contains(&p)
            {
                self.cpus[cpu].queue.push(p);
            }
        }
        self.cpus[cpu].current = next;
        self.cpus[cpu].debt += self.machine.os.context_switch_cycles as f64;
        match next {
            Some(n) => {
                let last = self.tasks[n].last_cpu;
                let moved_package = last.is_some_and(|l| self.package(l) != self.package(cpu));
                let absent_long = self.now - self.tasks[n].stopped_at >= self.tick_cycles;
                if let Some(l) = last {
                    if l != cpu {
                        self.tasks[n].migrations += 1;
                        self.metrics.migrations += 1;
                    }
                }
                let task = &mut self.tasks[n];
                // Caches refill after a move to another package or a long absence.
                if moved_package || (absent_long && task.last_cpu.is_some()) {
                    let w = task.workload;
                    self.cpus[cpu].debt += self.oracle.refill_cycles(w);
                }
                let task = &mut self.tasks[n];
                task.running_on = Some(cpu);
                task.last_cpu = Some(cpu);
                task.switches_in += 1;
                if self.config.baseline == Baseline::Modern {
                    self.cpus[cpu].queue.retain(|&t| t != n);
                }
            }
            None => self.cpus[cpu].idle_since = self.now,
        }
        self.metrics.context_switches += 1;
        if self.config.record_timeline {
            self.metrics.timeline.push(Switch {
                cycle: self.now,
                cpu,
                from: prev.map(|p| self.tasks[p].pid),
                to: next.map(|n| self.tasks[n].pid),
                to_name: next.map(|n| self.tasks[n].name.clone()),
            });
        }
        self.rates_valid = false;
    }

    /// A task became runnable: place it (present-day) or look for a CPU to preempt (2.4).
    fn wake(&mut self, t: TaskId) {
        let view = self.view(false);
        let hint = self
            .policy
            .select_cpu(t, self.tasks[t].last_cpu, &view)
            .filter(|&c| self.tasks[t].allowed[c]);
        match self.config.baseline {
            Baseline::Linux24 => self.reschedule_idle(t, hint, &view),
            Baseline::Modern => {
                let cpu = hint.unwrap_or_else(|| self.select_idle_sibling(t));
                // Place after the queue's minimum virtual time (no credit beyond half a slice).
                let min_v = self.cpus[cpu]
                    .queue
                    .iter()
                    .map(|&q| self.tasks[q].vruntime)
                    .chain(self.cpus[cpu].current.map(|c| self.tasks[c].vruntime))
                    .fold(f64::INFINITY, f64::min);
                if min_v.is_finite() {
                    let half_slice =
                        0.5 * self.config.modern_slice_ms * 1e-3 * self.machine.clock_ghz * 1e9;
                    self.tasks[t].vruntime = self.tasks[t].vruntime.max(min_v - half_slice);
                }
                if !self.cpus[cpu].queue.contains(&t) {
                    self.cpus[cpu].queue.push(t);
                }
                match self.cpus[cpu].current {
                    None => self.cpus[cpu].need_resched = true,
                    Some(cur) => {
                        if self.tasks[t].vruntime + 1e-6 < self.tasks[cur].vruntime
                            && self.tasks[t].deadline < self.tasks[cur].deadline
                        {
                            self.cpus[cpu].need_resched = true;
                        }
                    }
                }
            }
        }
    }

    /// Linux 2.4 `reschedule_idle()`.
    fn reschedule_idle(&mut self, t: TaskId, hint: Option<CpuId>, view: &SchedView) {
        let idle = |s: &Self, c: CpuId| {
            s.online[c] && s.cpus[c].current.is_none() && s.tasks[t].allowed[c]
        };
        if let Some(c) = hint.filter(|&c| idle(self, c)) {
            self.cpus[c].need_resched = true;
            return;
        }
        if let Some(last) = self.tasks[t].last_cpu {
            if idle(self, last) {
                self.cpus[last].need_resched = true;
                return;
            }
        }
        // The CPU idle the longest.
        let oldest = (0..self.cpus.len())
            .filter(|&c| idle(self, c))
            .min_by(|&a, &b| self.cpus[a].idle_since.total_cmp(&self.cpus[b].idle_since));
        if let Some(c) = oldest {
            self.cpus[c].need_resched = true;
            return;
        }
        // Preempt where the woken task's goodness most exceeds the current task's.
        let mut best: Option<(i64, CpuId)> = None;
        for c in 0..self.cpus.len() {
            if !self.online[c] || !self.tasks[t].allowed[c] {
                continue;
            }
            let Some(cur) = self.cpus[c].current else {
                continue;
            };
            let mm = Some(self.tasks[cur].mm);
            let p = self.goodness(t, c, mm, view) - self.goodness(cur, c, mm, view);
            if p > 0 && best.is_none_or(|b| p > b.0) {
                best = Some((p, c));
            }
        }
        if let Some((_, c)) = best {
            self.cpus[c].need_resched = true;
        }
    }

    /// Present-day wake-up placement: the previous CPU if idle, else an idle CPU on a fully idle
    /// core, else any idle CPU, else the previous CPU.
    fn select_idle_sibling(&self, t: TaskId) -> CpuId {
        let allowed = |c: CpuId| self.online[c] && self.tasks[t].allowed[c];
        let idle = |c: CpuId| {
            allowed(c) && self.cpus[c].current.is_none() && self.cpus[c].queue.is_empty()
        };
        let prev = self.tasks[t].last_cpu.filter(|&c| allowed(c));
        let core_idle = |c: CpuId| {
            idle(c)
                && self
                    .siblings(c)
                    .iter()
                    .all(|&s| self.cpus[s].current.is_none())
        };
        if let Some(p) = prev.filter(|&p| core_idle(p)) {
            return p;
        }
        if let Some(c) = (0..self.cpus.len()).find(|&c| core_idle(c)) {
            return c;
        }
        if let Some(p) = prev.filter(|&p| idle(p)) {
            return p;
        }
        if let Some(c) = (0..self.cpus.len()).find(|&c| idle(c)) {
            return c;
        }
        prev.unwrap_or_else(|| {
            (0..self.cpus.len())
                .filter(|&c| allowed(c))
                .min_by_key(|&c| self.cpus[c].queue.len())
                .expect("an allowed CPU")
        })
    }

    /// Present-day load balancing at each tick: idle CPUs pull waiting tasks (CPUs on fully idle
    /// cores first), and a core running two tasks hands one to a fully idle core.
    fn balance(&mut self) {
        let n = self.cpus.len();
        let mut order: Vec<CpuId> = (0..n)
            .filter(|&c| {
                self.online[c] && self.cpus[c].current.is_none() && self.cpus[c].queue.is_empty()
            })
            .collect();
        order.sort_by_key(|&c| {
            self.siblings(c)
                .iter()
                .filter(|&&s| self.cpus[s].current.is_some())
                .count()
        });
        for c in order {
            if self.cpus[c].current.is_some() || !self.cpus[c].queue.is_empty() {
                continue;
            }
            let busiest = (0..n)
                .filter(|&b| b != c && !self.cpus[b].queue.is_empty())
                .max_by_key(|&b| (self.cpus[b].queue.len(), std::cmp::Reverse(b)));
            if let Some(b) = busiest {
                if let Some(pos) = self.cpus[b]
                    .queue
                    .iter()
                    .position(|&t| self.tasks[t].allowed[c])
                {
                    let t = self.cpus[b].queue.remove(pos);
                    self.cpus[c].queue.push(t);
                    self.cpus[c].need_resched = true;
                    continue;
                }
            }
            // SMT balance: this CPU's core is fully idle and another core runs two tasks.
            let core_idle = self
                .siblings(c)
                .iter()
                .all(|&s| self.cpus[s].current.is_none());
            if core_idle {
                let donor = (0..n).find(|&d| {
                    self.cpus[d].current.is_some()
                        && self
                            .siblings(d)
                            .iter()
                            .any(|&s| self.cpus[s].current.is_some())
                });
                if let Some(d) = donor {
                    let t = self.cpus[d].current.expect("donor runs a task");
                    if self.tasks[t].allowed[c] {
                        self.switch(d, Some(t), None);
                        self.cpus[d].queue.retain(|&q| q != t);
                        self.cpus[c].queue.push(t);
                        self.cpus[c].need_resched = true;
                        self.cpus[d].need_resched = true;
                    }
                }
            }
        }
    }
}
