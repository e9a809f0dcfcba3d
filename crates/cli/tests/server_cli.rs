//! `measure server` with real servers (nginx, lighttpd from Debian) and a real load generator
//! (oha) over loopback: what a user relies on — numbers that add up, the steering restored, no
//! process left behind after success, Ctrl-C, SIGTERM and (at the next start) SIGKILL, and bad
//! input refused before anything starts. These tests change a machine-wide setting (loopback
//! RPS), so they run one at a time.

mod util;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use util::{assert_bad_input, json, smtsched, stderr};

const LO_RPS: &str = "/sys/class/net/lo/queues/rx-0/rps_cpus";
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The steering mask's value (the kernel prints as many hex digits as it has CPUs).
fn rps() -> u64 {
    u64::from_str_radix(
        &std::fs::read_to_string(LO_RPS)
            .unwrap()
            .trim()
            .replace(',', ""),
        16,
    )
    .unwrap()
}

/// A harness the test started: killed if the test fails before it ends.
struct Harness(Child);

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Processes whose command is one of `names`, as (pid, start time).
fn running(names: &[&str]) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let comm = &stat[stat.find('(').unwrap() + 1..stat.rfind(')').unwrap()];
        let state = stat[stat.rfind(')').unwrap() + 2..].chars().next();
        if names.contains(&comm) && state != Some('Z') {
            let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
                .split_whitespace()
                .collect();
            out.push((pid, f[19].parse().unwrap()));
        }
    }
    out
}

const CHILDREN: &[&str] = &["nginx", "lighttpd", "oha"];

fn assert_nothing_left(before: &[(u32, u64)], state_dir: &Path, rps_before: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<_> = running(CHILDREN)
            .into_iter()
            .filter(|p| !before.contains(p))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left running: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(rps(), rps_before, "RPS restored");
    let files: Vec<String> = std::fs::read_dir(state_dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("server-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(files.is_empty(), "state files left: {files:?}");
}

#[test]
fn both_servers_serve_measured_loads_whose_numbers_add_up_and_leave_nothing_behind() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let before = running(CHILDREN);
    let rps_before = rps();
    for server in ["nginx", "lighttpd"] {
        let csv = dir.path().join(format!("{server}.csv"));
        let svg = dir.path().join(format!("{server}.svg"));
        let o = smtsched(
            dir.path(),
            &[
                "measure",
                "server",
                "--server",
                server,
                "--file-bytes",
                "20000",
                "--placement",
                "one:server=0,softirq=1,client=1",
                "--duration",
                "1",
                "--repetitions",
                "2",
                "-c",
                "8",
                "--json",
                "--csv",
                csv.to_str().unwrap(),
                "--svg",
                svg.to_str().unwrap(),
                "--state-dir",
                state.to_str().unwrap(),
            ],
        );
        let m = json(&o);
        let runs = m["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "two repetitions");
        for r in runs {
            assert_eq!(r["placement"]["server"], "0");
            let p = &r["points"][0];
            let res = &p["result"];
            let (n, s) = (
                res["responses"].as_f64().unwrap(),
                res["seconds"].as_f64().unwrap(),
            );
            assert!(n > 100.0, "{server}: {n} responses");
            assert_eq!(res["errors"], 0);
            // Throughput from the response count and the file size the harness wrote.
            let rps_rate = res["requests_per_s"].as_f64().unwrap();
            assert!((rps_rate - n / s).abs() < 1e-9 * rps_rate);
            let mbps = res["megabits_per_s"].as_f64().unwrap();
            let expect = n * 20000.0 * 8.0 / s / 1e6;
            assert!(
                (mbps - expect).abs() < 1e-6 * expect,
                "{mbps} Mb/s, expected {expect}"
            );
            let (p50, p99) = (
                res["p50_ms"].as_f64().unwrap(),
                res["p99_ms"].as_f64().unwrap(),
            );
            assert!(0.0 < p50 && p50 <= p99, "p50 {p50} p99 {p99}");
            // Kernel work: a request needs at least a receive and a send (system calls), and
            // a static server spends most of its own time in the kernel.
            let q = &p["per_request"];
            let sys = q["syscalls"]
                .as_f64()
                .expect("syscalls counted (tracepoint)");
            assert!(
                (2.0..200.0).contains(&sys),
                "{sys} system calls per request"
            );
            let share = q["server_kernel_share"].as_f64().unwrap();
            assert!(share > 0.5 && share <= 1.0, "kernel share {share}");
        }
        let rows = std::fs::read_to_string(&csv).unwrap();
        assert_eq!(
            rows.lines().count(),
            3,
            "header and one row per run:\n{rows}"
        );
        let svg = std::fs::read_to_string(&svg).unwrap();
        assert!(svg.contains("<svg") && svg.contains("one"));
    }
    assert_nothing_left(&before, &state, rps_before);
}

#[test]
fn rate_auto_finds_saturation_then_offers_fractions_of_it_in_open_loops() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let o = smtsched(
        dir.path(),
        &[
            "measure",
            "server",
            "--placement",
            "one:server=0,softirq=0,client=1",
            "--rate",
            "auto",
            "--duration",
            "1",
            "--repetitions",
            "1",
            "-c",
            "16",
            "--json",
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    let m = json(&o);
    let points = m["runs"][0]["points"].as_array().unwrap();
    let labels: Vec<&str> = points
        .iter()
        .map(|p| p["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["saturation", "50%", "80%", "95%"]);
    let saturation = points[0]["result"]["requests_per_s"].as_f64().unwrap();
    assert_eq!(points[0]["load"]["loop"], "closed");
    for (p, f) in points[1..].iter().zip([0.5, 0.8, 0.95]) {
        // Each open loop is offered its fraction of the closed loop's throughput.
        let offered = p["load"]["rate_per_s"].as_f64().unwrap();
        assert!(
            (offered - f * saturation).abs() < 1e-6 * offered,
            "{offered} vs {f} x {saturation}"
        );
    }
    // Well below saturation an open loop is served at the rate it offers.
    let half = &points[1];
    let got = half["result"]["requests_per_s"].as_f64().unwrap();
    let offered = half["load"]["rate_per_s"].as_f64().unwrap();
    assert!(
        (got - offered).abs() < 0.1 * offered,
        "served {got}/s of {offered}/s offered"
    );
}

fn start(dir: &Path, state: &Path, seconds: &str) -> Harness {
    Harness(
        Command::new(env!("CARGO_BIN_EXE_smtsched"))
            .args([
                "measure",
                "server",
                "--placement",
                "one:server=0,softirq=1,client=1",
                "--duration",
                seconds,
                "--repetitions",
                "1",
                "-c",
                "8",
                "--state-dir",
                state.to_str().unwrap(),
            ])
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// Waits until oha runs (the server is up and the load started).
fn wait_for_load(before: &[(u32, u64)]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !running(&["oha"]).iter().any(|p| !before.contains(p)) {
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_and_sigterm_stop_server_and_load_and_restore_the_steering() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let before = running(CHILDREN);
    let rps_before = rps();
    // Mid-load, and during the server's start-up.
    for (sig, mid_load) in [
        (libc::SIGINT, true),
        (libc::SIGTERM, true),
        (libc::SIGTERM, false),
    ] {
        let mut h = start(dir.path(), &state, "30");
        if mid_load {
            wait_for_load(&before);
            assert_eq!(rps(), 0b10, "the softirq steered to CPU 1 during the run");
        } else {
            util::wait_for_signal_handlers(h.0.id());
        }
        let (status, err, _) = util::signal_and_wait(&mut h.0, sig);
        assert_eq!(status.code(), Some(1), "{err}");
        assert!(err.contains("interrupted by SIG"), "{err}");
        assert_nothing_left(&before, &state, rps_before);
    }
}

#[test]
fn after_sigkill_the_next_start_stops_the_leftovers_and_restores_the_steering() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let before = running(CHILDREN);
    let rps_before = rps();
    let dirs_before = server_dirs();
    let mut h = start(dir.path(), &state, "30");
    wait_for_load(&before);
    unsafe { libc::kill(h.0.id() as i32, libc::SIGKILL) };
    h.0.wait().unwrap();
    // A killed harness cleans nothing: the steering is still changed, and the server's
    // workers (which the kernel does not kill with their parent) still run.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(rps(), 0b10);
    let leftovers: Vec<_> = running(CHILDREN)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert!(
        !leftovers.is_empty(),
        "nginx workers outlive a SIGKILLed harness"
    );
    let left_dirs: Vec<_> = server_dirs()
        .into_iter()
        .filter(|d| !dirs_before.contains(d))
        .collect();
    assert_eq!(
        left_dirs.len(),
        1,
        "the server's directory stays: {left_dirs:?}"
    );
    // The next start puts it right before it measures, and says so.
    let o = smtsched(
        dir.path(),
        &[
            "measure",
            "server",
            "--placement",
            "one:server=0,softirq=0,client=1",
            "--duration",
            "0.5",
            "--repetitions",
            "1",
            "-c",
            "4",
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    assert!(o.status.success());
    let err = stderr(&o);
    assert!(err.contains("killed") && err.contains("restored"), "{err}");
    assert!(
        err.contains(&format!("removed {}", left_dirs[0].display())),
        "{err}"
    );
    assert!(!left_dirs[0].exists());
    assert_nothing_left(&before, &state, rps_before);
}

/// The servers' temporary directories (`smtsched-server-*` in the temporary directory).
fn server_dirs() -> Vec<std::path::PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("smtsched-server-"))
        })
        .collect()
}

#[test]
fn bad_input_is_refused_in_one_line_before_anything_starts() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let before = running(CHILDREN);
    let rps_before = rps();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--server-binary", "/nonexistent/nginx"],
            vec!["--server-binary", "nginx-light"],
        ),
        (
            vec!["--port", &port],
            vec![&port, "another program uses it"],
        ),
        (vec!["--rate", "0"], vec!["--rate 0"]),
        (vec!["--file-bytes", "0"], vec!["--file-bytes 0"]),
        // A file no memory held (it was built whole in memory: an abort, and the server's
        // directory left behind).
        (
            vec!["--file-bytes", "99999999999999"],
            vec!["--file-bytes 99999999999999", "1 GiB"],
        ),
        // Two placements of one name would be reported as one.
        (
            vec![
                "--placement",
                "UP:server=0,softirq=0,client=1",
                "--placement",
                "UP:server=1,softirq=1,client=0",
            ],
            vec!["--placement", "named UP"],
        ),
        (
            vec!["--placement", "x:server=99,softirq=0,client=1"],
            vec!["CPU 99", "not online"],
        ),
        (vec!["--cpus", "0,99"], vec!["--cpus", "CPU 99"]),
        (
            vec![
                "-o",
                "p.toml",
                "--placement",
                "x:server=0-1,softirq=0-1,client=0-1",
            ],
            vec!["-o:", "cannot be told apart"],
        ),
        (
            vec!["-o", "p.toml", "--profile-machine", "no-such-machine"],
            vec!["--profile-machine", "no-such-machine"],
        ),
        // Output paths are checked before the server starts, not after the measurement.
        (
            vec!["--csv", "/nonexistent/runs.csv"],
            vec![
                "cannot write /nonexistent/runs.csv",
                "no directory /nonexistent",
            ],
        ),
        (
            vec!["-o", "/nonexistent/p.toml"],
            vec![
                "cannot write /nonexistent/p.toml",
                "no directory /nonexistent",
            ],
        ),
        (vec!["--rate", "fast"], vec!["--rate", "fast"]),
    ];
    for (extra, needles) in cases {
        let mut args = vec!["measure", "server", "--duration", "1", "--state-dir"];
        args.push(state.to_str().unwrap());
        args.extend(extra);
        let o = smtsched(dir.path(), &args);
        assert_bad_input(&o, &needles);
        assert_nothing_left(&before, &state, rps_before);
        assert!(!dir.path().join("p.toml").exists());
    }
    // A machine without the load generator (a PATH and a home without oha): that is said once
    // every input has passed, and a mistyped input is named first, whatever the machine lacks.
    let without_oha = |extra: &[&str]| {
        let mut args = vec!["measure", "server", "--duration", "1", "--state-dir"];
        args.push(state.to_str().unwrap());
        args.extend(extra);
        Command::new(env!("CARGO_BIN_EXE_smtsched"))
            .args(&args)
            .current_dir(dir.path())
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", dir.path())
            .output()
            .unwrap()
    };
    assert_bad_input(&without_oha(&[]), &["no `oha` load generator"]);
    assert_bad_input(
        &without_oha(&["--port", &port]),
        &[&port, "another program uses it"],
    );
    assert_bad_input(
        &without_oha(&["-o", "/nonexistent/p.toml"]),
        &["cannot write /nonexistent/p.toml"],
    );
    assert_nothing_left(&before, &state, rps_before);
}

#[test]
fn a_server_profile_runs_the_measured_placements_in_the_simulator() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let before = running(CHILDREN);
    let rps_before = rps();
    let args = [
        "measure",
        "server",
        "--placement",
        "table",
        "--duration",
        "1",
        "--repetitions",
        "1",
        "-c",
        "16",
        "-o",
        "prof.toml",
        "--json",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    let m = json(&smtsched(dir.path(), &args));
    assert_nothing_left(&before, &state, rps_before);
    let text = std::fs::read_to_string(dir.path().join("prof.toml")).unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    let configs = doc["configurations"]["config"].as_array().unwrap();
    let names: Vec<&str> = configs
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["UP", "1xHTP", "1x2"]);
    // UP on this machine's two CPUs: the server and the softirq on the model's first core,
    // the load generator on another (this machine has no SMT siblings: smt2-modern's CPU 1 is
    // core 1).
    assert_eq!(configs[0]["task_cpus"]["nginx"].as_str(), Some("0"));
    assert_eq!(configs[0]["task_cpus"]["oha"].as_str(), Some("1"));
    assert_eq!(configs[0]["irq_cpus"].as_str(), Some("0"));
    assert_eq!(configs[2]["task_cpus"]["nginx"].as_str(), Some("0,1"));
    // One claim per placement against UP, centred on the measured ratio.
    let sat = |i: usize| {
        m["runs"][i]["points"][0]["result"]["requests_per_s"]
            .as_f64()
            .unwrap()
    };
    let claims = doc["configurations"]["claim"].as_array().unwrap();
    assert_eq!(claims.len(), 2);
    let within = claims[1]["within"].as_array().unwrap();
    let mid = (within[0].as_float().unwrap() + within[1].as_float().unwrap()) / 2.0;
    assert!((mid - sat(2) / sat(0)).abs() < 1e-9 * mid, "{mid}");
    // The simulator runs it.
    let o = smtsched(
        dir.path(),
        &[
            "reproduce",
            "prof.toml",
            "--repetitions",
            "1",
            "--duration",
            "1.5",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("requests/s") && out.contains("1x2 serves"),
        "{out}"
    );
}

#[test]
fn the_table_shows_a_spread_only_where_repetitions_give_one() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let before = running(CHILDREN);
    let rps_before = rps();
    for (reps, spread) in [("1", false), ("2", true)] {
        let svg = dir.path().join(format!("{reps}.svg"));
        let o = smtsched(
            dir.path(),
            &[
                "measure",
                "server",
                "--placement",
                "one:server=0,softirq=1,client=1",
                "--duration",
                "0.5",
                "--repetitions",
                reps,
                "-c",
                "4",
                "--svg",
                svg.to_str().unwrap(),
                "--state-dir",
                state.to_str().unwrap(),
            ],
        );
        assert!(o.status.success());
        let text = String::from_utf8_lossy(&o.stdout);
        let row = text
            .lines()
            .find(|l| l.starts_with("one "))
            .expect("the placement's row");
        // One sample has no spread: "± 0" would claim the runs agreed exactly.
        assert_eq!(row.contains('±'), spread, "{reps} repetition(s): {row}");
        let header = text.lines().next().unwrap();
        assert_eq!(header.contains("no spread"), !spread, "{header}");
        let svg = std::fs::read_to_string(&svg).unwrap();
        assert_eq!(svg.contains("(mean ± sd)"), spread);
        assert_eq!(svg.contains("(one repetition, no spread)"), !spread);
    }
    assert_nothing_left(&before, &state, rps_before);
}
