//! Real load from `oha` (a maintained HTTP load generator): a closed loop of N connections, or
//! an open loop at a set rate whose latencies are measured from when each request was due, not
//! from when it was sent (`--latency-correction`: no coordinated omission).

use crate::error::{HostError, Result};
use crate::procgroup::{spawn_pinned, stop_group};
use crate::shutdown::Shutdown;
use serde::{Deserialize, Serialize};
use smtsched_model::CpuSet;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How requests are sent.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "loop", rename_all = "lowercase")]
pub enum Load {
    /// N connections, each sending its next request when the last response arrives.
    Closed { connections: u32 },
    /// Requests due at a fixed rate over `connections` connections.
    Open { rate_per_s: f64, connections: u32 },
}

/// What the load generator saw.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadResult {
    pub seconds: f64,
    pub responses: u64,
    pub errors: u64,
    pub requests_per_s: f64,
    pub megabits_per_s: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    /// Error kinds and counts as oha names them.
    pub error_kinds: BTreeMap<String, u64>,
}

/// The `oha` executable: on PATH or in ~/.cargo/bin.
pub fn find_oha() -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    std::env::split_paths(&path)
        .chain(home.map(|h| h.join(".cargo/bin")))
        .map(|d| d.join("oha"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            HostError::bad(
                "no `oha` load generator on PATH or in ~/.cargo/bin (install it with \
                 `cargo install oha --locked`)",
            )
        })
}

/// The parts of oha's JSON report used here.
#[derive(Deserialize)]
struct OhaReport {
    summary: OhaSummary,
    #[serde(rename = "latencyPercentiles")]
    latency_percentiles: BTreeMap<String, Option<f64>>,
    #[serde(rename = "statusCodeDistribution")]
    status_codes: BTreeMap<String, u64>,
    #[serde(rename = "errorDistribution")]
    errors: BTreeMap<String, u64>,
}

#[derive(Deserialize)]
struct OhaSummary {
    total: f64,
    #[serde(rename = "totalData")]
    total_data: u64,
}

/// Runs `load` against `url` for `seconds` on `cpus`. A Ctrl-C or SIGTERM stops the generator
/// and returns `Interrupted`.
pub fn run(
    url: &str,
    load: Load,
    seconds: f64,
    cpus: &CpuSet,
    stop: &Shutdown,
    on_start: &mut dyn FnMut(i32) -> Result<()>,
) -> Result<LoadResult> {
    let oha = find_oha()?;
    let mut cmd = Command::new(&oha);
    cmd.args(["--no-tui", "--output-format", "json", "-w"])
        .arg("-z")
        .arg(format!("{}ms", (seconds * 1000.0).round() as u64));
    match load {
        Load::Closed { connections } => {
            cmd.arg("-c").arg(connections.to_string());
        }
        Load::Open {
            rate_per_s,
            connections,
        } => {
            cmd.arg("-c")
                .arg(connections.to_string())
                .arg("-q")
                .arg(format!("{rate_per_s}"))
                .arg("--latency-correction");
        }
    }
    cmd.arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn_pinned(&mut cmd, cpus)?;
    let pgid = child.id() as i32;
    if let Err(e) = on_start(pgid) {
        stop_group(&mut child, libc::SIGKILL, Duration::from_secs(2));
        return Err(e);
    }
    // Read the pipes on threads so a large report cannot block the child.
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let limit = Instant::now() + Duration::from_secs_f64(seconds + 30.0);
    let status = loop {
        if let Some(sig) = stop.requested() {
            let killed = stop_group(&mut child, libc::SIGKILL, Duration::from_secs(2));
            return Err(HostError::Interrupted {
                signal: sig,
                children: killed.max(1),
            });
        }
        if let Some(s) = child
            .try_wait()
            .map_err(|e| HostError::os("waiting for oha", e))?
        {
            break s;
        }
        if Instant::now() > limit {
            stop_group(&mut child, libc::SIGKILL, Duration::from_secs(2));
            return Err(HostError::Child(format!(
                "oha did not finish within {:.0} s of its {seconds} s run",
                seconds + 30.0
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (
        out_t.join().unwrap_or_default(),
        err_t.join().unwrap_or_default(),
    );
    if !status.success() {
        return Err(HostError::Child(format!(
            "oha failed ({status}): {}",
            stderr.lines().last().unwrap_or("no message")
        )));
    }
    parse_report(&stdout)
}

/// oha's JSON report as a [`LoadResult`]: responses are the 2xx ones; everything else (other
/// status codes, connection errors, aborted requests) counts as errors.
pub fn parse_report(json: &str) -> Result<LoadResult> {
    let r: OhaReport = serde_json::from_str(json)
        .map_err(|e| HostError::Child(format!("oha's JSON report: {e}")))?;
    let ok: u64 = r
        .status_codes
        .iter()
        .filter(|(code, _)| code.starts_with('2'))
        .map(|(_, n)| n)
        .sum();
    let bad_status: u64 = r
        .status_codes
        .iter()
        .filter(|(code, _)| !code.starts_with('2'))
        .map(|(_, n)| n)
        .sum();
    let mut error_kinds = r.errors.clone();
    for (code, n) in r.status_codes.iter().filter(|(c, _)| !c.starts_with('2')) {
        error_kinds.insert(format!("HTTP {code}"), *n);
    }
    let seconds = r.summary.total;
    let pct = |k: &str| -> f64 {
        r.latency_percentiles
            .get(k)
            .copied()
            .flatten()
            .map_or(f64::NAN, |s| s * 1e3)
    };
    Ok(LoadResult {
        seconds,
        responses: ok,
        errors: bad_status + r.errors.values().sum::<u64>(),
        requests_per_s: ok as f64 / seconds,
        megabits_per_s: r.summary.total_data as f64 * 8.0 / seconds / 1e6,
        p50_ms: pct("p50"),
        p90_ms: pct("p90"),
        p99_ms: pct("p99"),
        p999_ms: pct("p99.9"),
        error_kinds,
    })
}
