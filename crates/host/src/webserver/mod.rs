//! `smtsched measure server`: a real web server under real load on this machine, with the
//! thesis's Table 5.1 placements translated to its CPUs — where the server's workers run, where
//! the network receive softirq runs (loopback RPS) and where the load generator runs — and the
//! kernel work each request costs. Every process started is stopped and every setting changed is
//! restored, on success, error, Ctrl-C and SIGTERM; after a SIGKILL, by the next start.

pub mod account;
pub mod httpd;
pub mod load;
pub mod roles;
pub mod rps;

use crate::error::{HostError, Result};
use crate::leftovers as state;
use crate::perf::{Event, EventStatus};
use crate::shutdown::Shutdown;
use account::{CpuTime, GroupCounters, GroupTime};
use httpd::{Httpd, HttpdConfig, ServerKind};
use load::{Load, LoadResult};
use serde::Serialize;
use smtsched_model::CpuSet;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where each role runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Placement {
    pub name: String,
    pub server: CpuSet,
    /// The receive softirq (RPS mask of `lo`).
    pub softirq: CpuSet,
    pub client: CpuSet,
}

impl Placement {
    /// Table 5.1 on this machine's CPUs: A and B are the first CPU of `cpus` and its SMT sibling
    /// (else the next CPU); the load generator gets the other CPUs, or shares when there are
    /// none. UP: server and softirq on A; 1xHTP: server on A, softirq on B; 1x2: both on A and B.
    pub fn table_5_1(cpus: &[u32], sibling_of_first: Option<u32>) -> Result<Vec<Placement>> {
        if cpus.len() < 2 {
            return Err(HostError::bad(format!(
                "--cpus: the placements need at least two CPUs, got {}",
                cpus.len()
            )));
        }
        let a = cpus[0];
        let b = sibling_of_first
            .filter(|s| cpus.contains(s))
            .unwrap_or(cpus[1]);
        let set = |l: &[u32]| l.iter().copied().collect::<CpuSet>();
        let rest: Vec<u32> = cpus.iter().copied().filter(|&c| c != a && c != b).collect();
        let client = |fallback: &[u32]| {
            if rest.is_empty() {
                set(fallback)
            } else {
                set(&rest)
            }
        };
        Ok(vec![
            Placement {
                name: "UP".into(),
                server: set(&[a]),
                softirq: set(&[a]),
                client: client(&[b]),
            },
            Placement {
                name: "1xHTP".into(),
                server: set(&[a]),
                softirq: set(&[b]),
                client: client(&[b]),
            },
            Placement {
                name: "1x2".into(),
                server: set(&[a, b]),
                softirq: set(&[a, b]),
                client: client(&[a, b]),
            },
        ])
    }

    /// `NAME:server=LIST,softirq=LIST,client=LIST` (kernel CPU lists; `;` may separate too).
    pub fn parse(text: &str, online: &CpuSet) -> Result<Placement> {
        let bad = |why: String| HostError::bad(format!("--placement {text:?}: {why}"));
        let (name, rest) = text
            .split_once(':')
            .ok_or_else(|| bad("expected NAME:server=LIST,softirq=LIST,client=LIST".into()))?;
        let mut roles: [Option<CpuSet>; 3] = [None, None, None];
        for part in rest.split([';', ' ']).filter(|p| !p.is_empty()) {
            // A role's list may itself hold commas: split on the role names.
            for (key, value) in split_roles(part) {
                let i = ["server", "softirq", "client"]
                    .iter()
                    .position(|k| *k == key)
                    .ok_or_else(|| {
                        bad(format!("unknown role {key:?} (server, softirq, client)"))
                    })?;
                let set = CpuSet::parse(value).map_err(|e| bad(format!("{key}={value}: {e}")))?;
                if set.is_empty() {
                    return Err(bad(format!("{key}={value}: names no CPU")));
                }
                if let Some(c) = set.iter().find(|c| !online.contains(*c)) {
                    return Err(bad(format!("{key}: CPU {c} is not online on this machine")));
                }
                roles[i] = Some(set);
            }
        }
        let [Some(server), Some(softirq), Some(client)] = roles else {
            return Err(bad("give server=, softirq= and client=".into()));
        };
        Ok(Placement {
            name: name.to_string(),
            server,
            softirq,
            client,
        })
    }

    pub fn all_cpus(&self) -> CpuSet {
        self.server.union(&self.softirq).union(&self.client)
    }
}

/// `server=0,softirq=1,client=1` into (role, list) pairs.
fn split_roles(part: &str) -> Vec<(&str, &str)> {
    let keys: Vec<usize> = part
        .match_indices('=')
        .map(|(i, _)| part[..i].rfind(',').map_or(0, |c| c + 1))
        .collect();
    keys.iter()
        .enumerate()
        .map(|(k, &start)| {
            let end = keys.get(k + 1).map_or(part.len(), |&n| n - 1);
            let (key, value) = part[start..end].split_once('=').unwrap_or(("", ""));
            (key, value)
        })
        .collect()
}

/// How to find the rate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum RatePlan {
    /// A closed loop only.
    Closed,
    /// One open loop at this rate.
    Fixed(f64),
    /// A closed loop finds saturation; open loops at 50%, 80% and 95% of it follow.
    Auto,
}

impl std::str::FromStr for RatePlan {
    type Err = String;
    /// `auto`, or requests per second of one open loop (checked by [`validate`]).
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(RatePlan::Auto),
            _ => s
                .parse()
                .map(RatePlan::Fixed)
                .map_err(|_| format!("{s:?}: give requests per second or `auto`")),
        }
    }
}

/// The whole measurement.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub server: ServerKind,
    /// The server's executable (default: found on PATH or in /usr/sbin).
    pub server_binary: Option<PathBuf>,
    pub workers: Option<u32>,
    pub file_bytes: u64,
    pub port: Option<u16>,
    pub placements: Vec<Placement>,
    pub rate: RatePlan,
    pub connections: u32,
    pub seconds: f64,
    pub repetitions: u32,
    pub state_dir: PathBuf,
}

/// Events counted on the server processes: system calls, and the hardware events a PMU offers.
const COUNTED: &[Event] = &[
    Event::Syscalls,
    Event::Cycles,
    Event::Instructions,
    Event::LlcMisses,
];

/// Kernel work per response, from the run's accounting.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PerRequest {
    /// The server processes' user and system CPU time per response, µs.
    pub server_user_us: f64,
    pub server_system_us: f64,
    /// Softirq and hard-irq time of the placement's CPUs per response, µs (all traffic on them:
    /// the load generator's too).
    pub softirq_us: f64,
    /// The placement's CPUs' busy time per response, µs (server, load generator, kernel).
    pub busy_us: f64,
    /// The server's share of its CPU time in the kernel.
    pub server_kernel_share: f64,
    pub context_switches: f64,
    /// System calls of the server processes per response (`None`: unsupported, see status).
    pub syscalls: Option<f64>,
    /// Hardware events of the server processes per response, where a PMU counts them.
    pub hardware: std::collections::BTreeMap<Event, f64>,
    /// Each CPU of the placement's time per response (everything on it, µs): what a server
    /// profile divides among the roles.
    pub cpus: std::collections::BTreeMap<u32, CpuUse>,
}

/// One CPU's time per response, µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CpuUse {
    pub user_us: f64,
    pub system_us: f64,
    /// Softirq and hard-irq time.
    pub softirq_us: f64,
}

/// One load run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// `saturation`, `50%`, `80%`, `95%`, `closed`, or `open`.
    pub label: String,
    pub load: Load,
    pub result: LoadResult,
    pub per_request: PerRequest,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlacementRun {
    pub placement: Placement,
    pub repetition: u32,
    pub workers: u32,
    pub points: Vec<Point>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ServerMeasurement {
    pub server: ServerKind,
    pub file_bytes: u64,
    pub seconds_per_point: f64,
    pub runs: Vec<PlacementRun>,
    /// Whether each counted event could be opened, with the kernel's reason if not.
    pub events: Vec<(Event, EventStatus)>,
    /// What the harness changed and put back, and what it cleaned up after a dead harness.
    pub changed: Vec<String>,
}

/// Runs every placement `repetitions` times.
pub fn measure(cfg: &ServerConfig, stop: &Shutdown) -> Result<ServerMeasurement> {
    validate(cfg)?;
    check_tools()?;
    let _lock = state::lock("measure-server")?;
    let mut changed = state::clean_up_after_dead(&cfg.state_dir);
    let rps = rps::probe(rps::LO_RPS)?;
    let mut st = state::StateFile::create(&cfg.state_dir, "server")?;
    st.add_setting(rps.clone())?;
    changed.push(format!(
        "{} set per placement, restored to {}",
        rps.path.display(),
        rps.original
    ));
    let result = measure_all(cfg, stop, &mut st, &rps);
    let restored = rps.restore();
    if restored.is_ok() {
        st.finish();
    }
    let (runs, events) = result?;
    restored?;
    Ok(ServerMeasurement {
        server: cfg.server,
        file_bytes: cfg.file_bytes,
        seconds_per_point: cfg.seconds,
        runs,
        events,
        changed,
    })
}

/// Checks what the user gave: the configuration, the server binary and that the port is free;
/// starts nothing. [`check_tools`] checks what the machine must have besides.
pub fn validate(cfg: &ServerConfig) -> Result<()> {
    // SPECweb96's largest class is 900 KB; a gigabyte is far above any web workload.
    if !(1..=1 << 30).contains(&cfg.file_bytes) {
        return Err(HostError::bad(format!(
            "--file-bytes {}: a file of 1 byte to 1 GiB",
            cfg.file_bytes
        )));
    }
    if let RatePlan::Fixed(r) = cfg.rate {
        if !(r > 0.0 && r.is_finite()) {
            return Err(HostError::bad(format!(
                "--rate {r}: give a positive number of requests per second, or auto"
            )));
        }
    }
    if cfg.connections == 0 {
        return Err(HostError::bad("--connections 0: at least one is needed"));
    }
    if !(cfg.seconds >= 0.5 && cfg.seconds <= 3600.0) {
        return Err(HostError::bad(format!(
            "--duration {}: must be 0.5 to 3600 seconds",
            cfg.seconds
        )));
    }
    cfg.server.find(cfg.server_binary.as_deref())?;
    httpd::free_port(cfg.port)?;
    Ok(())
}

/// Checks that the load generator is installed. Callers check it after every input, so that a
/// mistyped option is named whatever the machine lacks.
pub fn check_tools() -> Result<()> {
    load::find_oha().map(drop)
}

type Measured = (Vec<PlacementRun>, Vec<(Event, EventStatus)>);

fn measure_all(
    cfg: &ServerConfig,
    stop: &Shutdown,
    st: &mut state::StateFile,
    rps: &state::FileSetting,
) -> Result<Measured> {
    let mut runs = Vec::new();
    let mut events = Vec::new();
    for rep in 0..cfg.repetitions {
        for p in &cfg.placements {
            rps::steer(rps, &p.softirq)?;
            let (run, ev) = measure_placement(cfg, p, rep, stop, st)?;
            runs.push(run);
            events = ev;
        }
    }
    Ok((runs, events))
}

fn measure_placement(
    cfg: &ServerConfig,
    p: &Placement,
    repetition: u32,
    stop: &Shutdown,
    st: &mut state::StateFile,
) -> Result<(PlacementRun, Vec<(Event, EventStatus)>)> {
    let workers = cfg.workers.unwrap_or(p.server.len() as u32);
    let hc = HttpdConfig {
        kind: cfg.server,
        binary: cfg.server.find(cfg.server_binary.as_deref())?,
        workers,
        cpus: p.server.clone(),
        port: httpd::free_port(cfg.port)?,
        file_bytes: vec![cfg.file_bytes],
    };
    let mut server = Httpd::start(&hc)?;
    st.add_group(&format!("{} server", cfg.server.binary()), server.pid())?;
    let dir = server.dir().to_path_buf();
    st.add_dir(&dir)?;
    let url = server.url(cfg.file_bytes);
    let mut counters = GroupCounters::open(server.pid(), COUNTED);
    counters.enable();
    let mut points: Vec<Point> = Vec::new();
    let mut run_point = |label: &str, load: Load, st: &mut state::StateFile| -> Result<Point> {
        let cpus = p.all_cpus();
        let read = || CpuTime::read_each(&cpus).map_err(|e| HostError::os("reading /proc/stat", e));
        let each0 = read()?;
        let g0 = GroupTime::read(server.pid());
        let c0 = counters.totals();
        let mut oha = 0;
        let result = load::run(&url, load, cfg.seconds, &p.client, stop, &mut |pgid| {
            oha = pgid;
            st.add_group("oha load generator", pgid)
        })?;
        let c1 = counters.totals();
        let g = GroupTime::read(server.pid()).since(&g0);
        let each: BTreeMap<u32, CpuTime> = read()?
            .iter()
            .filter_map(|(c, t)| Some((*c, t.since(each0.get(c)?))))
            .collect();
        let t = each.values().fold(CpuTime::default(), |a, b| a.plus(b));
        st.remove_group(oha)?;
        let n = result.responses.max(1) as f64;
        let per_request = |e: Event| {
            let at = |c: &[(Event, f64)]| c.iter().find(|(x, _)| *x == e).map(|(_, v)| *v);
            Some((at(&c1)? - at(&c0)?) / n)
        };
        let syscalls = per_request(Event::Syscalls);
        let hardware = COUNTED
            .iter()
            .filter(|e| e.is_hardware())
            .filter_map(|&e| Some((e, per_request(e)?)))
            .collect();
        Ok(Point {
            label: label.into(),
            load,
            per_request: PerRequest {
                server_user_us: g.user_s / n * 1e6,
                server_system_us: g.system_s / n * 1e6,
                softirq_us: (t.softirq_s + t.irq_s) / n * 1e6,
                busy_us: (t.user_s + t.system_s + t.irq_s + t.softirq_s) / n * 1e6,
                server_kernel_share: g.system_s / (g.user_s + g.system_s).max(1e-12),
                context_switches: g.context_switches as f64 / n,
                syscalls,
                hardware,
                cpus: each
                    .iter()
                    .map(|(c, t)| {
                        let us = |s: f64| s / n * 1e6;
                        let u = CpuUse {
                            user_us: us(t.user_s),
                            system_us: us(t.system_s),
                            softirq_us: us(t.softirq_s + t.irq_s),
                        };
                        (*c, u)
                    })
                    .collect(),
            },
            result,
        })
    };
    let c = cfg.connections;
    let outcome = (|| -> Result<()> {
        match cfg.rate {
            RatePlan::Closed => {
                points.push(run_point("closed", Load::Closed { connections: c }, st)?)
            }
            RatePlan::Fixed(r) => {
                let load = Load::Open {
                    rate_per_s: r,
                    connections: c,
                };
                points.push(run_point("open", load, st)?)
            }
            RatePlan::Auto => {
                let sat = run_point("saturation", Load::Closed { connections: c }, st)?;
                let rate = sat.result.requests_per_s;
                points.push(sat);
                for f in [0.5, 0.8, 0.95] {
                    let load = Load::Open {
                        rate_per_s: (rate * f).max(1.0),
                        connections: c,
                    };
                    points.push(run_point(&format!("{:.0}%", f * 100.0), load, st)?);
                }
            }
        }
        Ok(())
    })();
    let status = counters.status.clone();
    drop(counters);
    server.stop();
    st.remove_group(server.pid())?;
    drop(server);
    st.remove_dir(&dir)?;
    outcome?;
    Ok((
        PlacementRun {
            placement: p.clone(),
            repetition,
            workers,
            points,
        },
        status,
    ))
}
