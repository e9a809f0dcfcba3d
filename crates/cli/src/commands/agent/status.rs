//! `agent status` and `agent restore`: a running agent's state, and what killed agents left.

use super::super::plan::Plan;
use super::{RestoreArgs, StatusArgs};
use crate::errors::bad_input;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// The status socket to read: given, or the only live agent's in the state directory.
fn find_socket(a: &StatusArgs) -> Result<PathBuf> {
    if let Some(s) = &a.socket {
        return Ok(s.clone());
    }
    let dir = a
        .state_dir
        .clone()
        .unwrap_or_else(smtsched_agent::state::default_dir);
    let mut socks: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sock"))
        .collect();
    socks.sort();
    match socks.len() {
        0 => Err(bad_input(format!(
            "no agent is running (no status socket in {})",
            dir.display()
        ))),
        1 => Ok(socks.remove(0)),
        _ => Err(bad_input(format!(
            "{} agents are running; choose one with --socket: {}",
            socks.len(),
            socks
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

pub struct StatusPlan {
    /// The running agent's status socket.
    socket: PathBuf,
    json: bool,
}

impl Plan for StatusPlan {
    type Args = StatusArgs;

    fn from_args(a: StatusArgs) -> Result<Self> {
        Ok(StatusPlan {
            socket: find_socket(&a)?,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        status(&self.socket, self.json)
    }
}

fn status(sock: &Path, json: bool) -> Result<()> {
    let s = smtsched_agent::observe::read_status(sock).map_err(|e| {
        bad_input(format!(
            "{}: cannot read the agent's status: {e}",
            sock.display()
        ))
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(());
    }
    println!(
        "agent {}: policy {}, every {} ms{}, {} period(s) in {:.1} s; own CPU {:.3} s ({:.3}% of one CPU)\nestimates: {}\nweights: {}\ncore scheduling: {}\ncounters: {}\nchanges {}, errors {}",
        s.agent_pid, s.policy, s.period_ms, if s.dry_run { " (dry run)" } else { "" }, s.periods, s.uptime_s,
        s.agent_cpu_s, 100.0 * s.agent_cpu_fraction, s.estimator, s.weights, s.core_scheduling, s.counters, s.changes, s.errors
    );
    let mut t = smtsched_report::Table::new([
        "tid", "pid", "label", "cpu %", "wait %", "cpu", "PR est.", "affinity", "weight", "gang",
    ]);
    for task in &s.tasks {
        t.row([
            task.tid.to_string(),
            task.pid.to_string(),
            task.label.clone(),
            format!("{:.1}", 100.0 * task.cpu_share),
            format!("{:.1}", 100.0 * task.wait_share),
            task.last_cpu.map_or("-".into(), |c| c.to_string()),
            task.pr_estimate.map_or("-".into(), |p| format!("{p:.3}")),
            task.affinity.clone().unwrap_or_else(|| "own".into()),
            task.weight.to_string(),
            if task.in_gang { "yes" } else { "no" }.into(),
        ]);
    }
    print!("{}", t.render());
    for e in &s.recent_errors {
        println!("recent error: {e}");
    }
    Ok(())
}

pub(super) fn restore(a: RestoreArgs) -> Result<()> {
    let dir = a
        .state_dir
        .clone()
        .unwrap_or_else(smtsched_agent::state::default_dir);
    // Absent: no agent ever kept state there. Something else: a mistyped path.
    if dir.exists() && !dir.is_dir() {
        return Err(bad_input(format!(
            "--state-dir {}: not a directory",
            dir.display()
        )));
    }
    let reports = smtsched_agent::state::restore_stale(&dir);
    if reports.is_empty() {
        println!("nothing to restore in {}", dir.display());
    }
    let mut failed = false;
    for r in reports {
        match r {
            Ok(rep) => {
                failed |= !rep.errors.is_empty();
                println!("{rep}");
            }
            Err(e) => {
                failed = true;
                println!("cannot restore {e}");
            }
        }
    }
    if failed {
        anyhow::bail!("some settings could not be restored");
    }
    Ok(())
}
