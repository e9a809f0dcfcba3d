//! `smtsched measure sched` on this machine's real kernel, as a user runs it: CPU shares follow
//! the kernel's weights (the expected values come from the kernel's nice-to-weight table and the
//! cgroup weights, not from the program), and no process or cgroup is left behind after a
//! normal end, SIGTERM, or SIGKILL followed by another run.

mod util;
use util::{assert_all_gone, assert_bad_input, descendants, smtsched, start_harness, wait_for};

use std::path::{Path, PathBuf};

/// Real runs one at a time: two at once would share the CPUs and disturb each other.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn scenario(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
        .display()
        .to_string()
}

const SHORT: &[&str] = &[
    "--duration",
    "4",
    "--warmup",
    "1",
    "--sim-duration",
    "40",
    "--sim-repeat",
    "1",
];

/// Runs `measure sched FILE --json` with short settings.
fn measure(file: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["measure", "sched", file, "--json"];
    args.extend_from_slice(SHORT);
    util::json(&smtsched(dir.path(), &args))
}

/// The cpu-controller directory this machine's groups would be created in, if any.
fn cpu_cgroup_base() -> Option<PathBuf> {
    let v1 = Path::new("/sys/fs/cgroup/cpu");
    v1.join("cpu.shares").exists().then(|| v1.to_path_buf())
}

fn leftover_groups(base: &Path) -> Vec<String> {
    std::fs::read_dir(base)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("smtsched-"))
        .collect()
}

/// Asserts each task's `key` share, as a part of the tasks' total, is within `tolerance` of
/// `want` (which sums to 1), unless the run was disturbed. Parts of the total, because that
/// is what the weights divide: other processes taking a few percent of the CPU (fewer than
/// the run calls disturbed) shrink every task's share alike.
fn assert_shares(v: &serde_json::Value, key: &str, want: &[f64], tolerance: f64) {
    if key == "real_share" && !v["real"]["disturbed"].is_null() {
        eprintln!("disturbed, shares not checked: {}", v["real"]["disturbed"]);
        return;
    }
    let tasks = v["tasks"].as_array().unwrap();
    let total: f64 = tasks.iter().map(|t| t[key].as_f64().unwrap()).sum();
    for (t, w) in tasks.iter().zip(want) {
        let got = t[key].as_f64().unwrap() / total;
        assert!(
            (got - w).abs() < tolerance,
            "{}: {key} {got} against {w}",
            t["task"]
        );
    }
}

#[test]
fn nice_levels_divide_a_real_cpu_by_the_kernels_weights() {
    let _s = serial();
    // sched_prio_to_weight: nice 0, 5, 10 = 1024, 335, 110.
    let total = 1024.0 + 335.0 + 110.0;
    let want = [1024.0 / total, 335.0 / total, 110.0 / total];
    let v = measure(&scenario("nice-one-cpu.toml"));
    assert_shares(&v, "real_share", &want, 0.03);
    assert_shares(&v, "simulated_share", &want, 0.01);
}

#[test]
fn group_weights_use_the_cgroup_controller_and_leave_nothing_behind() {
    let _s = serial();
    let Some(base) = cpu_cgroup_base() else {
        // No writable cpu controller: the run is refused with the reason.
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["measure", "sched", "--json"];
        let f = scenario("group-weights.toml");
        args.push(&f);
        assert_bad_input(&smtsched(dir.path(), &args), &["cgroup", "unavailable"]);
        return;
    };
    let before = leftover_groups(&base);
    // Weights 200 and 100 on one CPU: 2/3 for the big group's task, 1/6 for each small one.
    let v = measure(&scenario("group-weights.toml"));
    assert!(
        v["real"]["cgroup"].as_str().unwrap().contains("V1"),
        "{}",
        v["real"]
    );
    assert_shares(&v, "real_share", &[2.0 / 3.0, 1.0 / 6.0, 1.0 / 6.0], 0.03);
    assert_eq!(leftover_groups(&base), before, "cgroups left behind");
}

#[test]
fn sigterm_and_sigkill_leave_no_task_and_no_cgroup() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let file = scenario("group-weights.toml");
    let args = [
        "measure",
        "sched",
        file.as_str(),
        "--duration",
        "60",
        "--sim-duration",
        "20",
        "--sim-repeat",
        "1",
    ];
    // SIGTERM: the harness stops its tasks, removes its groups and says so.
    let own = |pid: u32| cpu_cgroup_base().map(|b| b.join(format!("smtsched-{pid}")));
    let h = start_harness(dir.path(), &args);
    let group = own(h.id());
    let tasks = wait_for(h.id(), "smtsched", 3);
    std::thread::sleep(std::time::Duration::from_millis(500));
    unsafe { libc::kill(h.id() as i32, libc::SIGTERM) };
    let out = h.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("interrupted by SIGTERM"), "{err}");
    assert_eq!(out.status.code(), Some(1));
    assert_all_gone(&tasks);
    assert!(
        group.is_none_or(|g| !g.exists()),
        "cgroup left after SIGTERM"
    );
    // SIGKILL: nothing of the harness runs, but the tasks die with it (PR_SET_PDEATHSIG) and
    // the next run removes the group it left.
    let mut h = start_harness(dir.path(), &args);
    let pid = h.id();
    let tasks = wait_for(pid, "smtsched", 3);
    // Wait until the tasks are in their groups.
    let group = own(pid);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while group.as_ref().is_some_and(|g| !g.join("small").exists()) {
        assert!(
            std::time::Instant::now() < deadline,
            "groups never appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    h.kill().unwrap();
    h.wait().unwrap();
    assert_all_gone(&tasks);
    assert!(descendants(pid).is_empty());
    if let Some(g) = &group {
        assert!(
            g.exists(),
            "a killed harness cannot remove its groups itself"
        );
        // Even a run of a set without groups.
        measure(&scenario("nice-one-cpu.toml"));
        assert!(
            !g.exists(),
            "the next run removes the group a killed one left"
        );
    }
}

#[test]
fn bad_task_sets_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("fork.toml"),
        "[[task]]\nworkload = \"gzip-like\"\nfork = { children = 3, child_seconds = 0.1 }\n",
    )
    .unwrap();
    assert_bad_input(
        &smtsched(d, &["measure", "sched", "fork.toml"]),
        &["fork.toml", "task[0].fork"],
    );
    // What the real run could not match: a workload the simulator does not know, copies (one
    // real loop runs per task), two tasks of one name (rows are found by name).
    for (text, says) in [
        ("[[task]]\nworkload = \"gzipx\"\n", "task[0].workload"),
        (
            "[[task]]\nworkload = \"gzip-like\"\ncopies = 3\n",
            "task[0].copies = 3",
        ),
        (
            "[[task]]\nworkload = \"gzip-like\"\n[[task]]\nworkload = \"gzip-like\"\n",
            "task[1]: the name \"gzip-like\"",
        ),
    ] {
        std::fs::write(d.join("odd.toml"), text).unwrap();
        assert_bad_input(
            &smtsched(d, &["measure", "sched", "odd.toml"]),
            &["odd.toml", says],
        );
    }
    std::fs::write(
        d.join("cpu.toml"),
        "[[task]]\nworkload = \"gzip-like\"\ncpus = \"900\"\n",
    )
    .unwrap();
    assert_bad_input(
        &smtsched(d, &["measure", "sched", "cpu.toml"]),
        &["cpu.toml", "task[0].cpus", "900"],
    );
    assert_bad_input(
        &smtsched(d, &["measure", "sched", "nothing.toml"]),
        &["nothing.toml"],
    );
    assert_bad_input(
        &smtsched(d, &["measure", "sched", "cpu.toml", "--duration", "0"]),
        &["--duration"],
    );
    // A window of a few time slices measures slices, not shares.
    std::fs::write(
        d.join("one-task.toml"),
        "[[task]]\nworkload = \"gzip-like\"\n",
    )
    .unwrap();
    assert_bad_input(
        &smtsched(
            d,
            &["measure", "sched", "one-task.toml", "--duration", "0.01"],
        ),
        &["--duration 0.01", "at least 0.1 s"],
    );
    // Times a timer cannot hold, or a simulation would take days over.
    std::fs::write(
        d.join("one-cpu.toml"),
        "[[task]]\nworkload = \"gzip-like\"\n",
    )
    .unwrap();
    for (flag, value, says) in [
        ("--duration", "1e20", "at most 86400"),
        ("--warmup", "1e300", "at most 86400"),
        ("--sim-duration", "1e7", "at most 1000000"),
    ] {
        assert_bad_input(
            &smtsched(d, &["measure", "sched", "one-cpu.toml", flag, value]),
            &[flag, says],
        );
    }
    // A saved report of another task set (as many tasks, others) is not compared with this one.
    std::fs::write(d.join("one.toml"), "[[task]]\nworkload = \"gzip-like\"\n").unwrap();
    std::fs::write(
        d.join("other.json"),
        r#"{"tasks": [{"task": "nice10", "nice": 10, "group": null, "block": null,
            "real_share": 0.5}], "real": {"seconds": 4.0}}"#,
    )
    .unwrap();
    assert_bad_input(
        &smtsched(
            d,
            &["measure", "sched", "one.toml", "--replay", "other.json"],
        ),
        &["--replay other.json", "a report of another task set"],
    );
}
