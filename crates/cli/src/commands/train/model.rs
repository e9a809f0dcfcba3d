//! `train model`: the estimator of a machine, fitted by the thesis's method on its simulation.

use super::super::plan::Plan;
use super::super::{check_outputs, counting_bar, machine, out, write_file};
use anyhow::{Context, Result};
use clap::Args;
use smtsched_model::MachineModel;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ModelArgs {
    /// Machine preset or TOML file.
    #[arg(long, short = 'm', default_value = "northwood")]
    pub machine: String,
    /// Write the model here (TOML; default: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub struct ModelPlan {
    machine: MachineModel,
    output: Option<PathBuf>,
}

impl Plan for ModelPlan {
    type Args = ModelArgs;

    fn from_args(a: ModelArgs) -> Result<Self> {
        check_outputs([a.output.as_deref()])?;
        Ok(ModelPlan {
            machine: machine(&a.machine, &[])?,
            output: a.output,
        })
    }

    fn execute(self) -> Result<()> {
        let m = &self.machine;
        let bar = counting_bar(smtsched_experiments::windows::model_runs(), "runs")?;
        bar.set_message(format!("training windows on {}", m.name));
        let model = smtsched_experiments::windows::fit_machine_model(m, &|| bar.inc())?;
        bar.finish_and_clear();
        let text = format!(
            "# The PR estimator of the simulated {}, written by `smtsched train model`.\n{}",
            m.name,
            toml::to_string_pretty(&model).context("cannot write the model as TOML")?
        );
        match &self.output {
            Some(p) => write_file(p, text.as_bytes()),
            None => out(&text),
        }
    }
}
