//! `sos`: Snavely & Tullsen's sample–optimise–symbios (ASPLOS 2000). Sample several co-schedules
//! (pairings of the runnable tasks) for a short while each, score each by the estimated system
//! speedup it achieved, then run the best one (symbiosis) for a long while; repeat.

use super::gang::Gangs;
use super::{CpuId, Estimates, Goodness, Policy, SchedView, TaskId};
use smtsched_uarch::rng::SimRng;

/// Schedules tried per sample phase, ticks each is sampled, and ticks the winner then runs (the
/// paper samples about 10 schedules for a few time slices and runs the winner ~10× longer;
/// chosen once).
pub const SCHEDULES: usize = 10;
pub const SAMPLE_TICKS: u64 = 12;
pub const SYMBIOS_TICKS: u64 = 1200;

pub struct Sos {
    rng: SimRng,
    candidates: Vec<Vec<Vec<TaskId>>>,
    scores: Vec<(f64, u64)>,
    trying: usize,
    phase_end: u64,
    symbios: bool,
    gangs: Gangs,
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
        }
    }

    /// A random pairing of `tasks`.
    fn random_pairing(&mut self, tasks: &[TaskId]) -> Vec<Vec<TaskId>> {
        let mut t = tasks.to_vec();
        for i in (1..t.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            t.swap(i, j);
        }
        t.chunks(2).map(|c| c.to_vec()).collect()
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
