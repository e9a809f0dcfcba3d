//! The real binary, run as a user would, in a fresh temporary directory.

mod util;
use util::{assert_bad_input, smtsched, stdout};

use std::path::Path;

#[test]
fn lists_and_shows_machines_and_workloads() {
    let dir = tempfile::tempdir().unwrap();
    let o = smtsched(dir.path(), &["machines"]);
    assert!(o.status.success());
    for name in ["northwood", "prescott", "cmt-fedorova", "smt2-modern"] {
        assert!(stdout(&o).contains(name));
    }
    let o = smtsched(dir.path(), &["machines", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.as_array().unwrap().len() >= 5);
    // `show` prints the description with its sources.
    let o = smtsched(dir.path(), &["machines", "show", "northwood"]);
    assert!(stdout(&o).contains("size_bytes = 8192") && stdout(&o).contains("[OPT Table 1-1"));
    // Overrides apply before validation: a 2-core cmt-fedorova with a 96 KB L2.
    let o = smtsched(
        dir.path(),
        &[
            "machines",
            "show",
            "cmt-fedorova",
            "--json",
            "--set",
            "topology.cores_per_package=2",
            "--set",
            "cache.L2.size_bytes=98304",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["topology"]["cores_per_package"], 2);
    assert_eq!(v["cache"]["L2"]["size_bytes"], 98304);
    let o = smtsched(dir.path(), &["workloads"]);
    assert!(stdout(&o).contains("mcf-like") && stdout(&o).contains("cpi-16"));
}

#[test]
fn a_user_machine_file_works_like_a_preset() {
    let dir = tempfile::tempdir().unwrap();
    let o = smtsched(dir.path(), &["machines", "show", "prescott"]);
    std::fs::write(
        dir.path().join("mine.toml"),
        stdout(&o).replace("name = \"prescott\"", "name = \"mine\""),
    )
    .unwrap();
    let o = smtsched(
        dir.path(),
        &[
            "solo",
            "gzip-like",
            "--machine",
            "mine.toml",
            "--instructions",
            "20000",
            "--warmup",
            "0",
            "--json",
        ],
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["machine"], "mine");
    assert_eq!(v["counters"]["instructions"], 20000);
}

#[test]
fn bad_input_gets_one_line_and_exit_code_two() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("broken.toml"), "name = \"x\"\n[topology\n").unwrap();
    assert_bad_input(
        &smtsched(d, &["solo", "gzip-like", "--machine", "broken.toml"]),
        &["broken.toml:2:"],
    );
    assert_bad_input(
        &smtsched(d, &["solo", "gzip-like", "--machine", "pentium5"]),
        &["pentium5", "northwood"],
    );
    assert_bad_input(
        &smtsched(d, &["solo", "no-such-workload"]),
        &["no-such-workload"],
    );
    assert_bad_input(
        &smtsched(d, &["solo", "gzip-like", "--set", "cache.L1D.ways=0"]),
        &["machines/northwood.toml", "cache.L1D.ways", "= 0"],
    );
    // A name headers and files show must be one there: an empty one (or one with a newline) is
    // refused, a machine's and a workload's alike.
    assert_bad_input(
        &smtsched(d, &["solo", "gzip-like", "--set", "name="]),
        &["machines/northwood.toml", "name = \"\"", "visible name"],
    );
    assert_bad_input(
        &smtsched(d, &["workloads", "show", "mcf-like", "--set", "name=a\nb"]),
        &["mcf-like", "name = \"a\\nb\"", "visible name"],
    );
    assert_bad_input(
        &smtsched(
            d,
            &["solo", "gzip-like", "--set", "cache.L2.size_bytes=393216"],
        ),
        &["cache.L2.size_bytes", "393216", "power of two"],
    );
    assert_bad_input(
        &smtsched(d, &["corun", "gzip-like", "mcf-like", "--cpus", "2,7"]),
        &["--cpus", "CPU 7", "0-3"],
    );
    assert_bad_input(
        &smtsched(d, &["solo", "gzip-like", "--cpus", "4"]),
        &["--cpus 4"],
    );
    assert_bad_input(
        &smtsched(d, &["matrix", "-w", "gzip-like", "--placement", "diagonal"]),
        &["diagonal"],
    );
    // A placement the machine cannot provide.
    assert_bad_input(
        &smtsched(
            d,
            &[
                "matrix",
                "-w",
                "gzip-like",
                "--machine",
                "northwood",
                "--set",
                "topology.threads_per_core=1",
            ],
        ),
        &["siblings", "not available"],
    );
    // Nothing was written.
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 1);
}

/// A value an experiment file gives that would be read as something else (a default, a shorter
/// range, an endless run) is refused at load, one line naming the field, exit 2.
#[test]
fn an_experiment_value_that_would_be_read_as_another_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let shipped = |name: &str| {
        std::fs::read_to_string(format!(
            "{}/../../experiments/{name}.toml",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    };
    let (l1, http) = (shipped("fedorova-l1"), shipped("thesis-http"));
    let first_range = l1
        .lines()
        .find(|l| l.starts_with("within = "))
        .unwrap()
        .to_string();
    let cases = [
        (l1.replace("copies = 4", "copies = 0"), "cmt.copies: 0"),
        (
            l1.replace(
                "l1_sizes = [8192, 16384, 32768, 65536, 131072]",
                "l1_sizes = []",
            ),
            "cmt.l1_sizes: []",
        ),
        (
            l1.replace(&first_range, "within = [0.9, 0.7]"),
            "within = [0.9, 0.7]: must be [low, high]",
        ),
        (
            l1.replace(&first_range, "within = [0.7, 0.9, 1.0]"),
            "within = [0.7, 0.9, 1.0]: must be [low, high]",
        ),
        (
            http.replace("repetitions = 1", "repetitions = 4000000000"),
            "repetitions: 4000000000: must be 1 to 1000",
        ),
        (
            http.replace("repetitions = 1", "repetitions = 3\nmax_repetitions = 2"),
            "max_repetitions: 2: must be from repetitions (3)",
        ),
    ];
    for (text, needle) in cases {
        assert_ne!(text, l1);
        assert_ne!(text, http);
        std::fs::write(d.join("e.toml"), text).unwrap();
        assert_bad_input(&smtsched(d, &["reproduce", "e.toml"]), &["e.toml", needle]);
    }
    assert_bad_input(
        &smtsched(d, &["bench", "--instructions", "1000000000001"]),
        &["--instructions 1000000000001", "at most 1e12"],
    );
    // A one-cycle window holds no access to take a miss ratio of (it printed 0.0%).
    std::fs::write(
        d.join("e.toml"),
        l1.replace("measure_cycles = 4_000_000", "measure_cycles = 1")
            .replace("warmup_cycles = 1_000_000", "warmup_cycles = 1000"),
    )
    .unwrap();
    assert_bad_input(
        &smtsched(d, &["reproduce", "e.toml"]),
        &["measure_cycles = 1: the window holds no memory reference"],
    );
    // Something that is there but is not a file is named as such, not "no such file".
    assert_bad_input(
        &smtsched(d, &["reproduce", "/dev/null"]),
        &["/dev/null: not a regular file"],
    );
}

fn matrix_json(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "matrix",
        "-w",
        "gzip-like,mcf-like,mesa-like",
        "--instructions",
        "60000",
        "--warmup",
        "30000",
        "--json",
    ];
    args.extend_from_slice(extra);
    let o = smtsched(dir, &args);
    assert!(o.status.success());
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn matrix_writes_consistent_files_and_does_not_depend_on_host_threads() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let one = matrix_json(
        d,
        &[
            "--threads",
            "1",
            "-o",
            "m.json",
            "--csv",
            "m.csv",
            "--pairs-csv",
            "p.csv",
            "--svg",
            "m.svg",
        ],
    );
    let two = matrix_json(d, &["--threads", "2"]);
    assert_eq!(one, two, "bit-identical at 1 and 2 host threads");
    let file: smtsched_model::PrMatrix =
        serde_json::from_str(&std::fs::read_to_string(d.join("m.json")).unwrap()).unwrap();
    file.validate().unwrap();
    assert_eq!(file.workloads, ["gzip-like", "mcf-like", "mesa-like"]);
    assert_eq!(file.pairs.len(), 6, "3 pairs plus 3 self-pairs");
    // The CSV grid holds the same numbers: row = subject, column = background.
    let csv = std::fs::read_to_string(d.join("m.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0], ["subject", "gzip-like", "mcf-like", "mesa-like"]);
    for (i, row) in rows[1..].iter().enumerate() {
        for (j, cell) in row[1..].iter().enumerate() {
            let v: f64 = cell.parse().unwrap();
            assert!((v - file.pr(i, j).unwrap()).abs() < 1e-6);
        }
    }
    // The system speedup of a pair is the sum of its two PRs.
    let pairs = std::fs::read_to_string(d.join("p.csv")).unwrap();
    for line in pairs.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (a, b, s): (f64, f64, f64) = (
            f[2].parse().unwrap(),
            f[3].parse().unwrap(),
            f[4].parse().unwrap(),
        );
        assert!((a + b - s).abs() < 1e-5);
    }
    let svg = std::fs::read_to_string(d.join("m.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("mcf"));
    // Summary: the mean system speedup is the mean over the six pairs.
    let mean: f64 = file.pairs.iter().map(|p| p.pr_a + p.pr_b).sum::<f64>() / 6.0;
    assert!((one["summary"]["system_speedup"]["mean"].as_f64().unwrap() - mean).abs() < 1e-12);
}

#[test]
fn placements_bracket_the_shared_core() {
    let dir = tempfile::tempdir().unwrap();
    // Instruction windows, or for time sharing rounds of quanta.
    let window = ["--instructions", "200000", "--warmup", "100000"];
    let prs = |placement: &str, extra: &[&str]| -> Vec<f64> {
        let mut args = vec!["matrix", "-w", "sixtrack-like", "--json", "-p", placement];
        args.extend_from_slice(extra);
        let o = smtsched(dir.path(), &args);
        assert!(o.status.success());
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let p = &v["matrix"]["pairs"][0];
        vec![p["pr_a"].as_f64().unwrap(), p["pr_b"].as_f64().unwrap()]
    };
    // Two copies of a compute-bound program on separate packages share almost nothing.
    for pr in prs("cores", &window) {
        assert!(pr > 0.97 && pr < 1.02, "cores: {pr}");
    }
    // Time-sharing one CPU: at most half each, less by the switch cost and the cache refill.
    for pr in prs("timeshare", &["--quantum-ms", "0.2", "--rounds", "3"]) {
        assert!(pr > 0.40 && pr <= 0.5, "timeshare: {pr}");
    }
    // Siblings: in between.
    for pr in prs("siblings", &window) {
        assert!(pr > 0.5 && pr < 0.97, "siblings: {pr}");
    }
}

#[test]
fn corun_reports_each_thread_and_the_system_speedup() {
    let dir = tempfile::tempdir().unwrap();
    let o = smtsched(
        dir.path(),
        &[
            "corun",
            "mcf-like",
            "mesa-like",
            "--instructions",
            "100000",
            "--warmup",
            "50000",
            "--json",
        ],
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = v["threads"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(
        (t[0]["cpu"].as_u64(), t[1]["cpu"].as_u64()),
        (Some(2), Some(3)),
        "siblings of package 1"
    );
    let sum: f64 = t.iter().map(|x| x["pr"].as_f64().unwrap()).sum();
    assert!((v["system_speedup"].as_f64().unwrap() - sum).abs() < 1e-12);
    for x in t {
        let pr = x["pr"].as_f64().unwrap();
        assert!((x["ipc"].as_f64().unwrap() / x["solo_ipc"].as_f64().unwrap() - pr).abs() < 1e-9);
    }
}

/// Three copies of one program time-sharing one CPU each get a third of it (a little less for
/// refilling the caches after each switch), however short their instruction window: each is
/// measured over whole rounds of quanta, not within its first quantum (which it runs alone).
#[test]
fn corun_threads_time_sharing_a_cpu_each_get_their_share() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "corun",
        "gzip-like",
        "gzip-like",
        "gzip-like",
        "--cpus",
        "0,0,0",
        "--quantum-ms",
        "2",
        "--json",
    ];
    let o = smtsched(dir.path(), &args);
    assert!(o.status.success(), "{}", util::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let prs: Vec<f64> = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["pr"].as_f64().unwrap())
        .collect();
    assert_eq!(prs.len(), 3);
    for pr in &prs {
        assert!(*pr > 0.25 && *pr <= 1.0 / 3.0 + 0.01, "{prs:?}");
    }
    assert!(v["system_speedup"].as_f64().unwrap() <= 1.01, "{v}");
    // Two threads on one CPU are measured as the time-shared matrix measures their pair
    // (refill-only quanta, two rounds), bit for bit; 2 ms quanta keep the test short.
    let corun = smtsched(
        dir.path(),
        &[
            "corun",
            "gzip-like",
            "mcf-like",
            "--cpus",
            "2,2",
            "--quantum-ms",
            "2",
            "--json",
        ],
    );
    let matrix = smtsched(
        dir.path(),
        &[
            "matrix",
            "-w",
            "gzip-like,mcf-like",
            "-p",
            "timeshare",
            "--quantum-ms",
            "2",
            "--json",
        ],
    );
    let corun_prs: Vec<f64> = util::json(&corun)["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["pr"].as_f64().unwrap())
        .collect();
    let pair = util::json(&matrix)["matrix"]["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["a"] == 0 && p["b"] == 1)
        .cloned()
        .unwrap();
    assert_eq!(
        corun_prs,
        [
            pair["pr_a"].as_f64().unwrap(),
            pair["pr_b"].as_f64().unwrap()
        ]
    );
    // Beside a busy CPU, where refill-only quanta were never validated, every cycle is
    // simulated: the run is the one --full-quanta gives.
    let mixed = [
        "corun",
        "gzip-like",
        "swim-like",
        "art-like",
        "--cpus",
        "0,0,2",
        "--quantum-ms",
        "2",
        "--json",
    ];
    let full = [&mixed[..], &["--full-quanta"]].concat();
    assert_eq!(
        util::json(&smtsched(dir.path(), &mixed)),
        util::json(&smtsched(dir.path(), &full))
    );
}

/// One file named for two outputs, or for an output and an input, would lose one of them; a
/// device takes any number.
#[test]
fn an_output_naming_another_output_or_an_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let small = [
        "-w",
        "gzip-like",
        "--instructions",
        "20000",
        "--warmup",
        "100",
    ];
    let matrix = |files: &[&str]| smtsched(d, &[&["matrix"][..], &small, files].concat());
    assert!(matrix(&["-o", "m.json"]).status.success());
    let kept = std::fs::read(d.join("m.json")).unwrap();
    assert_bad_input(
        &matrix(&["-o", "x.json", "--csv", "./x.json"]),
        &["x.json and ./x.json", "two outputs"],
    );
    assert_bad_input(
        &smtsched(d, &["plot", "m.json", "-o", "m.json"]),
        &["m.json", "input"],
    );
    assert_bad_input(
        &smtsched(d, &["diff", "m.json", "m.json", "--svg", "./m.json"]),
        &["./m.json", "input m.json"],
    );
    // A task set, an experiment or a sweep file is an input too.
    let set_a = include_str!("../../../experiments/thesis-set-a.toml");
    std::fs::write(d.join("t.toml"), set_a).unwrap();
    std::fs::write(
        d.join("s.toml"),
        "name = \"s\"\nkind = \"pairs\"\nmachines = [\"northwood\"]\n\
         workloads = [\"gzip-like\"]\nplacements = [\"siblings\"]\nseeds = [1]\n",
    )
    .unwrap();
    let sweep = std::fs::read(d.join("s.toml")).unwrap();
    for (args, input) in [
        (
            &["run", "-t", "t.toml", "--csv", "./t.toml"][..],
            "input t.toml",
        ),
        (&["reproduce", "t.toml", "-o", "t.toml"], "input t.toml"),
        (&["sweep", "run", "s.toml", "-o", "s.toml"], "input s.toml"),
    ] {
        assert_bad_input(&smtsched(d, args), &[input]);
    }
    assert_eq!(std::fs::read_to_string(d.join("t.toml")).unwrap(), set_a);
    assert_eq!(std::fs::read(d.join("s.toml")).unwrap(), sweep);
    assert_eq!(std::fs::read(d.join("m.json")).unwrap(), kept);
    assert!(!d.join("x.json").exists());
    assert!(matrix(&["--csv", "/dev/null", "--svg", "/dev/null"])
        .status
        .success());
}

#[test]
fn outputs_go_through_links_devices_and_keep_a_files_mode() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.csv");
    std::fs::write(&real, "old").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.path().join("link.csv");
    std::os::unix::fs::symlink("real.csv", &link).unwrap();
    let args = |csv: &str| {
        vec![
            "matrix".to_string(),
            "-w".into(),
            "gzip-like".into(),
            "--instructions".into(),
            "20000".into(),
            "--warmup".into(),
            "0".into(),
            "--csv".into(),
            csv.to_string(),
        ]
    };
    let run = |csv: &str| {
        let a = args(csv);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = smtsched(dir.path(), &a);
        assert!(o.status.success());
    };
    // Through the symlink: the link stays, its target is written and keeps mode 0600.
    run("link.csv");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let text = std::fs::read_to_string(&real).unwrap();
    assert!(text.contains("gzip"), "{text}");
    assert_eq!(
        std::fs::metadata(&real).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // A character device is written through, never replaced.
    run("/dev/null");
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    // A directory is refused in one line, exit 2.
    let a = args(dir.path().to_str().unwrap());
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let o = smtsched(dir.path(), &a);
    assert_bad_input(&o, &["is a directory"]);
}

#[test]
fn arguments_that_would_exhaust_memory_or_time_are_refused_with_their_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("slow.toml"),
        "name = \"slow\"\n[[phase]]\ninstructions = 1000\nilp = 1e-300\nloads = 0.0\n\
         stores = 0.0\nbranches = 0.1\nbranch_mispredict_rate = 0.0\n[[phase.code]]\n\
         size_bytes = 128\nweight = 1.0\n",
    )
    .unwrap();
    let cases: [(&[&str], &[&str]); 11] = [
        (
            &["solo", "slow.toml"],
            &["phase[0].ilp = 1e-300", "0.01 to 64"],
        ),
        (
            &["run", "-t", "gzip-like", "--estimate-cost", "nan"],
            &["--estimate-cost", "not a fraction"],
        ),
        (&["matrix", "--threads", "100000"], &["100000", "1..=1024"]),
        (
            &[
                "solo",
                "gzip-like",
                "--set",
                "cache.L2.size_bytes=1099511627776",
            ],
            &["cache.L2.size_bytes", "4 GiB"],
        ),
        (
            &[
                "solo",
                "gzip-like",
                "--set",
                "topology.packages=1024",
                "--set",
                "topology.cores_per_package=1024",
            ],
            &["topology", "at most 4096"],
        ),
        (
            &["run", "-t", "gzip-like", "--run-seconds", "1e-9"],
            &["run_seconds = 1e-9", "0.001"],
        ),
        (
            &["run", "-t", "gzip-like", "--run-seconds", "inf"],
            &["run_seconds = inf"],
        ),
        (
            &["run", "--duration", "1e12"],
            &["--duration", "at most 1e6"],
        ),
        (
            &["run", "--duration", "20", "--hz", "1e9"],
            &["--hz 1000000000", "1 to 10000"],
        ),
        (&["bench", "--instructions", "0"], &["--instructions", "0"]),
        // Above half of this machine's memory, whatever it has (less than 2000000 GiB).
        (
            &[
                "host",
                "kernel",
                "pointer-chase",
                "--footprint",
                "1000000GiB",
            ],
            &["footprint", "half of this machine's memory"],
        ),
    ];
    for (args, needles) in cases {
        let o = smtsched(dir.path(), args);
        assert_bad_input(&o, needles);
    }
}

/// A measured matrix as the estimator must have every task's workload: a missing one would be
/// estimated at PR 1 beside anyone, and steer the policy wrong without a word.
#[test]
fn a_matrix_estimator_without_a_tasks_workload_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = smtsched(
        d,
        &[
            "matrix",
            "-w",
            "gzip-like,mcf-like",
            "--instructions",
            "50000",
            "--warmup",
            "100",
            "-o",
            "m.json",
        ],
    );
    assert!(o.status.success(), "{}", util::stderr(&o));
    let run = |tasks: &str| {
        smtsched(
            d,
            &[
                "run",
                "-t",
                tasks,
                "--cpus",
                "2-3",
                "--duration",
                "12",
                "--run-seconds",
                "1",
                "-p",
                "fair",
                "--estimator",
                "matrix:m.json",
            ],
        )
    };
    assert_bad_input(
        &run("gzip-like,mcf-like,art-like"),
        &["\"art-like\"", "gzip-like, mcf-like"],
    );
    let o = run("gzip-like,mcf-like");
    assert!(o.status.success(), "{}", util::stderr(&o));
}

/// A command's output files are one set: when one of them cannot be written, none is put in
/// place, and a file the user had keeps its contents.
#[test]
fn an_output_that_cannot_be_written_leaves_the_others_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("keep.json"), "KEEP\n").unwrap();
    // /proc takes no new file, though its directory exists (what the up-front check looks at).
    let o = smtsched(
        d,
        &[
            "matrix",
            "-w",
            "gzip-like,mcf-like",
            "--instructions",
            "100000",
            "--warmup",
            "100",
            "-o",
            "keep.json",
            "--csv",
            "new.csv",
            "--svg",
            "/proc/smtsched-x.svg",
        ],
    );
    assert_bad_input(&o, &["/proc/smtsched-x.svg"]);
    assert_eq!(
        std::fs::read_to_string(d.join("keep.json")).unwrap(),
        "KEEP\n"
    );
    let mut left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["keep.json"], "no new file, no temporary file");
}

/// Inputs that would do nothing, or something other than asked, are refused before any work,
/// each in one line naming what is wrong; nothing is written.
#[test]
fn options_that_would_change_nothing_or_name_the_wrong_thing_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A recorded trace where a description belongs: the header a trace file starts with.
    std::fs::write(d.join("t.smtt"), b"SMTTRACE\x01\x00\x00\x00\xff\xfe").unwrap();
    let set_a = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/thesis-set-a.toml"
    );
    let cases: [(&[&str], &[&str]); 19] = [
        // A list takes no options (`-o` would write nothing, `--json` print text).
        (
            &["reproduce", "--list", "-o", "list.txt"],
            &["'--list' cannot be used with"],
        ),
        // `all` prints the claims' table; its JSON is the report's, in a directory.
        (
            &["reproduce", "all", "--json", "--only", "thesis-http"],
            &["--json", "give -o DIR"],
        ),
        // Time-sharing settings where no thread shares a CPU.
        (
            &[
                "corun",
                "gzip-like",
                "mcf-like",
                "--cpus",
                "0,1",
                "--quantum-ms",
                "5",
            ],
            &["--quantum-ms", "share a logical CPU"],
        ),
        // An instruction window where threads are measured over rounds of quanta.
        (
            &[
                "matrix",
                "-w",
                "gzip-like",
                "-p",
                "timeshare",
                "--warmup",
                "5",
            ],
            &["--warmup", "rounds of quanta"],
        ),
        (
            &[
                "matrix",
                "-w",
                "gzip-like",
                "-p",
                "siblings",
                "--rounds",
                "3",
            ],
            &["--rounds", "share a logical CPU"],
        ),
        // A file of what never happens: fair on Linux 2.4 acts through goodness() hooks.
        (
            &["run", "-p", "fair", "--decisions", "d.jsonl"],
            &["--decisions", "no periodic decisions"],
        ),
        // Overrides that no part of the experiment takes.
        (
            &["reproduce", "thesis-http", "--estimator", "thesis"],
            &["thesis-http", "--estimator", "\"configurations\""],
        ),
        (
            &["reproduce", "thesis-desktop", "--duration", "20"],
            &["--duration", "\"pairs\""],
        ),
        (
            &[
                "reproduce",
                "all",
                "--only",
                "thesis-http,thesis-desktop",
                "--policies",
                "naive",
            ],
            &["--policies", "none of the experiments"],
        ),
        // An override's bad value is the override's, not the machine file's.
        (
            &["solo", "gzip-like", "--set", "clock_ghz=nan"],
            &["--set clock_ghz=nan", "clock_ghz"],
        ),
        (
            &["workloads", "show", "t.smtt"],
            &["t.smtt", "a recorded trace"],
        ),
        // Nothing to measure or draw.
        (
            &["host", "counters", "--pid", "1", "--duration-ms", "0"],
            &["--duration-ms", "0"],
        ),
        (
            &["plot", "x.json", "--timeline-seconds", "0"],
            &["--timeline-seconds", "above 0"],
        ),
        (
            &[
                "trace",
                "record",
                "--max-instructions",
                "0",
                "-o",
                "x.smtt",
                "--",
                "true",
            ],
            &["--max-instructions", "0"],
        ),
        // A man page directory's missing parent is not made.
        (&["man", "-o", "nodir/pages"], &["no directory nodir"]),
        // More shards than experiments (or jobs): some would have nothing to run.
        (
            &[
                "reproduce",
                "all",
                "--only",
                "fedorova-cpi,fedorova-l1",
                "--slurm",
                "--shards",
                "3",
                "--dir",
                "out",
            ],
            &["--shards 3", "2 experiments"],
        ),
        (
            &["run", "-p", "naive,no-such-policy"],
            &["no-such-policy", "core-sched"],
        ),
        // A file sets each task's run length; a measured matrix has no kernel build to choose.
        (
            &["run", "-t", set_a, "--run-seconds", "5"],
            &["--run-seconds 5", "thesis-set-a.toml", "run_seconds"],
        ),
        (
            &["run", "--oracle", "measured:m.json", "--kernel", "up"],
            &["--kernel up", "measured:m.json", "simulated oracle"],
        ),
    ];
    for (args, needles) in cases {
        assert_bad_input(&smtsched(d, args), needles);
    }
    let mut left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["t.smtt"], "nothing written");
    // Every policy the simulator has is named in the help of the commands that take policies.
    let help = smtsched(d, &["run", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    for p in [
        "naive",
        "smt-default",
        "basic",
        "tryhard",
        "plan",
        "plan3",
        "fair",
        "ipc",
        "sos",
        "optimal",
        "balance-set-perf",
        "balance-set-fair",
        "di",
        "core-sched",
    ] {
        assert!(
            help.contains(&format!(" {p},")) || help.contains(&format!(" {p}]")),
            "{p}"
        );
    }
}

#[test]
fn bench_measures_every_preset_scaling_and_memory_that_does_not_grow_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let bench = |args: &[&str]| {
        let mut all = vec!["bench", "--repetitions", "1", "--json"];
        all.extend_from_slice(args);
        let o = smtsched(dir.path(), &all);
        assert!(o.status.success(), "{}", util::stderr(&o));
        util::json(&o)
    };
    let presets = util::json(&smtsched(dir.path(), &["machines", "--json"]));
    let v = bench(&["-m", "all", "--instructions", "100000"]);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), presets.as_array().unwrap().len());
    for r in runs {
        assert!(r["instructions_per_second"].as_f64().unwrap() > 0.0, "{r}");
        // Two threads each run at least their warm-up and window.
        assert!(
            r["instructions_simulated"].as_u64().unwrap() >= 2 * 150_000,
            "{r}"
        );
    }
    // One logical CPU: the two workloads time-share it.
    let one_cpu = runs
        .iter()
        .find(|r| r["machine"] == "superscalar-redstone")
        .unwrap();
    assert_eq!(one_cpu["placement"], "time-shared");
    // Forty times the instructions, the same memory: the simulator's state is its caches.
    let small = bench(&["--instructions", "100000"])["peak_resident_bytes"]
        .as_u64()
        .unwrap();
    let large = bench(&["--instructions", "4000000"])["peak_resident_bytes"]
        .as_u64()
        .unwrap();
    assert!(
        large < small + (8 << 20),
        "peak memory grew from {small} to {large} bytes"
    );
    // The scaling matrix gives the same result on one host thread and on all of them.
    let s = &bench(&["--instructions", "100000", "--scaling"])["scaling"];
    assert_eq!(s["identical_results"], true, "{s}");
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(s["host_threads"].as_u64().unwrap() as usize, cores);
    assert_eq!(s["runs"], 2 * 8 + 8 * 9 / 2);
    // A machine of one CPU scales a time-shared matrix; one workload runs alone.
    let v = bench(&[
        "-m",
        "superscalar-redstone",
        "-w",
        "gzip-like",
        "--instructions",
        "20000",
        "--scaling",
    ]);
    assert_eq!(v["runs"][0]["placement"], "alone");
    assert_eq!(v["scaling"]["identical_results"], true, "{v}");
}

#[test]
fn first_contact_usage_suggestions_version_completions_and_man_pages() {
    let dir = tempfile::tempdir().unwrap();
    // A bare call prints the usage (not an error), exit 2.
    let o = smtsched(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Usage: smtsched <COMMAND>") && err.contains("matrix"),
        "{err}"
    );
    // --version names the commit the binary was built from (as git reads the checkout).
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let o = smtsched(dir.path(), &["--version"]);
    let version = stdout(&o);
    if head.status.success() {
        let commit = String::from_utf8_lossy(&head.stdout).trim().to_string();
        assert!(version.contains(&format!("(commit {commit})")), "{version}");
    } else {
        assert!(version.contains("(unknown commit)"), "{version}");
    }
    // Near misses are named: a workload, a machine, a --set key.
    let o = smtsched(dir.path(), &["solo", "gzip"]);
    assert_bad_input(
        &o,
        &["unknown workload \"gzip\"", "did you mean \"gzip-like\"?"],
    );
    let o = smtsched(dir.path(), &["solo", "gzip-like", "--machine", "northwod"]);
    assert_bad_input(&o, &["did you mean \"northwood\"?"]);
    let o = smtsched(
        dir.path(),
        &["solo", "gzip-like", "--set", "cache.L2.size_byte=1024"],
    );
    assert_bad_input(
        &o,
        &["no key cache.L2.size_byte", "did you mean \"size_bytes\"?"],
    );
    // Completions for each shell name every command.
    for shell in ["bash", "zsh", "fish"] {
        let o = smtsched(dir.path(), &["completions", shell]);
        assert!(o.status.success());
        let script = stdout(&o);
        for cmd in ["matrix", "reproduce", "sweep"] {
            assert!(script.contains(cmd), "{shell} completion lacks {cmd}");
        }
    }
    // Man pages: one for smtsched and one per command, readable by man(1)'s roff.
    let o = smtsched(dir.path(), &["man", "-o", "man1"]);
    assert!(o.status.success());
    let page = std::fs::read_to_string(dir.path().join("man1/smtsched-matrix.1")).unwrap();
    assert!(page.starts_with(".ie") || page.contains(".TH"), "{page}");
    assert!(page.contains("full\\-quanta"), "the page lists the flags");
    assert!(dir.path().join("man1/smtsched.1").exists());
}
