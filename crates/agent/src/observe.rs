//! What the agent shows while it runs: a status snapshot (JSON over a Unix socket, `smtsched
//! agent status`), Prometheus metrics over HTTP on a loopback port, and the systemd readiness
//! notification. Both servers run on threads of their own and only read the latest snapshot, so
//! a slow client never delays a period.

use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One managed thread as the last period left it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    pub pid: i32,
    pub tid: i32,
    pub start_time: u64,
    pub label: String,
    pub runnable: bool,
    /// CPU time and run delay in the last period, as fractions of the period.
    pub cpu_share: f64,
    pub wait_share: f64,
    pub last_cpu: Option<u32>,
    pub pr_estimate: Option<f64>,
    /// What it has now (applied, or in a dry run what would be): affinity (`None` = its own),
    /// load weight, core group, and whether it is in the gang turn.
    pub affinity: Option<String>,
    pub weight: u32,
    pub core_group: Option<u32>,
    pub in_gang: bool,
}

/// The agent as `smtsched agent status` shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub agent_pid: i32,
    pub policy: String,
    pub period_ms: f64,
    pub dry_run: bool,
    pub estimator: String,
    pub weights: String,
    pub core_scheduling: String,
    pub counters: String,
    pub periods: u64,
    pub uptime_s: f64,
    /// The agent's own CPU time since it started, and as a fraction of one CPU.
    pub agent_cpu_s: f64,
    pub agent_cpu_fraction: f64,
    /// Changes made to threads (affinity, weight, core group) since the start.
    pub changes: u64,
    pub errors: u64,
    /// The latest errors (at most ten), newest last.
    pub recent_errors: Vec<String>,
    pub tasks: Vec<TaskStatus>,
}

pub type SharedStatus = Arc<Mutex<Status>>;

/// Serves the status as one JSON document per connection on a Unix socket (mode 0600, removed
/// when dropped).
pub struct StatusServer {
    path: PathBuf,
}

impl StatusServer {
    pub fn start(path: &Path, status: SharedStatus) -> std::io::Result<StatusServer> {
        let _ = std::fs::remove_file(path);
        let listener = std::os::unix::net::UnixListener::bind(path)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        std::thread::Builder::new()
            .name("status".into())
            .spawn(move || {
                for mut conn in listener.incoming().flatten() {
                    let json = {
                        let s = status.lock().expect("status lock");
                        serde_json::to_vec(&*s).expect("status serialises")
                    };
                    let _ = conn.set_write_timeout(Some(Duration::from_secs(2)));
                    let _ = conn.write_all(&json).and_then(|_| conn.write_all(b"\n"));
                }
            })?;
        Ok(StatusServer {
            path: path.to_path_buf(),
        })
    }
}

impl Drop for StatusServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Reads the status of the agent listening on `path`.
pub fn read_status(path: &Path) -> std::io::Result<Status> {
    let mut conn = std::os::unix::net::UnixStream::connect(path)?;
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut text = String::new();
    conn.read_to_string(&mut text)?;
    serde_json::from_str(&text).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The metrics of a status in the OpenMetrics text format.
pub fn render_metrics(s: &Status) -> String {
    use prometheus_client::encoding::EncodeLabelSet;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::registry::Registry;
    use std::sync::atomic::AtomicU64;

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct TaskLabels {
        tid: String,
        pid: String,
        label: String,
    }
    type FloatGauge = Gauge<f64, AtomicU64>;
    let mut r = Registry::with_prefix("smtsched_agent");
    let gauge = |r: &mut Registry, name: &str, help: &str, v: f64| {
        let g = FloatGauge::default();
        g.set(v);
        r.register(name, help, g);
    };
    let counter = |r: &mut Registry, name: &str, help: &str, v: u64| {
        let c: Counter<u64> = Counter::default();
        c.inc_by(v);
        r.register(name, help, c);
    };
    counter(&mut r, "periods", "Periods sampled and decided", s.periods);
    counter(
        &mut r,
        "changes",
        "Changes made to threads (affinity, weight, core group)",
        s.changes,
    );
    counter(&mut r, "errors", "Errors applying decisions", s.errors);
    gauge(
        &mut r,
        "cpu_seconds",
        "The agent's own CPU time",
        s.agent_cpu_s,
    );
    gauge(
        &mut r,
        "cpu_fraction",
        "The agent's own CPU time as a fraction of one CPU",
        s.agent_cpu_fraction,
    );
    gauge(&mut r, "tasks", "Managed threads", s.tasks.len() as f64);
    let fam =
        |r: &mut Registry, name: &str, help: &str, value: &dyn Fn(&TaskStatus) -> Option<f64>| {
            let f: Family<TaskLabels, FloatGauge> = Family::default();
            for t in &s.tasks {
                if let Some(v) = value(t) {
                    let l = TaskLabels {
                        tid: t.tid.to_string(),
                        pid: t.pid.to_string(),
                        label: t.label.clone(),
                    };
                    f.get_or_create(&l).set(v);
                }
            }
            r.register(name, help, f);
        };
    fam(
        &mut r,
        "task_cpu_share",
        "CPU time in the last period as a fraction of it",
        &|t| Some(t.cpu_share),
    );
    fam(
        &mut r,
        "task_wait_share",
        "Run delay in the last period as a fraction of it",
        &|t| Some(t.wait_share),
    );
    fam(
        &mut r,
        "task_pr_estimate",
        "Performance-ratio estimate for the last period",
        &|t| t.pr_estimate,
    );
    fam(
        &mut r,
        "task_weight",
        "Load weight applied (nice 0 = 1024)",
        &|t| Some(t.weight as f64),
    );
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &r).expect("writing to a String");
    out
}

/// Serves `GET /metrics` on `addr` from the latest status.
pub fn start_metrics(
    addr: std::net::SocketAddr,
    status: SharedStatus,
) -> std::io::Result<std::net::SocketAddr> {
    let listener = std::net::TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = conn.set_write_timeout(Some(Duration::from_secs(2)));
                let line = read_request_head(&mut conn);
                let reply = if line.starts_with("GET /metrics ") || line.starts_with("GET /metrics?") {
                    let body = render_metrics(&status.lock().expect("status lock"));
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                } else {
                    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
                };
                let _ = conn.write_all(reply.as_bytes());
            }
        })?;
    Ok(bound)
}

/// The head of an HTTP request (up to its blank line, at most 8 KiB): read whole, so that
/// closing the connection after the reply does not reset it under the client.
fn read_request_head(conn: &mut std::net::TcpStream) -> String {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while head.len() < 8192 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Tells systemd (a `Type=notify` unit) a state such as `READY=1`, if it started us.
pub fn sd_notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let Ok(sock) = std::os::unix::net::UnixDatagram::unbound() else {
        return;
    };
    let bytes = path.as_encoded_bytes();
    if let Some(name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        if let Ok(addr) = std::os::unix::net::SocketAddr::from_abstract_name(name) {
            let _ = sock.send_to_addr(state.as_bytes(), &addr);
        }
    } else {
        let _ = sock.send_to(state.as_bytes(), Path::new(&path));
    }
}
