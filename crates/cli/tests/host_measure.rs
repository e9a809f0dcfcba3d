//! `smtsched measure pairs` on this machine, run as a user would: the matrix files are valid and
//! in the simulator's format, the workload processes are really pinned, bad input is refused
//! before anything runs, and Ctrl-C (or SIGTERM, or killing the harness) leaves no process
//! behind. No timing is asserted: this machine is shared and noisy.

mod util;
use util::{
    assert_all_gone, assert_bad_input, descendants, exists, smtsched, start_harness, wait_for,
};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// The tests of this file run one at a time: some start real-time processes that would starve
/// a parallel test's harness while it has a deadline to meet.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn files_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect()
}

fn online_cpus() -> usize {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    s.trim()
        .split(',')
        .map(|p| match p.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

/// Short runs: every kernel run takes a millisecond or two. Three of each, so that one run
/// hit by a descheduled vCPU does not move the median.
const QUICK: &[&str] = &[
    "--work-scale",
    "0.01",
    "--solo-runs",
    "3",
    "--timed-runs",
    "3",
];

#[test]
fn a_measured_matrix_is_a_valid_matrix_file() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "measure",
        "pairs",
        "-w",
        "dense-fp,pointer-chase",
        "--placement",
        "cores,timeshare",
        "-o",
        "m.json",
    ];
    args.extend([
        "--csv",
        "m.csv",
        "--svg",
        "m.svg",
        "--json",
        "--footprint",
        "pointer-chase=1MiB",
    ]);
    args.extend(QUICK);
    let o = smtsched(dir.path(), &args);
    assert!(o.status.success());
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ran: Vec<String> = report["measurement"]["plan"]["placements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["placement"].as_str().unwrap().to_string())
        .collect();
    let want: Vec<&str> = if online_cpus() >= 2 {
        vec!["cores", "timeshare"]
    } else {
        vec!["timeshare"]
    };
    assert_eq!(ran, want);
    for p in &ran {
        let several = ran.len() > 1;
        let name = |ext: &str| {
            if several {
                format!("m.{p}.{ext}")
            } else {
                format!("m.{ext}")
            }
        };
        let text = std::fs::read_to_string(dir.path().join(name("json"))).unwrap();
        let m: smtsched_model::PrMatrix = serde_json::from_str(&text).unwrap();
        m.validate().unwrap();
        assert_eq!(m.source, "measured");
        assert_eq!(m.placement.to_string(), *p);
        assert_eq!(m.workloads, ["dense-fp", "pointer-chase"]);
        // Both self-pairs and the cross pair, each ratio finite and positive.
        assert_eq!(m.pairs.len(), 3);
        for pair in &m.pairs {
            for pr in [pair.pr_a, pair.pr_b] {
                assert!(pr.is_finite() && pr > 0.0, "{p}: PR {pr}");
            }
        }
        for s in &m.solo {
            assert!(s.rate.is_finite() && s.rate > 0.0);
        }
        for key in ["solo_rate_unit", "pr", "timed_runs", "solo_runs", "cpus"] {
            assert!(m.settings.contains_key(key), "settings lack {key}");
        }
        assert!(std::fs::read_to_string(dir.path().join(name("csv")))
            .unwrap()
            .starts_with("subject,dense-fp,pointer-chase"));
        assert!(std::fs::read_to_string(dir.path().join(name("svg")))
            .unwrap()
            .contains("<svg"));
        // Counters only for events the machine could count.
        let supported: BTreeSet<String> = report["measurement"]["solo"][0]["side"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e[1]["status"] == "supported")
            .map(|e| e[0].as_str().unwrap().to_string())
            .collect();
        for rec in m
            .pairs
            .iter()
            .flat_map(|p| [&p.counters_a, &p.counters_b])
            .chain(m.solo.iter().map(|s| &s.counters))
        {
            for k in rec.keys() {
                assert!(
                    supported.contains(k),
                    "counter {k} recorded but the event is not supported"
                );
            }
        }
        assert!(
            m.solo[0].counters.contains_key("task_clock_ns"),
            "software events are counted everywhere"
        );
    }
    // Each side of each pair ran on the CPU the plan gave its placement.
    for pair in report["measurement"]["pairs"].as_array().unwrap() {
        let plan = report["measurement"]["plan"]["placements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["placement"] == pair["placement"])
            .unwrap();
        assert_eq!(pair["side_a"]["cpu"], plan["cpu_a"]);
        assert_eq!(pair["side_b"]["cpu"], plan["cpu_b"]);
        assert_eq!(pair["side_a"]["run_seconds"].as_array().unwrap().len(), 3);
    }
}

#[test]
fn a_command_workload_is_measured() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "measure",
        "pairs",
        "--placement",
        "timeshare",
        "--command",
        "spin=sh -c 'i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done'",
    ];
    args.extend(["-w", "dense-fp", "-o", "m.json"]);
    args.extend(QUICK);
    let o = smtsched(dir.path(), &args);
    assert!(o.status.success());
    let m: smtsched_model::PrMatrix =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("m.json")).unwrap()).unwrap();
    m.validate().unwrap();
    assert_eq!(m.workloads, ["dense-fp", "spin"]);
    assert!(m.settings["workload.spin"].contains("command: sh -c"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("placement timeshare"));
}

#[test]
fn a_ratio_no_co_runner_could_cause_is_refused_and_nothing_written() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    // The warm-up and both solo runs sleep a second; every later run returns at once (a few
    // milliseconds for the shell), so the paired runs are a hundred times faster than alone.
    let count = dir.path().join("runs");
    let script = format!(
        "slow=sh -c 'echo >> {c}; [ $(wc -l < {c}) -le 3 ] && sleep 1; true'",
        c = count.display()
    );
    let args = [
        "measure",
        "pairs",
        "--placement",
        "timeshare",
        "--command",
        &script,
        "-o",
        "m.json",
        "--solo-runs",
        "2",
        "--timed-runs",
        "2",
    ];
    let o = smtsched(dir.path(), &args);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    for want in [
        "timeshare slow + slow",
        "outside 0 to 10",
        "nothing written",
    ] {
        assert!(stderr.contains(want), "{want:?} missing from {stderr}");
    }
    assert_eq!(files_in(dir.path()), BTreeSet::from(["runs".to_string()]));
}

#[test]
fn realtime_round_robin_is_applied_or_refused_clearly() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "measure",
        "pairs",
        "-w",
        "dense-fp",
        "--placement",
        "timeshare",
        "--realtime",
        "1",
        "-o",
        "m.json",
    ];
    args.extend(QUICK);
    let o = smtsched(dir.path(), &args);
    if o.status.code() == Some(2) {
        // Not root and no CAP_SYS_NICE: refused with the reason, nothing written.
        assert_bad_input(&o, &["SCHED_RR"]);
        assert!(files_in(dir.path()).is_empty());
        return;
    }
    assert!(o.status.success());
    let m: smtsched_model::PrMatrix =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("m.json")).unwrap()).unwrap();
    assert!(
        m.settings["scheduling"].starts_with("SCHED_RR priority 1"),
        "{}",
        m.settings["scheduling"]
    );
    let p = &m.pairs[0];
    assert!(p.pr_a.is_finite() && p.pr_a > 0.0 && p.pr_b.is_finite() && p.pr_b > 0.0);
}

fn rr_slice() -> String {
    std::fs::read_to_string("/proc/sys/kernel/sched_rr_timeslice_ms")
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn realtime_holds_idle_cpus_and_restores_the_rr_slice_after_ctrl_c() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let before = rr_slice();
    let h = start_harness(
        dir.path(),
        &[
            "measure",
            "pairs",
            "-w",
            "dense-fp",
            "--placement",
            "timeshare",
            "--realtime",
            "1",
            "--rr-slice-ms",
            "7",
            "--work-scale",
            "0.01",
            "--solo-runs",
            "1",
            "--timed-runs",
            "100000",
            "-o",
            "m.json",
        ],
    );
    // The time-shared pair (two workload processes) plus a placeholder on every other CPU.
    let want = 2 + online_cpus().saturating_sub(1);
    let deadline = Instant::now() + Duration::from_secs(30);
    let procs = loop {
        let d = descendants(h.id());
        if d.len() >= want {
            break d;
        }
        if !exists_pid(h.id()) || Instant::now() > deadline {
            // Refused (not root): nothing to check beyond a clear error.
            let out = h.wait_with_output().unwrap();
            assert_bad_input_output(&out, &["SCHED_RR"]);
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(rr_slice(), "7", "the slice is set during the measurement");
    let cpus: BTreeSet<String> = procs.iter().filter_map(|(p, _)| cpus_allowed(*p)).collect();
    assert_eq!(
        cpus.len(),
        online_cpus(),
        "every CPU is in use or held: {cpus:?}"
    );
    unsafe { libc::kill(h.id() as i32, libc::SIGINT) };
    let out = h.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted by SIGINT"));
    assert_all_gone(&procs);
    assert_eq!(rr_slice(), before, "the old SCHED_RR slice is back");
}

fn exists_pid(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
        .unwrap_or(false)
}

fn assert_bad_input_output(o: &Output, needles: &[&str]) {
    assert_bad_input(o, needles)
}

#[test]
fn unavailable_placements_are_reported() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let topo = smtsched(dir.path(), &["host", "topology", "--json"]);
    let t: serde_json::Value = serde_json::from_slice(&topo.stdout).unwrap();
    let smt = t["cores"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["cpus"].as_str().unwrap().contains([',', '-']));
    if smt {
        eprintln!("this machine has SMT: the siblings placement is available, nothing to check");
        return;
    }
    // Only the impossible placement asked for: bad input, nothing written.
    let mut args = vec![
        "measure",
        "pairs",
        "-w",
        "dense-fp",
        "--placement",
        "siblings",
        "-o",
        "m.json",
    ];
    args.extend(QUICK);
    assert_bad_input(
        &smtsched(dir.path(), &args),
        &["siblings", "unavailable", "no SMT"],
    );
    assert!(files_in(dir.path()).is_empty());
    // All placements: the rest runs, and the skipped one is named.
    let mut args = vec![
        "measure",
        "pairs",
        "-w",
        "dense-fp",
        "--placement",
        "all",
        "-o",
        "m.json",
    ];
    args.extend(QUICK);
    let o = smtsched(dir.path(), &args);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("placement siblings skipped"));
    assert!(String::from_utf8_lossy(&o.stdout).contains("skipped placement siblings"));
    assert!(!files_in(dir.path()).contains("m.siblings.json"));
    assert!(files_in(dir.path()).contains("m.timeshare.json"));
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let m = |extra: &[&str]| {
        let mut a = vec!["measure", "pairs", "-o", "m.json"];
        a.extend(extra);
        a.extend(QUICK);
        smtsched(dir.path(), &a)
    };
    assert_bad_input(
        &m(&["--command", "x=no-such-command-xyz --flag"]),
        &["no-such-command-xyz"],
    );
    assert_bad_input(&m(&["-w", "no-such-kernel"]), &["no-such-kernel"]);
    assert_bad_input(
        &m(&["-w", "dense-fp", "--cpus", "0-4096"]),
        &["CPU", "does not exist"],
    );
    assert_bad_input(
        &m(&["-w", "dense-fp", "--cpus", "zero"]),
        &["--cpus", "zero"],
    );
    assert_bad_input(&m(&["-w", "dense-fp", "-p", "diagonal"]), &["diagonal"]);
    assert_bad_input(
        &m(&["-w", "dense-fp", "--command", "novalue"]),
        &["novalue"],
    );
    assert_bad_input(&m(&["-w", "dense-fp", "-e", "bogus"]), &["bogus"]);
    assert_bad_input(
        &m(&["-w", "dense-fp", "--footprint", "dense-fp=lots"]),
        &["lots"],
    );
    // No work, or a wait no timer holds: one line (nothing said before it).
    assert_bad_input(&m(&["-w", "dense-fp", "--work", "dense-fp=0"]), &["--work"]);
    assert_bad_input(
        &m(&["-w", "dense-fp", "--timeout-s", "1e300"]),
        &["--timeout-s 1e300", "at most 86400"],
    );
    assert!(
        files_in(dir.path()).is_empty(),
        "no output file after bad input"
    );
}

#[test]
fn an_offline_cpu_is_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let snap = tempfile::tempdir().unwrap();
    let root = unpack_offline_snapshot(snap.path());
    let mut args = vec![
        "measure",
        "pairs",
        "-w",
        "dense-fp",
        "--sysfs-root",
        root.to_str().unwrap(),
        "--cpus",
        "0,2",
        "-o",
        "m.json",
    ];
    args.extend(QUICK);
    assert_bad_input(&smtsched(dir.path(), &args), &["CPU 2 is offline"]);
    assert!(files_in(dir.path()).is_empty());
}

fn unpack_offline_snapshot(dir: &Path) -> PathBuf {
    let fixtures = match std::env::var("SMTSCHED_FIXTURES") {
        Ok(d) => PathBuf::from(d).join("linux-sysfs"),
        Err(_) => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/linux-sysfs"),
    };
    let f = std::fs::File::open(fixtures.join("16em64t-4s2c2t-offlines.tar.bz2")).unwrap();
    tar::Archive::new(bzip2::read::BzDecoder::new(f))
        .unpack(dir)
        .unwrap();
    dir.join("16em64t-4s2c2t-offlines")
}

// ---------------------------------------------------------------------------------------------
// Cleanup

fn cpus_allowed(pid: u32) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

#[test]
fn ctrl_c_during_a_pair_stops_and_reaps_every_child() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    // Quick solo runs, then a time-shared pair that would loop for minutes.
    let h = start_harness(
        dir.path(),
        &[
            "measure",
            "pairs",
            "-w",
            "dense-fp",
            "--placement",
            "timeshare",
            "--work-scale",
            "0.01",
            "--solo-runs",
            "1",
            "--timed-runs",
            "100000",
            "-o",
            "m.json",
        ],
    );
    // Two workload processes at once: the pair phase.
    let procs = wait_for(h.id(), "smtsched", 2);
    // Both are pinned, as the kernel reports it, to one and the same CPU. A workload pins itself
    // right after it starts, so give the second one a moment to have done so.
    let deadline = Instant::now() + Duration::from_secs(5);
    let allowed: Vec<String> = loop {
        let a: Vec<String> = procs.iter().filter_map(|(p, _)| cpus_allowed(*p)).collect();
        if a.iter().all(|c| c.parse::<u32>().is_ok()) || Instant::now() > deadline {
            break a;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(allowed.len(), 2, "{procs:?}");
    assert!(
        allowed[0].parse::<u32>().is_ok(),
        "allowed on {:?}, not one CPU",
        allowed[0]
    );
    assert_eq!(allowed[0], allowed[1], "time-shared pair on different CPUs");
    unsafe { libc::kill(h.id() as i32, libc::SIGINT) };
    let out = h.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted by SIGINT"), "{err}");
    assert_all_gone(&procs);
    assert!(
        files_in(dir.path()).is_empty(),
        "no output after an interrupted measurement"
    );
}

#[test]
fn sigterm_reaps_a_command_and_its_own_children() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    // The first (warm-up) solo run of `nap` is a shell whose child sleeps for a minute.
    let h = start_harness(
        dir.path(),
        &[
            "measure",
            "pairs",
            "--placement",
            "timeshare",
            "--command",
            "nap=sh -c 'sleep 60; true'",
            "-o",
            "m.json",
        ],
    );
    // harness → looper → sh → sleep
    let procs = wait_for(h.id(), "sleep", 1);
    assert!(procs.len() >= 3, "{procs:?}");
    for (pid, _) in &procs {
        if let Some(a) = cpus_allowed(*pid) {
            assert!(
                a.parse::<u32>().is_ok(),
                "process {pid} allowed on {a:?}, not one CPU"
            );
        }
    }
    unsafe { libc::kill(h.id() as i32, libc::SIGTERM) };
    let out = h.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("interrupted by SIGTERM"), "{err}");
    assert_all_gone(&procs);
    assert!(files_in(dir.path()).is_empty());
}

#[test]
fn killing_the_harness_outright_takes_the_workloads_with_it() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut h = start_harness(
        dir.path(),
        &[
            "measure",
            "pairs",
            "--placement",
            "timeshare",
            "--command",
            "nap=sh -c 'sleep 60; true'",
            "-o",
            "m.json",
        ],
    );
    let procs = wait_for(h.id(), "sleep", 1);
    h.kill().unwrap(); // SIGKILL: no handler runs; the looper hears of it from the kernel.
    h.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        // Orphans are re-parented and reaped by init; until then they may linger as zombies,
        // but none may still be running.
        let running: Vec<u32> = procs
            .iter()
            .filter(|(p, s)| exists(*p, *s))
            .filter(|(p, _)| {
                std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .map(|st| !st[st.rfind(')').unwrap() + 2..].starts_with('Z'))
                    .unwrap_or(false)
            })
            .map(|(p, _)| *p)
            .collect();
        if running.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still running after the harness was killed: {running:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn after_sigkill_the_next_start_restores_the_rr_slice() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let before = rr_slice();
    let h = start_harness(
        dir.path(),
        &[
            "measure",
            "pairs",
            "-w",
            "dense-fp",
            "--placement",
            "timeshare",
            "--realtime",
            "1",
            "--rr-slice-ms",
            "7",
            "--work-scale",
            "0.01",
            "--solo-runs",
            "1",
            "--timed-runs",
            "100000",
            "-o",
            "m.json",
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while rr_slice() != "7" {
        if !exists_pid(h.id()) || Instant::now() > deadline {
            // Refused (not root): nothing to check beyond a clear error.
            let out = h.wait_with_output().unwrap();
            assert_bad_input_output(&out, &["SCHED_RR"]);
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let procs = descendants(h.id());
    unsafe { libc::kill(h.id() as i32, libc::SIGKILL) };
    let _ = h.wait_with_output().unwrap();
    for (p, _) in &procs {
        unsafe { libc::kill(*p as i32, libc::SIGKILL) };
    }
    assert_eq!(
        rr_slice(),
        "7",
        "a killed harness cannot put the slice back"
    );
    // The next start with the same state directory does, before it measures, and says so.
    let o = smtsched(
        dir.path(),
        &[
            "measure",
            "pairs",
            "-w",
            "dense-fp",
            "--placement",
            "cores",
            "-o",
            "m2.json",
            "--state-dir",
            state.to_str().unwrap(),
        ]
        .into_iter()
        .chain(QUICK.iter().copied())
        .collect::<Vec<_>>(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("sched_rr_timeslice_ms") && err.contains("restored"),
        "{err}"
    );
    assert_eq!(rr_slice(), before, "the original slice is back");
}

#[test]
fn processes_a_command_detaches_are_stopped_with_the_measurement() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    // Each run leaves a `sleep` in a session of its own (setsid -f), outside every process
    // group the harness kills; as the subreaper it inherits them and stops them at the end.
    let marker = format!("4949.{}", std::process::id());
    let command = format!("esc=sh -c 'setsid -f sleep {marker}; sleep 0.2'");
    let o = smtsched(
        dir.path(),
        &[
            "measure",
            "pairs",
            "--command",
            &command,
            "--placement",
            "cores",
            "--solo-runs",
            "1",
            "--timed-runs",
            "1",
            "-o",
            "m.json",
        ],
    );
    assert!(o.status.success());
    assert!(
        util::gone_within(&marker, Duration::from_secs(5)),
        "detached processes left: {:?}",
        util::with_marker(&marker)
    );
}
