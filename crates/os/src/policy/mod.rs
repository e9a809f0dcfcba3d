//! The policy interface and the policies (one file each).
//!
//! A policy acts through **decisions as data** (DESIGN §7): at the end of each period (default
//! 100 ms) it reads a [`PeriodView`] — the topology, every task's CPU time, run delay, CPUs,
//! co-runners, counter rates and PR estimate over the period — and answers with [`Decisions`]:
//! per-task affinity, weight and core-scheduling group, and optionally a gang turn. The OS
//! simulator's present-day baseline enforces them as Linux does, and the live agent applies the
//! same decisions to real processes, so a policy evaluated in simulation is the policy deployed.
//! A policy sees nothing else: no clock, no global random numbers, no simulator state. Only the
//! `optimal` ceiling knows true performance ratios, handed to it when it is built.
//!
//! The thesis's policies also keep their Linux 2.4 hooks ([`linux24::Linux24Hooks`]), an opt-in
//! extension used only to reproduce the thesis on the simulated 2.4 scheduler.

pub mod balance_set;
mod basic;
mod core_sched;
pub mod corunners;
pub mod decision;
pub mod di;
mod fair;
mod gang;
mod ipc;
pub mod linux24;
pub mod log;
mod optimal;
pub mod pairing;
pub mod plan;
mod smt_default;
mod sos;
mod tryhard;
pub mod view;

pub use decision::{Applied, CoreGroup, Decisions, TaskDecision, Weight};
pub use linux24::{Estimates, Goodness, Linux24Hooks, SchedView, TaskView, GANG_BONUS};
pub use log::DecisionRecord;
pub use optimal::PairTruth;
pub use view::{Corunner, PeriodView, TaskKey, TaskSample};

use serde::{Deserialize, Serialize};

/// Index of a task in the simulator's table (Linux 2.4 hooks only; decisions use [`TaskKey`]).
pub type TaskId = usize;
pub type CpuId = usize;

/// Period between decisions unless a policy chooses another.
pub const DEFAULT_PERIOD_NS: u64 = 100_000_000;

/// What a policy needs from the machine it runs on; a driver that cannot provide it refuses to
/// start, with the reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// A PR estimate for every task in the view (a model file with hardware counters, a measured
    /// PR matrix, or the simulator's perfect estimator).
    pub estimates: bool,
    /// Counter rates in the view (hardware counters, or the simulator's).
    pub counters: bool,
    /// Core scheduling (Linux `PR_SCHED_CORE`): decisions with core groups.
    pub core_groups: bool,
}

impl Needs {
    pub const ESTIMATES: Needs = Needs {
        estimates: true,
        counters: false,
        core_groups: false,
    };
    pub const COUNTERS: Needs = Needs {
        estimates: false,
        counters: true,
        core_groups: false,
    };
    pub const CORE_GROUPS: Needs = Needs {
        estimates: false,
        counters: false,
        core_groups: true,
    };
}

/// A scheduling policy.
pub trait Policy: Send {
    fn name(&self) -> &str;

    fn needs(&self) -> Needs {
        Needs::default()
    }

    /// Time between calls of [`Policy::decide`].
    fn period_ns(&self) -> u64 {
        DEFAULT_PERIOD_NS
    }

    /// The decisions to apply until the next period, from what the last period showed.
    fn decide(&mut self, view: &PeriodView) -> Decisions;

    /// The policy's Linux 2.4 hooks, if it reproduces a thesis policy on that scheduler.
    fn linux24(&mut self) -> Option<&mut dyn Linux24Hooks> {
        None
    }
}

/// The stock scheduler with nothing changed.
pub struct Naive;

impl Policy for Naive {
    fn name(&self) -> &str {
        "naive"
    }

    fn decide(&mut self, _view: &PeriodView) -> Decisions {
        Decisions::none()
    }

    fn linux24(&mut self) -> Option<&mut dyn Linux24Hooks> {
        Some(self)
    }
}

impl Linux24Hooks for Naive {}

/// What policies may be given when they are built: the cache-aware policies' per-task inputs and,
/// for the `optimal` ceiling only, the true performance ratios.
#[derive(Clone, Debug, Default)]
pub struct PolicyInputs {
    pub cache: balance_set::CacheInputs,
    pub truth: Option<PairTruth>,
}

/// Policies by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyName {
    Naive,
    /// What present-day schedulers do on SMT: an idle core before an idle sibling.
    SmtDefault,
    Basic,
    Tryhard,
    Plan,
    /// `plan` as the USENIX'05 paper describes it: three best partners per task, sorted by the
    /// planner.
    Plan3,
    Fair,
    Ipc,
    Sos,
    Optimal,
    /// Fedorova et al.'s balance-set scheduler, PERF thread selection.
    BalanceSetPerf,
    /// Fedorova et al.'s balance-set scheduler, FAIR thread selection.
    BalanceSetFair,
    /// Zhuravlev et al.'s distributed intensity.
    Di,
    /// Linux core scheduling from task trust labels: an untrusted task never shares a core with
    /// another group.
    CoreSched,
}

pub const ALL_POLICIES: &[PolicyName] = &[
    PolicyName::Naive,
    PolicyName::SmtDefault,
    PolicyName::Basic,
    PolicyName::Tryhard,
    PolicyName::Plan,
    PolicyName::Plan3,
    PolicyName::Fair,
    PolicyName::Ipc,
    PolicyName::Sos,
    PolicyName::Optimal,
    PolicyName::BalanceSetPerf,
    PolicyName::BalanceSetFair,
    PolicyName::Di,
    PolicyName::CoreSched,
];

impl PolicyName {
    pub fn as_str(&self) -> &'static str {
        match self {
            PolicyName::Naive => "naive",
            PolicyName::SmtDefault => "smt-default",
            PolicyName::Basic => "basic",
            PolicyName::Tryhard => "tryhard",
            PolicyName::Plan => "plan",
            PolicyName::Plan3 => "plan3",
            PolicyName::Fair => "fair",
            PolicyName::Ipc => "ipc",
            PolicyName::Sos => "sos",
            PolicyName::Optimal => "optimal",
            PolicyName::BalanceSetPerf => "balance-set-perf",
            PolicyName::BalanceSetFair => "balance-set-fair",
            PolicyName::Di => "di",
            PolicyName::CoreSched => "core-sched",
        }
    }

    /// Whether `baseline` can carry out this policy (see [`crate::sim::baseline_carries`]).
    pub fn check_baseline(&self, baseline: crate::sim::Baseline) -> Result<(), String> {
        // Only `optimal` cannot be built without a simulation's inputs; it has hooks.
        match self.build(&PolicyInputs::default()) {
            Ok(mut p) => crate::sim::baseline_carries(p.as_mut(), baseline),
            Err(_) => Ok(()),
        }
    }

    /// The policy, given what it may need. Only `optimal` fails: it needs the true PRs, which
    /// only a simulation has.
    pub fn build(&self, inputs: &PolicyInputs) -> Result<Box<dyn Policy>, String> {
        Ok(match self {
            PolicyName::Naive => Box::new(Naive),
            PolicyName::SmtDefault => Box::new(smt_default::SmtDefault::new()),
            PolicyName::Basic => Box::new(basic::Basic::new()),
            PolicyName::Tryhard => Box::new(tryhard::Tryhard::new()),
            PolicyName::Plan => Box::new(plan::Plan::new(1)),
            PolicyName::Plan3 => Box::new(plan::Plan::new(3)),
            PolicyName::Fair => Box::new(fair::Fair),
            PolicyName::Ipc => Box::new(ipc::Ipc::new()),
            PolicyName::Sos => Box::new(sos::Sos::new()),
            PolicyName::Optimal => Box::new(optimal::Optimal::new(inputs.truth.clone().ok_or(
                "optimal needs the true performance ratios of every pair, which only a simulation has",
            )?)),
            PolicyName::BalanceSetPerf => Box::new(balance_set::BalanceSet::new(
                balance_set::Selection::Perf,
                inputs.cache.partition_miss_ratio.clone(),
            )),
            PolicyName::BalanceSetFair => Box::new(balance_set::BalanceSet::new(
                balance_set::Selection::Fair,
                inputs.cache.partition_miss_ratio.clone(),
            )),
            PolicyName::Di => Box::new(di::Di::new(
                inputs.cache.intensity.clone(),
                inputs.cache.domain_of_cpu.clone(),
            )),
            PolicyName::CoreSched => Box::new(core_sched::CoreSched),
        })
    }
}

impl std::fmt::Display for PolicyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for PolicyName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL_POLICIES
            .iter()
            .copied()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown policy {s:?} (policies: {})",
                    ALL_POLICIES
                        .iter()
                        .map(|p| p.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }
}
