//! `reproduce`: the seed papers' experiments, declared in `experiments/*.toml`.

use super::run::{estimator, oracle};
use super::{counting_bar, json_out, machine, out, parse_policies, write_file};
use crate::args::ReproduceArgs;
use crate::errors::bad_input;
use anyhow::Result;
use smtsched_experiments::configurations::{self, Common};
use smtsched_experiments::experiment::Experiment;
use smtsched_experiments::experiment::{
    judge, load_experiment, metric, run_asymmetry, ExperimentKind, Judgement, EXPERIMENTS,
};
use smtsched_model::Override;
use smtsched_model::{load_workload, CpuSet, WorkloadProfile};
use smtsched_os::runs::{policy_table, simulate, task_table, PolicyRuns};
use smtsched_os::sim::SimConfig;
use smtsched_report::verdict::Verdict;
use smtsched_report::Table;
use smtsched_uarch::Protocol;

pub fn run(a: ReproduceArgs) -> Result<()> {
    if a.list || a.name.is_none() {
        let mut t = Table::new(["experiment", "title"]);
        for p in EXPERIMENTS {
            let e = load_experiment(p.name)?;
            t.row([e.name, e.title]);
        }
        return out(&t.render());
    }
    let name = a.name.as_deref().expect("checked above");
    if name == "all" {
        return super::reproduce_all::run(&a);
    }
    let e = load_experiment(name)?;
    let o = run_one(e, &a)?;
    if a.json {
        return json_out(&o.json);
    }
    if let Some(p) = &a.output {
        write_file(p, o.text.as_bytes())?;
    }
    out(&o.text)
}

/// One experiment's result: the report printed, its JSON, each claim's verdict, figures.
pub struct Outcome {
    pub name: String,
    pub machine: String,
    pub title: String,
    pub source: String,
    pub text: String,
    pub json: serde_json::Value,
    pub claims: Vec<ClaimOutcome>,
    /// (caption, SVG).
    pub figures: Vec<(String, String)>,
    pub seconds: f64,
}

/// A claim as a report shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ClaimOutcome {
    pub says: String,
    pub verdict: Verdict,
    /// The interval or value it rests on, as text.
    pub evidence: String,
}

/// Runs experiment `e` with `a`'s overrides.
pub fn run_one(mut e: Experiment, a: &ReproduceArgs) -> Result<Outcome> {
    let started = std::time::Instant::now();
    let mut claims: Vec<ClaimOutcome> = Vec::new();
    let mut figures: Vec<(String, String)> = Vec::new();
    let json: serde_json::Value;
    if let Some(b) = &a.baseline {
        e.baseline = b
            .parse()
            .map_err(|err: String| bad_input(format!("--baseline: {err}")))?;
    }
    if let Some(p) = &a.policies {
        e.policies = parse_policies(p)?;
    }
    let m = machine(&e.machine, &e.set)?;
    let mut report = String::new();
    report.push_str(&format!(
        "{}\n{}\nsource: {}\n\n",
        e.name, e.title, e.source
    ));
    match e.kind {
        ExperimentKind::Policies => {
            let set = e.task_set();
            let mut cfg = SimConfig::new(e.baseline, a.duration.unwrap_or(e.duration_s), a.seed);
            cfg.cpus = e
                .cpus
                .as_deref()
                .map(CpuSet::parse)
                .transpose()
                .map_err(|err| bad_input(format!("{}: cpus: {err}", e.name)))?;
            cfg.estimator = estimator(a.model.as_deref().unwrap_or(&e.estimator))?;
            let reps = a.repetitions.unwrap_or(e.repetitions);
            if reps == 0 {
                return Err(bad_input("--repetitions 0: at least one is needed"));
            }
            let orc = oracle(
                "simulated",
                &m,
                &set,
                a.seed,
                smtsched_model::KernelBuild::Smp,
            )?;
            let mut results =
                simulate(&m, orc.as_ref(), &set, &e.policies, reps, &cfg).map_err(bad_input)?;
            let mut done = reps;
            let cap = a.max_repetitions.max(reps);
            let undecided = |r: &[PolicyRuns]| {
                e.paper
                    .claims
                    .iter()
                    .any(|c| judge(c, r).verdict == Verdict::Inconclusive)
            };
            while done < cap && undecided(&results) {
                let more = done.min(cap - done);
                eprintln!(
                    "{}: a claim is inconclusive after {done} repetitions; running {more} more",
                    e.name
                );
                let mut next = cfg.clone();
                next.seed = cfg.seed + done as u64;
                let extra = simulate(&m, orc.as_ref(), &set, &e.policies, more, &next)
                    .map_err(bad_input)?;
                for (r, x) in results.iter_mut().zip(extra) {
                    r.runs.extend(x.runs);
                }
                done += more;
            }
            let reps = done;
            {
                let v: Vec<_> = results
                    .iter()
                    .map(|p| serde_json::json!({"policy": p.policy, "summaries": p.runs.iter().map(|r| r.summary()).collect::<Vec<_>>(), "runs": if a.json { serde_json::to_value(&p.runs).unwrap_or_default() } else { serde_json::Value::Null }}))
                    .collect();
                let judged: Vec<_> = e
                    .paper
                    .claims
                    .iter()
                    .map(|c| serde_json::json!({"says": c.says, "judgement": judge(c, &results)}))
                    .collect();
                json = serde_json::json!({"experiment": e.name, "results": v, "paper": e.paper, "claims": judged});
            }
            for c in &e.paper.claims {
                let j = judge(c, &results);
                claims.push(ClaimOutcome {
                    says: c.says.clone(),
                    verdict: j.verdict,
                    evidence: judgement_line(&c.says, &j),
                });
            }
            let speedups: Vec<(String, smtsched_report::verdict::MeanInterval)> = results
                .iter()
                .filter_map(|r| {
                    let v = smtsched_experiments::experiment::metric_values(
                        r,
                        smtsched_experiments::experiment::PolicyMetric::SystemSpeedup,
                    )?;
                    Some((
                        r.policy.clone(),
                        smtsched_report::verdict::MeanInterval::of(&v)?,
                    ))
                })
                .collect();
            if let Ok(svg) = smtsched_report::bars::interval_svg(
                &speedups,
                &format!("{}: system speedup per policy (mean, 95% interval)", e.name),
                "system speedup",
            ) {
                figures.push(("System speedup per policy".into(), svg));
            }
            report.push_str(&format!(
                "{} tasks on {} (CPUs {}), {:?} baseline, {} s x {} repetitions, oracle {}\n\n",
                set.tasks.len(),
                m.name,
                e.cpus.as_deref().unwrap_or("all"),
                e.baseline,
                cfg.duration_s,
                reps,
                orc.describe()
            ));
            report.push_str(&policy_table(&results));
            report.push('\n');
            report.push_str(&task_table(&results));
            if e.tasks.iter().any(|t| t.nice != 0) {
                report.push_str("\npriority adherence: PR relative to the highest-priority task, beside the time-slice ratio\n");
                let mut t = Table::new(
                    std::iter::once("task".to_string())
                        .chain(std::iter::once("slice ratio".to_string()))
                        .chain(results.iter().map(|r| r.policy.clone())),
                );
                // Per policy, per run: (task, PR relative to the top task, slice ratio).
                let ratios: Vec<Vec<Vec<_>>> = results
                    .iter()
                    .map(|r| r.runs.iter().map(|run| run.priority_ratios()).collect())
                    .collect();
                for (i, (name, _, want)) in ratios[0][0].iter().enumerate() {
                    t.row([name.clone(), format!("{want:.2}")].into_iter().chain(
                        ratios.iter().map(|runs| {
                            let v: Vec<f64> = runs.iter().filter_map(|run| run[i].1).collect();
                            if v.is_empty() {
                                "-".into()
                            } else {
                                format!("{:.2}", v.iter().sum::<f64>() / v.len() as f64)
                            }
                        }),
                    ));
                }
                report.push_str(&t.render());
            }
            report.push_str(&format!("\nThe paper ({}):\n", e.paper.figure));
            for f in &e.paper.findings {
                report.push_str(&format!("  - {f}\n"));
            }
            for (k, v) in &e.paper.values {
                let ours = k.split_once('.').and_then(|(p, met)| {
                    results
                        .iter()
                        .find(|r| r.policy == p)
                        .and_then(|r| metric(r, met.parse().ok()?))
                });
                report.push_str(&format!(
                    "  {k}: paper {v:.3}, here {}\n",
                    ours.map_or("-".into(), |o| format!("{o:.3}"))
                ));
            }
            if !e.paper.claims.is_empty() {
                report
                    .push_str("\nClaims (95% intervals of the difference over the repetitions):\n");
                for c in &e.paper.claims {
                    report.push_str(&format!(
                        "  {}\n",
                        judgement_line(&c.says, &judge(c, &results))
                    ));
                }
            }
        }
        ExperimentKind::Asymmetry => {
            let profiles: Vec<WorkloadProfile> = e
                .workloads
                .iter()
                .map(|w| load_workload(w, &[]))
                .collect::<Result<_, _>>()?;
            let proto = Protocol {
                seed: a.seed,
                warmup_instructions: 1_000_000,
                measure_instructions: 2_000_000,
                quantum_cycles: 1 << 40,
                timeshare_rounds: 1,
            };
            let r = run_asymmetry(&m, &profiles, &proto, &|| {}).map_err(bad_input)?;
            let mut t = Table::new(["group", "{AB|CD}", "{AC|BD}", "{AD|BC}", "best/worst"]);
            let mut groups = r.groups.clone();
            groups.sort_by(|x, y| y.best_over_worst.total_cmp(&x.best_over_worst));
            for g in groups.iter().take(10) {
                t.row([
                    g.workloads
                        .iter()
                        .map(|w| w.trim_end_matches("-like"))
                        .collect::<Vec<_>>()
                        .join(" "),
                    format!("{:.3}", g.speedups[0]),
                    format!("{:.3}", g.speedups[1]),
                    format!("{:.3}", g.speedups[2]),
                    format!("{:.3}", g.best_over_worst),
                ]);
            }
            report.push_str(&format!(
                "{} groups of four on {}; the ten with the largest best/worst ratio:\n\n",
                r.groups.len(),
                m.name
            ));
            report.push_str(&t.render());
            report.push_str(&format!(
                "\nbest/worst: max {:.3}, mean {:.3}; more than 10% in {:.0}% of groups\n",
                r.max_ratio,
                r.mean_ratio,
                100.0 * r.share_over_10_percent
            ));
            report.push_str(&format!("\nThe paper ({}):\n", e.paper.figure));
            for f in &e.paper.findings {
                report.push_str(&format!("  - {f}\n"));
            }
            for (k, v) in &e.paper.values {
                report.push_str(&format!("  {k}: paper {v:.3}\n"));
            }
            if !e.asymmetry.claims.is_empty() {
                report.push_str("\nClaims checked against this run (one seed):\n");
            }
            for c in &e.asymmetry.claims {
                let v = r.metric(c.metric);
                let verdict = if v >= c.within[0] && v <= c.within[1] {
                    Verdict::Holds
                } else {
                    Verdict::DoesNotHold
                };
                let evidence = format!(
                    "[{}] {} (one seed: {v:.3} in [{}, {}])",
                    verdict.label(),
                    c.says,
                    c.within[0],
                    c.within[1]
                );
                report.push_str(&format!("  {evidence}\n"));
                claims.push(ClaimOutcome {
                    says: c.says.clone(),
                    verdict,
                    evidence,
                });
            }
            json = serde_json::json!({"experiment": e.name, "result": r, "paper": e.paper, "claims": claims});
        }
        ExperimentKind::Pairs => {
            let pairs = e.workloads.len() * (e.workloads.len() + 1) / 2 + 2 * e.workloads.len();
            let bar = counting_bar((pairs * e.pairs.placements.len()) as u64, "runs")?;
            bar.set_message(e.name.clone());
            let r = smtsched_experiments::pairs::run(&m, &e.workloads, &e.pairs, a.seed, &|| {
                bar.inc(1)
            })
            .map_err(bad_input)?;
            bar.finish_and_clear();
            {
                let judged: Vec<_> = e
                    .pairs
                    .claims
                    .iter()
                    .map(|c| serde_json::json!({"says": c.says, "value": smtsched_experiments::pairs::claim_value(&r, c)}))
                    .collect();
                json = serde_json::json!({"experiment": e.name, "results": r, "paper": e.paper, "claims": judged});
            }
            // One seed's matrices: a value, not an interval.
            for c in &e.pairs.claims {
                let v = smtsched_experiments::pairs::claim_value(&r, c);
                let verdict = match v {
                    Some(x) if x >= c.within[0] && x <= c.within[1] => Verdict::Holds,
                    Some(_) => Verdict::DoesNotHold,
                    None => Verdict::Inconclusive,
                };
                claims.push(ClaimOutcome {
                    says: c.says.clone(),
                    verdict,
                    evidence: format!(
                        "[{}] {} (one seed: {} in [{}, {}])",
                        verdict.label(),
                        c.says,
                        v.map_or("-".into(), |x| format!("{x:.3}")),
                        c.within[0],
                        c.within[1]
                    ),
                });
            }
            report.push_str(&format!(
                "{} workloads on {}, seed {}, {} + {} instructions per window\n\n",
                e.workloads.len(),
                m.name,
                a.seed,
                e.pairs.warmup_instructions,
                e.pairs.measure_instructions
            ));
            report.push_str(&smtsched_experiments::pairs::render(&r, &e.pairs.claims));
            report.push_str(&format!("\nThe paper ({}):\n", e.paper.figure));
            for f in &e.paper.findings {
                report.push_str(&format!("  - {f}\n"));
            }
        }
        ExperimentKind::Configurations => {
            let (text, value, judged) = configurations(&e, a)?;
            json = value;
            claims = judged;
            report.push_str(&text);
        }
        ExperimentKind::FedorovaCpi
        | ExperimentKind::FedorovaL1
        | ExperimentKind::FedorovaL2
        | ExperimentKind::FedorovaBalanceSet => {
            let text = smtsched_experiments::fedorova::reproduce(
                &e,
                a.seed,
                a.json,
                &super::cachemodel::progress,
            )?;
            if a.json {
                json = serde_json::from_str(&text)?;
            } else {
                json = serde_json::json!({"experiment": e.name, "paper": e.paper});
                report.push_str(&text);
            }
        }
    }
    Ok(Outcome {
        name: e.name.clone(),
        machine: e.machine.clone(),
        title: e.title.clone(),
        source: e.source.clone(),
        text: report,
        json,
        claims,
        figures,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// A configurations experiment: the report text, its JSON, and its claims' verdicts.
fn configurations(
    e: &Experiment,
    a: &ReproduceArgs,
) -> Result<(String, serde_json::Value, Vec<ClaimOutcome>)> {
    let set = e.task_set();
    let spec = &e.configurations;
    let overrides: Vec<Override> = e
        .set
        .iter()
        .map(|s| s.parse())
        .collect::<Result<_, _>>()
        .map_err(|err| bad_input(format!("{}: set: {err}", e.name)))?;
    let common = Common {
        machine: &e.machine,
        overrides: &overrides,
        baseline: e.baseline,
        duration_s: a.duration.unwrap_or(e.duration_s),
        seed: a.seed,
        repetitions: a.repetitions.unwrap_or(e.repetitions),
    };
    if common.repetitions == 0 {
        return Err(bad_input("--repetitions 0: at least one is needed"));
    }
    if !(common.duration_s > spec.stagger_s && common.duration_s.is_finite()) {
        return Err(bad_input(format!(
            "--duration {}: must be longer than the experiment's stagger_s {}",
            common.duration_s, spec.stagger_s
        )));
    }
    let cells = spec.configs.len() * spec.variants.len().max(1);
    let run = |c: &Common| -> Result<configurations::ConfigResults> {
        let bar = counting_bar(cells as u64, "configurations")?;
        bar.set_message(format!("{} seeds {}..", e.name, c.seed));
        let r = configurations::run(spec, &set, c, &|| bar.inc(1)).map_err(bad_input)?;
        bar.finish_and_clear();
        Ok(r)
    };
    let mut r = run(&common)?;
    let cap = a.max_repetitions.max(common.repetitions) as usize;
    let undecided = |r: &configurations::ConfigResults| {
        spec.claims
            .iter()
            .any(|c| r.judge(c).verdict == Verdict::Inconclusive)
    };
    while r.repetitions() < cap && undecided(&r) {
        let done = r.repetitions();
        let more = done.min(cap - done);
        eprintln!(
            "{}: a claim is inconclusive after {done} repetitions; running {more} more",
            e.name
        );
        r.extend(run(&Common {
            seed: common.seed + done as u64,
            repetitions: more as u32,
            ..common
        })?);
    }
    let repetitions = r.repetitions();
    let judged: Vec<_> = spec
        .claims
        .iter()
        .map(|c| serde_json::json!({"says": c.says, "judgement": r.judge(c)}))
        .collect();
    let json =
        serde_json::json!({"experiment": e.name, "result": r, "paper": e.paper, "claims": judged});
    let claims = spec
        .claims
        .iter()
        .map(|c| {
            let j = r.judge(c);
            ClaimOutcome {
                says: c.says.clone(),
                verdict: j.verdict,
                evidence: configurations::claim_line(c, &j),
            }
        })
        .collect();
    let mut text = format!(
        "{} on {} ({:?} baseline), {} s simulated ({} s stagger) x {} repetition(s), seed {}\n\n",
        set.tasks[0].display_name(),
        e.machine,
        e.baseline,
        common.duration_s,
        spec.stagger_s,
        repetitions,
        common.seed
    );
    text.push_str(&configurations::render(&r, &spec.claims));
    text.push_str(&format!("\nThe paper ({}):\n", e.paper.figure));
    for f in &e.paper.findings {
        text.push_str(&format!("  - {f}\n"));
    }
    Ok((text, json, claims))
}

/// `[holds] says (plan - naive: 0.031 [0.012, 0.050] n=5)`.
fn judgement_line(says: &str, j: &Judgement) -> String {
    let interval = j.difference.map_or("a value is missing".into(), |i| {
        configurations::interval_text(&i)
    });
    format!(
        "[{}] {says} ({}: {interval})",
        j.verdict.label(),
        j.compared
    )
}
