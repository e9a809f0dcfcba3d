//! Range claims judged over seeds, for the kinds whose result is one seed's measurement (pairs,
//! asymmetry, Fedorova, phases, estimator): the experiment runs at seeds seed, seed+1, …, each
//! claim's value is taken at every seed, and the claim holds when the 95% interval of the mean
//! lies inside its range, does not hold when it lies outside, and is inconclusive otherwise —
//! so more seeds run (doubling) until every claim is decided or the cap is reached.

use super::{
    cap, more_repetitions, repetitions, ClaimOutcome, ClaimQuantity, KindOutcome, Progress,
    RunError, RunOptions,
};
use crate::configurations::{interval_text, tie_note};
use crate::experiment::Experiment;
use smtsched_report::verdict::{MeanInterval, Verdict};

/// What one seed's run reports.
pub(super) struct SeedRun {
    pub text: String,
    pub json: serde_json::Value,
    pub figures: Vec<(String, String)>,
    /// Each claim's value at this seed, in the order of the claims (`None`: not measured).
    pub claim_values: Vec<Option<f64>>,
}

/// A metric's name as experiment files spell it.
pub(super) fn metric_name<M: serde::Serialize>(metric: &M) -> String {
    match serde_json::to_value(metric) {
        Ok(serde_json::Value::String(name)) => name,
        other => format!("{other:?}"),
    }
}

/// A claim as the range kinds state it.
pub(super) struct RangeClaim<'a> {
    pub says: &'a str,
    pub within: [f64; 2],
    /// The quantity it bounds (its metric, and for a pairs claim the placements).
    pub of: String,
}

/// Each of `claims` as its words, range and quantity (`of` reads them from the file's claim
/// type).
pub(super) fn range_claims<'a, C>(
    claims: &'a [C],
    of: impl Fn(&'a C) -> (&'a str, [f64; 2], String),
) -> Vec<RangeClaim<'a>> {
    claims
        .iter()
        .map(|c| {
            let (says, within, of) = of(c);
            RangeClaim { says, within, of }
        })
        .collect()
}

/// Runs `one` over seeds as the module says; the report is the first seed's, followed by every
/// claim with its interval.
pub(super) fn over_seeds(
    e: &Experiment,
    o: &RunOptions,
    p: &dyn Progress,
    claims: &[RangeClaim],
    one: &dyn Fn(u64) -> Result<SeedRun, RunError>,
) -> Result<KindOutcome, RunError> {
    // Seeds serve the claims: without any, the first seed's report is the whole result.
    let start = if claims.is_empty() {
        1
    } else {
        repetitions(e, o)? as usize
    };
    let cap = cap(e, o).max(start as u32) as usize;
    let mut runs: Vec<SeedRun> = Vec::new();
    let add = |runs: &mut Vec<SeedRun>, n: usize| -> Result<(), RunError> {
        for _ in 0..n {
            runs.push(one(o.seed + runs.len() as u64)?);
        }
        Ok(())
    };
    add(&mut runs, start)?;
    while runs.len() < cap
        && judged(claims, &runs)
            .iter()
            .any(|c| c.verdict == Verdict::Inconclusive)
    {
        let more = runs.len().min(cap - runs.len());
        p.note(&more_repetitions(&e.name, runs.len() as u32, more as u32));
        add(&mut runs, more)?;
    }
    let outcomes = judged(claims, &runs);
    let values: Vec<Vec<Option<f64>>> = (0..claims.len())
        .map(|k| runs.iter().map(|r| r.claim_values[k]).collect())
        .collect();
    let first = runs.swap_remove(0);
    let mut text = first.text;
    if !outcomes.is_empty() {
        let above = match runs.len() {
            0 => String::new(),
            _ => format!("; the tables above are seed {}'s alone", o.seed),
        };
        text.push_str(&format!(
            "\nClaims (95% intervals of the mean over {} seed(s), from seed {}{above}):\n",
            runs.len() + 1,
            o.seed
        ));
        for c in &outcomes {
            text.push_str(&format!("  {}\n", c.evidence));
        }
    }
    let json = serde_json::json!({
        "experiment": e.name,
        "seeds": runs.len() + 1,
        "first_seed": first.json,
        "claims": outcomes,
        "claim_values": values,
    });
    Ok(KindOutcome {
        text,
        json,
        claims: outcomes,
        figures: first.figures,
    })
}

/// Every claim judged on the runs so far.
fn judged(claims: &[RangeClaim], runs: &[SeedRun]) -> Vec<ClaimOutcome> {
    claims
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let values: Option<Vec<f64>> = runs.iter().map(|r| r.claim_values[k]).collect();
            let interval = values.as_deref().and_then(MeanInterval::of);
            let verdict = interval.map_or(Verdict::Inconclusive, |i| {
                i.within(c.within[0], c.within[1])
            });
            let measured = match interval {
                None => "no value measured".into(),
                Some(i) if i.n == 1 => format!(
                    "measured {:.3} at one seed: its noise needs two or more (--repetitions)",
                    i.mean
                ),
                Some(i) => format!("measured {}", interval_text(&i)),
            };
            ClaimOutcome {
                says: c.says.to_string(),
                quantities: vec![ClaimQuantity {
                    of: c.of.clone(),
                    interval,
                }],
                verdict,
                evidence: format!(
                    "[{}] {} (claimed {}; {measured}){}",
                    verdict.label(),
                    c.says,
                    band(c.within),
                    tie_note(verdict, interval.iter(), c.within)
                ),
            }
        })
        .collect()
}

/// A claim's range as words: "within [1.36, 1.56]", or "at least 1" when it has no upper end.
fn band([lo, hi]: [f64; 2]) -> String {
    match (lo.is_finite(), hi.is_finite()) {
        (true, false) => format!("at least {lo}"),
        (false, true) => format!("at most {hi}"),
        _ => format!("within [{lo}, {hi}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::configurations::TIE_NOTE;

    /// A claim that quantity "x" lies in `within`.
    fn claim(says: &str, within: [f64; 2]) -> RangeClaim<'_> {
        RangeClaim {
            says,
            within,
            of: "x".into(),
        }
    }

    fn run(values: &[f64]) -> SeedRun {
        SeedRun {
            text: String::new(),
            json: serde_json::Value::Null,
            figures: Vec::new(),
            claim_values: values.iter().map(|&v| Some(v)).collect(),
        }
    }

    /// Seeds giving 1.0, 1.2, 1.1: mean 1.1, sd 0.1, half-width t(0.975, 2) · 0.1 / √3 =
    /// 4.303 · 0.0577 = 0.248, so [0.852, 1.348]: inside [0.5, 2], outside [2, 3], across [1, 2].
    #[test]
    fn claims_by_the_interval_of_the_mean() {
        let runs = [run(&[1.0; 3]), run(&[1.2; 3]), run(&[1.1; 3])];
        let claims = [
            claim("in", [0.5, 2.0]),
            claim("out", [2.0, 3.0]),
            claim("across", [1.0, 2.0]),
        ];
        let v: Vec<Verdict> = judged(&claims, &runs).iter().map(|c| c.verdict).collect();
        assert_eq!(
            v,
            [Verdict::Holds, Verdict::DoesNotHold, Verdict::Inconclusive]
        );
        // The interval as numbers too, named by what it is of.
        let q = &judged(&claims, &runs)[2].quantities;
        let i = q[0].interval.unwrap();
        assert_eq!((q.len(), q[0].of.as_str(), i.n), (1, "x", 3));
        assert!((i.mean - 1.1).abs() < 1e-12 && (i.hi - 1.348).abs() < 5e-4);
        let e = &judged(&claims, &runs)[2].evidence;
        assert!(
            e.contains("(claimed within [1, 2]; measured 1.100 [0.852, 1.348] n=3)"),
            "{e}"
        );
        let open_ended = claim("above a half", [0.5, f64::INFINITY]);
        let e = &judged(&[open_ended], &runs)[0].evidence;
        assert!(
            e.starts_with("[holds] above a half (claimed at least 0.5; measured 1.100"),
            "{e}"
        );
        // One seed decides nothing; a missing value is inconclusive.
        let one = &judged(&claims[..1], &runs[..1])[0];
        assert_eq!(one.verdict, Verdict::Inconclusive);
        assert!(
            one.evidence.contains("measured 1.000 at one seed"),
            "{}",
            one.evidence
        );
        let mut gap = run(&[1.0]);
        gap.claim_values[0] = None;
        assert!(judged(&claims[..1], &[gap])
            .iter()
            .all(|c| c.evidence.contains("no value measured")));
    }

    /// Three seeds measuring exactly 1 give the interval [1, 1]: inside [0, 1] only by reaching
    /// its upper end, so that claim holds as a tie and says so; inside [0, 2] it holds outright.
    #[test]
    fn a_claim_that_holds_only_at_its_bound_says_it_is_a_tie() {
        let runs = [run(&[1.0, 1.0]), run(&[1.0, 1.0]), run(&[1.0, 1.0])];
        let claims = [
            claim("at most one", [0.0, 1.0]),
            claim("below two", [0.0, 2.0]),
        ];
        let j = judged(&claims, &runs);
        assert!(j.iter().all(|c| c.verdict == Verdict::Holds));
        assert!(j[0].evidence.ends_with(TIE_NOTE), "{}", j[0].evidence);
        assert!(!j[1].evidence.contains("tie"), "{}", j[1].evidence);
    }
}
