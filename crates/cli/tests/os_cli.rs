//! The OS simulator from the command line, as a user runs it.

mod util;
use util::{assert_bad_input, smtsched};

#[test]
fn run_bad_input_exits_two() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_bad_input(
        &smtsched(d, &["run", "-p", "naive,bestest"]),
        &["bestest", "tryhard"],
    );
    assert_bad_input(&smtsched(d, &["run", "--duration", "-5"]), &["--duration"]);
    assert_bad_input(&smtsched(d, &["run", "-t", ","]), &["--tasks"]);
    std::fs::write(d.join("empty.toml"), "name = \"nothing\"\ntask = []\n").unwrap();
    assert_bad_input(&smtsched(d, &["run", "-t", "empty.toml"]), &["empty"]);
    std::fs::write(
        d.join("broken.toml"),
        "name = \"x\"\n[[task]]\nworkload = \n",
    )
    .unwrap();
    assert_bad_input(
        &smtsched(d, &["run", "-t", "broken.toml"]),
        &["broken.toml:3:"],
    );
    assert_bad_input(&smtsched(d, &["run", "--cpus", "2-9"]), &["2-9", "CPU 4"]);
    std::fs::write(d.join("exp.toml"), "name = \"e\"\ntitle = \"t\"\nkind = \"policies\"\npolicies = [\"naive\"]\nduration_s = 10\n").unwrap();
    assert_bad_input(
        &smtsched(d, &["reproduce", "exp.toml"]),
        &["exp.toml", "task"],
    );
    assert_bad_input(
        &smtsched(d, &["reproduce", "no-such-experiment"]),
        &["no-such-experiment", "thesis-set-a"],
    );
}

#[test]
fn a_matrix_file_drives_the_os_simulator() {
    // The format `smtsched matrix -o` writes (and `measure pairs` writes on a real machine) is an
    // oracle for `smtsched run`.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = smtsched(
        d,
        &[
            "matrix",
            "-w",
            "gzip-like,mcf-like,mesa-like",
            "--instructions",
            "60000",
            "--warmup",
            "30000",
            "-o",
            "m.json",
        ],
    );
    assert!(o.status.success());
    let o = smtsched(
        d,
        &[
            "run",
            "-t",
            "gzip-like,mcf-like,mesa-like",
            "-p",
            "naive,tryhard",
            "--cpus",
            "2-3",
            "--duration",
            "120",
            "--run-seconds",
            "5",
            "--oracle",
            "measured:m.json",
            "--model",
            "perfect",
            "--json",
        ],
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["oracle"].as_str().unwrap().starts_with("measured"));
    let naive = &v["results"][0]["summaries"][0];
    // Three tasks on two siblings, PRs from the matrix, all below the 1.0 they would have alone.
    let s = naive["system_speedup"].as_f64().unwrap();
    assert!(s > 0.8 && s < 2.0, "{s}");
    // A workload missing from the matrix is bad input.
    let o = smtsched(
        d,
        &[
            "run",
            "-t",
            "gzip-like,art-like",
            "--oracle",
            "measured:m.json",
        ],
    );
    assert_bad_input(&o, &["art-like", "not in the matrix"]);
}

#[test]
fn run_writes_a_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = smtsched(
        d,
        &[
            "run",
            "-t",
            "gzip-like,mesa-like,eon-like",
            "-p",
            "naive",
            "--cpus",
            "2-3",
            "--duration",
            "30",
            "--timeline",
            "t.json",
            "--timeline-svg",
            "t.svg",
            "--csv",
            "r.csv",
        ],
    );
    assert!(o.status.success());
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("t.json")).unwrap()).unwrap();
    let switches = t.as_array().unwrap();
    assert!(switches.len() > 100);
    // Only the two CPUs of package 1 are used.
    assert!(switches
        .iter()
        .all(|s| matches!(s["cpu"].as_u64(), Some(2) | Some(3))));
    assert!(std::fs::read_to_string(d.join("t.svg"))
        .unwrap()
        .contains("gzip-like"));
    let csv = std::fs::read_to_string(d.join("r.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 3);
}
