//! `sos`: Snavely & Tullsen's sample–optimise–symbios (ASPLOS 2000). Sample several co-schedules
//! (pairings of the runnable tasks) for a short while each, score each by the estimated system
//! speedup it achieved, then run the best one (symbiosis) for a long while; repeat.
//!
//! On Linux 2.4 a co-schedule is gang-scheduled through goodness. As decisions its pairs take
//! turns on the cores; each is sampled for one whole rotation (every pair has had its turn) and
//! scored by Σ PR estimate × CPU time / period length, the estimated system speedup of the
//! periods it ran.

use super::decision::Decisions;
use super::gang::Gangs;
use super::pairing::Rotation;
use super::view::{PeriodView, TaskKey};
use super::{CpuId, Estimates, Goodness, Linux24Hooks, Needs, Policy, SchedView, TaskId};
use smtsched_uarch::rng::SimRng;

/// Schedules tried per sample phase, ticks each is sampled, and ticks the winner then runs (the
/// paper samples about 10 schedules for a few time slices and runs the winner ~10× longer;
/// chosen once).
pub const SCHEDULES: usize = 10;
pub const SAMPLE_TICKS: u64 = 12;
pub const SYMBIOS_TICKS: u64 = 1200;
/// The same symbiosis length in 100 ms decision periods (12 s).
pub const SYMBIOS_PERIODS: u64 = 120;

/// The decision side's state: the co-schedules sampled, their scores, the one running.
#[derive(Default)]
struct Sampling {
    /// The runnable tasks the candidates pair.
    tasks: Vec<TaskKey>,
    candidates: Vec<Vec<Vec<TaskKey>>>,
    /// Per candidate: summed estimated speedup and periods scored.
    scores: Vec<(f64, u64)>,
    /// The candidate running now.
    current: usize,
    periods_left: u64,
    symbios: bool,
    rotation: Rotation,
}

pub struct Sos {
    rng: SimRng,
    candidates: Vec<Vec<Vec<TaskId>>>,
    scores: Vec<(f64, u64)>,
    trying: usize,
    phase_end: u64,
    symbios: bool,
    gangs: Gangs,
    sampling: Sampling,
}

impl Sos {
    pub fn new() -> Self {
        Sos {
            rng: SimRng::new(0x5050),
            candidates: Vec::new(),
            scores: Vec::new(),
            trying: 0,
            phase_end: 0,
            symbios: false,
            gangs: Gangs::default(),
            sampling: Sampling::default(),
        }
    }

    /// A random pairing of `tasks`.
    fn random_pairing<T: Copy>(&mut self, tasks: &[T]) -> Vec<Vec<T>> {
        let mut t = tasks.to_vec();
        for i in (1..t.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            t.swap(i, j);
        }
        t.chunks(2).map(|c| c.to_vec()).collect()
    }

    /// Periods one sample of a pairing of `groups` groups takes: one whole rotation.
    fn sample_periods(groups: usize, cores: usize) -> u64 {
        groups.div_ceil(cores.max(1)).max(1) as u64
    }

    /// Starts sampling new pairings of `tasks`.
    fn restart(&mut self, tasks: Vec<TaskKey>, cores: usize) {
        let candidates: Vec<_> = (0..SCHEDULES)
            .map(|_| self.random_pairing(&tasks))
            .collect();
        let s = &mut self.sampling;
        s.periods_left = Self::sample_periods(candidates[0].len(), cores);
        s.scores = vec![(0.0, 0); SCHEDULES];
        s.candidates = candidates;
        s.tasks = tasks;
        s.current = 0;
        s.symbios = false;
    }

    /// Scores the period that ended (while sampling) and moves to the next candidate, to
    /// symbiosis, or back to sampling when the current stage is over.
    fn score_and_advance(&mut self, view: &PeriodView, runnable: &[TaskKey], cores: usize) {
        let s = &mut self.sampling;
        if !s.symbios {
            let speedup: f64 = view
                .tasks
                .iter()
                .filter_map(|t| t.pr_estimate.map(|p| p * t.cpu_ns as f64))
                .sum::<f64>()
                / view.length_ns.max(1) as f64;
            s.scores[s.current].0 += speedup;
            s.scores[s.current].1 += 1;
        }
        s.periods_left = s.periods_left.saturating_sub(1);
        if s.periods_left > 0 {
            return;
        }
        if s.symbios {
            self.restart(runnable.to_vec(), cores);
        } else if s.current + 1 < s.candidates.len() {
            s.current += 1;
            s.periods_left = Self::sample_periods(s.candidates[s.current].len(), cores);
        } else {
            // Optimise: the schedule with the best estimated speedup per period.
            let mean = |i: usize| s.scores[i].0 / s.scores[i].1.max(1) as f64;
            s.current = (0..s.candidates.len())
                .max_by(|&a, &b| mean(a).total_cmp(&mean(b)))
                .unwrap_or(0);
            s.symbios = true;
            s.periods_left = SYMBIOS_PERIODS;
        }
    }

    fn start_sampling(&mut self, view: &SchedView) {
        let runnable: Vec<TaskId> = (0..view.tasks.len())
            .filter(|&i| view.tasks[i].runnable)
            .collect();
        self.candidates = (0..SCHEDULES)
            .map(|_| self.random_pairing(&runnable))
            .collect();
        self.scores = vec![(0.0, 0); SCHEDULES];
        self.trying = 0;
        self.symbios = false;
        self.phase_end = view.tick + SAMPLE_TICKS;
        self.gangs.set(self.candidates[0].clone(), view.tick);
    }
}

impl Default for Sos {
    fn default() -> Self {
        Self::new()
    }
}

impl Policy for Sos {
    fn name(&self) -> &str {
        "sos"
    }

    fn needs(&self) -> Needs {
        Needs::ESTIMATES
    }

    fn decide(&mut self, view: &PeriodView) -> Decisions {
        let cores = view.cores().len();
        let runnable: Vec<TaskKey> = view.runnable().map(|t| t.key).collect();
        if self.sampling.candidates.is_empty() {
            self.restart(runnable.clone(), cores);
        } else {
            self.score_and_advance(view, &runnable, cores);
        }
        // Tasks that appeared after the pairings were drawn take turns too, paired in order.
        let s = &mut self.sampling;
        let mut groups = s.candidates[s.current].clone();
        let new: Vec<TaskKey> = runnable
            .iter()
            .copied()
            .filter(|k| !s.tasks.contains(k))
            .collect();
        groups.extend(new.chunks(2).map(|c| c.to_vec()));
        s.rotation.set(groups);
        s.rotation.decide(view, false)
    }

    fn linux24(&mut self) -> Option<&mut dyn Linux24Hooks> {
        Some(self)
    }
}

impl Linux24Hooks for Sos {
    fn estimates(&self) -> Estimates {
        Estimates::PerTick
    }

    fn tick(&mut self, cpu: CpuId, view: &SchedView) {
        if !self.symbios && !self.scores.is_empty() {
            if let Some(t) = view.current[cpu] {
                if let Some(p) = view.tasks[t].pr_estimate {
                    self.scores[self.trying].0 += p;
                }
            }
            if cpu == view.first_cpu() {
                self.scores[self.trying].1 += 1;
            }
        }
        if cpu != view.first_cpu() {
            return;
        }
        if view.tick >= self.phase_end || self.candidates.is_empty() {
            if self.symbios || self.candidates.is_empty() {
                self.start_sampling(view);
            } else if self.trying + 1 < self.candidates.len() {
                self.trying += 1;
                self.phase_end = view.tick + SAMPLE_TICKS;
                self.gangs
                    .set(self.candidates[self.trying].clone(), view.tick);
            } else {
                // Optimise: the schedule with the best estimated speedup per tick.
                let best = (0..self.candidates.len())
                    .max_by(|&a, &b| {
                        let s = |i: usize| self.scores[i].0 / self.scores[i].1.max(1) as f64;
                        s(a).total_cmp(&s(b))
                    })
                    .unwrap_or(0);
                self.gangs.set(self.candidates[best].clone(), view.tick);
                self.symbios = true;
                self.phase_end = view.tick + SYMBIOS_TICKS;
            }
        }
        self.gangs.advance(view);
    }

    fn goodness(&mut self, task: TaskId, _cpu: CpuId, g: Goodness, _view: &SchedView) -> i64 {
        g.stock() + self.gangs.bonus(task)
    }
}
