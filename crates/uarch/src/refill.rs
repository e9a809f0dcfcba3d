//! Refill-only quanta. A thread that time-shares a logical CPU finds its cache lines evicted by
//! the other threads' quanta and refills them after each switch-in; once its miss rates are back
//! to its solo rates and its rate has settled, the rest of its quantum runs as it would alone.
//! That rest is credited at the rates of an interval measured then instead of simulated, and the
//! caches are aged as its fills would have aged them, so the next thread finds what it would
//! have found. A run uses this only when it is given
//! every time-sharing thread's solo rates ([`crate::Simulation::with_solo_rates`]).

use crate::cache::Turnover;
use crate::counters::ThreadCounters;
use crate::engine::ThreadResult;

/// Simulated time between checks of a thread's rates during its quantum. Long enough that an
/// interval sees hundreds of thousands of events, short against a 10 ms quantum (24 M cycles at
/// 2.4 GHz).
pub const CHECK_CYCLES: f64 = 1_000_000.0;
/// The interval that measures the rates the rest of a quantum is credited at: long enough that
/// chance moves a memory-bound thread's rate by a few tenths of a percent.
pub const MEASURE_CYCLES: f64 = 4_000_000.0;
/// A settled interval's instructions per cycle are within this share of the solo rate's and of
/// the interval before's, or within [`IPC_SIGMAS`] of the solo run's own spread if that is
/// wider: the switch-in transient is over (the refill, and what else still holds the other
/// thread's state: a prefetcher's streams, clean lines that a streaming thread evicts without
/// writing back, for millions of cycles).
const IPC_SHARE: f64 = 0.005;
/// How far, in standard deviations of the solo run's [`CHECK_CYCLES`] intervals, a settled
/// interval's instructions per cycle may lie from the solo rate (and, for the difference of two
/// intervals, from the interval before). A memory-bound thread's rate varies by a percent or
/// more from one such interval to the next; a fixed share narrower than that settles only by
/// chance.
const IPC_SIGMAS: f64 = 3.0;
/// Misses above the solo expectation that a refilled interval may still show, in standard
/// deviations of a Poisson count.
const MISS_SIGMAS: f64 = 3.0;

/// A thread's counters over a window of its running time, as rates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    window: ThreadCounters,
    /// Standard deviation of the instructions per cycle of the run's [`CHECK_CYCLES`]
    /// intervals (0 if unknown).
    interval_ipc_sd: f64,
}

impl Rates {
    /// The rates of a window; `None` if it ran no cycles or retired nothing.
    pub fn new(window: ThreadCounters) -> Option<Self> {
        (window.cycles > 0.0 && window.instructions > 0).then_some(Rates {
            window,
            interval_ipc_sd: 0.0,
        })
    }

    /// The rates of a solo run's window, with the spread of its [`CHECK_CYCLES`] intervals read
    /// from the samples the run took every [`CHECK_CYCLES`].
    pub fn of_solo(solo: &ThreadResult) -> Option<Self> {
        let mut rates = Rates::new(solo.window)?;
        rates.interval_ipc_sd = interval_ipc_sd(solo);
        Some(rates)
    }

    /// Whether an interval of the thread's run shows it settled after its switch-in, these being
    /// its solo rates: its misses at every cache level no more than the solo rates predict for
    /// its instructions (allowing for chance), and its instructions per cycle within
    /// [`IPC_SHARE`] of the solo rate and of the interval before (`previous_ipc`).
    pub fn settled(&self, interval: &ThreadCounters, previous_ipc: f64) -> bool {
        if interval.instructions == 0 {
            return false;
        }
        let ipc = interval.ipc();
        let near = |reference: f64, sd: f64| {
            (ipc - reference).abs() <= (IPC_SHARE * reference).max(IPC_SIGMAS * sd)
        };
        let sd = self.interval_ipc_sd;
        if !near(self.window.ipc(), sd) || !near(previous_ipc, sd * std::f64::consts::SQRT_2) {
            return false;
        }
        let solo = &self.window;
        let per_instruction = interval.instructions as f64 / solo.instructions as f64;
        [
            (interval.l1i_misses, solo.l1i_misses),
            (interval.l1d_misses, solo.l1d_misses),
            (interval.l2_misses, solo.l2_misses),
            (interval.l3_misses, solo.l3_misses),
        ]
        .iter()
        .all(|&(seen, solo)| {
            let expected = solo as f64 * per_instruction;
            seen as f64 <= expected + MISS_SIGMAS * (expected.sqrt() + 1.0)
        })
    }

    /// The counters of `cycles` of running time at these rates.
    pub fn over(&self, cycles: f64) -> ThreadCounters {
        self.window.scaled(cycles / self.window.cycles)
    }

    pub fn instructions_per_cycle(&self) -> f64 {
        self.window.ipc()
    }

    /// Micro-ops per cycle.
    pub fn uops_per_cycle(&self) -> f64 {
        self.window.uops as f64 / self.window.cycles
    }
}

/// Standard deviation of the instructions per cycle of the whole [`CHECK_CYCLES`] intervals
/// between a run's samples inside its window (0 with fewer than two).
fn interval_ipc_sd(run: &ThreadResult) -> f64 {
    let inside: Vec<&ThreadCounters> = run
        .samples
        .iter()
        .filter(|s| s.cycle >= run.start_cycle && s.cycle <= run.end_cycle)
        .map(|s| &s.counters)
        .collect();
    let ipcs: Vec<f64> = inside.windows(2).map(|w| (*w[1] - *w[0]).ipc()).collect();
    if ipcs.len() < 2 {
        return 0.0;
    }
    let n = ipcs.len() as f64;
    let mean = ipcs.iter().sum::<f64>() / n;
    (ipcs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// Where a time-sharing context stands in checking its running thread's quantum: intervals until
/// one has settled, then one more whose rates the rest of the quantum is credited at (measured
/// after the decision, so the choice of the interval does not bias the rate).
#[derive(Clone, Debug)]
pub struct RefillCheck {
    /// The quantum being checked, by its end (a new quantum starts a new check).
    pub quantum_end: f64,
    /// The current interval: when it began and ends, the thread's counters at its start.
    pub since: f64,
    pub until: f64,
    pub start: ThreadCounters,
    /// How the thread's lines had come and gone in each cache instance it reaches at the
    /// interval's start.
    pub turnover: Vec<(usize, Turnover)>,
    /// Instructions per cycle of the previous interval (NaN before the first).
    pub previous_ipc: f64,
    /// Whether the current interval measures the rates of the rest of the quantum.
    pub measuring: bool,
    /// Instructions the thread had left in its phase at the interval's start.
    pub phase_left: u64,
}

impl Default for RefillCheck {
    fn default() -> Self {
        RefillCheck {
            quantum_end: f64::NAN,
            since: 0.0,
            until: 0.0,
            start: ThreadCounters::default(),
            turnover: Vec::new(),
            previous_ipc: f64::NAN,
            measuring: false,
            phase_left: 0,
        }
    }
}

/// Fills that `fills_in_interval` over `interval_cycles` imply over a further `tail_cycles`.
pub fn tail_fills(fills_in_interval: u64, interval_cycles: f64, tail_cycles: f64) -> u64 {
    if interval_cycles <= 0.0 {
        return 0;
    }
    (fills_in_interval as f64 * tail_cycles / interval_cycles).round() as u64
}

/// The share of a thread's lines that left a cache dirty over an interval, if any left.
pub fn dirty_share(interval: &Turnover) -> Option<f64> {
    (interval.evicted > 0).then(|| interval.evicted_dirty as f64 / interval.evicted as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Sample;

    fn window(instructions: u64, cycles: f64, l2_misses: u64) -> ThreadCounters {
        ThreadCounters {
            instructions,
            cycles,
            l2_misses,
            uops: instructions * 3 / 2,
            ..Default::default()
        }
    }

    #[test]
    fn an_interval_at_the_solo_rates_has_settled_and_one_missing_more_or_faster_has_not() {
        let solo = Rates::new(window(1_000_000, 1_000_000.0, 1_000)).unwrap();
        // A tenth of the instructions: 100 misses expected, 3 sigma = 3 * (10 + 1) = 33.
        assert!(solo.settled(&window(100_000, 100_000.0, 133), 1.0));
        assert!(!solo.settled(&window(100_000, 100_000.0, 134), 1.0));
        // Within 0.5% of the solo rate (1.0) and of the interval before.
        assert!(solo.settled(&window(100_000, 99_600.0, 100), 1.0));
        assert!(!solo.settled(&window(100_000, 99_000.0, 100), 1.01));
        assert!(!solo.settled(&window(100_000, 100_000.0, 100), 1.01));
        assert!(!solo.settled(&window(100_000, 100_000.0, 100), f64::NAN));
        assert!(!solo.settled(&ThreadCounters::default(), 1.0));
    }

    #[test]
    fn a_thread_whose_rate_varies_widely_alone_settles_within_three_of_its_deviations() {
        // Alone, its 1 M-cycle intervals ran at 1.0, 1.2 and 0.8 instructions per cycle (the
        // first one, at cycle 0, is before the window): sd 0.2 (n - 1 in the denominator).
        let at = |cycle: f64, instructions: u64| Sample {
            cycle,
            counters: window(instructions, cycle, 0),
        };
        let solo = ThreadResult {
            window: window(3_000_000, 3_000_000.0, 0),
            start_cycle: 1e6,
            end_cycle: 4e6,
            samples: vec![
                at(0.0, 0),
                at(1e6, 500_000),
                at(2e6, 1_500_000),
                at(3e6, 2_700_000),
                at(4e6, 3_500_000),
                at(5e6, 9_000_000),
            ],
            llc_lines: 0,
        };
        let rates = Rates::of_solo(&solo).unwrap();
        assert!((rates.interval_ipc_sd - 0.2).abs() < 1e-12);
        // Solo rate 1.0: within 3 sd = 0.6 of it, and 3 * sqrt(2) * 0.2 = 0.849 of the interval
        // before.
        assert!(rates.settled(&window(159_000, 100_000.0, 0), 1.0));
        assert!(!rates.settled(&window(161_000, 100_000.0, 0), 1.0));
        assert!(rates.settled(&window(41_000, 100_000.0, 0), 0.41));
        assert!(!rates.settled(&window(39_000, 100_000.0, 0), 0.39));
        assert!(rates.settled(&window(150_000, 100_000.0, 0), 0.66));
        assert!(!rates.settled(&window(150_000, 100_000.0, 0), 0.64));
        // Without samples the spread is unknown and the fixed 0.5% applies.
        let plain = Rates::of_solo(&ThreadResult {
            samples: Vec::new(),
            ..solo
        })
        .unwrap();
        assert_eq!(plain.interval_ipc_sd, 0.0);
        assert!(!plain.settled(&window(99_000, 100_000.0, 0), 0.99));
    }

    #[test]
    fn the_rest_of_a_quantum_is_credited_at_the_measured_rates() {
        let r = Rates::new(window(2_000, 1_000.0, 10)).unwrap();
        let c = r.over(500.0);
        assert_eq!((c.instructions, c.l2_misses, c.cycles), (1_000, 5, 500.0));
        assert_eq!(r.uops_per_cycle(), 3.0);
        assert_eq!(tail_fills(100, 50.0, 200.0), 400);
        assert!(Rates::new(ThreadCounters::default()).is_none());
    }
}
