//! `host events` and `host counters`: which performance-counter events this machine counts,
//! and their counts for a command, a running process or a CPU.

use super::super::plan::Plan;
use super::super::{json_out, out};
use super::values::Events;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use clap::Args;
use smtsched_host::looper;
use smtsched_host::perf::{self, CounterSet, Event, EventStatus, Snapshot, Target};
use smtsched_host::{Shutdown, SysfsTopology, Topology};
use smtsched_report::Table;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct EventsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CountersArgs {
    /// Events to count: a comma-separated list, `default`, or `all` (see `smtsched host events`).
    #[arg(long, short = 'e', default_value = "default")]
    pub events: Events,
    /// Count an already running process (all its threads) for --duration-ms.
    #[arg(long, conflicts_with = "cpu")]
    pub pid: Option<i32>,
    /// Count everything that runs on this logical CPU for --duration-ms (needs root or
    /// perf_event_paranoid <= 0).
    #[arg(long = "cpus", alias = "cpu", value_name = "CPU")]
    pub cpu: Option<u32>,
    /// How long to count a --pid or a CPU (--cpus), in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub duration_ms: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The command to run and count (after `--`), with its threads and child processes.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

fn status_text(s: &EventStatus) -> String {
    s.to_string()
}

pub(super) fn events(a: EventsArgs) -> Result<()> {
    let status = perf::probe(Event::ALL);
    if a.json {
        let v: Vec<_> = status
            .iter()
            .map(|(e, s)| serde_json::json!({"event": e, "hardware": e.is_hardware(), "description": e.description(), "support": s}))
            .collect();
        return json_out(&v);
    }
    let mut t = Table::new(["event", "kind", "status", "description"]);
    for (e, s) in &status {
        t.row([
            e.name().to_string(),
            if e.is_hardware() {
                "hardware"
            } else {
                "software"
            }
            .to_string(),
            status_text(s),
            e.description().to_string(),
        ]);
    }
    out(&t.render())?;
    let hw = status
        .iter()
        .filter(|(e, s)| e.is_hardware() && s.is_supported())
        .count();
    if hw == 0 {
        out("\nNo hardware event can be counted here (no PMU, as in most virtual machines, or not permitted); software events still work.\n")?;
    }
    Ok(())
}
pub struct CountersPlan {
    events: Vec<Event>,
    target: Target,
    /// What is counted, in words.
    what: String,
    duration_ms: u64,
    /// The command to run and count (empty: count the target for `duration_ms`).
    command: Vec<String>,
    json: bool,
}

impl Plan for CountersPlan {
    type Args = CountersArgs;

    fn from_args(a: CountersArgs) -> Result<Self> {
        if a.events.0.is_empty() {
            return Err(bad_input("--events none: nothing to count"));
        }
        let (target, what) = target(&a)?;
        if !a.command.is_empty() {
            looper::resolve_command(&a.command)?;
        }
        Ok(CountersPlan {
            events: a.events.0,
            target,
            what,
            duration_ms: a.duration_ms,
            command: a.command,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let mut set = CounterSet::open(&self.events, self.target)?;
        let started = std::time::Instant::now();
        set.enable()?;
        let before = set.read()?;
        let mut exit = None;
        if self.command.is_empty() {
            std::thread::sleep(Duration::from_millis(self.duration_ms));
        } else {
            exit = Some(run_counted_command(&self.command)?);
        }
        let after = set.read()?;
        set.disable()?;
        let elapsed = started.elapsed().as_secs_f64();
        let delta = after.since(&before);
        let what = &self.what;
        if self.json {
            return json_out(
                &serde_json::json!({"target": what, "elapsed_seconds": elapsed, "exit_status": exit.map(|s| s.to_string()), "events": json_rows(&set, &delta)}),
            );
        }
        out(&format!("Counters of {what} ({elapsed:.3} s)\n\n"))?;
        out(&table(&set, &delta).render())?;
        if let Some(st) = exit.filter(|s| !s.success()) {
            out(&format!("note: the command exited with {st}\n"))?;
        }
        Ok(())
    }
}

fn json_rows(set: &CounterSet, delta: &Snapshot) -> Vec<serde_json::Value> {
    set.status()
        .iter()
        .map(|(e, s)| {
            let r = delta.0.get(e);
            serde_json::json!({
                "event": e,
                "support": s,
                "value": r.and_then(|r| r.scaled()),
                "raw_count": r.map(|r| r.count),
                "running_fraction": r.and_then(|r| r.running_fraction()),
            })
        })
        .collect()
}

fn table(set: &CounterSet, delta: &Snapshot) -> Table {
    let mut t = Table::new(["event", "value", "on PMU", "status"]);
    for (e, s) in set.status() {
        let r = delta.0.get(e);
        let value = match (s.is_supported(), r.and_then(|r| r.scaled())) {
            (false, _) => "-".to_string(),
            (true, Some(v)) => format!("{v:.0}"),
            (true, None) => "not counted".to_string(),
        };
        let frac = r
            .and_then(|r| r.running_fraction())
            .map_or("-".into(), |f| format!("{:.0}%", f * 100.0));
        t.row([e.name().to_string(), value, frac, status_text(s)]);
    }
    t
}

/// What `a` counts (a process, a CPU or the command), and that in words.
fn target(a: &CountersArgs) -> Result<(Target, String)> {
    Ok(match (a.pid, a.cpu, a.command.is_empty()) {
        (Some(_), _, false) | (_, Some(_), false) => {
            return Err(bad_input(
                "give either --pid/--cpus or a command after --, not both",
            ));
        }
        (Some(pid), None, true) => (
            Target::Process(pid),
            format!("process {pid} for {} ms", a.duration_ms),
        ),
        (None, Some(cpu), true) => {
            let topo = Topology::live()?;
            topo.check_online(&std::iter::once(cpu).collect(), &format!("--cpus {cpu}"))?;
            (
                Target::Cpu(cpu),
                format!("CPU {cpu} for {} ms", a.duration_ms),
            )
        }
        (None, None, false) => (
            Target::CommandsStarted,
            format!("command {:?}", a.command.join(" ")),
        ),
        (None, None, true) => {
            return Err(bad_input(
                "nothing to count: give --pid PID, --cpus N, or a command after --",
            ));
        }
        (Some(_), Some(_), _) => unreachable!("clap rejects --pid with --cpus"),
    })
}

/// Runs the counted command in a process group of its own that dies with us; stops it on
/// Ctrl-C or SIGTERM, and once it exits kills what it left running in its group.
fn run_counted_command(command: &[String]) -> Result<std::process::ExitStatus> {
    use smtsched_host::procgroup::{group_members, spawn_group, stop_group};
    let stop = Shutdown::install().context("installing signal handlers")?;
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..]);
    let mut child = spawn_group(&mut cmd, None)
        .with_context(|| format!("cannot run {:?}", command.join(" ")))?;
    let pgid = child.id() as i32;
    let status = loop {
        if let Some(sig) = stop.requested() {
            let killed = stop_group(&mut child, libc::SIGTERM, Duration::from_secs(2));
            return Err(smtsched_host::HostError::Interrupted {
                signal: sig,
                children: killed.max(1),
            }
            .into());
        }
        if let Some(s) = child.try_wait()? {
            break s;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let left = group_members(pgid);
    if !left.is_empty() {
        // SAFETY: kill has no memory preconditions; the group is the command's own.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
        eprintln!(
            "note: killed {} process(es) the command left running in its process group",
            left.len()
        );
    }
    Ok(status)
}
