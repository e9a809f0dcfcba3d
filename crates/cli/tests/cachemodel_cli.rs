//! `smtsched cachemodel` and the fedorova experiments, run as a user would, in a fresh
//! temporary directory, with small windows so that they stay fast.

mod util;
use util::{assert_bad_input, smtsched, stdout};

const SMALL: &[&str] = &[
    "--instructions",
    "200000",
    "--warmup",
    "50000",
    "--warmup-cycles",
    "100000",
    "--measure-cycles",
    "200000",
];

fn with_small<'a>(args: &[&'a str]) -> Vec<&'a str> {
    args.iter().chain(SMALL).copied().collect()
}

/// The histogram part of [`SMALL`]: `groups` simulates no window, and refuses cycle counts.
fn with_small_histograms<'a>(args: &[&'a str]) -> Vec<&'a str> {
    args.iter().chain(&SMALL[..4]).copied().collect()
}

#[test]
fn histogram_has_fewer_than_twenty_buckets_and_predicts_both_caches() {
    let dir = tempfile::tempdir().unwrap();
    let o = smtsched(
        dir.path(),
        &with_small(&["cachemodel", "histogram", "ammp-like"]),
    );
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(
        out.contains("cold") && out.contains("L1D (128 lines)"),
        "{out}"
    );
    let o = smtsched(
        dir.path(),
        &with_small(&["cachemodel", "histogram", "ammp-like", "--json"]),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let buckets = v["compressed"]["points"].as_array().unwrap().len() + 1;
    assert!(buckets < 20, "{buckets}");
    // A bigger cache misses less.
    assert!(v["miss_ratio_llc"].as_f64().unwrap() < v["miss_ratio_l1"].as_f64().unwrap());
    // The window holds ~0.4 references per instruction.
    let refs = v["references"].as_f64().unwrap();
    assert!((refs / 200_000.0 - 0.4).abs() < 0.02, "{refs}");
}

#[test]
fn predict_reports_every_estimator_beside_the_simulation() {
    let dir = tempfile::tempdir().unwrap();
    let o = smtsched(
        dir.path(),
        &with_small(&[
            "cachemodel",
            "predict",
            "gzip-like",
            "art-like",
            "parser-like",
            "--set",
            "topology.cores_per_package=1",
            "--set",
            "cache.L2.size_bytes=49152",
            "--json",
        ]),
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = v["predictions"].as_array().unwrap();
    assert_eq!(p.len(), 4);
    let names: Vec<&str> = p.iter().map(|x| x["estimator"].as_str().unwrap()).collect();
    assert_eq!(names, ["comb-n", "comb-n1", "comb-ipc", "avg"]);
    let sim = v["simulated_per_reference"].as_f64().unwrap();
    assert!(sim > 0.0 && sim < 1.0);
    for x in p {
        let r = x["per_reference"].as_f64().unwrap();
        assert!(r > 0.0 && r < 1.0, "{x}");
    }
    // The text form names them.
    let o = smtsched(
        dir.path(),
        &with_small(&[
            "cachemodel",
            "predict",
            "gzip-like",
            "gzip-like",
            "--cpus",
            "0,4",
            "--set",
            "topology.cores_per_package=2",
        ]),
    );
    assert!(o.status.success());
    let out = stdout(&o);
    for n in ["COMB (N)", "COMB (N-1)", "COMB+IPC", "AVG", "gzip-like#1"] {
        assert!(out.contains(n), "{n}: {out}");
    }
}

#[test]
fn groups_enumerates_every_group_and_builds_both_schedules() {
    let dir = tempfile::tempdir().unwrap();
    let o = smtsched(
        dir.path(),
        &with_small_histograms(&[
            "cachemodel",
            "groups",
            "-w",
            "gzip-like,art-like,parser-like",
            "--copies",
            "2",
            "--contexts",
            "4",
            "--json",
        ]),
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // C(6, 4) = 15.
    assert_eq!(v["groups"].as_u64(), Some(15));
    // Both copies of art are the greediest threads; one of them sets the threshold.
    assert!(v["greediest"].as_str().unwrap().starts_with("art-like#"));
    // Every thread appears in the PERF schedule.
    let mut seen = std::collections::BTreeSet::new();
    for g in v["perf"].as_array().unwrap() {
        assert_eq!(g.as_array().unwrap().len(), 4);
        for t in g.as_array().unwrap() {
            seen.insert(t.as_str().unwrap().to_string());
        }
    }
    assert_eq!(seen.len(), 6);
}

#[test]
fn schedule_runs_informed_policies_and_measures_them() {
    let dir = tempfile::tempdir().unwrap();
    let o = smtsched(
        dir.path(),
        &with_small(&[
            "cachemodel",
            "schedule",
            "-w",
            "gzip-like,art-like",
            "--copies",
            "3",
            "--policies",
            "naive,balance-set-perf",
            "--set",
            "topology.cores_per_package=1",
            "--duration",
            "4",
            "--moments",
            "3",
            "--json",
        ]),
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = v["policies"].as_array().unwrap();
    let names: Vec<&str> = p.iter().map(|x| x["policy"].as_str().unwrap()).collect();
    assert_eq!(names, ["default", "balance-set-perf"]);
    for x in p {
        assert!(x["perf"]["ipc"].as_f64().unwrap() > 0.0, "{x}");
        assert_eq!(x["cpu_share"].as_array().unwrap().len(), 6);
    }
    // Six threads on four contexts: PERF's best groups are the three gzips with one art, so
    // each gzip runs more than each art.
    let share = |i: usize| p[1]["cpu_share"][i].as_f64().unwrap();
    for g in 0..3 {
        for a in 3..6 {
            assert!(
                share(g) > share(a),
                "gzip {g} {} vs art {a} {}",
                share(g),
                share(a)
            );
        }
    }
    // One thread on a machine of many contexts runs all the time, at most at its solo speed:
    // its progress, and so the STP, is its PR, at most 1 (not scaled by the idle contexts).
    let o = smtsched(
        dir.path(),
        &with_small(&[
            "cachemodel",
            "schedule",
            "-w",
            "mcf-like",
            "--policies",
            "naive",
            "--duration",
            "4",
            "--moments",
            "2",
            "--json",
        ]),
    );
    assert!(o.status.success(), "{}", util::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let perf = &v["policies"][0]["perf"];
    let stp = perf["stp"].as_f64().unwrap();
    assert!(stp > 0.9 && stp <= 1.0 + 1e-9, "{perf}");
    assert_eq!(perf["progress"][0].as_f64().unwrap(), stp);
    let o = smtsched(
        dir.path(),
        &with_small(&[
            "cachemodel",
            "schedule",
            "-w",
            "gzip-like",
            "--policies",
            "naive,nope",
        ]),
    );
    assert_bad_input(&o, &["--policies", "nope"]);
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let o = smtsched(
        dir.path(),
        &with_small(&[
            "cachemodel",
            "histogram",
            "gzip-like",
            "--cache-model",
            "lru",
        ]),
    );
    assert_bad_input(&o, &["--cache-model", "lru"]);
    let o = smtsched(
        dir.path(),
        &with_small(&["cachemodel", "histogram", "no-such-workload"]),
    );
    assert_bad_input(&o, &["no-such-workload"]);
    let o = smtsched(
        dir.path(),
        &with_small(&[
            "cachemodel",
            "predict",
            "gzip-like",
            "art-like",
            "--cpus",
            "0,99",
        ]),
    );
    assert_bad_input(&o, &["99"]);
    // The models are of threads on contexts of their own sharing one last-level cache: two
    // threads on one CPU, or on Northwood's two packages (an L2 each), are refused.
    for (machine, cpus, says) in [
        ("cmt-fedorova", "0,0", "CPU 0 is named twice"),
        ("northwood", "0,2", "do not share one last-level cache"),
    ] {
        let o = smtsched(
            dir.path(),
            &with_small(&[
                "cachemodel",
                "predict",
                "gzip-like",
                "mcf-like",
                "-m",
                machine,
                "--cpus",
                cpus,
            ]),
        );
        assert_bad_input(&o, &[says]);
    }
    let o = smtsched(
        dir.path(),
        &with_small(&[
            "cachemodel",
            "predict",
            "gzip-like",
            "--set",
            "cache.L2.size_bytes=1000",
        ]),
    );
    assert_bad_input(&o, &["size_bytes"]);
    let o = smtsched(
        dir.path(),
        &with_small_histograms(&["cachemodel", "groups", "-w", "gzip-like", "--contexts", "0"]),
    );
    assert_bad_input(&o, &["--contexts"]);
    // The group search reads histograms only: a simulated window would change nothing.
    let o = smtsched(
        dir.path(),
        &with_small(&["cachemodel", "groups", "-w", "gzip-like"]),
    );
    assert_bad_input(&o, &["--warmup-cycles", "histograms alone"]);
    // Nothing was written.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn reproduce_lists_the_fedorova_experiments() {
    let dir = tempfile::tempdir().unwrap();
    let o = smtsched(dir.path(), &["reproduce", "--list"]);
    assert!(o.status.success());
    for n in [
        "fedorova-cpi",
        "fedorova-l1",
        "fedorova-l2",
        "fedorova-balance-set",
    ] {
        assert!(stdout(&o).contains(n), "{n}");
    }
}

/// A small CPI experiment from a file: schedules (a) and (d) on two cores of two contexts.
#[test]
fn reproduce_a_cpi_experiment_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cpi.toml");
    std::fs::write(
        &file,
        r#"
name = "small-cpi"
title = "two schedules"
kind = "fedorova-cpi"
machine = "cmt-fedorova"
set = ["topology.cores_per_package=2"]
workloads = ["cpi-1", "cpi-16"]
[cmt]
warmup_cycles = 50000
measure_cycles = 200000
[[cmt.schedule]]
name = "a"
cores = [["cpi-1", "cpi-16"], ["cpi-1", "cpi-16"]]
[[cmt.schedule]]
name = "d"
cores = [["cpi-1", "cpi-1"], ["cpi-16", "cpi-16"]]
"#,
    )
    .unwrap();
    let o = smtsched(dir.path(), &["reproduce", "cpi.toml", "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = v["first_seed"]["result"]["schedules"].as_array().unwrap();
    let ipc = |i: usize| s[i]["ipc"].as_f64().unwrap();
    // (a): each core's CPI-1 thread keeps its issue slot busy: about 1 per core. (d): the
    // CPI-1 core issues every cycle, the CPI-16 core about 2/16.
    assert!(ipc(0) > 1.9, "{}", ipc(0));
    assert!(ipc(1) > 1.05 && ipc(1) < 1.25, "{}", ipc(1));
    // A schedule that does not fit the machine is bad input.
    std::fs::write(
        &file,
        std::fs::read_to_string(&file).unwrap().replace(
            r#"[["cpi-1", "cpi-1"], ["cpi-16", "cpi-16"]]"#,
            r#"[["cpi-1", "cpi-1", "cpi-1", "cpi-1", "cpi-1"]]"#,
        ),
    )
    .unwrap();
    let o = smtsched(dir.path(), &["reproduce", "cpi.toml"]);
    assert_bad_input(&o, &["schedule d", "5 threads"]);
}
