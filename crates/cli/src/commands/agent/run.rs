//! `agent run`: what the agent manages, how it estimates and applies weights, all checked
//! before it starts; then the agent's run and its report.

use super::super::inputs::linear_model;
use super::super::output::check_output_dir;
use super::super::plan::Plan;
use super::super::{check_outputs, check_time};
use super::{agent_error, Label, RunArgs, Weights};
use crate::errors::bad_input;
use anyhow::{Context, Result};
use smtsched_agent::targets::{Launch, PidTarget, Targets};
use smtsched_agent::{Agent, AgentConfig, EstimateSource, StopReason, WeightsVia};
use smtsched_host::kernels::{KernelKind, KernelSpec};
use smtsched_host::looper::{LoopSpec, Work};
use smtsched_host::{Shutdown, SysfsTopology, Topology};
use smtsched_model::CpuSet;
use smtsched_os::policy::{Policy, PolicyInputs, PolicyName};
use std::path::Path;
use std::time::Duration;

pub struct AgentPlan {
    policy_name: PolicyName,
    policy: Box<dyn Policy>,
    config: AgentConfig,
    period_ms: f64,
    json: bool,
}

impl Plan for AgentPlan {
    type Args = RunArgs;

    fn from_args(a: RunArgs) -> Result<Self> {
        check_times(&a)?;
        let targets = targets(&a)?;
        let estimates = match (&a.matrix, &a.model) {
            (Some(_), Some(_)) => {
                return Err(bad_input(
                    "--matrix and --estimator: give one source of estimates",
                ))
            }
            (Some(m), None) => EstimateSource::Matrix(std::sync::Arc::new(
                smtsched_os::MatrixEstimates::load(m)
                    .map_err(|e| bad_input(format!("--matrix {e}")))?,
            )),
            (None, Some(f)) => EstimateSource::Model(linear_model(f)?),
            (None, None) => EstimateSource::None,
        };
        let weights = match a.weights {
            Weights::Nice if a.cgroup_parent.is_some() => {
                return Err(bad_input("--cgroup-parent needs --weights cgroup"))
            }
            Weights::Nice => WeightsVia::Nice,
            Weights::Cgroup => WeightsVia::Cgroup(a.cgroup_parent.clone()),
        };
        let policy = a
            .policy
            .build(&PolicyInputs::default())
            .map_err(|e| bad_input(format!("--policy {}: {e}", a.policy)))?;
        check_outputs([a.log.as_deref()])?;
        if let Some(dir) = &a.state_dir {
            check_output_dir(dir, "--state-dir")?;
        }
        if let Some(sock) = &a.socket {
            check_outputs([Some(sock.as_path())])
                .map_err(|e| bad_input(format!("--socket: {e}")))?;
        }
        let config = AgentConfig {
            period: Duration::from_secs_f64(a.period_ms * 1e-3),
            targets,
            estimates,
            weights,
            topology: topology(a.topology.as_deref())?,
            dry_run: a.dry_run,
            allow_others: a.allow_others,
            state_dir: a
                .state_dir
                .unwrap_or_else(smtsched_agent::state::default_dir),
            socket: a.socket,
            log: a.log,
            metrics: a.metrics,
            duration: a.duration.map(Duration::from_secs_f64),
        };
        Ok(AgentPlan {
            policy_name: a.policy,
            policy,
            config,
            period_ms: a.period_ms,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let stop = Shutdown::install().context("installing signal handlers")?;
        let agent = Agent::start(self.config, self.policy).map_err(agent_error)?;
        for r in &agent.stale {
            match r {
                Ok(rep) => eprintln!("smtsched agent: {rep}"),
                Err(e) => eprintln!("smtsched agent: cannot restore {e}"),
            }
        }
        eprintln!(
            "smtsched agent: pid {}, policy {}, every {} ms; status: smtsched agent status --socket {}{}",
            std::process::id(),
            self.policy_name,
            self.period_ms,
            agent.socket_path.display(),
            agent.metrics_addr.map(|m| format!("; metrics: http://{m}/metrics")).unwrap_or_default()
        );
        let report = agent.run(&stop);
        if self.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print_report(&report);
        }
        for e in &report.restore.errors {
            eprintln!("smtsched agent: restore: {e}");
        }
        if !report.restore.errors.is_empty() {
            anyhow::bail!("some settings could not be restored; the state file {} is kept for `smtsched agent restore`", report.restore.file.display());
        }
        if let StopReason::CommandsExited { code } = report.stop {
            if code != 0 {
                std::process::exit(code);
            }
        }
        Ok(())
    }
}

/// `--period-ms` and `--duration` are positive; a period is at most a minute (the agent notices
/// that its commands exited at the end of one), a duration at most 10^9 s.
fn check_times(a: &RunArgs) -> Result<()> {
    check_time("--period-ms", a.period_ms, false, 60_000.0, "milliseconds")?;
    match a.duration {
        Some(d) => check_time("--duration", d, false, 1e9, "seconds"),
        None => Ok(()),
    }
}

/// What the agent manages: --pid processes, --cgroup members, the --tasks set's launches and
/// the command after `--`, each with its label.
fn targets(a: &RunArgs) -> Result<Targets> {
    let exe = std::env::current_exe().context("finding the smtsched binary")?;
    let mut targets = Targets::default();
    let mut command_label = None;
    let mut pid_labels = std::collections::BTreeMap::new();
    for l in &a.label {
        match l {
            Label::Pid(pid, label) => {
                pid_labels.insert(*pid, label.clone());
            }
            Label::Command(label) => command_label = Some(label.clone()),
        }
    }
    // A label for a process not managed, or for a command not given, would label nothing.
    if let Some(pid) = pid_labels.keys().find(|p| !a.pid.contains(p)) {
        return Err(bad_input(format!(
            "--label {pid}=…: process {pid} is not one of --pid"
        )));
    }
    if command_label.is_some() && a.command.is_empty() {
        return Err(bad_input(
            "--label LABEL names the command after --, and none is given (PID=LABEL labels a --pid)",
        ));
    }
    for &pid in &a.pid {
        targets.pids.push(PidTarget {
            pid,
            label: pid_labels.get(&pid).cloned(),
        });
    }
    targets.cgroups = a.cgroup.clone();
    if let Some(f) = &a.tasks {
        targets.launch = launches_of(f, &exe)?;
    }
    if !a.command.is_empty() {
        let program = Path::new(&a.command[0])
            .file_name()
            .map_or(a.command[0].clone(), |n| n.to_string_lossy().to_string());
        targets.launch.push(Launch {
            argv: a.command.clone(),
            label: command_label.unwrap_or(program),
            trust: None,
            nice: 0,
            cpus: None,
            builtin: false,
        });
    }
    if targets == Targets::default() {
        return Err(bad_input(
            "nothing to manage: give -- CMD, --tasks FILE, --pid PID or --cgroup PATH",
        ));
    }
    Ok(targets)
}

/// The final report on stderr (standard output belongs to the managed commands).
fn print_report(report: &smtsched_agent::AgentReport) {
    eprintln!(
        "smtsched agent: stopped ({}) after {} period(s), {:.1} s; own CPU {:.3} s ({:.3}% of one CPU); {} change(s), {} error(s); restored {} thread(s), {} had exited",
        match &report.stop {
            StopReason::CommandsExited { code } => format!("the launched commands exited, first with code {code}"),
            StopReason::TargetsExited => "every managed process exited".into(),
            StopReason::Duration => "--duration reached".into(),
            StopReason::Signal { signal } => signal.clone(),
        },
        report.periods,
        report.wall_s,
        report.agent_cpu_s,
        100.0 * report.agent_cpu_s / report.wall_s.max(1e-9),
        report.changes,
        report.errors,
        report.restore.restored,
        report.restore.gone
    );
    if report.tasks.is_empty() {
        return;
    }
    let mut t =
        smtsched_report::Table::new(["tid", "pid", "label", "cpu s", "wait s", "cpu share"]);
    for task in &report.tasks {
        t.row([
            task.tid.to_string(),
            task.pid.to_string(),
            task.label.clone(),
            format!("{:.2}", task.cpu_s),
            format!("{:.2}", task.wait_s),
            format!("{:.3}", task.cpu_share),
        ]);
    }
    eprint!("{}", t.render());
}

/// The launches of a task-set file: each task's command, or its built-in kernel, once per copy.
fn launches_of(file: &Path, exe: &Path) -> Result<Vec<Launch>> {
    let set = smtsched_os::taskset::load_taskset(&file.display().to_string())?;
    let mut out = Vec::new();
    for (i, t) in set.tasks.iter().enumerate() {
        if t.serves.is_some() {
            return Err(bad_input(format!(
                "{}: task[{i}].serves: the agent runs real processes; their requests come from \
                 real clients, not from the set's [[clients]]",
                file.display()
            )));
        }
        // What the agent cannot give a launched process is refused, not dropped unsaid.
        let unlaunchable = [
            ("group", t.group.is_some()),
            ("block", t.block.is_some()),
            ("fork", t.fork.is_some()),
            ("drives", t.drives.is_some()),
        ];
        if let Some((field, _)) = unlaunchable.iter().find(|(_, given)| *given) {
            return Err(bad_input(format!(
                "{}: task[{i}].{field}: the agent launches a task as its command or built-in \
                 kernel alone, with its nice, cpus and trust (`measure sched` runs sets with \
                 groups and blocking)",
                file.display()
            )));
        }
        let cpus = t
            .cpus
            .as_deref()
            .map(CpuSet::parse)
            .transpose()
            .map_err(|e| bad_input(format!("{}: task[{i}].cpus: {e}", file.display())))?;
        // A task may run only where the agent itself may: the kernel refuses any other mask.
        if let (Some(c), Ok(allowed)) = (&cpus, smtsched_host::affinity::get_affinity(0)) {
            if !c.is_subset(&allowed) {
                return Err(bad_input(format!(
                    "{}: task[{i}].cpus = {c}: not within the CPUs this agent may use ({allowed})",
                    file.display()
                )));
            }
        }
        let (argv, builtin) = match &t.command {
            Some(argv) if argv.is_empty() => {
                return Err(bad_input(format!(
                    "{}: task[{i}].command is empty",
                    file.display()
                )))
            }
            Some(argv) => (argv.clone(), false),
            None => {
                let kind = KernelKind::parse(&t.workload).map_err(|_| {
                    bad_input(format!(
                        "{}: task[{i}] has no command and its workload {:?} is not a built-in kernel ({})",
                        file.display(),
                        t.workload,
                        KernelKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
                    ))
                })?;
                let spec = LoopSpec {
                    work: Work::Kernel(KernelSpec::new(kind)),
                    cpus: None,
                    runs: 0,
                    delay_ms: 0.0,
                    events: Vec::new(),
                    seed: i as u64 + 1,
                    parent_pid: None,
                    rr_priority: None,
                };
                let json = serde_json::to_string(&spec).expect("loop specs serialise");
                let argv = [
                    exe.display().to_string(),
                    "host".into(),
                    "loop".into(),
                    "--spec".into(),
                    json,
                ];
                (argv.to_vec(), true)
            }
        };
        // Every copy is a process of its own.
        for _ in 0..t.copies {
            out.push(Launch {
                argv: argv.clone(),
                label: t.workload.clone(),
                trust: t.trust.clone(),
                nice: t.nice,
                cpus: cpus.clone(),
                builtin,
            });
        }
    }
    Ok(out)
}

fn topology(file: Option<&Path>) -> Result<Topology> {
    let live = Topology::live().context("reading this machine's topology")?;
    let Some(file) = file else {
        return Ok(live);
    };
    let text = std::fs::read_to_string(file)
        .map_err(|e| bad_input(format!("--topology {}: {e}", file.display())))?;
    let t: Topology = serde_json::from_str(&text).map_err(|e| {
        bad_input(format!(
            "--topology {}: not a topology (JSON as `smtsched host topology --json` writes): {e}",
            file.display()
        ))
    })?;
    if t.online.is_empty() || !t.online.is_subset(&live.online) {
        return Err(bad_input(format!(
            "--topology {}: online CPUs {} are not among this machine's online CPUs {}",
            file.display(),
            t.online,
            live.online
        )));
    }
    t.check_consistent()
        .map_err(|why| bad_input(format!("--topology {}: {why}", file.display())))?;
    Ok(t)
}
