//! `reproduce all` as a sweep: the suite of experiments split into shards (one experiment is one
//! item), each shard's outcomes written to a file, and the files merged back into the outcomes a
//! single run gives — the same experiments, options and program version, every shard once.

use crate::progress::RunIdentity;
use crate::run::{Outcome, RunOptions};
use crate::shards::{check_complete, fingerprint, Shard, ShardPart};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Format tag of a suite shard file.
pub const SUITE_SHARD_FORMAT: &str = "smtsched-reproduce-shard-1";

/// What a suite run is: its experiments in order and the options they run with.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Suite {
    pub experiments: Vec<String>,
    /// The first seed (the report shows it).
    pub seed: u64,
    /// The run options as the command line spells them, one flag per line (they decide the
    /// results, so shards must agree on them).
    pub options: String,
    pub version: String,
    /// A fingerprint of the experiments as loaded and of the files they name (machines,
    /// traces): shards run with a file edited between them are of two runs.
    #[serde(default)]
    pub inputs: String,
    /// A fingerprint of all of the above.
    pub hash: String,
}

impl Suite {
    pub fn new(experiments: Vec<String>, o: &RunOptions, inputs: String) -> Suite {
        let options: Vec<String> = o
            .flags()
            .into_iter()
            .map(|(flag, value)| format!("{flag} {value}").trim_end().to_string())
            .collect();
        let options = options.join("\n");
        let version = env!("CARGO_PKG_VERSION").to_string();
        let hash = fingerprint(&format!("{experiments:?}\n{options}\n{version}\n{inputs}"));
        Suite {
            experiments,
            seed: o.seed,
            options,
            version,
            inputs,
            hash,
        }
    }

    /// The experiments shard `s` runs, with their places in the suite.
    pub fn shard_items(&self, s: Shard) -> Vec<(usize, &str)> {
        self.experiments
            .iter()
            .enumerate()
            .filter(|(i, _)| s.takes(*i))
            .map(|(i, n)| (i, n.as_str()))
            .collect()
    }
}

/// One shard's file: the suite it belongs to and its experiments' outcomes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SuiteShard {
    pub format: String,
    pub suite: Suite,
    pub shard: Shard,
    /// (place in the suite, outcome).
    pub outcomes: Vec<(usize, Outcome)>,
}

impl SuiteShard {
    pub fn new(suite: Suite, shard: Shard, outcomes: Vec<(usize, Outcome)>) -> SuiteShard {
        SuiteShard {
            format: SUITE_SHARD_FORMAT.into(),
            suite,
            shard,
            outcomes,
        }
    }
}

/// Reads a shard file; the error (one line) names the file.
pub fn read_shard(path: &Path) -> Result<SuiteShard, String> {
    let file = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{file}: {e}"))?;
    let s: SuiteShard = serde_json::from_str(&text)
        .map_err(|e| format!("{file}: not a reproduce-all shard file: {e}"))?;
    if s.format != SUITE_SHARD_FORMAT {
        return Err(format!(
            "{file}: format {:?}, expected {SUITE_SHARD_FORMAT:?}",
            s.format
        ));
    }
    Ok(s)
}

/// Merges every shard of one suite into its outcomes, in the suite's order. `parts` are
/// (file name, contents).
pub fn merge(parts: &[(String, SuiteShard)]) -> Result<(Suite, Vec<Outcome>), String> {
    if let Some((first, a)) = parts.first() {
        for (file, p) in &parts[1..] {
            if let Some(d) = difference(&p.suite, &a.suite) {
                return Err(format!("{file}: not a shard of the run {first} is of: {d}"));
            }
        }
    }
    let described: Vec<ShardPart> = parts
        .iter()
        .map(|(file, p)| ShardPart {
            file,
            run: format!(
                "reproduce all of {} experiment(s), smtsched {} ({})",
                p.suite.experiments.len(),
                p.suite.version,
                p.suite.hash
            ),
            shard: Some(p.shard),
            total: p.suite.experiments.len(),
            items: p.outcomes.iter().map(|(i, _)| *i).collect(),
        })
        .collect();
    check_complete(&described)?;
    let suite = parts[0].1.suite.clone();
    let mut outcomes: Vec<(usize, Outcome)> =
        parts.iter().flat_map(|(_, p)| p.outcomes.clone()).collect();
    outcomes.sort_by_key(|(i, _)| *i);
    Ok((suite, outcomes.into_iter().map(|(_, o)| o).collect()))
}

/// Format tag of a suite run's progress file.
pub const SUITE_PROGRESS_FORMAT: &str = "smtsched-reproduce-progress-2";

impl RunIdentity for Suite {
    fn differs_from(&self, current: &Suite) -> Option<String> {
        difference(self, current)
    }
}

/// How suite `b` was run differently from `a`, in words (`None`: the same run).
fn difference(b: &Suite, a: &Suite) -> Option<String> {
    if b.experiments != a.experiments {
        return Some(format!(
            "other experiments ({}, not {})",
            b.experiments.join(","),
            a.experiments.join(",")
        ));
    }
    if b.version != a.version {
        return Some(format!("smtsched {}, not {}", b.version, a.version));
    }
    if b.inputs != a.inputs {
        return Some("experiment, machine or trace files whose contents differ".into());
    }
    (b.options != a.options).then(|| flag_changes(&b.options, &a.options))
}

/// How the flags of `b` (one per line, as [`Suite::options`]) differ from those of `a`: each
/// changed, added or dropped flag, as `--seed 2 (not --seed 1)`, `--json (not given)` or `no
/// --json (given)`.
fn flag_changes(b: &str, a: &str) -> String {
    let name = |f: &str| f.split_once(' ').map_or(f, |(n, _)| n).to_string();
    let find = |all: &str, n: &str| all.lines().find(|f| name(f) == n).map(str::to_string);
    let mut names: Vec<String> = Vec::new();
    for n in b.lines().chain(a.lines()).map(name) {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    names
        .iter()
        .filter_map(|n| match (find(b, n), find(a, n)) {
            (Some(x), Some(y)) if x != y => Some(format!("{x} (not {y})")),
            (Some(x), None) => Some(format!("{x} (not given)")),
            (None, Some(y)) => Some(format!("no {n} (given: {y})")),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite(o: &RunOptions) -> Suite {
        Suite::new(vec!["thesis-set-a".into()], o, String::new())
    }

    #[test]
    fn shards_of_differently_run_suites_say_which_option_differs() {
        let a = suite(&RunOptions {
            seed: 1,
            ..RunOptions::default()
        });
        let b = suite(&RunOptions {
            seed: 2,
            full_json: true,
            ..RunOptions::default()
        });
        assert_eq!(
            difference(&b, &a).unwrap(),
            "--seed 2 (not --seed 1), --json (not given)"
        );
        assert_eq!(difference(&a, &a), None);
        let c = Suite::new(
            vec!["thesis-set-b".into()],
            &RunOptions::default(),
            String::new(),
        );
        assert_eq!(
            difference(&c, &a).unwrap(),
            "other experiments (thesis-set-b, not thesis-set-a)"
        );
        // The same experiments and options, a file they name edited between the shards.
        let edited = Suite::new(a.experiments.clone(), &RunOptions::default(), "f2".into());
        let d = difference(&edited, &suite(&RunOptions::default())).unwrap();
        assert!(d.contains("files whose contents differ"), "{d}");
        assert_ne!(edited.hash, suite(&RunOptions::default()).hash);
        // Options given in one run and not in the other are named as the command line spells
        // them.
        let reps = suite(&RunOptions {
            repetitions: Some(2),
            ..RunOptions::default()
        });
        let plain = suite(&RunOptions::default());
        assert_eq!(
            difference(&plain, &reps).unwrap(),
            "no --repetitions (given: --repetitions 2)"
        );
        assert_eq!(
            difference(&reps, &plain).unwrap(),
            "--repetitions 2 (not given)"
        );
    }
}
