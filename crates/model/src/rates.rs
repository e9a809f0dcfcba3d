//! The interface between the OS simulator's interaction oracle and the models that predict how
//! fast threads run together (DESIGN §6): who occupies a logical CPU, the rates a thread runs at,
//! and what an analytic model — such as the reuse-distance model of `smtsched-cachemodel`
//! (DESIGN §8) — must answer. Here so that such models need not depend on the OS simulator.

use crate::events::Epc;

/// What one logical CPU runs: a workload (index into the oracle's table) in one of its phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Occupant {
    pub workload: u32,
    pub phase: u16,
}

/// Progress and counter rates of one thread in a situation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThreadRate {
    /// Performance ratio: progress per cycle relative to running alone.
    pub pr: f64,
    /// Instructions per cycle.
    pub ipc: f64,
    pub epc: Epc,
    /// Share of its cycles spent in the kernel.
    pub kernel_share: f64,
}

/// What the oracle's analytic backend asks of a model that predicts rates without simulating — for
/// example the reuse-distance model of `smtsched-cachemodel` (DESIGN §6, §8).
pub trait RateModel: Send + Sync {
    /// Rates of every occupied logical CPU of `situation`, indexed like it.
    fn rates(&self, situation: &[Option<Occupant>]) -> Vec<Option<ThreadRate>>;
    fn phase_solo_cycles(&self, workload: u32) -> Vec<f64>;
    fn refill_cycles(&self, workload: u32) -> f64;
    fn solo_ipc(&self, o: Occupant) -> f64;
    fn describe(&self) -> String;
}
