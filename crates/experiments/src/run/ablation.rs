//! The estimator ablation (thesis chapter 4 with other estimators): each policies experiment's
//! estimate-using policies, and naive as the reference that uses none, run once per estimator
//! with the same seeds, so that a policy's gain can be traced to the quality of its estimates.

use super::policies::{replications, sim_config};
use super::{repetitions, Progress, RunError, RunOptions};
use crate::experiment::{metric, Experiment, ExperimentKind, PolicyMetric};
use smtsched_os::policy::PolicyInputs;
use smtsched_os::sim::Estimator;
use smtsched_os::PolicyName;

/// One policy of one experiment: its metrics under each estimator, in the order given.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AblationRow {
    pub experiment: String,
    pub policy: String,
    pub system_speedup: Vec<Option<f64>>,
    pub fairness: Vec<Option<f64>>,
    /// Tasks that completed no run in the window in some repetition under some estimator
    /// (their figures are then `None`: a figure over some of the tasks is not the set's).
    pub missing: Vec<String>,
}

/// Runs every experiment under every estimator (the same seeds for each).
pub fn run(
    experiments: &[Experiment],
    estimators: &[Estimator],
    o: &RunOptions,
    p: &dyn Progress,
) -> Result<Vec<AblationRow>, RunError> {
    if let Some(e) = experiments
        .iter()
        .find(|e| e.kind != ExperimentKind::Policies)
    {
        return Err(RunError::Bad(format!(
            "--experiments {}: not a policies experiment",
            e.name
        )));
    }
    p.begin(
        "ablation",
        (experiments.len() * estimators.len()) as u64,
        "simulations",
    );
    let mut rows = Vec::new();
    for e in experiments {
        let m = super::machine_of(e)?;
        let set = e.task_set();
        let policies = estimate_users(e);
        let reps = repetitions(e, o)?;
        let mut by_estimator = Vec::new();
        for est in estimators {
            let mut cfg = sim_config(e, o)?;
            cfg.estimator = est.clone();
            by_estimator.push(replications(&m, &set, &policies, reps, &cfg, &|| {})?);
            p.step();
        }
        for (k, &policy) in policies.iter().enumerate() {
            let of = |met| by_estimator.iter().map(|r| metric(&r[k], met)).collect();
            let mut missing: Vec<String> = by_estimator
                .iter()
                .flat_map(|r| r[k].runs.iter().flat_map(|run| run.summary().missing))
                .collect();
            missing.sort();
            missing.dedup();
            rows.push(AblationRow {
                experiment: e.name.clone(),
                policy: policy.to_string(),
                system_speedup: of(PolicyMetric::SystemSpeedup),
                fairness: of(PolicyMetric::Fairness),
                missing,
            });
        }
    }
    p.end();
    Ok(rows)
}

/// Naive, then the experiment's policies that use estimates.
fn estimate_users(e: &Experiment) -> Vec<PolicyName> {
    let mut policies = vec![PolicyName::Naive];
    policies.extend(e.policies.iter().copied().filter(|p| {
        *p != PolicyName::Naive
            && p.build(&PolicyInputs::default())
                .is_ok_and(|b| b.needs().estimates)
    }));
    policies
}
