//! `agent`: the live agent (arguments, plans and output; the work is in `smtsched-agent`).

mod run;
mod status;

use super::plan;
use crate::errors::bad_input;
use anyhow::Result;
use clap::{Args, Subcommand};
use smtsched_agent::AgentError;
use smtsched_os::policy::PolicyName;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AgentArgs {
    #[command(subcommand)]
    pub action: AgentAction,
}

#[derive(Subcommand, Debug)]
pub enum AgentAction {
    /// Manage processes with a policy until they exit (launched commands), for --duration, or
    /// until SIGINT/SIGTERM; every thread's settings are put back at the end.
    ///
    /// Example: smtsched agent run --policy plan --matrix pairs.json --tasks kernels.toml --duration 60
    Run(Box<RunArgs>),
    /// The running agent's tasks, estimates, decisions and own CPU use (JSON from its socket).
    ///
    /// Example: smtsched agent status
    Status(StatusArgs),
    /// Put back what agents that were killed left changed (a new agent does this when it
    /// starts).
    ///
    /// Example: smtsched agent restore
    Restore(RestoreArgs),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The policy; `naive` only observes.
    #[arg(long, default_value = "naive", value_parser = crate::args::policy_name())]
    pub policy: PolicyName,
    /// Time between decisions, milliseconds.
    #[arg(long, default_value_t = 100.0)]
    pub period_ms: f64,
    /// Manage running processes (comma-separated or repeated), with all their threads and
    /// children.
    #[arg(long, value_delimiter = ',')]
    pub pid: Vec<i32>,
    /// Manage every process of a cgroup (a directory of a mounted cgroup hierarchy).
    #[arg(long, value_name = "PATH")]
    pub cgroup: Vec<PathBuf>,
    /// Launch the tasks of a task-set TOML: each task's `command`, or the built-in kernel its
    /// `workload` names; each is labelled by its workload.
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<PathBuf>,
    /// Label of the launched command (default: its program name), or PID=LABEL for a --pid
    /// (default: its command name). Labels are the workloads of a --matrix.
    #[arg(long, value_name = "LABEL")]
    pub label: Vec<Label>,
    /// PR estimates from a measured matrix (`smtsched measure pairs -o`), by task label.
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
    /// PR estimates from a counter model (`smtsched train fit`); needs hardware counters.
    #[arg(long = "estimator", alias = "model", value_name = "FILE")]
    pub model: Option<PathBuf>,
    /// How weights are applied: `nice` (per thread, SCHED_IDLE for gang turns) or `cgroup`
    /// (a cgroup per thread under --cgroup-parent: cpu.weight on v2, cpu.shares on v1).
    #[arg(long, default_value = "nice")]
    pub weights: Weights,
    /// The cgroup the agent creates its groups under (default: its own cgroup in the
    /// hierarchy with the cpu controller).
    #[arg(long, value_name = "DIR")]
    pub cgroup_parent: Option<PathBuf>,
    /// Topology to use instead of sysfs's: JSON as `smtsched host topology --json` writes it
    /// (e.g. to declare two CPUs siblings of one core).
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// Print each period's decisions and apply nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// As root, also manage other users' processes.
    #[arg(long)]
    pub allow_others: bool,
    /// Where the state file (original settings) and the status socket live.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// The status socket (default: agent-PID.sock in the state directory).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Write each period's view and decisions as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR", value_parser = metrics_addr)]
    pub metrics: Option<SocketAddr>,
    /// Stop after this many seconds.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Print the final report as JSON.
    #[arg(long)]
    pub json: bool,
    /// A command to launch and manage.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The agent's socket (default: the only agent in the state directory).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Print the JSON as the agent sends it.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct RestoreArgs {
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// `--weights`: how weights are applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weights {
    Nice,
    Cgroup,
}

impl std::str::FromStr for Weights {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "nice" => Ok(Weights::Nice),
            "cgroup" => Ok(Weights::Cgroup),
            _ => Err(format!("{s:?}: expected nice or cgroup")),
        }
    }
}

/// `--label`: the launched command's label, or PID=LABEL for a --pid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Label {
    Command(String),
    Pid(i32, String),
}

impl std::str::FromStr for Label {
    type Err = String;
    fn from_str(l: &str) -> Result<Self, String> {
        let Some((pid, label)) = l.split_once('=') else {
            return Ok(Label::Command(l.to_string()));
        };
        let pid = pid
            .parse()
            .map_err(|_| format!("{l}: expected LABEL or PID=LABEL"))?;
        Ok(Label::Pid(pid, label.to_string()))
    }
}

/// `--metrics`: an address and port to serve on.
fn metrics_addr(m: &str) -> Result<SocketAddr, String> {
    m.parse()
        .map_err(|e| format!("{e} (expected ADDRESS:PORT, e.g. 127.0.0.1:9464)"))
}

pub fn run(a: AgentArgs) -> Result<()> {
    match a.action {
        AgentAction::Run(r) => plan::run::<run::AgentPlan>(*r),
        AgentAction::Status(s) => plan::run::<status::StatusPlan>(s),
        // Nothing to check: what killed agents left is put back.
        AgentAction::Restore(r) => status::restore(r),
    }
}

pub(super) fn agent_error(e: AgentError) -> anyhow::Error {
    if e.is_bad_input() {
        bad_input(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}
