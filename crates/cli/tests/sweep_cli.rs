//! `sweep`: a sweep file's jobs run whole or in shards, and merged shards equal the unsharded
//! results byte for byte; bad sweep files, shards and merges are refused in one line (exit 2).

mod util;

use std::path::Path;
use std::time::Duration;
use util::slurm::SlurmCluster;
use util::{assert_bad_input, ended_by_sigterm_at_rename, killed_once_it_writes, smtsched, stdout};

/// A small pairs sweep: two machines' variants × two seeds = 4 jobs of 3 pairs each.
const PAIRS: &str = r#"
name = "tiny-pairs"
kind = "pairs"
machines = ["northwood"]
sets = [[], ["cache.L2.size_bytes=1048576"]]
workloads = ["gzip-like,mcf-like"]
placements = ["siblings"]
seeds = [1, 2]
warmup_instructions = 20000
measure_instructions = 50000
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

#[test]
fn shards_merge_into_the_unsharded_results_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sweep = write(d, "s.toml", PAIRS);
    let o = smtsched(d, &["sweep", "run", &sweep, "-o", "all.json"]);
    assert!(o.status.success());
    let table = stdout(&o);
    // One row per job: 1 machine x 2 sets x 1 workload list x 1 placement x 2 seeds.
    assert_eq!(
        table.lines().filter(|l| l.starts_with("northwood")).count(),
        4
    );
    for i in 1..=3 {
        let shard = format!("{i}/3");
        let file = format!("shard-{i}.json");
        let o = smtsched(d, &["sweep", "run", &sweep, "--shard", &shard, "-o", &file]);
        assert!(o.status.success());
    }
    // Jobs 0..4 round-robin over 3 shards: 2, 1, 1.
    let count = |f: &str| {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join(f)).unwrap()).unwrap();
        v["jobs"].as_array().unwrap().len()
    };
    assert_eq!(
        [1, 2, 3].map(|i| count(&format!("shard-{i}.json"))),
        [2, 1, 1]
    );
    // Merged in any order, the result is the unsharded one, byte for byte.
    let o = smtsched(
        d,
        &[
            "sweep",
            "merge",
            "shard-3.json",
            "shard-1.json",
            "shard-2.json",
            "-o",
            "merged.json",
        ],
    );
    assert!(o.status.success());
    assert_eq!(
        std::fs::read(d.join("merged.json")).unwrap(),
        std::fs::read(d.join("all.json")).unwrap()
    );
    assert_eq!(stdout(&o), table);
}

#[test]
fn a_sweep_killed_midway_continues_into_the_results_of_one_run() {
    // Jobs long enough (about a second each, one at a time) to kill the run between two.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sweep = write(
        d,
        "s.toml",
        &PAIRS.replace(
            "measure_instructions = 50000",
            "measure_instructions = 1500000",
        ),
    );
    let run = ["sweep", "run", &sweep, "--threads", "1", "-o"];
    let o = smtsched(d, &[&run[..], &["whole.json"]].concat());
    assert!(o.status.success());
    let kept = d.join("cont.json.progress");
    killed_once_it_writes(d, &[&run[..], &["cont.json"]].concat(), &kept);
    assert!(!d.join("cont.json").exists());
    let journal = std::fs::read_to_string(&kept).unwrap();
    // Whole lines after the header (a last line cut short by SIGKILL does not count).
    let earlier = journal.matches('\n').count() - 1;
    assert!((1..4).contains(&earlier), "{earlier} kept");
    // Kept jobs are taken as they are, not run again: a kept job's key, edited, shows in the
    // continued results.
    let mut lines: Vec<serde_json::Value> = journal
        .lines()
        .take(earlier + 1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let edited = lines[1]["index"].as_u64().unwrap() as usize;
    lines[1]["key"]["seed"] = 99.into();
    let text: String = lines.iter().map(|v| v.to_string() + "\n").collect();
    std::fs::write(d.join("edited.json.progress"), text).unwrap();
    let o = smtsched(d, &[&run[..], &["edited.json"]].concat());
    assert!(o.status.success());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("edited.json")).unwrap()).unwrap();
    assert_eq!(v["jobs"][edited]["key"]["seed"], 99);
    // The same run as a shard is another run: it starts afresh (and, one job, keeps nothing).
    std::fs::copy(&kept, d.join("one.json.progress")).unwrap();
    let o = smtsched(
        d,
        &["sweep", "run", &sweep, "--shard", "4/4", "-o", "one.json"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(
            "one.json.progress: job(s) of another run (the whole run, not shard 4/4): starting afresh"
        ),
        "{err}"
    );
    assert!(!d.join("one.json.progress").exists());
    let o = smtsched(d, &[&run[..], &["cont.json"]].concat());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "continuing: {earlier} of 4 job(s) finished earlier"
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::read(d.join("cont.json")).unwrap(),
        std::fs::read(d.join("whole.json")).unwrap()
    );
    assert!(!kept.exists());
}

#[test]
fn sigterm_as_the_results_are_put_in_place_leaves_them_and_no_journal() {
    // strace delivers SIGTERM exactly as the results file is renamed into place: it traces
    // the main thread alone, whose first rename that is (a job's thread makes the journal).
    // The signal takes effect once the file is in place and its journal is gone: a journal
    // left beside finished results would outlive the run it was kept for.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sweep = write(d, "s.toml", PAIRS);
    let o = smtsched(d, &["sweep", "run", &sweep, "-o", "whole.json"]);
    assert!(o.status.success());
    ended_by_sigterm_at_rename(d, &["sweep", "run", &sweep, "-o", "r.json"], false, 1);
    assert_eq!(
        std::fs::read(d.join("r.json")).unwrap(),
        std::fs::read(d.join("whole.json")).unwrap()
    );
    let mut names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["r.json", "s.toml", "whole.json"]);
}

/// Two commands writing one output at once would mix their jobs in one journal: while the first
/// runs (stopped here, so that it cannot finish first), a second is refused, naming it; once the
/// first is killed with SIGKILL, its claim is gone and the same command continues its jobs.
#[test]
fn a_second_run_writing_the_same_output_is_refused_while_the_first_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Jobs of a few hundred milliseconds: the first run must still be running when it is
    // stopped, however late a loaded machine lets this test see its journal.
    let slow = PAIRS.replace(
        "measure_instructions = 50000",
        "measure_instructions = 500000",
    );
    let sweep = write(d, "s.toml", &slow);
    let run = ["sweep", "run", &sweep, "--threads", "1", "-o", "out.json"];
    let journal = d.join("out.json.progress");
    let mut first = std::process::Command::new(env!("CARGO_BIN_EXE_smtsched"))
        .args(run)
        .current_dir(d)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !journal.exists() {
        assert!(
            first.try_wait().unwrap().is_none(),
            "ended before its journal"
        );
        assert!(started.elapsed() < Duration::from_secs(300), "no journal");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signals to the child this test started.
    unsafe { libc::kill(first.id() as i32, libc::SIGSTOP) };
    let kept = std::fs::read(&journal).unwrap();
    let second = smtsched(d, &run);
    let pid = format!("(pid {}, smtsched)", first.id());
    assert_bad_input(&second, &["out.json:", &pid, "is writing this output now"]);
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        kept,
        "the journal is as it was"
    );
    assert!(!d.join("out.json").exists());
    first.kill().unwrap();
    first.wait().unwrap();
    let third = smtsched(d, &run);
    assert!(third.status.success());
    assert!(util::stderr(&third).contains("continuing: "));
    assert!(d.join("out.json").exists() && !journal.exists());
}

#[test]
fn a_policies_sweep_runs_a_task_set_per_policy_and_seed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sweep = write(
        d,
        "p.toml",
        r#"
name = "tiny-policies"
kind = "policies"
machines = ["northwood"]
workloads = ["gzip-like,mcf-like,swim-like"]
policies = ["naive", "plan"]
seeds = [1]
duration_s = 20
run_seconds = 2
baseline = "linux24"
"#,
    );
    let o = smtsched(d, &["sweep", "run", &sweep, "-o", "p.json"]);
    assert!(o.status.success());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("p.json")).unwrap()).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    for (j, policy) in jobs.iter().zip(["naive", "plan"]) {
        assert_eq!(j["key"]["variant"], policy);
        // Three tasks that each get some of two CPUs: a system speedup between 1 and 3.
        let s = j["outcome"]["system_speedup"].as_f64().unwrap();
        assert!(s > 1.0 && s < 3.0, "{policy}: {s}");
    }
    // Runs longer than the window complete nothing: no figure, and the tasks named.
    let long = std::fs::read_to_string(d.join("p.toml"))
        .unwrap()
        .replace("run_seconds = 2", "run_seconds = 60");
    let sweep = write(d, "long.toml", &long);
    let o = smtsched(d, &["sweep", "run", &sweep, "-o", "long.json"]);
    assert!(o.status.success());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("long.json")).unwrap()).unwrap();
    let first = &v["jobs"][0]["outcome"];
    assert!(first["system_speedup"].is_null(), "{first}");
    assert_eq!(first["missing"].as_array().unwrap().len(), 3);
    assert!(stdout(&o).contains("gzip-like mcf-like swim-like"));
}

#[test]
fn bad_sweeps_shards_and_merges_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases = [
        (
            PAIRS.replace("\"northwood\"", "\"no-such-machine\""),
            "machines",
        ),
        (
            PAIRS.replace("placements = [\"siblings\"]", "policies = [\"plan\"]"),
            "policies",
        ),
        (
            PAIRS
                .replace("kind = \"pairs\"", "kind = \"policies\"")
                .replace(
                    "placements = [\"siblings\"]",
                    "policies = [\"no-such-policy\"]",
                )
                .replace("warmup_instructions = 20000\n", "")
                .replace("measure_instructions = 50000\n", ""),
            "no-such-policy",
        ),
        (PAIRS.replace("gzip-like,mcf-like", "gzip"), "gzip"),
        (
            PAIRS.replace("cache.L2.size_bytes=1048576", "cache.L9.ways=2"),
            "sets[1] on machine northwood: override \"cache.L9.ways=2\"",
        ),
        (PAIRS.replace("seeds = [1, 2]", "seeds = []"), "seeds"),
        (
            PAIRS.replace("kind = \"pairs\"", "kind = \"triples\""),
            "triples",
        ),
        // A field the other kind reads would be ignored.
        (
            format!("{PAIRS}duration_s = 20\n"),
            "duration_s: a pairs sweep has none",
        ),
        (
            PAIRS
                .replace("kind = \"pairs\"", "kind = \"policies\"")
                .replace("placements = [\"siblings\"]", "policies = [\"plan\"]"),
            "warmup_instructions: a policies sweep has none",
        ),
        // A time slice where nothing is time-shared, or one too fine to get work done in.
        (
            format!("{PAIRS}quantum_ms = 5\n"),
            "quantum_ms: applies to the timeshare placement",
        ),
        (
            format!("{PAIRS}quantum_ms = 0.001\n")
                .replace(
                    "placements = [\"siblings\"]",
                    "placements = [\"timeshare\"]",
                )
                .replace("warmup_instructions = 20000\n", "")
                .replace("measure_instructions = 50000\n", ""),
            "quantum_ms = 0.001: must be 0.1 to 1000",
        ),
        // Instruction counts where every placement time-shares: rounds of quanta are measured.
        (
            PAIRS.replace(
                "placements = [\"siblings\"]",
                "placements = [\"timeshare\"]",
            ),
            "warmup_instructions: applies to pairs on threads of their own",
        ),
        // What no job could run, found before any job runs (not when the job comes up).
        (
            PAIRS.replace("\"northwood\"", "\"northwood\", \"superscalar-redstone\""),
            "placements: placement siblings is not available on machine superscalar-redstone",
        ),
        (
            PAIRS
                .replace("kind = \"pairs\"", "kind = \"policies\"")
                .replace(
                    "placements = [\"siblings\"]",
                    "policies = [\"naive\", \"core-sched\"]",
                )
                .replace("warmup_instructions = 20000\n", "")
                .replace("measure_instructions = 50000\n", ""),
            "policy core-sched needs core scheduling, which the linux24 baseline does not have",
        ),
        (
            PAIRS
                .replace("kind = \"pairs\"", "kind = \"policies\"")
                .replace("placements = [\"siblings\"]", "policies = [\"naive\"]")
                .replace("warmup_instructions = 20000\n", "duration_s = 10\n")
                .replace("measure_instructions = 50000\n", ""),
            "duration_s = 10: must be longer than the 10 s in which tasks start",
        ),
        // One job twice: two spellings of one workload list, a preset and its own file.
        (
            PAIRS.replace(
                "workloads = [\"gzip-like,mcf-like\"]",
                "workloads = [\"gzip-like,mcf-like\", \"gzip-like, mcf-like\"]",
            ),
            "name the same workloads",
        ),
        (
            PAIRS.replace(
                "machines = [\"northwood\"]",
                &format!(
                    "machines = [\"northwood\", {:?}]",
                    concat!(env!("CARGO_MANIFEST_DIR"), "/../../machines/northwood.toml")
                ),
            ),
            "are the same machine",
        ),
    ];
    for (text, needle) in cases {
        let f = write(d, "bad.toml", &text);
        let o = smtsched(d, &["sweep", "run", &f]);
        assert_bad_input(&o, &["bad.toml", needle]);
    }
    let sweep = write(d, "s.toml", PAIRS);
    assert_bad_input(
        &smtsched(d, &["sweep", "run", &sweep, "--shard", "3/2"]),
        &["--shard", "3/2"],
    );
    // No output replaces an input: the sweep file, or a machine file it loads.
    let machine = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../machines/northwood.toml"
    ))
    .unwrap();
    write(d, "mine.toml", &machine);
    let own = write(
        d,
        "own.toml",
        &PAIRS.replace("\"northwood\"", "\"mine.toml\""),
    );
    assert_bad_input(
        &smtsched(d, &["sweep", "run", &own, "-o", "mine.toml"]),
        &["mine.toml: would replace this command's input"],
    );
    assert_bad_input(
        &smtsched(
            d,
            &[
                "sweep", "slurm", &own, "--shards", "2", "--dir", "o", "-o", &own,
            ],
        ),
        &["own.toml: would replace this command's input"],
    );
    assert_eq!(
        std::fs::read_to_string(d.join("mine.toml")).unwrap(),
        machine
    );
    // A shard's results are for `sweep merge`: printed only, they would be lost.
    assert_bad_input(
        &smtsched(d, &["sweep", "run", &sweep, "--shard", "1/2"]),
        &["--shard needs -o FILE"],
    );
    // Shards of two different sweeps (another seed list) never merge; nor does an incomplete set.
    let other = write(
        d,
        "o.toml",
        &PAIRS.replace("seeds = [1, 2]", "seeds = [3, 4]"),
    );
    for (f, s, i) in [(&sweep, "a", 1), (&sweep, "a", 2), (&other, "b", 2)] {
        let shard = format!("{i}/2");
        let out = format!("{s}{i}.json");
        assert!(
            smtsched(d, &["sweep", "run", f, "--shard", &shard, "-o", &out])
                .status
                .success()
        );
    }
    assert_bad_input(
        &smtsched(d, &["sweep", "merge", "a1.json", "b2.json"]),
        &["b2.json", "not of"],
    );
    assert_bad_input(
        &smtsched(d, &["sweep", "merge", "a1.json"]),
        &["shard 2/2 is missing"],
    );
    assert_bad_input(
        &smtsched(d, &["sweep", "merge", "a1.json", "a1.json", "a2.json"]),
        &["shard 1/2 again"],
    );
    assert!(!d.join("merged.json").exists());
}

#[test]
fn a_sweep_sharded_on_a_one_node_slurm_cluster_merges_into_the_unsharded_results() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The machine is a file named relative to where the script is written; the jobs start in
    // `out` (their --chdir), where no nw.toml is, and find it all the same.
    let machines = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines/northwood.toml");
    std::fs::copy(machines, d.join("nw.toml")).unwrap();
    let sweep = write(
        d,
        "s.toml",
        &PAIRS.replace(r#"machines = ["northwood"]"#, r#"machines = ["nw.toml"]"#),
    );
    assert!(smtsched(d, &["sweep", "run", &sweep, "-o", "all.json"])
        .status
        .success());
    // `out` was used before with 4 shards: its shard-4.json is no shard of this submission.
    std::fs::create_dir(d.join("out")).unwrap();
    let stale = [
        "sweep",
        "run",
        &sweep,
        "--shard",
        "4/4",
        "-o",
        "out/shard-4.json",
    ];
    assert!(smtsched(d, &stale).status.success());
    // A real cluster: where Slurm cannot start, this fails and says why.
    let cluster = SlurmCluster::start(&d.join("slurm"))
        .unwrap_or_else(|e| panic!("a one-node Slurm cluster did not start: {e}"));
    let o = smtsched(
        d,
        &[
            "sweep",
            "slurm",
            &sweep,
            "--shards",
            "3",
            "--dir",
            "out",
            "-o",
            "submit.sh",
        ],
    );
    assert!(o.status.success());
    // The script names its directory absolutely: it runs from anywhere.
    let script = d.join("submit.sh");
    cluster
        .run("sh", &[script.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    cluster
        .wait_idle(Duration::from_secs(180))
        .unwrap_or_else(|e| panic!("{e}"));
    // Three array tasks wrote their shards; the merge job, run after them, wrote the results
    // an unsharded run writes, byte for byte, from those three shards alone.
    for i in 1..=3 {
        assert!(
            d.join(format!("out/shard-{i}.json")).exists(),
            "{}",
            job_logs(&d.join("out"))
        );
    }
    let merged = std::fs::read(d.join("out/results.json"))
        .unwrap_or_else(|e| panic!("no results.json ({e}):\n{}", job_logs(&d.join("out"))));
    assert_eq!(merged, std::fs::read(d.join("all.json")).unwrap());
    let pids = cluster.pids();
    drop(cluster);
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s[s.rfind(')').unwrap() + 2..].starts_with('Z')),
            "a Slurm daemon ({pid}) is still running"
        );
    }
}

/// The Slurm jobs' logs (`*.log`) in `dir`, each headed by its name.
fn job_logs(dir: &Path) -> String {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    logs.iter()
        .map(|p| {
            format!(
                "== {}\n{}",
                p.display(),
                std::fs::read_to_string(p).unwrap_or_default()
            )
        })
        .collect()
}
