//! Experiments over co-run matrices: the thesis §3.3 pairs (every pair under each placement) and
//! the §3.5 asymmetry study (every pairing of groups of four). Each claim is a range for a
//! summary of the matrices, judged over seeds.

use super::seeds::{metric_name, over_seeds, range_claims, SeedRun};
use super::{paper_text, KindOutcome, Progress, RunError, RunOptions};
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
    let claims = range_claims(&e.pairs.claims, |c| {
        let under = match c.over {
            Some(over) => format!("{} / {over}", c.placement),
            None => c.placement.to_string(),
        };
        let of = format!("{} ({under})", metric_name(&c.metric));
        (c.says.as_str(), c.within, of)
    });
    let one = |seed: u64| -> Result<SeedRun, RunError> {
        p.begin(
            &format!("{} seed {seed}", e.name),
            (runs_per_placement * e.pairs.placements.len()) as u64,
            "runs",
        );
        let r = pairs::run(m, &e.workloads, &e.pairs, seed, &|| p.step()).map_err(RunError::Bad)?;
        p.end();
        let mut text = format!(
            "{n} workloads on {}, seed {seed}, {} + {} instructions per window\n\n",
            m.name, e.pairs.warmup_instructions, e.pairs.measure_instructions
        );
        text.push_str(&pairs::render(&r));
        text.push_str(&paper_text(&e.paper));
        let mut figures = r
            .iter()
            .map(|x| {
                let caption = format!(
                    "Performance ratio of every pair, {} placement, seed {seed} (the layout of thesis Fig. 3.3)",
                    x.placement
                );
                smtsched_report::matrix::heatmap_svg(&x.matrix).map(|svg| (caption, svg))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(RunError::Bad)?;
        // Figures are for the reader; one that cannot be drawn (no finite value) is left out.
        figures.extend(speedup_boxes(e, &r, seed).ok());
        figures.extend(speedup_cdf(e, &r, seed).ok());
        Ok(SeedRun {
            claim_values: e
                .pairs
                .claims
                .iter()
                .map(|c| pairs::claim_value(&r, c))
                .collect(),
            json: serde_json::json!({"results": r, "paper": e.paper}),
            text,
            figures,
        })
    };
    over_seeds(e, o, p, &claims, &one)
}

/// Each subject's system speedups of seed `seed` as box plots, a box per placement side by side
/// (thesis Figs. 3.2 and 3.6).
fn speedup_boxes(
    e: &Experiment,
    r: &[pairs::PlacementResult],
    seed: u64,
) -> Result<(String, String), String> {
    use smtsched_report::boxes::{boxplot_svg, BoxGroup};
    use smtsched_report::matrix::{short_name, speedups_by_subject};
    let first = r.first().ok_or("no placement")?;
    let by_subject: Vec<Vec<Vec<f64>>> = r.iter().map(|x| speedups_by_subject(&x.matrix)).collect();
    let groups: Vec<BoxGroup> = first
        .matrix
        .workloads
        .iter()
        .enumerate()
        .map(|(i, w)| BoxGroup {
            name: short_name(w).to_string(),
            samples: by_subject.iter().map(|s| s[i].clone()).collect(),
        })
        .collect();
    let placements: Vec<String> = r.iter().map(|x| x.placement.to_string()).collect();
    let title = format!("{}: system speedup of each subject's pairs", e.name);
    let svg = boxplot_svg(&groups, &placements, &title, "system speedup")?;
    let caption = format!(
        "System speedup of each subject with every background, per placement, seed {seed}: box \
         from the first to the third quartile, median across it, whiskers to the most extreme \
         pair within 1.5 IQR, crosses beyond (thesis Figs. 3.2 and 3.6)"
    );
    Ok((caption, svg))
}

/// The distribution of seed `seed`'s pairs' system speedups per placement (thesis Fig. 3.4).
fn speedup_cdf(
    e: &Experiment,
    r: &[pairs::PlacementResult],
    seed: u64,
) -> Result<(String, String), String> {
    use smtsched_report::matrix::system_speedups;
    let samples: Vec<(String, Vec<f64>)> = r
        .iter()
        .map(|x| (x.placement.to_string(), system_speedups(&x.matrix)))
        .collect();
    let title = format!("{}: distribution of the pairs' system speedups", e.name);
    let svg = smtsched_report::lines::cdf_svg(
        &samples,
        &title,
        "system speedup",
        "share of pairs with at most x",
    )?;
    let caption = format!(
        "Share of the pairs whose system speedup is at most x, per placement, seed {seed} \
         (thesis Fig. 3.4)"
    );
    Ok((caption, svg))
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
    let claims = range_claims(&e.asymmetry.claims, |c| {
        (c.says.as_str(), c.within, metric_name(&c.metric))
    });
    let one = |seed: u64| -> Result<SeedRun, RunError> {
        let proto = Protocol {
            seed,
            warmup_instructions: 1_000_000,
            measure_instructions: 2_000_000,
            quantum_cycles: 1 << 40,
            timeshare_rounds: 1,
            refill_only: false,
        };
        // Every group of four, in its three allocations.
        let n = profiles.len() as u64;
        let groups = n * n.saturating_sub(1) * n.saturating_sub(2) * n.saturating_sub(3) / 24;
        p.begin(&format!("{} seed {seed}", e.name), 3 * groups, "runs");
        let r = run_asymmetry(m, &profiles, &proto, &|| p.step());
        p.end();
        let r = r.map_err(RunError::Bad)?;
        Ok(SeedRun {
            text: asymmetry_text(e, m, &r),
            claim_values: e
                .asymmetry
                .claims
                .iter()
                .map(|c| Some(r.metric(c.metric)))
                .collect(),
            json: serde_json::json!({"result": r, "paper": e.paper}),
            figures: ratio_cdf(e, &r, seed).ok().into_iter().collect(),
        })
    };
    over_seeds(e, o, p, &claims, &one)
}

/// The distribution of the best allocation's lead over the worst (thesis Fig. 3.19).
fn ratio_cdf(
    e: &Experiment,
    r: &crate::experiment::AsymmetryResult,
    seed: u64,
) -> Result<(String, String), String> {
    let ratios: Vec<f64> = r.groups.iter().map(|g| g.best_over_worst).collect();
    let svg = smtsched_report::lines::cdf_svg(
        &[("groups of four".to_string(), ratios)],
        &format!("{}: best allocation over worst", e.name),
        "system speedup of the best allocation / of the worst",
        "share of groups at most that",
    )?;
    let caption = format!(
        "Share of the groups of four whose best allocation beats the worst by at most x, seed \
         {seed} (thesis Fig. 3.19)"
    );
    Ok((caption, svg))
}

fn asymmetry_text(
    e: &Experiment,
    m: &MachineModel,
    r: &crate::experiment::AsymmetryResult,
) -> String {
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
    text
}
