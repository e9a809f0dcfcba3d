//! `reproduce`: the seed papers' experiments, declared in `experiments/*.toml`.

mod all;
mod report;

use super::kept::named_files;
use super::plan::Plan;
use super::{
    check_inputs_kept, check_outputs, check_time, out, write_file, Bars, MAX_SIMULATED_SECONDS,
};
use crate::args::ReproduceArgs;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use smtsched_experiments::experiment::{load_experiment, Experiment, EXPERIMENTS};
use smtsched_experiments::run::{check, RunOptions};
use smtsched_report::Table;
use std::path::{Path, PathBuf};

pub enum ReproducePlan {
    /// `--list`, or no experiment named: the experiments and their titles.
    List,
    /// One experiment, its report printed (and written to `output`).
    One {
        experiment: Box<Experiment>,
        options: RunOptions,
        output: Option<PathBuf>,
        json: bool,
    },
    /// `all`: every experiment, or a shard of them, a merge of shards or a Slurm script.
    All(all::AllPlan),
}

impl Plan for ReproducePlan {
    type Args = ReproduceArgs;

    fn from_args(a: ReproduceArgs) -> Result<Self> {
        let Some(name) = a.name.as_deref().filter(|_| !a.list) else {
            return Ok(ReproducePlan::List);
        };
        if let Some(d) = a.duration {
            check_time("--duration", d, false, MAX_SIMULATED_SECONDS, "seconds")?;
        }
        if name == "all" {
            return Ok(ReproducePlan::All(all::AllPlan::from_args(a)?));
        }
        if a.shard.is_some() || !a.merge.is_empty() || a.slurm || a.only.is_some() {
            return Err(bad_input(format!(
                "--shard, --merge, --slurm and --only go with `reproduce all`, not with {name}"
            )));
        }
        let experiment = Box::new(load_experiment(name)?);
        let options = run_options(&a);
        let unused = options.not_applying(experiment.kind);
        if !unused.is_empty() {
            return Err(bad_input(format!(
                "{}: {} would change nothing in an experiment of kind {}",
                name,
                unused.join(" and "),
                experiment.kind.quoted()
            )));
        }
        check(&experiment, &options).with_context(|| name.to_string())?;
        check_outputs([a.output.as_deref()])?;
        // The output must not replace the experiment's file or a file it names.
        let named = named_files(&experiment)?;
        let inputs = named.iter().map(PathBuf::as_path).chain([Path::new(name)]);
        check_inputs_kept(&inputs.collect::<Vec<_>>(), [a.output.as_deref()])?;
        Ok(ReproducePlan::One {
            experiment,
            options,
            output: a.output,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        match self {
            ReproducePlan::List => list(),
            ReproducePlan::One {
                experiment,
                options,
                output,
                json,
            } => {
                let o = smtsched_experiments::run::run(*experiment, &options, &Bars::default())?;
                // What is printed, the text or its JSON, is what `-o` writes.
                let printed = if json {
                    serde_json::to_string_pretty(&o.json)? + "\n"
                } else {
                    o.text
                };
                if let Some(p) = &output {
                    write_file(p, printed.as_bytes())?;
                }
                out(&printed)
            }
            ReproducePlan::All(plan) => plan.execute(),
        }
    }
}

fn list() -> Result<()> {
    let mut t = Table::new(["experiment", "title"]);
    for p in EXPERIMENTS {
        let e = load_experiment(p.name)?;
        t.row([e.name, e.title]);
    }
    out(&t.render())
}

/// The run options `a` gives.
fn run_options(a: &ReproduceArgs) -> RunOptions {
    RunOptions {
        seed: a.seed,
        duration_s: a.duration,
        repetitions: a.repetitions,
        max_repetitions: a.max_repetitions,
        baseline: a.baseline,
        policies: a.policies.clone(),
        estimator: a.model.clone(),
        full_json: a.json,
    }
}
