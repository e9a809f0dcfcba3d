//! `agent`: the live agent (arguments and output only; the work is in `smtsched-agent`).

use crate::errors::bad_input;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use smtsched_agent::targets::{Launch, PidTarget, Targets};
use smtsched_agent::{Agent, AgentConfig, AgentError, EstimateSource, StopReason, WeightsVia};
use smtsched_host::kernels::{KernelKind, KernelSpec};
use smtsched_host::looper::{LoopSpec, Work};
use smtsched_host::{Shutdown, SysfsTopology, Topology};
use smtsched_model::CpuSet;
use smtsched_os::policy::{PolicyInputs, PolicyName};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// The policy (see `smtsched run --help`); `naive` only observes.
    #[arg(long, default_value = "naive")]
    pub policy: String,
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
    pub label: Vec<String>,
    /// PR estimates from a measured matrix (`smtsched measure pairs -o`), by task label.
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
    /// PR estimates from a counter model (`smtsched train fit`); needs hardware counters.
    #[arg(long = "estimator", alias = "model", value_name = "FILE")]
    pub model: Option<PathBuf>,
    /// How weights are applied: `nice` (per thread, SCHED_IDLE for gang turns) or `cgroup`
    /// (a cgroup per thread under --cgroup-parent: cpu.weight on v2, cpu.shares on v1).
    #[arg(long, default_value = "nice")]
    pub weights: String,
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
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
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

pub fn run(a: AgentArgs) -> Result<()> {
    match a.action {
        AgentAction::Run(r) => run_agent(*r),
        AgentAction::Status(s) => status(s),
        AgentAction::Restore(r) => restore(r),
    }
}

fn agent_error(e: AgentError) -> anyhow::Error {
    if e.is_bad_input() {
        bad_input(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
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
        let cpus = t
            .cpus
            .as_deref()
            .map(CpuSet::parse)
            .transpose()
            .map_err(|e| bad_input(format!("{}: task[{i}].cpus: {e}", file.display())))?;
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
    for c in &t.cores {
        if !c.cpus.is_subset(&t.online) {
            return Err(bad_input(format!(
                "--topology {}: core {} has CPUs outside online {}",
                file.display(),
                c.cpus,
                t.online
            )));
        }
    }
    Ok(t)
}

fn run_agent(a: RunArgs) -> Result<()> {
    let policy_name: PolicyName = a
        .policy
        .parse()
        .map_err(|e: String| bad_input(format!("--policy: {e}")))?;
    if !(a.period_ms.is_finite() && a.period_ms > 0.0) {
        return Err(bad_input(format!(
            "--period-ms {}: the period must be a positive number of milliseconds",
            a.period_ms
        )));
    }
    if let Some(d) = a.duration {
        if !(d.is_finite() && d > 0.0) {
            return Err(bad_input(format!(
                "--duration {d}: must be a positive number of seconds"
            )));
        }
    }
    let exe = std::env::current_exe().context("finding the smtsched binary")?;
    let mut targets = Targets::default();
    let mut command_label = None;
    let mut pid_labels = std::collections::BTreeMap::new();
    for l in &a.label {
        match l.split_once('=') {
            Some((pid, label)) => {
                let pid: i32 = pid
                    .parse()
                    .map_err(|_| bad_input(format!("--label {l}: expected LABEL or PID=LABEL")))?;
                pid_labels.insert(pid, label.to_string());
            }
            None => command_label = Some(l.clone()),
        }
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
    let estimates = match (&a.matrix, &a.model) {
        (Some(_), Some(_)) => {
            return Err(bad_input(
                "--matrix and --model: give one source of estimates",
            ))
        }
        (Some(m), None) => EstimateSource::Matrix(std::sync::Arc::new(
            smtsched_os::MatrixEstimates::load(m)
                .map_err(|e| bad_input(format!("--matrix {e}")))?,
        )),
        (None, Some(f)) => {
            EstimateSource::Model(super::run::load_linear_model(&f.display().to_string())?)
        }
        (None, None) => EstimateSource::None,
    };
    let weights = match a.weights.as_str() {
        "nice" if a.cgroup_parent.is_some() => {
            return Err(bad_input("--cgroup-parent needs --weights cgroup"))
        }
        "nice" => WeightsVia::Nice,
        "cgroup" => WeightsVia::Cgroup(a.cgroup_parent.clone()),
        other => {
            return Err(bad_input(format!(
                "--weights {other:?}: expected nice or cgroup"
            )))
        }
    };
    let metrics = a
        .metrics
        .as_deref()
        .map(|m| {
            m.parse::<std::net::SocketAddr>().map_err(|e| {
                bad_input(format!(
                    "--metrics {m}: {e} (expected ADDRESS:PORT, e.g. 127.0.0.1:9464)"
                ))
            })
        })
        .transpose()?;
    let policy = policy_name
        .build(&PolicyInputs::default())
        .map_err(|e| bad_input(format!("--policy {policy_name}: {e}")))?;
    let cfg = AgentConfig {
        period: Duration::from_secs_f64(a.period_ms * 1e-3),
        targets,
        estimates,
        weights,
        topology: topology(a.topology.as_deref())?,
        dry_run: a.dry_run,
        allow_others: a.allow_others,
        state_dir: a
            .state_dir
            .clone()
            .unwrap_or_else(smtsched_agent::state::default_dir),
        socket: a.socket.clone(),
        log: a.log.clone(),
        metrics,
        duration: a.duration.map(Duration::from_secs_f64),
    };
    let stop = Shutdown::install().context("installing signal handlers")?;
    let agent = Agent::start(cfg, policy).map_err(agent_error)?;
    for r in &agent.stale {
        match r {
            Ok(rep) => eprintln!("smtsched agent: {rep}"),
            Err(e) => eprintln!("smtsched agent: cannot restore {e}"),
        }
    }
    eprintln!(
        "smtsched agent: pid {}, policy {}, every {} ms; status: smtsched agent status --socket {}{}",
        std::process::id(),
        policy_name,
        a.period_ms,
        agent.socket_path.display(),
        agent.metrics_addr.map(|m| format!("; metrics: http://{m}/metrics")).unwrap_or_default()
    );
    let report = agent.run(&stop);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
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
    }
    if !a.json && !report.tasks.is_empty() {
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

fn status(a: StatusArgs) -> Result<()> {
    let sock = find_socket(&a)?;
    let s = smtsched_agent::observe::read_status(&sock).map_err(|e| {
        bad_input(format!(
            "{}: cannot read the agent's status: {e}",
            sock.display()
        ))
    })?;
    if a.json {
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

fn restore(a: RestoreArgs) -> Result<()> {
    let dir = a
        .state_dir
        .clone()
        .unwrap_or_else(smtsched_agent::state::default_dir);
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
