//! Every command checks what it was given before it works: arguments, the files it reads and
//! the paths it will write. A long job with a bad output path therefore ends at once, in one
//! line with exit code 2, having started nothing and created nothing; and a flag with a closed
//! set of values refuses any other value in one line naming the flag and the value.

mod util;

use std::path::Path;
use std::time::{Duration, Instant};
use util::{assert_bad_input, smtsched, with_marker};

/// A directory that does not exist, so no file can be written in it.
const NO_DIR: &str = "/nonexistent-smtsched-dir";

/// Runs `smtsched ARGS` in `dir` and checks it is refused as bad input within `limit` (far less
/// than the work it asks for would take), naming each of `needles`, and that `dir` stays empty.
fn refused_at_once(dir: &Path, args: &[&str], limit: Duration, needles: &[&str]) {
    let started = Instant::now();
    let o = smtsched(dir, args);
    let took = started.elapsed();
    assert_bad_input(&o, needles);
    assert!(took < limit, "{args:?} took {took:?} before it was refused");
    let left: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    assert!(left.is_empty(), "{args:?} left {left:?}");
}

/// Where a file in the missing directory would go, and what the refusal says of it.
fn missing(file: &str) -> (String, String) {
    (
        format!("{NO_DIR}/{file}"),
        format!("cannot write {NO_DIR}/{file}: no directory {NO_DIR}"),
    )
}

#[test]
fn a_real_schedule_with_a_bad_output_path_is_refused_before_its_tasks_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/nice-one-cpu.toml");
    let (out, says) = missing("sched.json");
    // A minute on the real kernel and another simulated, were it to run.
    let args = [
        "measure",
        "sched",
        file.to_str().unwrap(),
        "--duration",
        "60",
        "--sim-duration",
        "60",
        "-o",
        &out,
    ];
    refused_at_once(dir.path(), &args, Duration::from_secs(10), &[&says]);
}

#[test]
fn measured_pairs_with_a_bad_output_path_are_refused_before_any_workload_runs() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["-o", "--csv", "--pairs-csv", "--svg"] {
        let (out, says) = missing("pairs.out");
        // Every kernel, ten times its usual work, five solo and five paired runs.
        let args = [
            "measure",
            "pairs",
            "-p",
            "timeshare",
            "--work-scale",
            "10",
            flag,
            &out,
        ];
        refused_at_once(dir.path(), &args, Duration::from_secs(10), &[&says]);
    }
}

#[test]
fn a_cache_model_group_search_refuses_its_bad_arguments_before_the_models_are_built() {
    let dir = tempfile::tempdir().unwrap();
    // A billion instructions per thread model would take many minutes.
    let base = [
        "cachemodel",
        "groups",
        "-w",
        "gzip-like,art-like",
        "--instructions",
        "1000000000",
    ];
    let contexts = [&base[..], &["--contexts", "0"]].concat();
    refused_at_once(
        dir.path(),
        &contexts,
        Duration::from_secs(10),
        &["--contexts 0"],
    );
    let many = [&base[..], &["--copies", "40"]].concat();
    refused_at_once(
        dir.path(),
        &many,
        Duration::from_secs(10),
        &["80 threads", "64"],
    );
}

#[test]
fn a_crosscheck_with_a_bad_trace_path_runs_no_program() {
    let dir = tempfile::tempdir().unwrap();
    let (keep, says) = missing("cc.smtt");
    // The marker names the program that must never start.
    let marker = "1.25391";
    let args = [
        "trace",
        "crosscheck",
        "--keep",
        &keep,
        "--",
        "sleep",
        marker,
    ];
    refused_at_once(dir.path(), &args, Duration::from_secs(5), &[&says]);
    assert!(with_marker(marker).is_empty(), "the program ran");
}

#[test]
fn an_agent_with_a_bad_log_path_launches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let (log, says) = missing("agent.jsonl");
    let marker = "2.71828";
    let args = [
        "agent",
        "run",
        "--state-dir",
        state.path().to_str().unwrap(),
        "--log",
        &log,
        "--duration",
        "30",
        "--",
        "sleep",
        marker,
    ];
    refused_at_once(dir.path(), &args, Duration::from_secs(5), &[&says]);
    assert!(with_marker(marker).is_empty(), "the command was launched");
}

#[test]
fn quick_commands_check_their_output_paths_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let slurm = d.join("slurm").display().to_string();
    let (toml, says) = missing("this.toml");
    let o = smtsched(d, &["host", "topology", "--machine-toml", &toml]);
    assert_bad_input(&o, &[&says]);
    assert!(o.stdout.is_empty(), "nothing is printed before the refusal");
    let (script, says) = missing("submit.sh");
    let args = [
        "reproduce",
        "all",
        "--slurm",
        "--shards",
        "2",
        "--dir",
        &slurm,
        "-o",
        &script,
    ];
    assert_bad_input(&smtsched(d, &args), &[&says]);
    let sweep = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sweeps/l2-size.toml");
    let (script, says) = missing("sweep.sh");
    let sweep = sweep.to_str().unwrap();
    let args = [
        "sweep", "slurm", sweep, "--shards", "2", "--dir", &slurm, "-o", &script,
    ];
    assert_bad_input(&smtsched(d, &args), &[&says]);
    assert!(!d.join("slurm").exists(), "no directory made");
}

/// Flags whose value is one of a closed set (or of a fixed syntax) are typed when the command
/// line is parsed: anything else is one line naming the flag and the value, exit 2.
#[test]
fn a_value_outside_a_flags_set_is_one_line_naming_flag_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str, &str)] = &[
        (&["run", "--kernel", "smpp"], "--kernel", "smpp"),
        (&["run", "--corunners", "guessed"], "--corunners", "guessed"),
        (&["corun", "gzip-like", "--cpus", "2,x"], "--cpus", "2,x"),
        (
            &["solo", "gzip-like", "--set", "no-equals"],
            "--set",
            "no-equals",
        ),
        (
            &[
                "cachemodel",
                "schedule",
                "-w",
                "gzip-like",
                "-p",
                "naive,dj",
            ],
            "--policies",
            "dj",
        ),
        (&["agent", "run", "--policy", "plann"], "--policy", "plann"),
        (
            &["agent", "run", "--weights", "shares"],
            "--weights",
            "shares",
        ),
        (
            &["agent", "run", "--metrics", "localhost"],
            "--metrics",
            "localhost",
        ),
        (&["agent", "run", "--label", "x1=y"], "--label", "x1=y"),
        (
            &["train", "fit", "w.csv", "--alpha", "1.5"],
            "--alpha",
            "1.5",
        ),
        (
            &["train", "fit", "w.csv", "--select", "aic"],
            "--select",
            "aic",
        ),
        (
            &["train", "fit", "w.csv", "--features", "loads_subj,tlb_subj"],
            "--features",
            "tlb_subj",
        ),
        (
            &["trace", "crosscheck", "--D1", "32768,8", "--", "true"],
            "--D1",
            "32768,8",
        ),
        (&["measure", "server", "--rate", "fast"], "--rate", "fast"),
        (
            &["measure", "sched", "x.toml", "--cpus", "0-"],
            "--cpus",
            "0-",
        ),
        (
            &["measure", "pairs", "-p", "siblings,diagonal"],
            "--placement",
            "diagonal",
        ),
        (
            &["measure", "pairs", "-w", "dense-fp,sparse"],
            "--workloads",
            "sparse",
        ),
        (
            &["measure", "pairs", "--work", "dense-fp=lots"],
            "--work",
            "lots",
        ),
        (
            &["host", "kernel", "dense-fp", "--footprint", "1ZiB"],
            "--footprint",
            "1ZiB",
        ),
        (
            &["host", "kernel", "dense-fp", "-e", "cycles,cycels"],
            "--events",
            "cycels",
        ),
    ];
    for (args, flag, value) in cases {
        let o = smtsched(dir.path(), args);
        assert_bad_input(&o, &[flag, value]);
    }
}

/// A Slurm `--dir` that is a regular file is refused in one line naming it, before the script
/// (or anything else) is written; printed to standard output, nothing is printed either.
#[test]
fn a_slurm_dir_that_is_a_file_is_refused_before_the_script_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("taken"), "a file\n").unwrap();
    let sweep = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sweeps/l2-size.toml");
    let sweep = sweep.to_str().unwrap();
    let reproduce = ["reproduce", "all", "--slurm", "--shards", "2"];
    let sweep = ["sweep", "slurm", sweep, "--shards", "2"];
    for command in [&reproduce[..], &sweep[..]] {
        for to in [&["-o", "submit.sh"][..], &[]] {
            let args = [command, &["--dir", "taken"], to].concat();
            let o = smtsched(d, &args);
            assert_bad_input(&o, &["--dir taken"]);
            assert!(o.stdout.is_empty(), "{args:?} printed a script");
            assert!(!d.join("submit.sh").exists(), "{args:?} wrote its script");
        }
        // A --dir not made yet, parents too, is the script's to make (mkdir -p) when it runs.
        let args = [command, &["--dir", "scratch/run1", "-o", "submit.sh"]].concat();
        assert!(smtsched(d, &args).status.success(), "{args:?}");
        let script = std::fs::read_to_string(d.join("submit.sh")).unwrap();
        assert!(script.contains("mkdir -p"), "{script}");
        assert!(
            !d.join("scratch").exists(),
            "{args:?} made its --dir before it runs"
        );
        std::fs::remove_file(d.join("submit.sh")).unwrap();
    }
}

#[test]
fn an_output_where_no_file_can_be_made_is_refused_before_the_work_even_for_root() {
    // access(2) lets root past any directory, but /proc makes no files for anyone: the output's
    // temporary file is tried before the matrix (a minute or more) is simulated.
    let dir = tempfile::tempdir().unwrap();
    let out = "/proc/smtsched-matrix.json";
    let args = ["matrix", "--workloads", "all", "-o", out];
    let says = format!("cannot write {out}");
    // Not /proc's "no such file" alone: that reads as if the output were missing.
    let why = "cannot make a file in /proc to write it";
    refused_at_once(dir.path(), &args, Duration::from_secs(10), &[&says, why]);
}

/// No output replaces a file the command reads, whichever option names it and whichever loader
/// reads it (a machine file, a workload file, a recorded trace and its timing profile, a counter
/// model, an experiment's machine file): one line naming both, exit 2, and the file unchanged.
#[test]
fn no_output_replaces_a_file_the_command_reads() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let copy = |from: &str, to: &str| std::fs::copy(repo.join(from), d.join(to)).unwrap();
    copy("machines/northwood.toml", "nw.toml");
    copy("workloads/spec2000/gzip-like.toml", "gz.toml");
    copy("models/northwood.toml", "model.toml");
    let desktop = std::fs::read_to_string(repo.join("experiments/thesis-desktop.toml")).unwrap();
    let mine = desktop.replace("machine = \"northwood\"", "machine = \"nw.toml\"");
    assert_ne!(mine, desktop, "the experiment names its machine");
    std::fs::write(d.join("exp.toml"), mine).unwrap();
    // A trace of 3 instructions, imported from a lackey log.
    let log = "I  00401000,4\n L 00600000,8\nI  00401004,3\nI  00401007,2\n";
    std::fs::write(d.join("t.log"), log).unwrap();
    let o = smtsched(d, &["trace", "import", "t.log", "-o", "t.smtt"]);
    assert!(o.status.success(), "{}", util::stderr(&o));
    let files = ["nw.toml", "gz.toml", "model.toml", "exp.toml", "t.smtt"];
    let before: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(d.join(f)).unwrap())
        .collect();
    let short = ["--instructions", "1000", "--warmup", "100"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            [
                &["matrix", "-w", "gzip-like", "-m", "nw.toml"],
                &short[..],
                &["-o", "nw.toml"],
            ]
            .concat(),
            "nw.toml",
        ),
        (
            [
                &["matrix", "-w", "gz.toml"],
                &short[..],
                &["--csv", "gz.toml"],
            ]
            .concat(),
            "gz.toml",
        ),
        (
            [
                &["matrix", "-w", "t.smtt"],
                &short[..],
                &["--svg", "t.smtt"],
            ]
            .concat(),
            "t.smtt",
        ),
        (
            [
                &["matrix", "-w", "t.smtt@gz.toml"],
                &short[..],
                &["--svg", "gz.toml"],
            ]
            .concat(),
            "gz.toml",
        ),
        (
            vec![
                "run",
                "-t",
                "gzip-like",
                "-m",
                "nw.toml",
                "-p",
                "naive",
                "--duration",
                "12",
                "--timeline",
                "nw.toml",
            ],
            "nw.toml",
        ),
        (
            vec![
                "run",
                "-t",
                "gzip-like,mcf-like",
                "-p",
                "naive",
                "--duration",
                "12",
                "--estimator",
                "model.toml",
                "--csv",
                "model.toml",
            ],
            "model.toml",
        ),
        (
            vec![
                "trace", "profile", "t.smtt", "--timing", "gz.toml", "-o", "gz.toml",
            ],
            "gz.toml",
        ),
        (vec!["reproduce", "exp.toml", "-o", "nw.toml"], "nw.toml"),
        // The program traced and a file it reads are inputs too.
        (
            vec!["trace", "record", "-o", "gz.toml", "--", "cat", "gz.toml"],
            "gz.toml",
        ),
        (
            vec![
                "trace",
                "crosscheck",
                "--keep",
                "t.smtt",
                "--",
                "cat",
                "t.smtt",
            ],
            "t.smtt",
        ),
    ];
    for (args, file) in cases {
        let o = smtsched(d, &args);
        let says = format!("{file}: would replace this command's input {file}");
        assert_bad_input(&o, &[&says]);
    }
    for (f, b) in files.iter().zip(&before) {
        assert_eq!(&std::fs::read(d.join(f)).unwrap(), b, "{f} unchanged");
    }
}
