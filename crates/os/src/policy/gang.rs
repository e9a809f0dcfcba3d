//! Approximate round-robin gang scheduling through goodness (thesis §4.4.4.3): members of the
//! current gang get a large bonus; other tasks still run when a member blocks or runs out of slice.

use super::{SchedView, TaskId, GANG_BONUS};

/// Ticks a gang keeps the bonus before the next one's turn: one default time slice
/// (NICE_TO_TICKS(0) = 6 ticks at HZ = 100).
pub const GANG_TICKS: u64 = 6;

#[derive(Clone, Debug, Default)]
pub struct Gangs {
    gangs: Vec<Vec<TaskId>>,
    current: usize,
    since_tick: u64,
    /// The current gang changed since `take_changed` was last asked.
    changed: bool,
}

impl Gangs {
    pub fn set(&mut self, gangs: Vec<Vec<TaskId>>, tick: u64) {
        if gangs != self.gangs {
            self.gangs = gangs;
            self.current = 0;
            self.since_tick = tick;
            self.changed = true;
        }
    }

    /// Moves to the next gang when the current one has had its turn or cannot run.
    pub fn advance(&mut self, view: &SchedView) {
        if self.gangs.is_empty() {
            return;
        }
        if !self.current_can_run(view) || view.tick >= self.since_tick + GANG_TICKS {
            self.current = (self.current + 1) % self.gangs.len();
            self.since_tick = view.tick;
            self.changed = true;
        }
    }

    /// Whether the current gang changed since the last call.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// Whether a member of the current gang is runnable with slice left.
    pub fn current_can_run(&self, view: &SchedView) -> bool {
        self.gangs.get(self.current).is_some_and(|g| {
            g.iter().any(|&t| {
                view.tasks
                    .get(t)
                    .is_some_and(|v| v.runnable && v.slice_left >= 1.0)
            })
        })
    }

    pub fn bonus(&self, task: TaskId) -> i64 {
        match self.gangs.get(self.current) {
            Some(g) if g.contains(&task) => GANG_BONUS,
            _ => 0,
        }
    }
}
