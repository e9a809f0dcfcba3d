//! A policies experiment: the task set under each policy, repeated with seeds seed, seed+1, …,
//! and each claim judged on the per-seed differences between policies.

use super::{
    more_repetitions, paper_text, repetitions, ClaimOutcome, ClaimQuantity, KindOutcome, Progress,
    RunError, RunOptions,
};
use crate::configurations::interval_text;
use crate::experiment::{judge, metric, metric_values, Experiment, Judgement, PolicyMetric};
use smtsched_model::{CpuSet, KernelBuild, MachineModel};
use smtsched_os::oracle::{Oracle, SimulatedOracle};
use smtsched_os::policy::PolicyName;
use smtsched_os::runs::{policy_table, simulate_replicated, task_table, PolicyRuns};
use smtsched_os::sim::{Estimator, SimConfig};
use smtsched_os::taskset::TaskSetSpec;
use smtsched_report::verdict::{MeanInterval, Verdict};
use smtsched_report::Table;

pub(super) fn run(
    e: &Experiment,
    m: &MachineModel,
    o: &RunOptions,
    p: &dyn Progress,
) -> Result<KindOutcome, RunError> {
    let set = e.task_set();
    let mut cfg = sim_config(e, o)?;
    cfg.estimator = estimator(e, m, o)?;
    let results = runs_until_decided(e, m, &cfg, o, p)?;
    let claims: Vec<ClaimOutcome> = e
        .paper
        .claims
        .iter()
        .map(|c| {
            let j = judge(c, &results);
            ClaimOutcome {
                says: c.says.clone(),
                verdict: j.verdict,
                evidence: judgement_line(&c.says, &j),
                quantities: vec![ClaimQuantity {
                    of: j.compared.clone(),
                    interval: j.difference,
                }],
            }
        })
        .collect();
    let json = serde_json::json!({
        "experiment": e.name,
        "results": results.iter().map(|r| serde_json::json!({
            "policy": r.policy,
            "summaries": r.runs.iter().map(|run| run.summary()).collect::<Vec<_>>(),
            "runs": if o.full_json { serde_json::to_value(&r.runs).unwrap_or_default() } else { serde_json::Value::Null },
        })).collect::<Vec<_>>(),
        "paper": e.paper,
        "claims": e.paper.claims.iter().map(|c| serde_json::json!({"says": c.says, "judgement": judge(c, &results)})).collect::<Vec<_>>(),
    });
    let reps = results.first().map_or(0, |r| r.runs.len());
    let mut text = format!(
        "{} tasks on {} (CPUs {}), {:?} baseline, {} s x {} repetition(s), oracle {}{}, {}\n\n",
        set.tasks.len(),
        m.name,
        e.cpus.as_deref().unwrap_or("all"),
        e.baseline,
        cfg.duration_s,
        reps,
        SimulatedOracle::for_set(m, &set, o.seed, KernelBuild::Smp)?.describe(),
        if reps > 1 {
            ", each repetition sampling with its own seed"
        } else {
            ""
        },
        cfg.estimator.describe()
    );
    text.push_str(&policy_table(&results));
    text.push('\n');
    text.push_str(&task_table(&results));
    if e.tasks.iter().any(|t| t.nice != 0) {
        text.push_str(&priority_table(&results));
    }
    text.push_str(&paper_text(&e.paper));
    for (k, v) in &e.paper.values {
        let ours = k.split_once('.').and_then(|(policy, met)| {
            let r = results.iter().find(|r| r.policy == policy)?;
            metric(r, met.parse().ok()?)
        });
        text.push_str(&format!(
            "  {k}: paper {v:.3}, here {}\n",
            ours.map_or("-".into(), |x| format!("{x:.3}"))
        ));
    }
    if !claims.is_empty() {
        text.push_str("\nClaims (95% intervals of the difference over the repetitions):\n");
        for c in &claims {
            text.push_str(&format!("  {}\n", c.evidence));
        }
    }
    Ok(KindOutcome {
        text,
        json,
        claims,
        figures: speedup_figure(e, &results).into_iter().collect(),
    })
}

/// The estimator experiment `e` runs with under `o`.
fn estimator(e: &Experiment, m: &MachineModel, o: &RunOptions) -> Result<Estimator, RunError> {
    let spec = o
        .estimator
        .clone()
        .or(e.estimator.clone())
        .unwrap_or(Estimator::default_spec(m));
    Estimator::from_spec(&spec, Some(m)).map_err(|err| RunError::Bad(format!("--estimator {err}")))
}

/// What a run of policies experiment `e` would find wrong only when it reached it: the
/// estimator, a claim comparing a policy that does not run, and the task set on the machine (a
/// simulator is built, not run: its CPUs, devices and interrupts).
pub(super) fn check(e: &Experiment, m: &MachineModel, o: &RunOptions) -> Result<(), RunError> {
    estimator(e, m, o)?;
    // A claim on a policy `--policies` leaves out could never be decided.
    let (run, whose) = match &o.policies {
        Some(list) => (list, "--policies"),
        None => (&e.policies, "policies"),
    };
    if let Some((_, p)) = smtsched_model::first_repeat(run) {
        return Err(RunError::Bad(format!(
            "{whose}: {:?} is named twice (each policy runs once)",
            p.to_string()
        )));
    }
    for (i, c) in e.paper.claims.iter().enumerate() {
        let named = [
            ("higher", c.higher),
            ("than", c.than),
            ("lowest", c.lowest),
            ("highest", c.highest),
        ];
        for (field, p) in named {
            if let Some(p) = p.filter(|p| !run.contains(p)) {
                return Err(RunError::Bad(format!(
                    "paper.claim[{i}].{field} = {:?}: not one of the policies run ({whose}: {})",
                    p.to_string(),
                    run.iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
    }
    let set = e.task_set();
    set.oracle_profiles()?;
    let naive = Box::new(smtsched_os::policy::Naive);
    smtsched_os::sim::OsSim::new(m, &super::InputsOnly, &set, naive, sim_config(e, o)?)
        .map_err(RunError::Bad)?;
    Ok(())
}

/// The simulation settings of experiment `e` under `o` (its estimator aside).
pub(crate) fn sim_config(e: &Experiment, o: &RunOptions) -> Result<SimConfig, RunError> {
    let mut cfg = SimConfig::new(e.baseline, o.duration_s.unwrap_or(e.duration_s), o.seed);
    cfg.cpus = e
        .cpus
        .as_deref()
        .map(CpuSet::parse)
        .transpose()
        .map_err(|err| RunError::Bad(format!("{}: cpus: {err}", e.name)))?;
    Ok(cfg)
}

/// `repeat` repetitions of `set` under `policies` from `cfg.seed` on, each a whole replication
/// (its oracle's samples and its scheduler from its own seed). `step` is called
/// `repeat × (1 + policies)` times: once as each replication's samples are ready, once per run.
pub(crate) fn replications(
    m: &MachineModel,
    set: &TaskSetSpec,
    policies: &[PolicyName],
    repeat: u32,
    cfg: &SimConfig,
    step: &(dyn Fn() + Sync),
) -> Result<Vec<PolicyRuns>, RunError> {
    simulate_replicated(m, set, KernelBuild::Smp, policies, repeat, cfg, step)
        .map_err(RunError::Bad)
}

/// The policies' runs: the starting repetitions, then more (doubling) while a claim is
/// inconclusive, up to the cap.
fn runs_until_decided(
    e: &Experiment,
    m: &MachineModel,
    cfg: &SimConfig,
    o: &RunOptions,
    p: &dyn Progress,
) -> Result<Vec<PolicyRuns>, RunError> {
    let set = e.task_set();
    let reps = repetitions(e, o)?;
    let sim = |cfg: &SimConfig, n: u32| {
        let last = cfg.seed + n as u64 - 1;
        p.begin(
            &format!("{} seeds {}-{last}", e.name, cfg.seed),
            n as u64 * (1 + e.policies.len() as u64),
            "steps",
        );
        let runs = replications(m, &set, &e.policies, n, cfg, &|| p.step());
        p.end();
        runs
    };
    let mut results = sim(cfg, reps)?;
    let mut done = reps;
    let cap = super::cap(e, o).max(reps);
    // Only an interval that straddles its bound can narrow with more seeds: a value missing
    // from a repetition (a task that never completed a run) stays missing.
    let undecided = |r: &[PolicyRuns]| {
        e.paper.claims.iter().any(|c| {
            let j = judge(c, r);
            j.verdict == Verdict::Inconclusive && j.difference.is_some()
        })
    };
    while done < cap && undecided(&results) {
        let more = done.min(cap - done);
        p.note(&more_repetitions(&e.name, done, more));
        let next = SimConfig {
            seed: cfg.seed + done as u64,
            ..cfg.clone()
        };
        for (r, x) in results.iter_mut().zip(sim(&next, more)?) {
            r.runs.extend(x.runs);
        }
        done += more;
    }
    Ok(results)
}

/// Priority adherence: each task's PR relative to the highest-priority task, beside the ratio
/// of their time slices, per policy (mean over the runs).
fn priority_table(results: &[PolicyRuns]) -> String {
    let mut t = Table::new(
        ["task".to_string(), "slice ratio".to_string()]
            .into_iter()
            .chain(results.iter().map(|r| r.policy.clone())),
    );
    // Per policy, per run: (task, PR relative to the top task, slice ratio).
    let ratios: Vec<Vec<Vec<_>>> = results
        .iter()
        .map(|r| r.runs.iter().map(|run| run.priority_ratios()).collect())
        .collect();
    for (i, (name, _, want)) in ratios[0][0].iter().enumerate() {
        t.row(
            [name.clone(), format!("{want:.2}")]
                .into_iter()
                .chain(ratios.iter().map(|runs| {
                    let v: Vec<f64> = runs.iter().filter_map(|run| run[i].1).collect();
                    if v.is_empty() {
                        "-".into()
                    } else {
                        format!("{:.2}", v.iter().sum::<f64>() / v.len() as f64)
                    }
                })),
        );
    }
    format!(
        "\npriority adherence: PR relative to the highest-priority task, beside the time-slice ratio\n{}",
        t.render()
    )
}

/// System speedup per policy, mean and 95% interval over the repetitions.
fn speedup_figure(e: &Experiment, results: &[PolicyRuns]) -> Option<(String, String)> {
    let speedups: Vec<(String, MeanInterval)> = results
        .iter()
        .filter_map(|r| {
            let v = metric_values(r, PolicyMetric::SystemSpeedup)?;
            Some((r.policy.clone(), MeanInterval::of(&v)?))
        })
        .collect();
    let svg = smtsched_report::bars::interval_svg(
        &speedups,
        &format!("{}: system speedup per policy (mean, 95% interval)", e.name),
        "system speedup",
    )
    .ok()?;
    Some(("System speedup per policy".into(), svg))
}

/// `[holds] says (plan - naive: 0.031 [0.012, 0.050] n=5)`.
fn judgement_line(says: &str, j: &Judgement) -> String {
    let interval = j
        .difference
        .map_or("a value is missing".into(), |i| interval_text(&i));
    format!(
        "[{}] {says} ({}: {interval})",
        j.verdict.label(),
        j.compared
    )
}
