//! `measure server`: arguments and output; the work is in `smtsched_host::webserver`.

use super::super::plan::Plan;
use super::super::{check_outputs, json_out, out, write_file};
use crate::errors::bad_input;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use smtsched_experiments::server_profile::{base_placement, experiment_toml};
use smtsched_host::webserver::httpd::ServerKind;
use smtsched_host::webserver::{self, Placement, RatePlan, ServerConfig, ServerMeasurement};
use smtsched_host::{Shutdown, SysfsTopology, Topology};
use smtsched_model::CpuSet;
use smtsched_report::stats::mean_sd;
use smtsched_report::Table;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ServerChoice {
    Nginx,
    Lighttpd,
}

#[derive(Args, Debug)]
pub struct ServerArgs {
    /// The web server (from the distribution's packages).
    #[arg(long, value_enum, default_value = "nginx")]
    pub server: ServerChoice,
    /// The server's executable (default: the --server's on PATH or in /usr/sbin).
    #[arg(long, value_name = "PATH")]
    pub server_binary: Option<PathBuf>,
    /// Server worker processes (default: one per CPU the placement gives the server).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub workers: Option<u32>,
    /// Size of the static file every request fetches, bytes.
    #[arg(long, default_value_t = 15027)]
    pub file_bytes: u64,
    /// Port on 127.0.0.1 (default: a free one).
    #[arg(long)]
    pub port: Option<u16>,
    /// Placements: `table` (thesis Table 5.1 on this machine: UP, 1xHTP, 1x2) and/or
    /// NAME:server=LIST,softirq=LIST,client=LIST (repeatable).
    #[arg(long, short_alias = 'p', default_value = "table")]
    pub placement: Vec<String>,
    /// Logical CPUs the table placements use (default: every online CPU).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<CpuSet>,
    /// Requests per second of an open loop, or `auto`: a closed loop finds saturation, then open
    /// loops run at 50%, 80% and 95% of it. Default: a closed loop only.
    #[arg(long)]
    pub rate: Option<RatePlan>,
    /// Connections of the load generator.
    #[arg(long, short = 'c', default_value_t = 64)]
    pub connections: u32,
    /// Seconds of each load run.
    #[arg(
        long = "duration",
        alias = "seconds",
        value_name = "DURATION",
        default_value_t = 5.0
    )]
    pub seconds: f64,
    /// Repetitions of every placement (the tables show mean ± sd).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repetitions: u32,
    /// Where the state file lives (what to undo after a SIGKILL).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Directory standing in for `/` when reading the topology (for testing).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub sysfs_root: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Write one CSV row per load run.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write an SVG of throughput and p99 latency per placement.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write the measurement as a server profile: an experiment file in which the simulator
    /// runs this server, its load generator and softirq in every measured placement on
    /// --profile-machine, with the measured throughput ratios as claims
    /// (`smtsched reproduce FILE`). Needs a placement that keeps the server and the load
    /// generator apart (the table's UP).
    #[arg(long = "output", short = 'o', alias = "profile", value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// The machine model the profile's experiment simulates (a preset or file; the measured
    /// CPUs map onto its first cores).
    #[arg(long, value_name = "MACHINE", default_value = "smt2-modern")]
    pub profile_machine: String,
}

pub struct ServerPlan {
    config: ServerConfig,
    csv: Option<PathBuf>,
    svg: Option<PathBuf>,
    /// `-o`: the experiment file, the machine it simulates, and the SMT sibling of the first
    /// measured CPU (if this machine has one).
    profile: Option<(PathBuf, String, Option<u32>)>,
    json: bool,
}

impl Plan for ServerPlan {
    type Args = ServerArgs;

    fn from_args(a: ServerArgs) -> Result<Self> {
        let topo = Topology::from_sysfs(&a.sysfs_root)?;
        let config = config(&a, &topo)?;
        webserver::validate(&config)?;
        let profile = match a.profile {
            Some(path) => Some(profile(path, a.profile_machine, &config, &topo)?),
            None => None,
        };
        check_outputs([a.csv.as_deref(), a.svg.as_deref()])?;
        webserver::check_tools()?;
        Ok(ServerPlan {
            config,
            csv: a.csv,
            svg: a.svg,
            profile,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let cfg = &self.config;
        let stop = Shutdown::install().context("installing signal handlers")?;
        eprintln!(
            "measuring {} on {} placement(s) x {} repetition(s), {} s per load run",
            cfg.server.binary(),
            cfg.placements.len(),
            cfg.repetitions,
            cfg.seconds
        );
        let m = webserver::measure(cfg, &stop)?;
        for line in &m.changed {
            eprintln!("changed: {line}");
        }
        self.write_files(&m)?;
        if self.json {
            json_out(&m)
        } else {
            out(&render(&m))
        }
    }
}

/// `-o`: the profile's machine loads, and a placement keeps the server and the load generator
/// apart; the file can be written.
fn profile(
    path: PathBuf,
    machine: String,
    cfg: &ServerConfig,
    topo: &Topology,
) -> Result<(PathBuf, String, Option<u32>)> {
    smtsched_model::load_machine(&machine, &[])
        .map_err(|e| bad_input(format!("--profile-machine: {e}")))?;
    if base_placement(&cfg.placements).is_none() {
        return Err(bad_input(
            "-o: no placement keeps the server and the load generator on different CPUs \
             (with the softirq on theirs), so their CPU time cannot be told apart; add \
             one, e.g. --placement table",
        ));
    }
    check_outputs([Some(path.as_path())])?;
    let first = cfg.placements[0].all_cpus().iter().min().unwrap_or(0);
    let sibling = topo.siblings_of(first).iter().find(|&s| s != first);
    Ok((path, machine, sibling))
}

impl ServerPlan {
    fn write_files(&self, m: &ServerMeasurement) -> Result<()> {
        if let Some(p) = &self.csv {
            write_file(p, csv(m).as_bytes())?;
        }
        if let Some((p, machine, sibling)) = &self.profile {
            let text = experiment_toml(m, machine, *sibling, self.config.connections)?;
            write_file(p, text.as_bytes())?;
        }
        if let Some(p) = &self.svg {
            let title = format!(
                "{}, {}-byte file: throughput and p99 latency per placement ({})",
                m.server.binary(),
                m.file_bytes,
                if repetitions(m) > 1 {
                    "mean ± sd"
                } else {
                    "one repetition, no spread"
                }
            );
            let svg = smtsched_report::bars::placement_svg(&svg_rows(m), &title)
                .map_err(|e| anyhow::anyhow!("drawing {}: {e}", p.display()))?;
            write_file(p, svg.as_bytes())?;
        }
        Ok(())
    }
}

fn config(a: &ServerArgs, topo: &Topology) -> Result<ServerConfig> {
    let online: CpuSet = topo.online.clone();
    let cpus: Vec<u32> = match &a.cpus {
        Some(set) => {
            if let Some(c) = set.iter().find(|c| !online.contains(*c)) {
                return Err(bad_input(format!(
                    "--cpus {:?}: CPU {c} is not online on this machine",
                    set.to_string()
                )));
            }
            set.iter().collect()
        }
        None => online.iter().collect(),
    };
    let mut placements = Vec::new();
    for p in &a.placement {
        if p == "table" {
            let sibling = cpus
                .first()
                .and_then(|&c| topo.siblings_of(c).iter().find(|&s| s != c));
            placements.extend(Placement::table_5_1(&cpus, sibling)?);
        } else {
            placements.push(Placement::parse(p, &online)?);
        }
    }
    // Results are reported by placement name: two of one name would be merged.
    let names: Vec<&str> = placements.iter().map(|p| p.name.as_str()).collect();
    if let Some((_, name)) = smtsched_model::first_repeat(&names) {
        return Err(bad_input(format!(
            "--placement: two placements are named {name} (their results would be merged)"
        )));
    }
    Ok(ServerConfig {
        server: match a.server {
            ServerChoice::Nginx => ServerKind::Nginx,
            ServerChoice::Lighttpd => ServerKind::Lighttpd,
        },
        server_binary: a.server_binary.clone(),
        workers: a.workers,
        file_bytes: a.file_bytes,
        port: a.port,
        placements,
        rate: a.rate.unwrap_or(RatePlan::Closed),
        connections: a.connections,
        seconds: a.seconds,
        repetitions: a.repetitions,
        state_dir: a
            .state_dir
            .clone()
            .unwrap_or_else(smtsched_host::rundir::default_state_dir),
    })
}

/// Mean and sd of `f` over the repetitions of (placement, point label).
fn stat(
    m: &ServerMeasurement,
    placement: &str,
    label: &str,
    f: impl Fn(&webserver::Point) -> Option<f64>,
) -> Option<(f64, Option<f64>)> {
    let v: Vec<f64> = m
        .runs
        .iter()
        .filter(|r| r.placement.name == placement)
        .filter_map(|r| r.points.iter().find(|p| p.label == label))
        .map(&f)
        .collect::<Option<_>>()?;
    // One value has no spread (not a spread of 0).
    (!v.is_empty()).then(|| {
        let (mean, sd) = mean_sd(&v);
        (mean, (v.len() > 1).then_some(sd))
    })
}

fn labels(m: &ServerMeasurement) -> (Vec<String>, Vec<String>) {
    let mut placements: Vec<String> = Vec::new();
    let mut points: Vec<String> = Vec::new();
    for r in &m.runs {
        if !placements.contains(&r.placement.name) {
            placements.push(r.placement.name.clone());
        }
        for p in &r.points {
            if !points.contains(&p.label) {
                points.push(p.label.clone());
            }
        }
    }
    (placements, points)
}

/// How many repetitions of each placement ran.
fn repetitions(m: &ServerMeasurement) -> u32 {
    m.runs
        .iter()
        .map(|r| r.repetition)
        .max()
        .map_or(0, |r| r + 1)
}

fn render(m: &ServerMeasurement) -> String {
    let (placements, points) = labels(m);
    let reps = repetitions(m);
    // A value without a spread (one repetition) is shown alone, not "± 0".
    let spread =
        |sd: Option<f64>, digits: usize| sd.map_or(String::new(), |sd| format!(" ± {sd:.digits$}"));
    let pm = |v: Option<(f64, Option<f64>)>, digits: usize| {
        v.map_or("unsupported".into(), |(mean, sd)| {
            format!("{mean:.digits$}{}", spread(sd, digits))
        })
    };
    let mut t = Table::new([
        "placement",
        "load",
        "req/s",
        "Mb/s",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "errors",
        "server user µs",
        "server sys µs",
        "softirq µs",
        "kernel",
        "syscalls",
        "ctx sw",
    ]);
    for pl in &placements {
        for label in &points {
            let s = |f: &dyn Fn(&webserver::Point) -> Option<f64>| stat(m, pl, label, f);
            if s(&|p| Some(p.result.requests_per_s)).is_none() {
                continue;
            }
            t.row([
                pl.clone(),
                label.clone(),
                pm(s(&|p| Some(p.result.requests_per_s)), 0),
                pm(s(&|p| Some(p.result.megabits_per_s)), 0),
                pm(s(&|p| Some(p.result.p50_ms)), 3),
                pm(s(&|p| Some(p.result.p99_ms)), 3),
                pm(s(&|p| Some(p.result.p999_ms)), 3),
                pm(s(&|p| Some(p.result.errors as f64)), 0),
                pm(s(&|p| Some(p.per_request.server_user_us)), 1),
                pm(s(&|p| Some(p.per_request.server_system_us)), 1),
                pm(s(&|p| Some(p.per_request.softirq_us)), 1),
                pm(s(&|p| Some(p.per_request.server_kernel_share)), 2),
                pm(s(&|p| p.per_request.syscalls), 1),
                pm(s(&|p| Some(p.per_request.context_switches)), 3),
            ]);
        }
    }
    let summary = if reps > 1 {
        format!("{reps} repetitions; mean ± sd")
    } else {
        "1 repetition, so no spread (--repetitions 2 or more gives mean ± sd)".to_string()
    };
    let mut text = format!(
        "{} serving a {}-byte file over loopback, {} s per load run, {summary}\n\n",
        m.server.binary(),
        m.file_bytes,
        m.seconds_per_point
    );
    text += "placements: ";
    let mut seen = Vec::new();
    for r in &m.runs {
        if !seen.contains(&r.placement.name) {
            seen.push(r.placement.name.clone());
            text += &format!(
                "{} (server {} x{} workers, softirq {}, client {})  ",
                r.placement.name,
                r.placement.server,
                r.workers,
                r.placement.softirq,
                r.placement.client
            );
        }
    }
    text += "\n\n";
    text += &t.render();
    text += "\nper request: server user/system CPU time (µs), softirq+irq time of the placement's CPUs \
             (µs), the server's kernel share, system calls and context switches of the server processes\n";
    for (e, st) in &m.events {
        match st {
            s if !s.is_supported() => text += &format!("{e}: {st}\n"),
            _ if e.is_hardware() => {
                for pl in &placements {
                    for label in &points {
                        if let Some((mean, sd)) =
                            stat(m, pl, label, |p| p.per_request.hardware.get(e).copied())
                        {
                            text += &format!(
                                "{pl} {label}: {e} per request {mean:.0}{}\n",
                                spread(sd, 0)
                            );
                        }
                    }
                }
            }
            _ => {}
        }
    }
    text
}

fn csv(m: &ServerMeasurement) -> String {
    const HEADER: [&str; 21] = [
        "placement",
        "repetition",
        "load",
        "rate_per_s",
        "connections",
        "seconds",
        "responses",
        "errors",
        "requests_per_s",
        "megabits_per_s",
        "p50_ms",
        "p90_ms",
        "p99_ms",
        "p999_ms",
        "server_user_us",
        "server_system_us",
        "softirq_us",
        "busy_us",
        "server_kernel_share",
        "syscalls",
        "context_switches",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for r in &m.runs {
        for p in &r.points {
            let (rate, conns) = match p.load {
                webserver::load::Load::Closed { connections } => (String::new(), connections),
                webserver::load::Load::Open {
                    rate_per_s,
                    connections,
                } => (format!("{rate_per_s}"), connections),
            };
            let (res, q) = (&p.result, &p.per_request);
            let mut row = vec![
                r.placement.name.clone(),
                r.repetition.to_string(),
                p.label.clone(),
                rate,
                conns.to_string(),
            ];
            row.extend(
                [
                    res.seconds,
                    res.responses as f64,
                    res.errors as f64,
                    res.requests_per_s,
                    res.megabits_per_s,
                    res.p50_ms,
                    res.p90_ms,
                    res.p99_ms,
                    res.p999_ms,
                    q.server_user_us,
                    q.server_system_us,
                    q.softirq_us,
                    q.busy_us,
                    q.server_kernel_share,
                ]
                .map(|v| v.to_string()),
            );
            row.push(q.syscalls.map_or(String::new(), |v| v.to_string()));
            row.push(q.context_switches.to_string());
            rows.push(row);
        }
    }
    smtsched_report::csv::csv_text(&[], &HEADER, rows)
}

/// Per placement: saturation (or the only) throughput, and p99 at 80% of it (or the only).
fn svg_rows(m: &ServerMeasurement) -> Vec<smtsched_report::bars::PlacementBar> {
    let (placements, points) = labels(m);
    let through = if points.iter().any(|l| l == "saturation") {
        "saturation"
    } else {
        points[0].as_str()
    };
    let latency = if points.iter().any(|l| l == "80%") {
        "80%"
    } else {
        through
    };
    placements
        .iter()
        .map(|pl| smtsched_report::bars::PlacementBar {
            name: pl.clone(),
            throughput: stat(m, pl, through, |p| Some(p.result.requests_per_s))
                .unwrap_or((0.0, None)),
            p99_ms: stat(m, pl, latency, |p| Some(p.result.p99_ms)).unwrap_or((0.0, None)),
            throughput_label: format!("requests/s ({through})"),
            latency_label: format!("p99 latency, ms ({latency})"),
        })
        .collect()
}
