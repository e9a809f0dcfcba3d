//! `reproduce`: the seed papers' experiments, declared in `experiments/*.toml`.

use super::{json_out, out, write_file, Bars};
use crate::args::ReproduceArgs;
use crate::errors::bad_input;
use anyhow::Result;
use smtsched_experiments::experiment::{load_experiment, Experiment, EXPERIMENTS};
use smtsched_experiments::run::{Outcome, RunOptions};
use smtsched_report::Table;

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
    if a.shard.is_some() || !a.merge.is_empty() || a.slurm || a.only.is_some() {
        return Err(bad_input(format!(
            "--shard, --merge, --slurm and --only go with `reproduce all`, not with {name}"
        )));
    }
    let e = load_experiment(name)?;
    super::check_outputs([a.output.as_deref()])?;
    let o = run_one(e, &a, &Bars::default())?;
    if a.json {
        return json_out(&o.json);
    }
    if let Some(p) = &a.output {
        write_file(p, o.text.as_bytes())?;
    }
    out(&o.text)
}

/// The run options `a` gives.
pub fn run_options(a: &ReproduceArgs) -> Result<RunOptions> {
    Ok(RunOptions {
        seed: a.seed,
        duration_s: a.duration,
        repetitions: a.repetitions,
        max_repetitions: a.max_repetitions,
        baseline: a.baseline,
        policies: a.policies.clone(),
        estimator: a.model.clone(),
        full_json: a.json,
    })
}

/// Runs experiment `e` with `a`'s overrides, progress on the terminal through `bars`.
pub fn run_one(e: Experiment, a: &ReproduceArgs, bars: &Bars) -> Result<Outcome> {
    Ok(smtsched_experiments::run::run(e, &run_options(a)?, bars)?)
}
