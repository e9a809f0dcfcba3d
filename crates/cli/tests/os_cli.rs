//! The OS simulator from the command line, as a user runs it.

mod util;
use std::path::Path;
use util::{assert_bad_input, smtsched, stdout};

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
    // A claim on a metric no policies experiment has is refused at load, naming it.
    std::fs::write(
        d.join("metric.toml"),
        "name = \"e\"\ntitle = \"t\"\nkind = \"policies\"\npolicies = [\"naive\", \"plan\"]\n\
         [[task]]\nworkload = \"gzip-like\"\n[[paper.claim]]\nsays = \"s\"\n\
         metric = \"speedupp\"\nhigher = \"plan\"\nthan = \"naive\"\n",
    )
    .unwrap();
    assert_bad_input(
        &smtsched(d, &["reproduce", "metric.toml"]),
        &["metric.toml", "speedupp"],
    );
    // A policy named twice would print the same row twice: refused, in `run`, in an experiment
    // file and in `reproduce --policies`.
    assert_bad_input(
        &smtsched(d, &["run", "-t", "gzip-like", "-p", "naive,basic,naive"]),
        &["--policies", "\"naive\" is named twice"],
    );
    std::fs::write(
        d.join("twice.toml"),
        "name = \"e\"\ntitle = \"t\"\nkind = \"policies\"\npolicies = [\"plan\", \"plan\"]\n\
         [[task]]\nworkload = \"gzip-like\"\n",
    )
    .unwrap();
    assert_bad_input(
        &smtsched(d, &["reproduce", "twice.toml"]),
        &["twice.toml", "policies", "\"plan\" is named twice"],
    );
    let args = [
        "reproduce",
        "thesis-set-a",
        "--policies",
        "naive,plan,naive",
    ];
    assert_bad_input(
        &smtsched(d, &args),
        &["--policies", "\"naive\" is named twice"],
    );
    // `--timeline-seconds` draws the timeline's SVG: without one it would change nothing.
    let args = ["run", "-t", "gzip-like", "--timeline-seconds", "5"];
    assert_bad_input(
        &smtsched(d, &args),
        &["--timeline-seconds 5", "--timeline-svg"],
    );
}

/// Where there are no more runnable tasks than cores, a policy that pairs tasks gives each its own
/// core rather than leave one idle: two tasks on two packages of Northwood run as under `basic`
/// (a core each, PR near 1: the two programs alone on their packages, sharing only memory),
/// never at the PRs of the pair on one core. On one package they share it under every policy.
#[test]
fn pairing_policies_leave_no_core_idle_to_keep_a_pair_together() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let policies = "basic,tryhard,plan,plan3,sos,optimal";
    let run = |cpus: &str| {
        let args = [
            "run",
            "-t",
            "gzip-like,mcf-like",
            "--duration",
            "20",
            "--run-seconds",
            "2",
            "-p",
            policies,
            "--cpus",
            cpus,
            "--baseline",
            "modern",
            "--json",
        ];
        let o = smtsched(d, &args);
        assert!(o.status.success(), "{}", util::stderr(&o));
        util::json(&o)
    };
    let speedups = |v: &serde_json::Value| -> Vec<f64> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["summaries"][0]["system_speedup"].as_f64().unwrap())
            .collect()
    };
    let two_cores = speedups(&run("0-3"));
    let one_core = speedups(&run("2-3"));
    assert_eq!(two_cores.len(), 6);
    for (i, (two, one)) in two_cores.iter().zip(&one_core).enumerate() {
        // Alone on a package each program keeps nearly all its speed; sharing one core the
        // pair gets about 1.1 (thesis Fig. 3.3: gzip and mcf together on Northwood).
        assert!(*two > 1.9, "policy {i}: {two} on two cores");
        assert!(*one < 1.5, "policy {i}: {one} on one core");
    }
}

#[test]
fn a_matrix_file_drives_the_os_simulator() {
    // The format `smtsched matrix -o` writes (and `measure pairs` writes on a real machine) is an
    // oracle for `smtsched run`.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    util::small_matrix(d, "gzip-like,mcf-like,mesa-like", &["-o", "m.json"]);
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
            "--estimator",
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
    // A workload given as a file is matched by its profile's name, as the matrix stores it.
    std::fs::write(
        d.join("g.toml"),
        include_str!("../../../workloads/spec2000/gzip-like.toml"),
    )
    .unwrap();
    let o = smtsched(
        d,
        &[
            "run",
            "-t",
            "g.toml,mcf-like",
            "--duration",
            "20",
            "--run-seconds",
            "2",
            "--oracle",
            "measured:m.json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
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
    assert_eq!(t["format"], "smtsched-timeline/1");
    let switches = t["switches"].as_array().unwrap();
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

#[test]
fn task_set_files_are_checked_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [(&str, &str, &[&str]); 7] = [
        (
            "extra.toml",
            "[[task]]\nworkload = \"gzip-like\"\npriority = 3\n",
            &["extra.toml", "priority"],
        ),
        (
            "nice.toml",
            "[[task]]\nworkload = \"gzip-like\"\nnice = 25\n",
            &["nice.toml", "task[0].nice", "25"],
        ),
        (
            "cpu.toml",
            "[[task]]\nworkload = \"gzip-like\"\ncpus = \"1,7\"\n",
            &["cpu.toml", "task[0].cpus", "CPU 7"],
        ),
        ("empty.toml", "task = []\n", &["empty.toml", "empty"]),
        (
            "weight.toml",
            "[[group]]\nname = \"g\"\nweight = 0\n[[task]]\nworkload = \"gzip-like\"\ngroup = \"g\"\n",
            &["weight.toml", "group[0].weight", "0"],
        ),
        (
            "nogroup.toml",
            "[[task]]\nworkload = \"gzip-like\"\ngroup = \"g\"\n",
            &["nogroup.toml", "task[0].group", "\"g\""],
        ),
        (
            "depth.toml",
            "[[task]]\nworkload = \"gcc-like\"\nfork = { children = 3, child_seconds = 0.1, depth = 0 }\n",
            &["depth.toml", "task[0].fork.depth = 0"],
        ),
    ];
    for (file, text, needles) in cases {
        std::fs::write(d.join(file), text).unwrap();
        assert_bad_input(
            &smtsched(
                d,
                &[
                    "run",
                    "-t",
                    file,
                    "--baseline",
                    "modern",
                    "--duration",
                    "20",
                ],
            ),
            needles,
        );
    }
    // A policy that needs core scheduling is refused on the 2.4 scheduler, which has none.
    assert_bad_input(
        &smtsched(
            d,
            &[
                "run",
                "-p",
                "core-sched",
                "--baseline",
                "linux24",
                "--duration",
                "20",
            ],
        ),
        &["core-sched", "core scheduling", "linux24"],
    );
}

#[test]
fn run_writes_a_perfetto_trace() {
    // Decision policy on the present-day baseline: the trace has a track per CPU, one slice per
    // stretch a task ran, and counter events carrying the PR estimates the policy was given.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = smtsched(
        d,
        &[
            "run",
            "-t",
            "gzip-like,mcf-like,eon-like",
            "-p",
            "fair",
            "--baseline",
            "modern",
            "--cpus",
            "2-3",
            "--duration",
            "12",
            "--stagger",
            "1",
            "--estimator",
            "perfect",
            "--trace",
            "t.json",
            "--timeline",
            "switches.json",
        ],
    );
    assert!(o.status.success());
    let t: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("t.json")).unwrap()).unwrap();
    let ev = t["traceEvents"].as_array().unwrap();
    let timeline: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("switches.json")).unwrap()).unwrap();
    let switches = timeline["switches"].as_array().unwrap();
    // Every switch to a task opens a slice (the last ones are closed at the end).
    let to_task = switches.iter().filter(|s| !s["to"].is_null()).count();
    let slices: Vec<&serde_json::Value> = ev.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(slices.len(), to_task);
    assert!(slices.iter().all(|s| s["tid"] == 2 || s["tid"] == 3));
    assert!(slices.iter().all(|s| s["dur"].as_f64().unwrap() > 0.0));
    // fair estimates every task every 100 ms period once it runs: about 3 x 120 counter events.
    let counters = ev.iter().filter(|e| e["ph"] == "C").count();
    assert!((300..=360).contains(&counters), "{counters}");
    let names: Vec<&str> = ev
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cpu 0", "cpu 1", "cpu 2", "cpu 3"]);
}

/// The shipped server task set from the command line: a table of throughput and response times
/// whose figures agree with each other (Mb/s = requests/s x response bytes, as each response
/// leaves at once: no link rate, one pass; Little's law for the closed loop), and a one-line
/// error for interrupts routed to a CPU not in use.
#[test]
fn a_web_server_set_reports_throughput_and_response_times() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let set = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tasksets/specweb96-flash.toml"
    );
    let out = smtsched(
        d,
        &[
            "run",
            "-t",
            set,
            "-m",
            "xeon-ruan",
            "--cpus",
            "0-1",
            "-p",
            "naive",
            "--duration",
            "3",
            "--stagger",
            "1",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &v["results"][0]["runs"][0];
    let s = &run["servers"][0];
    let rps = s["requests_per_s"].as_f64().unwrap();
    let mbps = s["megabits_per_s"].as_f64().unwrap();
    assert!(rps > 1000.0, "{rps} requests/s");
    assert!((mbps - rps * 15_027.0 * 8.0 / 1e6).abs() < 1e-6 * mbps);
    let mean_s = s["response_ms"]["mean"].as_f64().unwrap() / 1e3;
    assert!(
        (rps * mean_s - 1024.0).abs() < 1024.0 * 0.05,
        "X R = {}",
        rps * mean_s
    );
    let kernel = run["kernel"]["kernel_share"].as_f64().unwrap();
    assert!(kernel > 0.75 && kernel < 1.0, "kernel share {kernel}");
    // Interrupts routed only to CPU 3, which is not in use: a one-line error naming the field.
    let text = std::fs::read_to_string(set)
        .unwrap()
        .replace("irq_cpus = \"0-3\"", "irq_cpus = \"3\"");
    std::fs::write(d.join("offline.toml"), text).unwrap();
    assert_bad_input(
        &smtsched(
            d,
            &[
                "run",
                "-t",
                "offline.toml",
                "-m",
                "xeon-ruan",
                "--cpus",
                "0-1",
                "--duration",
                "3",
                "--stagger",
                "1",
            ],
        ),
        &["offline.toml", "device[0].irq_cpus = \"3\""],
    );
}

/// A configurations experiment runs each configuration as `smtsched run` would run the same set
/// on the same CPUs, and names the field of a claim that refers to nothing.
#[test]
fn a_configurations_experiment_is_the_runs_it_declares() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let set = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tasksets/specweb96-flash.toml"
    ))
    .unwrap()
    .replace("name = \"specweb96-flash\"", "");
    std::fs::write(d.join("set.toml"), format!("name = \"s\"\n{set}")).unwrap();
    let experiment = format!(
        "name = \"two\"\ntitle = \"t\"\nkind = \"configurations\"\nmachine = \"xeon-ruan\"\n\
         baseline = \"modern\"\nduration_s = 2.0\nrepetitions = 1\n{set}\n\
         [configurations]\nmetrics = [\"megabits_per_s\"]\n\
         [[configurations.config]]\nname = \"1T\"\ncpus = \"0\"\n\
         [[configurations.config]]\nname = \"2T\"\ncpus = \"0-1\"\n\
         [[configurations.claim]]\nsays = \"SMT helps\"\nmetric = \"megabits_per_s\"\n\
         ratio = [\"2T\", \"1T\"]\nwithin = [1.0, 10.0]\n"
    );
    std::fs::write(d.join("two.toml"), &experiment).unwrap();
    let out = smtsched(
        d,
        &["reproduce", "two.toml", "--json", "--max-repetitions", "1"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cell = |name: &str| {
        v["result"]["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["config"] == name)
            .unwrap()["values"][0][0]
            .as_f64()
            .unwrap()
    };
    for (config, cpus) in [("1T", "0"), ("2T", "0-1")] {
        let run = smtsched(
            d,
            &[
                "run",
                "-t",
                "set.toml",
                "-m",
                "xeon-ruan",
                "--baseline",
                "modern",
                "--cpus",
                cpus,
                "-p",
                "naive",
                "--duration",
                "2",
                "--stagger",
                "1",
                "--json",
            ],
        );
        let r: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        let mbps = r["results"][0]["runs"][0]["servers"][0]["megabits_per_s"]
            .as_f64()
            .unwrap();
        assert_eq!(cell(config), mbps, "{config}");
    }
    // One repetition gives no interval: nothing is decided.
    assert_eq!(v["claims"][0]["judgement"]["verdict"], "inconclusive");
    // Three: the verdict follows the 95% interval of the per-seed ratios (t(0.975, 2) = 4.303).
    let out = smtsched(
        d,
        &[
            "reproduce",
            "two.toml",
            "--json",
            "--repetitions",
            "3",
            "--max-repetitions",
            "3",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let values_of = |v: &serde_json::Value, name: &str| -> Vec<f64> {
        let cells = v["result"]["cells"].as_array().unwrap();
        let c = cells.iter().find(|c| c["config"] == name).unwrap();
        let reps = c["values"].as_array().unwrap();
        reps.iter().map(|r| r[0].as_f64().unwrap()).collect()
    };
    let values = |name: &str| values_of(&v, name);
    // Repetition r depends on seed + r alone: run in batches while the claim stays open (one,
    // then one more, ...) its values are those of the three run at once.
    let out = smtsched(
        d,
        &[
            "reproduce",
            "two.toml",
            "--json",
            "--repetitions",
            "1",
            "--max-repetitions",
            "3",
        ],
    );
    let batched: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for name in ["1T", "2T"] {
        let b = values_of(&batched, name);
        assert!(b.len() >= 2, "one repetition decides nothing: {b:?}");
        assert_eq!(b, values(name)[..b.len()], "{name}");
    }
    // Each repetition is a whole replication: repetition 2 (seed 3) is the experiment run from
    // seed 3, its oracle's samples included — not seed 1's samples scheduled with seed 3.
    let out = smtsched(
        d,
        &[
            "reproduce",
            "two.toml",
            "--json",
            "--seed",
            "3",
            "--max-repetitions",
            "1",
        ],
    );
    let third: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for name in ["1T", "2T"] {
        assert_eq!(values_of(&third, name), [values(name)[2]], "{name}");
    }
    let ratios: Vec<f64> = values("2T")
        .iter()
        .zip(values("1T"))
        .map(|(a, b)| a / b)
        .collect();
    assert_eq!(ratios.len(), 3);
    let mean = ratios.iter().sum::<f64>() / 3.0;
    let sd = (ratios.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    let (lo, hi) = (
        mean - 4.303 * sd / 3f64.sqrt(),
        mean + 4.303 * sd / 3f64.sqrt(),
    );
    let expected = if lo >= 1.0 && hi <= 10.0 {
        "holds"
    } else if hi < 1.0 || lo > 10.0 {
        "does-not-hold"
    } else {
        "inconclusive"
    };
    let j = &v["claims"][0]["judgement"];
    assert_eq!(j["verdict"], expected, "{ratios:?}");
    let row = &j["rows"][0][1];
    assert!(
        (row["lo"].as_f64().unwrap() - lo).abs() < 1e-9 && row["n"] == 3,
        "{row}"
    );
    std::fs::write(
        d.join("bad.toml"),
        experiment.replace("ratio = [\"2T\", \"1T\"]", "ratio = [\"2T\", \"4T\"]"),
    )
    .unwrap();
    assert_bad_input(
        &smtsched(d, &["reproduce", "bad.toml"]),
        &["bad.toml", "claim[0].ratio", "\"4T\""],
    );
}

/// A pairs experiment: its claim reads the mean system speedup of the pairs it ran, leaving out
/// the skipped pair; a claim on a placement it does not run is refused naming the field.
#[test]
fn a_pairs_experiment_summarises_the_pairs_it_ran() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let experiment = "name = \"p\"\ntitle = \"t\"\nkind = \"pairs\"\nmachine = \"northwood\"\n\
        workloads = [\"gzip-like\", \"mcf-like\", \"swim-like\"]\n\
        [pairs]\nplacements = [\"siblings\"]\nwarmup_instructions = 100000\n\
        measure_instructions = 200000\nskip = [[\"mcf-like\", \"mcf-like\"]]\n\
        [[pairs.claim]]\nsays = \"s\"\nmetric = \"mean_system_speedup\"\n\
        placement = \"siblings\"\nwithin = [0.0, 3.0]\n";
    std::fs::write(d.join("p.toml"), experiment).unwrap();
    let out = smtsched(d, &["reproduce", "p.toml", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &v["first_seed"]["results"][0]["matrix"];
    let names: Vec<&str> = m["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let pairs = m["pairs"].as_array().unwrap();
    // Six pairs of three workloads, self-pairs included, less the skipped mcf + mcf.
    assert_eq!(pairs.len(), 5);
    assert!(!pairs
        .iter()
        .any(|p| names[p["a"].as_u64().unwrap() as usize] == "mcf-like" && p["a"] == p["b"]));
    let speedups: Vec<f64> = pairs
        .iter()
        .map(|p| p["pr_a"].as_f64().unwrap() + p["pr_b"].as_f64().unwrap())
        .collect();
    let mean = speedups.iter().sum::<f64>() / speedups.len() as f64;
    // The first seed's value of the first claim.
    let claimed = v["claim_values"][0][0].as_f64().unwrap();
    assert!((claimed - mean).abs() < 1e-9, "{claimed} vs {mean}");
    std::fs::write(
        d.join("bad.toml"),
        experiment.replace("placement = \"siblings\"", "placement = \"cores\""),
    )
    .unwrap();
    assert_bad_input(
        &smtsched(d, &["reproduce", "bad.toml"]),
        &["bad.toml", "pairs.claim[0].placement = \"cores\""],
    );
}

/// A claim that does not hold is printed with what the experiment knows of why: every entry of
/// its `departures`, under the heading a reader looks for, in the text and in the JSON.
#[test]
fn a_claim_that_does_not_hold_is_printed_with_the_experiments_departures() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Two threads on one core's siblings cannot run five times as fast as one after the other.
    let experiment = "name = \"p\"\ntitle = \"t\"\nkind = \"pairs\"\nmachine = \"northwood\"\n\
        repetitions = 2\nmax_repetitions = 2\nworkloads = [\"gzip-like\", \"mesa-like\"]\n\
        [pairs]\nplacements = [\"siblings\"]\nwarmup_instructions = 100000\n\
        measure_instructions = 200000\n\
        [[pairs.claim]]\nsays = \"impossible\"\nmetric = \"mean_system_speedup\"\n\
        placement = \"siblings\"\nwithin = [5.0, 6.0]\n\
        [paper]\nfigure = \"F\"\ndepartures = [\"first cause\", \"second cause\"]\n";
    std::fs::write(d.join("p.toml"), experiment).unwrap();
    let out = smtsched(d, &["reproduce", "p.toml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[DOES NOT HOLD] impossible"), "{text}");
    let heading = text
        .find("Where this simulation departs from what was measured:")
        .unwrap_or_else(|| panic!("no departures heading in {text}"));
    let after = &text[heading..];
    let first = after
        .find("  - first cause")
        .expect("first departure printed");
    let second = after
        .find("  - second cause")
        .expect("second departure printed");
    assert!(first < second, "in the file's order: {after}");
    let out = smtsched(d, &["reproduce", "p.toml", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["claims"][0]["verdict"], "does-not-hold");
    assert_eq!(
        v["first_seed"]["paper"]["departures"],
        serde_json::json!(["first cause", "second cause"])
    );
}

#[test]
fn a_window_longer_than_the_clock_resolves_to_a_cycle_still_ends() {
    // 8000 s at 2.4 GHz is 1.9e13 cycles, where an f64 steps by 1/256 cycle: finer events than
    // that once stopped time (the run never ended). A task alone runs at its solo speed: PR 1,
    // and (8000 - 10 s of stagger) / 60 s = 133 runs, one of which may straddle the window.
    let dir = tempfile::tempdir().unwrap();
    let o = smtsched(
        dir.path(),
        &[
            "run",
            "-t",
            "gzip-like",
            "-p",
            "naive",
            "--duration",
            "8000",
            "--hz",
            "10",
            "--cpus",
            "0",
            "--json",
        ],
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let bench = &v["results"][0]["runs"][0]["per_bench"][0];
    let prs = bench["prs"].as_array().unwrap();
    assert!((132..=133).contains(&prs.len()), "{} runs", prs.len());
    for pr in prs {
        assert!((pr.as_f64().unwrap() - 1.0).abs() < 1e-9, "{pr}");
    }
}

/// An asymmetry experiment checks its claims: each group's best/worst ratio is its largest
/// allocation speedup over its smallest, and the claims read the maximum, mean and share.
#[test]
fn an_asymmetry_experiment_checks_its_claims() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("a.toml"),
        "name = \"a\"\ntitle = \"t\"\nkind = \"asymmetry\"\nmachine = \"northwood\"\n\
         workloads = [\"gzip-like\", \"mcf-like\", \"mesa-like\", \"swim-like\"]\n\
         [[asymmetry.claim]]\nsays = \"wide\"\nmetric = \"max_ratio\"\nwithin = [1.0, 10.0]\n\
         [[asymmetry.claim]]\nsays = \"narrow\"\nmetric = \"mean_ratio\"\nwithin = [5.0, 6.0]\n",
    )
    .unwrap();
    let o = smtsched(d, &["reproduce", "a.toml", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let first = &v["first_seed"]["result"];
    let groups = first["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "four workloads make one group");
    let s: Vec<f64> = groups[0]["speedups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let ratio =
        s.iter().cloned().fold(f64::MIN, f64::max) / s.iter().cloned().fold(f64::MAX, f64::min);
    assert!((first["max_ratio"].as_f64().unwrap() - ratio).abs() < 1e-12);
    assert_eq!(v["claims"][0]["verdict"], "holds");
    assert_eq!(v["claims"][1]["verdict"], "does-not-hold");
    let e = std::fs::read_to_string(d.join("a.toml"))
        .unwrap()
        .replace("\"max_ratio\"", "\"min_ratio\"");
    std::fs::write(d.join("bad.toml"), e).unwrap();
    assert_bad_input(
        &smtsched(d, &["reproduce", "bad.toml"]),
        &["bad.toml", "min_ratio"],
    );
}

/// A Fedorova experiment checks its claims on the metrics it measures: here (a)/(b) over (d)
/// recomputed from the schedules' IPCs in the JSON. A metric another kind measures, or none
/// does, is refused at load naming the file and the metric.
#[test]
fn a_fedorova_experiment_checks_its_claims() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = "name = \"c\"\ntitle = \"t\"\nkind = \"fedorova-cpi\"\nmachine = \"cmt-fedorova\"\n\
         set = [\"topology.cores_per_package=2\"]\nworkloads = [\"cpi-1\", \"cpi-16\"]\n\
         [cmt]\nwarmup_cycles = 100_000\nmeasure_cycles = 200_000\n\
         [[cmt.schedule]]\nname = \"a\"\ncores = [[\"cpi-1\", \"cpi-16\"], [\"cpi-1\", \"cpi-16\"]]\n\
         [[cmt.schedule]]\nname = \"b\"\ncores = [[\"cpi-1\", \"cpi-1\"], [\"cpi-16\", \"cpi-16\"]]\n\
         [[cmt.schedule]]\nname = \"d\"\ncores = [[\"cpi-16\", \"cpi-16\"], [\"cpi-16\", \"cpi-16\"]]\n\
         [[cmt.claim]]\nsays = \"wide\"\nmetric = \"ab_over_d\"\nwithin = [0.0, 100.0]\n\
         [[cmt.claim]]\nsays = \"narrow\"\nmetric = \"ab_over_d\"\nwithin = [50.0, 60.0]\n";
    std::fs::write(d.join("c.toml"), text).unwrap();
    let o = smtsched(d, &["reproduce", "c.toml", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ipc = |name: &str| {
        v["first_seed"]["result"]["schedules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["ipc"]
            .as_f64()
            .unwrap()
    };
    let want = ipc("a").max(ipc("b")) / ipc("d");
    assert!(want > 0.0 && want < 50.0, "{want}");
    assert_eq!(v["claims"][0]["verdict"], "holds");
    assert_eq!(v["claims"][1]["verdict"], "does-not-hold");
    // The first seed's value, as the JSON lists each claim's value per seed.
    assert!((v["claim_values"][1][0].as_f64().unwrap() - want).abs() < 1e-12);
    for (metric, named) in [
        ("perf_ipc_gain_min", "fedorova-cpi"),
        ("ab_over_e", "ab_over_e"),
    ] {
        let bad = text.replacen("\"ab_over_d\"", &format!("\"{metric}\""), 1);
        std::fs::write(d.join("bad.toml"), bad).unwrap();
        assert_bad_input(
            &smtsched(d, &["reproduce", "bad.toml"]),
            &["bad.toml", metric, named],
        );
    }
}

/// Pearson correlation, written out here to check the program's.
fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// The §3.4 phases experiment: the margin of "shape set by the subject" recomputed from the mean
/// curves in the JSON (same subject across backgrounds, minus same background across subjects);
/// the estimator experiment on the same small windows reports the R² of its own model; a claim
/// on the other kind's metric is refused at load.
#[test]
fn the_windows_experiments_measure_phases_and_fit_the_estimator() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let windows = "[windows]\ntrain = [\"gzip-like\", \"mcf-like\", \"mesa-like\"]\n\
         heldout = [\"eon-like\", \"swim-like\"]\ninstructions = 300_000\n\
         warmup_instructions = 50_000\nwindows = 6\nruns = 2\n";
    std::fs::write(
        d.join("p.toml"),
        format!(
            "name = \"p\"\ntitle = \"t\"\nkind = \"phases\"\n{windows}\
             [[windows.claim]]\nsays = \"s\"\nmetric = \"subject_shape_margin\"\nwithin = [-2.0, 2.0]\n"
        ),
    )
    .unwrap();
    let o = smtsched(d, &["reproduce", "p.toml", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let curves = v["first_seed"]["result"]["mean_curves"]
        .as_object()
        .unwrap();
    let curve = |s: &str, b: &str| -> Vec<f64> {
        curves[s][b]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let names = ["gzip-like", "mcf-like", "mesa-like"];
    let others = |s: &str| -> Vec<&str> { names.iter().copied().filter(|b| *b != s).collect() };
    // Three programs: each subject has two backgrounds (one pair of curves), each background two
    // subjects.
    let mut same_subject = 0.0;
    let mut same_background = 0.0;
    for s in names {
        let b = others(s);
        same_subject += pearson(&curve(s, b[0]), &curve(s, b[1])) / 3.0;
        let subj = others(s);
        same_background += pearson(&curve(subj[0], s), &curve(subj[1], s)) / 3.0;
    }
    let margin = v["first_seed"]["result"]["metrics"]["subject_shape_margin"]
        .as_f64()
        .unwrap();
    assert!(
        (margin - (same_subject - same_background)).abs() < 1e-9,
        "{margin}"
    );
    assert_eq!(v["claims"][0]["verdict"], "holds");

    std::fs::write(
        d.join("e.toml"),
        format!(
            "name = \"e\"\ntitle = \"t\"\nkind = \"estimator\"\n{windows}\
             [[windows.claim]]\nsays = \"s\"\nmetric = \"r_squared\"\nwithin = [2.0, 3.0]\n"
        ),
    )
    .unwrap();
    let o = smtsched(d, &["reproduce", "e.toml", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let first = &v["first_seed"]["result"];
    let r2 = first["model"]["fit"]["r_squared"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&r2), "{r2}");
    assert_eq!(first["metrics"]["r_squared"].as_f64().unwrap(), r2);
    assert_eq!(v["claim_values"][0][0].as_f64().unwrap(), r2);
    assert_eq!(v["claims"][0]["verdict"], "does-not-hold");
    assert_eq!(first["heldout"]["n"], 2 * 2 * 6);

    let bad = std::fs::read_to_string(d.join("e.toml"))
        .unwrap()
        .replace("\"r_squared\"", "\"level_share\"");
    std::fs::write(d.join("bad.toml"), bad).unwrap();
    assert_bad_input(
        &smtsched(d, &["reproduce", "bad.toml"]),
        &["bad.toml", "level_share", "estimator"],
    );
}

#[test]
fn a_run_too_short_for_its_tasks_names_the_missing_tasks_and_prints_no_figure_over_the_set() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Runs of 60 s alone (the default): a 100 s simulation leaves a 90 s window, and with three
    // tasks sharing cores no run both starts and ends in it. No figure over the set is printed,
    // and the note names each task, its run's length and the duration runs fit in (10 + 2 x 60).
    let o = smtsched(
        d,
        &[
            "run",
            "-t",
            "gzip-like,mcf-like,swim-like",
            "--duration",
            "100",
            "-p",
            "naive",
        ],
    );
    assert!(o.status.success());
    let text = util::stdout(&o);
    let row = text.lines().find(|l| l.starts_with("naive ")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[1..6], &["-", "-", "-", "-", "-"], "{row}");
    for task in ["gzip-like", "mcf-like", "swim-like"] {
        assert!(
            text.contains(&format!("{task} (one run 60 s alone)")),
            "{text}"
        );
    }
    assert!(text.contains("completed no run in the 90 s measurement window"));
    // Each of three tasks has a CPU of its own (of four): 10 s of start-up and two 60 s runs
    // (the one under way when the window opens, then a counted one), a little more for the
    // CPU time start-up takes from the window.
    let hint: f64 = text
        .split("runs fit from a duration of about ")
        .nth(1)
        .and_then(|rest| rest.split(" s").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!((130.0..=135.0).contains(&hint), "{text}");
    let o = smtsched(
        d,
        &[
            "run",
            "-t",
            "gzip-like,mcf-like,swim-like",
            "--duration",
            "100",
            "-p",
            "naive",
            "--json",
        ],
    );
    let v = util::json(&o);
    let s = &v["results"][0]["summaries"][0];
    assert!(
        s["system_speedup"].is_null() && s["fairness"].is_null(),
        "{s}"
    );
    assert_eq!(s["missing"].as_array().unwrap().len(), 3);
}

#[test]
fn output_paths_are_checked_before_the_work_starts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The check's message ("no directory") is not the one a failed write after the work gives.
    for args in [
        vec!["matrix", "-w", "all", "-o", "/nonexistent/m.json"],
        vec!["run", "--timeline", "/nonexistent/t.json"],
        vec![
            "train",
            "windows",
            "-w",
            "thesis-train",
            "-o",
            "/nonexistent/w.csv",
        ],
    ] {
        let o = smtsched(d, &args);
        assert_bad_input(
            &o,
            &["cannot write /nonexistent/", "no directory /nonexistent"],
        );
    }
    let o = smtsched(d, &["reproduce", "thesis-http", "-o", d.to_str().unwrap()]);
    assert_bad_input(&o, &["is a directory, not a file"]);
}

/// An experiment file's tasks run under `run -t` (task sets and experiments share the schema of
/// their tasks), on the experiment's CPUs unless --cpus says otherwise; an experiment without a
/// task set is refused in one line.
#[test]
fn an_experiments_tasks_run_under_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/thesis-set-c.toml");
    let experiment: toml::Table = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let workloads: Vec<&str> = experiment["task"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["workload"].as_str().unwrap())
        .collect();
    // A small matrix of the set's programs is the oracle: what is checked is which tasks run
    // where, not the simulated oracle's sampling (other tests), which took a minute here.
    util::small_matrix(d, &workloads.join(","), &["-o", "m.json"]);
    let file = file.display().to_string();
    let base = [
        "run",
        "-t",
        &file,
        "-p",
        "naive",
        "--duration",
        "20",
        "--stagger",
        "1",
        "--oracle",
        "measured:m.json",
    ];
    let tasks = workloads.len();
    for (cpus, extra) in [("2-3", &[][..]), ("0-3", &["--cpus", "0-3"][..])] {
        let o = smtsched(d, &[&base[..], extra].concat());
        assert!(o.status.success(), "{}", util::stderr(&o));
        let out = stdout(&o);
        let header = out.lines().next().unwrap();
        assert!(
            header.starts_with(&format!("{tasks} tasks on northwood (CPUs {cpus})")),
            "{header}"
        );
        // Every task of the file has its row, in the file's order.
        let rows: Vec<&str> = out
            .lines()
            .skip_while(|l| !l.starts_with("task PR"))
            .skip(1)
            .map(|l| l.split(" (nice").next().unwrap())
            .collect();
        assert_eq!(rows, workloads, "{out}");
    }
    let other = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/fedorova-l2.toml");
    let o = smtsched(d, &["run", "-t", &other.display().to_string()]);
    assert_bad_input(&o, &["fedorova-l2.toml", "has no task set"]);
}

/// A policies experiment's repetitions are whole replications: repetition r is what the
/// experiment gives run from seed + r alone, the oracle's samples included, so the interval
/// over the repetitions covers the samples' noise as well as the scheduler's.
#[test]
fn a_policies_experiments_repetition_is_the_experiment_run_from_its_seed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("p.toml"),
        "name = \"p\"\ntitle = \"t\"\nkind = \"policies\"\nmachine = \"northwood\"\n\
         cpus = \"2-3\"\nbaseline = \"linux24\"\npolicies = [\"naive\", \"plan\"]\n\
         repetitions = 2\nmax_repetitions = 2\nduration_s = 600\n\
         [[task]]\nworkload = \"gzip-like\"\n[[task]]\nworkload = \"mcf-like\"\n\
         [[task]]\nworkload = \"swim-like\"\n\
         [[paper.claim]]\nsays = \"plan beats naive\"\nmetric = \"system_speedup\"\n\
         higher = \"plan\"\nthan = \"naive\"\n",
    )
    .unwrap();
    let speedups = |args: &[&str]| -> Vec<Vec<f64>> {
        let o = smtsched(d, &[&["reproduce", "p.toml", "--json"], args].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let s = p["summaries"].as_array().unwrap();
                s.iter()
                    .map(|r| r["system_speedup"].as_f64().unwrap())
                    .collect()
            })
            .collect()
    };
    let both = speedups(&[]);
    let second = speedups(&[
        "--seed",
        "2",
        "--repetitions",
        "1",
        "--max-repetitions",
        "1",
    ]);
    for (policy, (b, s)) in ["naive", "plan"].iter().zip(both.iter().zip(&second)) {
        assert_eq!(b.len(), 2, "{policy}");
        assert_eq!(s, &b[1..], "{policy}");
        // Different samples and schedules: the two repetitions differ.
        assert_ne!(b[0], b[1], "{policy}");
    }
}

/// `run --repetitions N` with the simulated oracle: repetition r is the run from seed + r, its
/// oracle's samples included; with a measured matrix every repetition reads the same matrix.
#[test]
fn run_repetitions_are_whole_replications() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let antt = |args: &[&str]| -> Vec<f64> {
        let base = [
            "run",
            "-t",
            "gzip-like,mcf-like,swim-like",
            "-p",
            "naive",
            "--cpus",
            "2-3",
            "--duration",
            "60",
            "--run-seconds",
            "5",
            "--json",
        ];
        let o = smtsched(d, &[&base[..], args].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let runs = v["results"][0]["summaries"].as_array().unwrap();
        runs.iter().map(|r| r["antt"].as_f64().unwrap()).collect()
    };
    let two = antt(&["--repetitions", "2"]);
    assert_eq!(two.len(), 2);
    assert_eq!(antt(&["--seed", "2"]), two[1..]);
    assert_eq!(antt(&[]), two[..1]);
}
