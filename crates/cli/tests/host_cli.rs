//! `smtsched host …` run as a user would, in a fresh temporary directory: topology, events,
//! counters, kernels, and the bad-input paths (exit code 2, one line naming the value).

mod util;
use util::{assert_bad_input, gone_within, json, smtsched, stdout, with_marker};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Unpacks the snapshot with offline CPUs (2, 5, 13 and 14 offline) into `dir`.
pub fn offline_snapshot(dir: &Path) -> PathBuf {
    let fixtures = match std::env::var("SMTSCHED_FIXTURES") {
        Ok(d) => PathBuf::from(d).join("linux-sysfs"),
        Err(_) => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/linux-sysfs"),
    };
    let f = std::fs::File::open(fixtures.join("16em64t-4s2c2t-offlines.tar.bz2")).unwrap();
    tar::Archive::new(bzip2::read::BzDecoder::new(f))
        .unpack(dir)
        .unwrap();
    let root = dir.join("16em64t-4s2c2t-offlines");
    assert!(root.join("sys/devices/system/cpu").is_dir());
    root
}

/// Unpacks fixture `name` into `dir`; returns its sysfs root and hwloc's reading of it.
fn snapshot(dir: &Path, name: &str) -> (PathBuf, String) {
    let fixtures = match std::env::var("SMTSCHED_FIXTURES") {
        Ok(d) => PathBuf::from(d).join("linux-sysfs"),
        Err(_) => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/linux-sysfs"),
    };
    let f = std::fs::File::open(fixtures.join(format!("{name}.tar.bz2"))).unwrap();
    tar::Archive::new(bzip2::read::BzDecoder::new(f))
        .unpack(dir)
        .unwrap();
    let console = std::fs::read_to_string(fixtures.join(format!("{name}.console"))).unwrap();
    (dir.join(name), console)
}

/// Bytes of an lstopo size (`32KiB`, `11MiB`).
fn lstopo_bytes(size: &str) -> u64 {
    let (n, unit) = size.split_at(size.find(|c: char| !c.is_ascii_digit()).unwrap());
    n.parse::<u64>().unwrap()
        * match unit {
            "KiB" => 1 << 10,
            "MiB" => 1 << 20,
            "GiB" => 1 << 30,
            other => panic!("unit {other}"),
        }
}

fn cpu_list(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

#[test]
fn topology_of_this_machine_matches_sysfs() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(&smtsched(dir.path(), &["host", "topology", "--json"]));
    // Independent reading: the kernel's own online list and each CPU's sibling list.
    let online = cpu_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap());
    assert_eq!(cpu_list(v["online"].as_str().unwrap()), online);
    let cores = v["cores"].as_array().unwrap();
    for cpu in &online {
        let sib = std::fs::read_to_string(format!(
            "/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
        ))
        .unwrap();
        let holding: Vec<&serde_json::Value> = cores
            .iter()
            .filter(|c| cpu_list(c["cpus"].as_str().unwrap()).contains(cpu))
            .collect();
        assert_eq!(holding.len(), 1, "CPU {cpu} is in exactly one core");
        assert_eq!(
            cpu_list(holding[0]["cpus"].as_str().unwrap()),
            cpu_list(&sib),
            "siblings of CPU {cpu}"
        );
    }
    let o = smtsched(dir.path(), &["host", "topology"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("Cores") && stdout(&o).contains("NUMA nodes"));
}

#[test]
fn topology_of_a_snapshot_with_offline_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let root = offline_snapshot(dir.path());
    let v = json(&smtsched(
        dir.path(),
        &[
            "host",
            "topology",
            "--json",
            "--sysfs-root",
            root.to_str().unwrap(),
        ],
    ));
    assert_eq!(v["offline"], "2,5,13-14");
    // CPU 6's sibling (14) is offline: that core has one thread left.
    let core6 = v["cores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| cpu_list(c["cpus"].as_str().unwrap()).contains(&6))
        .unwrap();
    assert_eq!(core6["cpus"], "6");
}

#[test]
fn topology_bad_root_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let o = smtsched(
        dir.path(),
        &["host", "topology", "--sysfs-root", "/no/such/root"],
    );
    assert_bad_input(&o, &["/no/such/root"]);
}

#[test]
fn events_report_software_support_and_a_reason_for_anything_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(&smtsched(dir.path(), &["host", "events", "--json"]));
    let rows = v.as_array().unwrap();
    let find = |name: &str| rows.iter().find(|r| r["event"] == name).unwrap();
    assert_eq!(find("task_clock_ns")["support"]["status"], "supported");
    assert_eq!(find("context_switches")["support"]["status"], "supported");
    for r in rows {
        match r["support"]["status"].as_str().unwrap() {
            "supported" => {}
            "unsupported" => assert!(!r["support"]["reason"].as_str().unwrap().is_empty()),
            other => panic!("status {other}"),
        }
    }
}

#[test]
fn counters_of_a_sleeping_command() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(&smtsched(
        dir.path(),
        &[
            "host",
            "counters",
            "--json",
            "-e",
            "task-clock,context-switches,instructions",
            "--",
            "sh",
            "-c",
            "sleep 0.25; sleep 0.25",
        ],
    ));
    let ev = v["events"].as_array().unwrap();
    let get = |name: &str| ev.iter().find(|r| r["event"] == name).unwrap();
    assert!(get("task_clock_ns")["value"].as_f64().unwrap() > 0.0);
    // Two sleeps: at least two switches away from the CPU. Not many more: `perf stat -e
    // context-switches` counts 7 or 8 for this command here (the shell waiting for each sleep,
    // the execs), a few more when other processes preempt it; smtsched, waiting for it in
    // 10 ms naps through the 0.5 s, switches about fifty times, and those are not the command's.
    let switches = get("context_switches")["value"].as_f64().unwrap();
    assert!((2.0..=30.0).contains(&switches), "{switches}");
    // Instructions: a real count, or unsupported with no value — never an invented number.
    let ins = get("instructions");
    match ins["support"]["status"].as_str().unwrap() {
        "supported" => assert!(ins["value"].as_f64().unwrap() > 0.0),
        _ => assert!(ins["value"].is_null()),
    }
}

#[test]
fn counters_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    assert_bad_input(
        &smtsched(
            dir.path(),
            &["host", "counters", "--", "no-such-command-xyz"],
        ),
        &["no-such-command-xyz"],
    );
    assert_bad_input(
        &smtsched(
            dir.path(),
            &["host", "counters", "-e", "bogus-event", "--", "true"],
        ),
        &["bogus-event"],
    );
    assert_bad_input(
        &smtsched(dir.path(), &["host", "counters", "--cpus", "4096"]),
        &["4096"],
    );
    assert_bad_input(
        &smtsched(
            dir.path(),
            &[
                "host",
                "counters",
                "--pid",
                "2147483646",
                "--duration-ms",
                "1",
            ],
        ),
        &["2147483646"],
    );
}

#[test]
fn kernels_are_listed_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(&smtsched(dir.path(), &["host", "kernels", "--json"]));
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "pointer-chase",
            "stream-triad",
            "dense-fp",
            "branchy-search",
            "compress"
        ]
    );
    for name in names {
        let v = json(&smtsched(
            dir.path(),
            &[
                "host",
                "kernel",
                name,
                "--work",
                "20000",
                "--footprint",
                "64KiB",
                "--runs",
                "2",
                "--cpus",
                "0",
                "--json",
            ],
        ));
        let runs = v["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2);
        for r in runs {
            let s = r["seconds"].as_f64().unwrap();
            assert!(s > 0.0 && s.is_finite(), "{name}: {s}");
        }
        assert_eq!(v["kernel"]["footprint_bytes"], 65536);
    }
}

#[test]
fn a_pinned_kernel_really_runs_on_its_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = cpu_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap())
        .into_iter()
        .last()
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_smtsched"))
        .args([
            "host",
            "kernel",
            "dense-fp",
            "--runs",
            "1000",
            "-e",
            "none",
            "--cpus",
            &cpu.to_string(),
        ])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Read the affinity from outside, as the kernel reports it, once the process has pinned itself.
    let want = cpu.to_string();
    let mut seen = String::new();
    for _ in 0..200 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        seen = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap_or("")
            .trim()
            .to_string();
        if seen == want {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(seen, want);
}

#[test]
fn kernel_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    assert_bad_input(
        &smtsched(dir.path(), &["host", "kernel", "no-such-kernel"]),
        &["no-such-kernel", "pointer-chase"],
    );
    assert_bad_input(
        &smtsched(
            dir.path(),
            &["host", "kernel", "dense-fp", "--cpus", "4096"],
        ),
        &["CPU 4096 does not exist"],
    );
    assert_bad_input(
        &smtsched(
            dir.path(),
            &["host", "kernel", "dense-fp", "--footprint", "12 parsecs"],
        ),
        &["12 parsecs"],
    );
    assert_bad_input(
        &smtsched(dir.path(), &["host", "kernel", "dense-fp", "--work", "0"]),
        &["--work"],
    );
}

#[test]
fn counters_leave_nothing_of_the_command_behind() {
    let dir = tempfile::tempdir().unwrap();
    // A command that leaves a child running: the child goes when the command exits.
    let marker = format!("4242.{}", std::process::id());
    let o = smtsched(
        dir.path(),
        &[
            "host",
            "counters",
            "-e",
            "task_clock",
            "--",
            "sh",
            "-c",
            &format!("sleep {marker} & exit 0"),
        ],
    );
    assert!(o.status.success());
    assert!(
        gone_within(&marker, std::time::Duration::from_secs(5)),
        "left running"
    );
    // SIGTERM and SIGKILL of `host counters` take the command with it.
    for sig in [libc::SIGTERM, libc::SIGKILL] {
        let marker = format!("4343.{}{sig}", std::process::id());
        let mut h = Command::new(env!("CARGO_BIN_EXE_smtsched"))
            .args([
                "host",
                "counters",
                "-e",
                "task_clock",
                "--",
                "sleep",
                &marker,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while with_marker(&marker).len() < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "the command never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let (status, err, _) = util::signal_and_wait(&mut h, sig);
        if sig == libc::SIGTERM {
            assert_eq!(status.code(), Some(1), "{err}");
            assert!(err.contains("interrupted by SIGTERM"), "{err}");
        }
        assert!(
            gone_within(&marker, std::time::Duration::from_secs(5)),
            "orphaned after {sig}"
        );
    }
}

/// `host topology --machine-toml FILE` on the sysfs snapshot at `root`.
fn machine_toml(dir: &Path, root: &Path, file: &Path) -> std::process::Output {
    smtsched(
        dir,
        &[
            "host",
            "topology",
            "--sysfs-root",
            root.to_str().unwrap(),
            "--machine-toml",
            file.to_str().unwrap(),
        ],
    )
}

#[test]
fn topology_writes_this_machine_as_a_machine_file_that_simulates() {
    // A 2-package Xeon Silver 4108, 8 cores x 2 threads each, siblings numbered n and n+16.
    let dir = tempfile::tempdir().unwrap();
    let (root, console) = snapshot(dir.path(), "32intel64-2p8co2t+8ve");
    let file = dir.path().join("silver.toml");
    let o = machine_toml(dir.path(), &root, &file);
    assert!(o.status.success());
    let m = json(&smtsched(
        dir.path(),
        &["machines", "show", file.to_str().unwrap(), "--json"],
    ));
    // hwloc's reading of the same snapshot.
    let count = |what: &str| {
        console
            .lines()
            .filter(|l| l.trim_start().starts_with(what))
            .count()
    };
    let packages = count("Package L#");
    let cores = count("Core L#");
    let pus = count("PU L#");
    assert_eq!(m["name"], "silver");
    assert_eq!(m["topology"]["packages"], packages);
    assert_eq!(m["topology"]["cores_per_package"], cores / packages);
    assert_eq!(m["topology"]["threads_per_core"], pus / cores);
    // Core L#0 holds PU P#0 and P#16: thread-major over the 16 cores.
    assert!(console.contains("PU L#1 (P#16)"));
    assert_eq!(m["topology"]["cpu_numbering"], "thread-major");
    // Every cache level of package 0 with hwloc's size and associativity.
    for (label, key) in [
        ("L1dCache", "L1d"),
        ("L1iCache", "L1i"),
        ("L2Cache", "L2"),
        ("L3Cache", "L3"),
    ] {
        let line = console
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{label} L#0 ")))
            .unwrap();
        let field = |name: &str| {
            line.split([' ', '(', ')'])
                .find_map(|t| t.strip_prefix(&format!("{name}=")))
                .unwrap()
                .to_string()
        };
        let cache = &m["cache"][key];
        assert_eq!(cache["size_bytes"], lstopo_bytes(&field("size")), "{key}");
        assert_eq!(
            cache["ways"],
            field("ways").parse::<u64>().unwrap(),
            "{key}"
        );
        assert_eq!(
            cache["line_bytes"],
            field("linesize").parse::<u64>().unwrap(),
            "{key}"
        );
    }
    assert_eq!(m["cache"]["L2"]["shared_by"], "core");
    assert_eq!(m["cache"]["L3"]["shared_by"], "package");
    // What sysfs cannot tell is the template's, and the file says so.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("[template] every value of [core]"), "{text}");
    // It simulates.
    let o = smtsched(
        dir.path(),
        &[
            "solo",
            "gzip-like",
            "--machine",
            file.to_str().unwrap(),
            "--instructions",
            "100000",
        ],
    );
    assert!(o.status.success());
}

#[test]
fn a_machine_the_model_cannot_describe_is_refused_and_no_file_written() {
    // CPUs 2, 5, 13 and 14 offline: some cores have one thread left, others two.
    let dir = tempfile::tempdir().unwrap();
    let root = offline_snapshot(dir.path());
    let file = dir.path().join("m.toml");
    let o = machine_toml(dir.path(), &root, &file);
    assert_bad_input(&o, &["different numbers of online threads"]);
    assert!(!file.exists());
}
