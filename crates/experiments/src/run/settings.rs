//! A configurations experiment: one task set in several configurations of machine and kernel,
//! repeated while a claim is inconclusive, each claim judged on per-seed ratios.

use super::{
    more_repetitions, paper_text, repetitions, ClaimOutcome, ClaimQuantity, KindOutcome, Progress,
    RunError, RunOptions,
};
use crate::configurations::{self, claim_line, Common, ConfigResults};
use crate::experiment::Experiment;
use smtsched_model::Override;
use smtsched_report::verdict::Verdict;

pub(super) fn run(
    e: &Experiment,
    o: &RunOptions,
    p: &dyn Progress,
) -> Result<KindOutcome, RunError> {
    let set = e.task_set();
    let spec = &e.configurations;
    let overrides: Vec<Override> = e.set.iter().map(|s| s.parse()).collect::<Result<_, _>>()?;
    let common = common(e, o, &overrides)?;
    let cells = spec.configs.len() * spec.variants.len().max(1);
    let run = |c: &Common| -> Result<ConfigResults, RunError> {
        p.begin(
            &format!("{} seeds {}..", e.name, c.seed),
            cells as u64,
            "configurations",
        );
        let r = configurations::run(spec, &set, c, &|| p.step()).map_err(RunError::Bad)?;
        p.end();
        Ok(r)
    };
    let mut r = run(&common)?;
    let cap = super::cap(e, o).max(common.repetitions) as usize;
    // Only intervals can narrow with more seeds: a value missing from a repetition stays
    // missing.
    let undecided = |r: &ConfigResults| {
        spec.claims.iter().any(|c| {
            let j = r.judge(c);
            j.verdict == Verdict::Inconclusive && j.rows.iter().all(|(_, i)| i.is_some())
        })
    };
    while r.repetitions() < cap && undecided(&r) {
        let done = r.repetitions();
        let more = done.min(cap - done);
        p.note(&more_repetitions(&e.name, done as u32, more as u32));
        r.extend(run(&Common {
            seed: common.seed + done as u64,
            repetitions: more as u32,
            ..common
        })?);
    }
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
                evidence: claim_line(c, &j),
                quantities: j
                    .rows
                    .iter()
                    .map(|(row, interval)| ClaimQuantity {
                        of: ratio_of(c, row),
                        interval: *interval,
                    })
                    .collect(),
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
        r.repetitions(),
        common.seed
    );
    text.push_str(&configurations::render(&r, &spec.claims));
    text.push_str(&paper_text(&e.paper));
    Ok(KindOutcome {
        text,
        json,
        claims,
        figures: Vec::new(),
    })
}

/// What a configurations claim bounds in `row`: `response_time plain / hyperthreaded`, with
/// ` in ROW` and ` over ROW` where it names rows.
/// What the cells of `e` share under `o`, checked.
fn common<'a>(
    e: &'a Experiment,
    o: &RunOptions,
    overrides: &'a [Override],
) -> Result<Common<'a>, RunError> {
    let common = Common {
        machine: &e.machine,
        overrides,
        baseline: e.baseline,
        duration_s: o.duration_s.unwrap_or(e.duration_s),
        seed: o.seed,
        repetitions: repetitions(e, o)?,
    };
    if !(common.duration_s > e.configurations.stagger_s && common.duration_s.is_finite()) {
        return Err(RunError::Bad(format!(
            "--duration {}: must be longer than the experiment's stagger_s {}",
            common.duration_s, e.configurations.stagger_s
        )));
    }
    Ok(common)
}

/// What a run of configurations experiment `e` would find wrong only when it reached a cell
/// (see [`configurations::check`]).
pub(super) fn check(e: &Experiment, o: &RunOptions) -> Result<(), RunError> {
    let overrides: Vec<Override> = e.set.iter().map(|s| s.parse()).collect::<Result<_, _>>()?;
    configurations::check(&e.configurations, &e.task_set(), &common(e, o, &overrides)?)
        .map_err(RunError::Bad)
}

fn ratio_of(c: &configurations::RatioClaim, row: &str) -> String {
    let mut of = format!("{} {}", super::metric_name(&c.metric), c.ratio.join(" / "));
    if !row.is_empty() {
        of += &format!(" in {row}");
    }
    if let Some(over) = &c.over_row {
        of += &format!(" over {over}");
    }
    of
}
