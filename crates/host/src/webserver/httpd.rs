//! A real web server from the distribution's packages, configured by the harness in a
//! temporary directory of its own: workers, a port on 127.0.0.1, no access log, and static
//! files of chosen sizes. Started pinned, checked to answer, always stopped.

use crate::error::{HostError, Result};
use crate::procgroup::{spawn_pinned, stop_group};
use serde::{Deserialize, Serialize};
use smtsched_model::CpuSet;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    Nginx,
    Lighttpd,
}

impl ServerKind {
    pub fn binary(self) -> &'static str {
        match self {
            ServerKind::Nginx => "nginx",
            ServerKind::Lighttpd => "lighttpd",
        }
    }

    /// The Debian package that installs it.
    pub fn package(self) -> &'static str {
        match self {
            ServerKind::Nginx => "nginx-light (or nginx)",
            ServerKind::Lighttpd => "lighttpd",
        }
    }

    /// The server's executable: `given`, or on PATH or in /usr/sbin.
    pub fn find(self, given: Option<&Path>) -> Result<PathBuf> {
        let name = self.binary();
        if let Some(p) = given {
            return if p.is_file() {
                Ok(p.to_path_buf())
            } else {
                Err(HostError::bad(format!(
                    "--server-binary {}: no such file (install the Debian package {})",
                    p.display(),
                    self.package()
                )))
            };
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
            .map(|d| d.join(name))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                HostError::bad(format!(
                    "--server {name}: no `{name}` executable on PATH or in /usr/sbin \
                     (install the Debian package {})",
                    self.package()
                ))
            })
    }
}

/// The static file served for `bytes`: `/f<bytes>`.
pub fn file_path(bytes: u64) -> String {
    format!("/f{bytes}")
}

/// A port on 127.0.0.1 nobody listens on now; `wanted` is checked, not chosen.
pub fn free_port(wanted: Option<u16>) -> Result<u16> {
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, wanted.unwrap_or(0));
    match TcpListener::bind(addr) {
        Ok(l) => Ok(l
            .local_addr()
            .map_err(|e| HostError::os("reading a bound port", e))?
            .port()),
        Err(e) => Err(HostError::bad(format!(
            "--port {}: cannot listen on 127.0.0.1:{} ({e}); another program uses it",
            wanted.unwrap_or(0),
            wanted.unwrap_or(0)
        ))),
    }
}

/// A running server.
pub struct Httpd {
    pub kind: ServerKind,
    pub port: u16,
    child: Child,
    dir: tempfile::TempDir,
}

/// What to start.
#[derive(Clone, Debug)]
pub struct HttpdConfig {
    pub kind: ServerKind,
    pub binary: PathBuf,
    pub workers: u32,
    pub cpus: CpuSet,
    pub port: u16,
    pub file_bytes: Vec<u64>,
}

impl Httpd {
    /// Writes the configuration and files, starts the server and waits until it answers.
    pub fn start(cfg: &HttpdConfig) -> Result<Httpd> {
        let binary = &cfg.binary;
        let dir = tempfile::Builder::new()
            .prefix("smtsched-server-")
            .tempdir()
            .map_err(|e| HostError::os("creating the server's directory", e))?;
        let root = dir.path();
        write_site(root, &cfg.file_bytes)?;
        let mut cmd = Command::new(binary);
        match cfg.kind {
            ServerKind::Nginx => {
                write(root, "nginx.conf", &nginx_conf(root, cfg))?;
                cmd.arg("-p")
                    .arg(root)
                    .arg("-c")
                    .arg(root.join("nginx.conf"));
                cmd.arg("-e").arg(root.join("error.log"));
            }
            ServerKind::Lighttpd => {
                write(root, "lighttpd.conf", &lighttpd_conf(root, cfg))?;
                cmd.arg("-D").arg("-f").arg(root.join("lighttpd.conf"));
            }
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(root.join("stderr.log"))
                    .map_err(|e| HostError::os("creating the server's log", e))?,
            ));
        let child = spawn_pinned(&mut cmd, &cfg.cpus)?;
        let mut httpd = Httpd {
            kind: cfg.kind,
            port: cfg.port,
            child,
            dir,
        };
        if let Err(e) = httpd.wait_ready(cfg.file_bytes[0], Duration::from_secs(10)) {
            httpd.stop();
            return Err(e);
        }
        Ok(httpd)
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The directory holding its configuration and files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn url(&self, bytes: u64) -> String {
        format!("http://127.0.0.1:{}{}", self.port, file_path(bytes))
    }

    /// Polls until a GET of the first file returns 200 with its length, or the server exits.
    fn wait_ready(&mut self, bytes: u64, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().ok().flatten() {
                return Err(HostError::Child(format!(
                    "{} exited during start-up ({status}): {}",
                    self.kind.binary(),
                    self.log_tail()
                )));
            }
            match get(self.port, &file_path(bytes)) {
                Ok((200, len)) if len == bytes => return Ok(()),
                Ok((code, len)) if Instant::now() >= deadline => {
                    return Err(HostError::Child(format!(
                        "{} answered {code} with {len} bytes for {}, not 200 with {bytes}",
                        self.kind.binary(),
                        file_path(bytes)
                    )))
                }
                Err(e) if Instant::now() >= deadline => {
                    return Err(HostError::Child(format!(
                        "{} did not answer on 127.0.0.1:{} within {} s ({e}): {}",
                        self.kind.binary(),
                        self.port,
                        limit.as_secs(),
                        self.log_tail()
                    )))
                }
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// The last line the server logged, for error messages.
    fn log_tail(&self) -> String {
        ["error.log", "stderr.log"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(self.dir.path().join(f)).ok())
            .flat_map(|t| t.lines().map(str::to_string).collect::<Vec<_>>())
            .last()
            .unwrap_or_else(|| "(nothing logged)".into())
    }

    /// Stops the server and every worker; returns how many had to be killed.
    pub fn stop(&mut self) -> usize {
        stop_group(&mut self.child, libc::SIGTERM, Duration::from_secs(5))
    }
}

impl Drop for Httpd {
    fn drop(&mut self) {
        self.stop();
    }
}

fn write(dir: &Path, name: &str, text: &str) -> Result<()> {
    std::fs::write(dir.join(name), text)
        .map_err(|e| HostError::os(format!("writing {}", dir.join(name).display()), e))
}

/// The document root with one file per size; readable by the unprivileged workers.
fn write_site(root: &Path, sizes: &[u64]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let www = root.join("www");
    std::fs::create_dir_all(www.join("tmp"))
        .map_err(|e| HostError::os(format!("creating {}", www.display()), e))?;
    for d in [root, &www] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| HostError::os(format!("chmod {}", d.display()), e))?;
    }
    for &bytes in sizes {
        let path = www.join(&file_path(bytes)[1..]);
        write_body(&path, bytes)
            .map_err(|e| HostError::os(format!("writing {}", path.display()), e))?;
    }
    Ok(())
}

/// Writes a file of `bytes` bytes, printable and not all one byte (no server or network path
/// gets an easy case), a piece at a time: its size is not bounded by memory.
fn write_body(path: &Path, bytes: u64) -> std::io::Result<()> {
    use std::io::Write;
    // 23 x 2048 bytes: the pattern repeats whole in every piece.
    let piece: Vec<u8> = (0..23 * 2048u64).map(|i| b'a' + (i % 23) as u8).collect();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut left = bytes;
    while left > 0 {
        let n = left.min(piece.len() as u64) as usize;
        f.write_all(&piece[..n])?;
        left -= n as u64;
    }
    f.flush()
}

fn nginx_conf(root: &Path, cfg: &HttpdConfig) -> String {
    let r = root.display();
    let user = if unsafe { libc::geteuid() } == 0 {
        "user nobody nogroup;\n"
    } else {
        ""
    };
    format!(
        "{user}worker_processes {w};\ndaemon off;\nmaster_process on;\npid {r}/nginx.pid;\n\
         error_log {r}/error.log warn;\nevents {{ worker_connections 16384; }}\n\
         http {{\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n  keepalive_requests 1000000;\n\
         \x20 keepalive_timeout 65;\n  default_type application/octet-stream;\n\
         \x20 client_body_temp_path {r}/www/tmp;\n  proxy_temp_path {r}/www/tmp;\n\
         \x20 fastcgi_temp_path {r}/www/tmp;\n  uwsgi_temp_path {r}/www/tmp;\n\
         \x20 scgi_temp_path {r}/www/tmp;\n\
         \x20 server {{\n    listen 127.0.0.1:{port};\n    root {r}/www;\n  }}\n}}\n",
        w = cfg.workers,
        port = cfg.port,
    )
}

fn lighttpd_conf(root: &Path, cfg: &HttpdConfig) -> String {
    let r = root.display();
    let user = if unsafe { libc::geteuid() } == 0 {
        "server.username = \"nobody\"\nserver.groupname = \"nogroup\"\n"
    } else {
        ""
    };
    format!(
        "server.document-root = \"{r}/www\"\nserver.bind = \"127.0.0.1\"\nserver.port = {port}\n\
         server.max-worker = {w}\n\
         server.max-keep-alive-requests = 1000000\nserver.network-backend = \"sendfile\"\n\
         {user}mimetype.assign = (\"\" => \"application/octet-stream\")\n",
        w = if cfg.workers > 1 { cfg.workers } else { 0 },
        port = cfg.port,
    )
}

/// One HTTP/1.0 GET: the status code and body length.
fn get(port: u16, path: &str) -> std::io::Result<(u16, u64)> {
    let mut s = TcpStream::connect_timeout(
        &SocketAddrV4::new(Ipv4Addr::LOCALHOST, port).into(),
        Duration::from_millis(500),
    )?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    let head_end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no end of headers"))?;
    let status = std::str::from_utf8(&buf[..head_end])
        .ok()
        .and_then(|h| h.split_whitespace().nth(1)?.parse().ok())
        .ok_or_else(|| std::io::Error::other("no status line"))?;
    Ok((status, (buf.len() - head_end - 4) as u64))
}
