//! Experiments over co-run matrices of one seed: the thesis §3.3 pairs (every pair under each
//! placement) and the §3.5 asymmetry study (every pairing of groups of four). A claim is one
//! seed's value inside a range.

use super::{paper_text, range_claim, ClaimOutcome, KindOutcome, Progress, RunError, RunOptions};
use crate::experiment::{run_asymmetry, Experiment};
use crate::pairs;
use smtsched_model::{load_workload, MachineModel, WorkloadProfile};
use smtsched_report::Table;
use smtsched_uarch::Protocol;

pub(super) fn pairs(
    e: &Experiment,
    m: &MachineModel,
    o: &RunOptions,
    p: &dyn Progress,
) -> Result<KindOutcome, RunError> {
    let n = e.workloads.len();
    let runs_per_placement = n * (n + 1) / 2 + 2 * n;
    p.begin(
        &e.name,
        (runs_per_placement * e.pairs.placements.len()) as u64,
        "runs",
    );
    let r = pairs::run(m, &e.workloads, &e.pairs, o.seed, &|| p.step()).map_err(RunError::Bad)?;
    p.end();
    let values: Vec<Option<f64>> = e
        .pairs
        .claims
        .iter()
        .map(|c| pairs::claim_value(&r, c))
        .collect();
    let claims = e
        .pairs
        .claims
        .iter()
        .zip(&values)
        .map(|(c, &v)| range_claim(&c.says, v, c.within))
        .collect();
    let json = serde_json::json!({
        "experiment": e.name,
        "results": r,
        "paper": e.paper,
        "claims": e.pairs.claims.iter().zip(&values)
            .map(|(c, v)| serde_json::json!({"says": c.says, "value": v}))
            .collect::<Vec<_>>(),
    });
    let mut text = format!(
        "{n} workloads on {}, seed {}, {} + {} instructions per window\n\n",
        m.name, o.seed, e.pairs.warmup_instructions, e.pairs.measure_instructions
    );
    text.push_str(&pairs::render(&r, &e.pairs.claims));
    text.push_str(&paper_text(&e.paper));
    Ok(KindOutcome {
        text,
        json,
        claims,
        figures: Vec::new(),
    })
}

pub(super) fn asymmetry(
    e: &Experiment,
    m: &MachineModel,
    o: &RunOptions,
    p: &dyn Progress,
) -> Result<KindOutcome, RunError> {
    let profiles: Vec<WorkloadProfile> = e
        .workloads
        .iter()
        .map(|w| load_workload(w, &[]))
        .collect::<Result<_, _>>()?;
    let proto = Protocol {
        seed: o.seed,
        warmup_instructions: 1_000_000,
        measure_instructions: 2_000_000,
        quantum_cycles: 1 << 40,
        timeshare_rounds: 1,
    };
    p.status(&format!("{}: every group of four on {}", e.name, m.name));
    let r = run_asymmetry(m, &profiles, &proto, &|| {}).map_err(RunError::Bad)?;
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
    let mut text = format!(
        "{} groups of four on {}; the ten with the largest best/worst ratio:\n\n{}",
        r.groups.len(),
        m.name,
        t.render()
    );
    text.push_str(&format!(
        "\nbest/worst: max {:.3}, mean {:.3}; more than 10% in {:.0}% of groups\n",
        r.max_ratio,
        r.mean_ratio,
        100.0 * r.share_over_10_percent
    ));
    text.push_str(&paper_text(&e.paper));
    for (k, v) in &e.paper.values {
        text.push_str(&format!("  {k}: paper {v:.3}\n"));
    }
    let claims: Vec<ClaimOutcome> = e
        .asymmetry
        .claims
        .iter()
        .map(|c| range_claim(&c.says, Some(r.metric(c.metric)), c.within))
        .collect();
    if !claims.is_empty() {
        text.push_str("\nClaims checked against this run (one seed):\n");
        for c in &claims {
            text.push_str(&format!("  {}\n", c.evidence));
        }
    }
    let json =
        serde_json::json!({"experiment": e.name, "result": r, "paper": e.paper, "claims": claims});
    Ok(KindOutcome {
        text,
        json,
        claims,
        figures: Vec::new(),
    })
}
