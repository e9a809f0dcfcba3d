//! `smtsched trace …` and traces as workloads, run as a user would: the real binary in a fresh
//! temporary directory. Recording needs valgrind (Debian package `valgrind`).

mod util;

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn run(dir: &Path, args: &[&str], env_path: Option<&str>, stdin: Option<&[u8]>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smtsched"));
    cmd.args(args).current_dir(dir);
    if let Some(p) = env_path {
        cmd.env("PATH", p);
    }
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(input) = stdin {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    eprintln!(
        "$ smtsched {}\n(cwd {})\nexit {:?}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        dir.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn smtsched(dir: &Path, args: &[&str]) -> Output {
    run(dir, args, None, None)
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// Bad input: exit code 2, one line on stderr containing every needle.
fn assert_bad_input(o: &Output, needles: &[&str]) {
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr.clone()).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    for n in needles {
        assert!(err.contains(n), "{err:?} should mention {n:?}");
    }
}

/// The directory holds exactly these names (no output file, no temporary left behind).
fn assert_files(dir: &Path, expected: &[&str]) {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(names, want);
}

/// A hand-written lackey log: a loop of 4 instructions run 50 times over a 6-line array, with
/// valgrind's messages around it.
fn hand_log() -> String {
    let mut s =
        String::from("==42== Lackey, an example Valgrind tool\n==42== Command: ./loop\n==42== \n");
    for i in 0..50u64 {
        s.push_str("I  00401000,4\n");
        s.push_str(&format!(" L {:08x},8\n", 0x60_0000 + (i % 6) * 64));
        s.push_str("I  00401004,3\n");
        s.push_str(&format!(" S {:08x},8\n", 0x7ff0_0000u64));
        s.push_str("I  00401007,2\n");
        s.push_str(&format!(" M {:08x},4\n", 0x60_1000 + (i % 2) * 4096));
        s.push_str("I  00401009,2\n"); // jumps back to 0x401000
    }
    s.push_str("==42== \n==42== Counted 1 call to main()\n");
    s
}

#[test]
fn import_and_info_on_a_hand_worked_log() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("loop.log"), hand_log()).unwrap();
    let o = smtsched(d, &["trace", "import", "loop.log", "-o", "loop.smtt"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("imported 200 instructions (50 loads, 50 stores, 50 modifies)"));
    let o = smtsched(d, &["trace", "info", "loop.smtt", "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["summary"];
    assert_eq!(s["instructions"], 200);
    assert_eq!(s["loads"], 50);
    assert_eq!(s["stores"], 50);
    assert_eq!(s["modifies"], 50);
    // Every 4th instruction jumps back, except the very last one (nothing follows it).
    assert_eq!(s["jumps"], 49);
    assert_eq!(s["instruction_bytes"], 50 * 11);
    // Data: 6 array lines + 1 stack line + 2 lines in two pages; pages: 0x600, 0x7ff00, 0x601, 0x602.
    assert_eq!(v["data_lines"], 9);
    assert_eq!(v["data_pages"], 4);
    // Code: 0x401000..0x40100a, one line and one page.
    assert_eq!(
        (v["code_lines"].as_u64(), v["code_pages"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(v["meta"]["imported_from"], "loop.log");
    // The table form says the same.
    let o = smtsched(d, &["trace", "info", "loop.smtt"]);
    let text = stdout(&o);
    assert!(
        text.contains("instructions") && text.contains("200"),
        "{text}"
    );
    assert!(text.contains("data footprint (64 B lines)"), "{text}");
    // Standard input works too, and --max-instructions cuts the trace.
    let o = run(
        d,
        &[
            "trace",
            "import",
            "-",
            "-o",
            "cut.smtt",
            "--max-instructions",
            "10",
        ],
        None,
        Some(hand_log().as_bytes()),
    );
    assert!(o.status.success());
    let o = smtsched(d, &["trace", "info", "cut.smtt", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["summary"]["instructions"], 10);
    assert_eq!(v["meta"]["stopped_at_limit"], true);
}

#[test]
fn bad_logs_and_bad_traces_exit_2_and_leave_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = hand_log();
    // Garbage in the middle of a log: file and line named.
    let bad = log.replacen(" S 7ff00000,8\n", "this is not lackey\n", 3);
    std::fs::write(d.join("bad.log"), &bad).unwrap();
    let o = smtsched(d, &["trace", "import", "bad.log", "-o", "t.smtt"]);
    assert_bad_input(
        &o,
        &[
            "bad.log:7:",
            "not a lackey trace line",
            "this is not lackey",
        ],
    );
    // A log cut in the middle of a line.
    let cut = log.len() / 2 + log[log.len() / 2..].find('\n').unwrap() + 4;
    std::fs::write(d.join("cut.log"), &log[..cut]).unwrap();
    let o = smtsched(d, &["trace", "import", "cut.log", "-o", "t.smtt"]);
    assert_bad_input(&o, &["cut.log:", "ends in the middle of a line"]);
    // A log with no instructions.
    std::fs::write(d.join("empty.log"), "==1== nothing here\n").unwrap();
    let o = smtsched(d, &["trace", "import", "empty.log", "-o", "t.smtt"]);
    assert_bad_input(&o, &["empty.log", "no instructions"]);
    // A missing input.
    let o = smtsched(d, &["trace", "import", "nope.log", "-o", "t.smtt"]);
    assert_bad_input(&o, &["nope.log"]);
    assert_files(d, &["bad.log", "cut.log", "empty.log"]);

    // Traces: a good one, then truncated, corrupted and foreign files.
    std::fs::write(d.join("good.log"), &log).unwrap();
    assert!(
        smtsched(d, &["trace", "import", "good.log", "-o", "good.smtt"])
            .status
            .success()
    );
    let good = std::fs::read(d.join("good.smtt")).unwrap();
    std::fs::write(d.join("short.smtt"), &good[..good.len() - 5]).unwrap();
    let o = smtsched(d, &["trace", "info", "short.smtt"]);
    assert_bad_input(&o, &["short.smtt", "truncated"]);
    let mut flipped = good.clone();
    flipped[40] ^= 0x10; // inside the first chunk's compressed data
    std::fs::write(d.join("flipped.smtt"), &flipped).unwrap();
    let o = smtsched(d, &["trace", "info", "flipped.smtt"]);
    assert_bad_input(&o, &["flipped.smtt", "corrupt"]);
    // As workloads, broken traces are bad input too.
    let o = smtsched(d, &["solo", "short.smtt", "--instructions", "1000"]);
    assert_bad_input(&o, &["short.smtt", "truncated"]);
    let o = smtsched(d, &["trace", "info", "good.log"]);
    assert_bad_input(&o, &["good.log", "not an smtsched trace"]);
    let o = smtsched(
        d,
        &[
            "solo",
            "good.smtt@no-such-profile",
            "--instructions",
            "1000",
        ],
    );
    assert_bad_input(&o, &["no-such-profile"]);
    let o = smtsched(d, &["solo", "good.log@gzip-like", "--instructions", "1000"]);
    assert_bad_input(&o, &["not a trace file"]);
}

#[test]
fn a_trace_is_a_workload_wherever_a_profile_is() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("loop.log"), hand_log()).unwrap();
    assert!(
        smtsched(d, &["trace", "import", "loop.log", "-o", "loop.smtt"])
            .status
            .success()
    );
    let small = ["--instructions", "20000", "--warmup", "5000"];
    let o = smtsched(d, &[&["solo", "loop.smtt", "--json"][..], &small].concat());
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &v["counters"];
    // The trace loops: 200 instructions with 150 data accesses (M counts as a load).
    assert_eq!(c["instructions"], 20000);
    assert_eq!(c["loads"], 10000);
    assert_eq!(c["stores"], 5000);
    // The working set (9 lines) fits in the L1D: after warm-up nothing misses.
    assert_eq!(c["l1d_misses"], 0);
    let ipc_default = v["ipc"].as_f64().unwrap();
    // Timing from a named profile changes timing, not addresses.
    let o = smtsched(
        d,
        &[&["solo", "loop.smtt@mcf-like", "--json"][..], &small].concat(),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["counters"]["loads"], 10000);
    assert_ne!(v["ipc"].as_f64().unwrap(), ipc_default);
    // corun and matrix take traces next to profiles.
    let o = smtsched(
        d,
        &[&["corun", "loop.smtt", "gzip-like", "--json"][..], &small].concat(),
    );
    assert!(o.status.success());
    let o = smtsched(
        d,
        &[
            &["matrix", "-w", "loop.smtt,gzip-like", "--json"][..],
            &small,
        ]
        .concat(),
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["matrix"]["workloads"][0], "loop.smtt");
}

fn have_valgrind() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("valgrind").is_file()))
}

#[test]
fn record_runs_valgrind_and_reports_failures() {
    assert!(
        have_valgrind(),
        "valgrind is needed (Debian: apt-get install valgrind)"
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A real program, cut at an instruction limit.
    let o = smtsched(
        d,
        &[
            "trace",
            "record",
            "--quiet",
            "--max-instructions",
            "30000",
            "-o",
            "true.smtt",
            "--",
            "true",
        ],
    );
    assert!(o.status.success());
    let o = smtsched(d, &["trace", "info", "true.smtt", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["summary"]["instructions"], 30000);
    assert_eq!(v["meta"]["stopped_at_limit"], true);
    assert_eq!(v["meta"]["command"][0], "true");
    // A whole run, with the program's arguments passed through.
    std::fs::write(d.join("in.txt"), "b\na\nc\n").unwrap();
    let o = smtsched(
        d,
        &["trace", "record", "-o", "sort.smtt", "--", "sort", "in.txt"],
    );
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        "a\nb\nc\n",
        "the program's output is passed through"
    );
    // Failures: a missing command, a failing command, a missing valgrind.
    let o = smtsched(
        d,
        &[
            "trace",
            "record",
            "-o",
            "x.smtt",
            "--",
            "no-such-program-xyz",
        ],
    );
    assert_bad_input(&o, &["command not found: no-such-program-xyz"]);
    // A file that is there but cannot be run is named as such, not as missing.
    let o = smtsched(d, &["trace", "record", "-o", "x.smtt", "--", "./in.txt"]);
    assert_bad_input(&o, &["./in.txt: not an executable file"]);
    let o = smtsched(
        d,
        &["trace", "record", "--quiet", "-o", "x.smtt", "--", "false"],
    );
    assert_bad_input(&o, &["`false` exited with status 1 under valgrind"]);
    let o = smtsched(
        d,
        &[
            "trace",
            "record",
            "--quiet",
            "-o",
            "x.smtt",
            "--",
            "sort",
            "missing-file",
        ],
    );
    assert_bad_input(
        &o,
        &["`sort missing-file` exited with status 2 under valgrind"],
    );
    let empty = tempfile::tempdir().unwrap();
    let o = run(
        d,
        &["trace", "record", "-o", "x.smtt", "--", "/bin/true"],
        Some(&empty.path().display().to_string()),
        None,
    );
    assert_bad_input(&o, &["valgrind was not found"]);
    assert_files(d, &["in.txt", "sort.smtt", "true.smtt"]);
}

#[test]
fn profile_writes_a_usable_profile_and_reports_the_curves() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("loop.log"), hand_log()).unwrap();
    assert!(
        smtsched(d, &["trace", "import", "loop.log", "-o", "loop.smtt"])
            .status
            .success()
    );
    let o = smtsched(
        d,
        &["trace", "profile", "loop.smtt", "-o", "loop.toml", "--json"],
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["name"], "loop");
    assert_eq!(v["data_lines"], 9);
    // A 1 KB cache (16 lines) holds all 9 lines: only the 9 first touches miss, of 150 accesses.
    let first = &v["curve"][0];
    assert_eq!(first["cache_bytes"], 1024);
    assert!((first["trace_miss_ratio"].as_f64().unwrap() - 9.0 / 150.0).abs() < 1e-12);
    let text = std::fs::read_to_string(d.join("loop.toml")).unwrap();
    assert!(
        text.contains("name = \"loop\"") && text.contains("[[phase]]"),
        "{text}"
    );
    // The profile runs as a workload.
    let o = smtsched(
        d,
        &[
            "solo",
            "loop.toml",
            "--instructions",
            "20000",
            "--warmup",
            "5000",
            "--json",
        ],
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let loads = v["counters"]["loads"].as_f64().unwrap() / 20000.0;
    assert!((loads - 0.5).abs() < 0.02, "{loads}");
    // Bad input: a missing trace, an unknown timing profile; nothing written.
    let o = smtsched(d, &["trace", "profile", "nope.smtt", "-o", "x.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let o = smtsched(
        d,
        &[
            "trace",
            "profile",
            "loop.smtt",
            "-o",
            "x.toml",
            "--timing",
            "nope",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(!d.join("x.toml").exists());
}

#[test]
fn an_output_path_that_cannot_be_created_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("loop.log"), hand_log()).unwrap();
    let o = smtsched(
        d,
        &["trace", "import", "loop.log", "-o", "no/such/dir/t.smtt"],
    );
    assert_bad_input(&o, &["cannot write no/such/dir/t.smtt"]);
}

#[test]
fn import_from_a_pipe_that_never_ends_stops_on_sigint_and_sigterm_writing_nothing() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.smtt");
        // Standard input is a pipe whose writer (this test) never writes or closes it.
        let mut h = std::process::Command::new(env!("CARGO_BIN_EXE_smtsched"))
            .args(["trace", "import", "-", "-o", out.to_str().unwrap()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Kept open until the end: `wait` would close it, and end of input is not the case.
        let _stdin = h.stdin.take();
        util::wait_for_signal_handlers(h.id());
        let (status, err, took) = util::signal_and_wait(&mut h, sig);
        assert!(took.as_secs() < 5, "took {took:?}");
        assert_eq!(status.code(), Some(1), "{err}");
        assert!(
            err.contains("interrupted") && err.contains("no output written"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing written"
        );
    }
}

#[test]
fn record_stops_valgrind_and_the_program_on_sigterm_and_sigkill() {
    for sig in [libc::SIGTERM, libc::SIGKILL] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.smtt");
        let marker = format!("5252.{}{sig}", std::process::id());
        let mut h = Command::new(env!("CARGO_BIN_EXE_smtsched"))
            .args([
                "trace",
                "record",
                "-o",
                out.to_str().unwrap(),
                "--",
                "sleep",
                &marker,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // smtsched's own command line and valgrind's both name the marker.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while util::with_marker(&marker).len() < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "valgrind never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        let (status, err, took) = util::signal_and_wait(&mut h, sig);
        assert!(took.as_secs() < 5, "took {took:?}");
        if sig == libc::SIGTERM {
            assert_eq!(status.code(), Some(1), "{err}");
            assert!(err.contains("interrupted"), "{err}");
        }
        assert!(
            util::gone_within(&marker, std::time::Duration::from_secs(5)),
            "valgrind left after signal {sig}"
        );
        // No trace appears; after SIGTERM no temporary file either (a SIGKILLed process
        // cannot remove its own: a hidden `.r.smtt.tmp-PID-N` may stay until the next start).
        assert!(!out.exists(), "no trace after signal {sig}");
        if sig == libc::SIGTERM {
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        } else {
            // The next start writing the same file removes what the killed one left.
            let o = smtsched(
                dir.path(),
                &[
                    "trace",
                    "record",
                    "--quiet",
                    "--max-instructions",
                    "1000",
                    "-o",
                    "r.smtt",
                    "--",
                    "true",
                ],
            );
            assert!(o.status.success());
            let names: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(names, ["r.smtt"]);
        }
    }
}

/// A wrapper script that execs the program (as `python3` often is, or `env`): the trace follows
/// the exec and holds the program's instructions alone, as many as cachegrind counts for the
/// same command followed the same way; a script that starts a program without exec cannot be
/// traced as one process and is refused in one line, leaving no file.
#[test]
fn record_follows_an_exec_and_refuses_a_second_process() {
    assert!(
        have_valgrind(),
        "valgrind is needed (Debian: apt-get install valgrind)"
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("in.txt"), "b\na\nc\n").unwrap();
    let script = |name: &str, body: &str| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(d.join(name), format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(d.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    script("wrap.sh", "exec sort \"$@\"");
    let o = smtsched(
        d,
        &[
            "trace",
            "record",
            "-o",
            "w.smtt",
            "--",
            "./wrap.sh",
            "in.txt",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o), "a\nb\nc\n");
    let err = String::from_utf8_lossy(&o.stderr);
    // Valgrind names the program by the path the exec found.
    assert!(
        err.contains("followed the exec: ./wrap.sh in.txt -> /usr/bin/sort in.txt"),
        "{err}"
    );
    let o = smtsched(d, &["trace", "info", "w.smtt", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let traced = v["summary"]["instructions"].as_u64().unwrap();
    // Cachegrind on the same command, address randomisation off, following the exec: its Ir.
    let cg = Command::new("setarch")
        .args([
            "-R",
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--vgdb=no",
            "--trace-children=yes",
        ])
        .args([
            "--cachegrind-out-file=cg.out.%p",
            "-q",
            "./wrap.sh",
            "in.txt",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(
        cg.status.success(),
        "{}",
        String::from_utf8_lossy(&cg.stderr)
    );
    let summary = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("cg.out.")
        })
        .map(|p| std::fs::read_to_string(p).unwrap())
        .find_map(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("summary: ").map(str::to_string))
        })
        .unwrap();
    let ir: u64 = summary.split_whitespace().next().unwrap().parse().unwrap();
    // Within the cross-check's 0.1%: two runs of sort differ by a few tens of instructions when
    // the host is loaded (80 of 400,350 seen under a parallel `cargo test`), while a trace that
    // missed the exec, or counted the shell as well, would be off by far more.
    assert!(
        traced.abs_diff(ir) <= ir / 1000,
        "trace {traced} instructions, cachegrind Ir {ir}"
    );
    // A script that runs sort as a child process and then goes on.
    script("fork.sh", "sort \"$@\"\nexit 0");
    let o = smtsched(
        d,
        &[
            "trace",
            "record",
            "--quiet",
            "-o",
            "f.smtt",
            "--",
            "./fork.sh",
            "in.txt",
        ],
    );
    assert_bad_input(&o, &["a second process", "record that program directly"]);
    assert!(!d.join("f.smtt").exists());
}

/// `smtsched ARGS` in `dir` with TMPDIR a fresh directory (valgrind puts its vgdb pipes there,
/// smtsched its scratch files): the output and what was left in that directory.
fn run_with_fresh_tmpdir(dir: &Path, args: &[&str]) -> (Output, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_smtsched"))
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out, names_in(tmp.path()))
}

fn names_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A crosscheck of a program that fails says how it ended, in one line, and exits 2.
#[test]
fn crosscheck_of_a_failing_program_says_so_in_one_line() {
    assert!(have_valgrind(), "valgrind is needed");
    let dir = tempfile::tempdir().unwrap();
    let (o, left) = run_with_fresh_tmpdir(dir.path(), &["trace", "crosscheck", "--", "false"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "smtsched: error: `false` exited with status 1 under valgrind\n"
    );
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

/// Valgrind killed at --max-instructions, or stopped when a crosscheck is refused (a second
/// process), leaves no vgdb pipe or scratch file in TMPDIR.
#[test]
fn valgrind_runs_leave_nothing_in_tmpdir() {
    assert!(have_valgrind(), "valgrind is needed");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let record = [
        "trace",
        "record",
        "--quiet",
        "--max-instructions",
        "1000",
        "-o",
        "t.smtt",
        "--",
        "true",
    ];
    let (o, left) = run_with_fresh_tmpdir(d, &record);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(left.is_empty(), "record left in TMPDIR: {left:?}");
    let fork = [
        "trace",
        "crosscheck",
        "--",
        "sh",
        "-c",
        "sleep 0.1 & exec true",
    ];
    let (o, left) = run_with_fresh_tmpdir(d, &fork);
    assert_bad_input(&o, &["a second process"]);
    assert!(left.is_empty(), "crosscheck left in TMPDIR: {left:?}");
}

/// Whether a process runs valgrind's `tool` on the program named by `marker`.
fn running_under(marker: &str, tool: &str) -> bool {
    util::with_marker(marker).iter().any(|pid| {
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        String::from_utf8_lossy(&cmd).contains(&format!("--tool={tool}"))
    })
}

/// Waits (up to 30 s) until valgrind's `tool` runs the program named by `marker`.
fn wait_until_running_under(marker: &str, tool: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !running_under(marker, tool) {
        assert!(std::time::Instant::now() < deadline, "{tool} never ran");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// SIGINT or SIGTERM while lackey records or while cachegrind runs: valgrind and the program are
/// stopped, the command says it was interrupted (exit 1, as every command that stops its
/// children does) and leaves nothing in TMPDIR.
#[test]
fn crosscheck_stops_on_sigint_and_sigterm_in_either_valgrind_run() {
    assert!(have_valgrind(), "valgrind is needed");
    let runs = [
        ("lackey", libc::SIGINT),
        ("lackey", libc::SIGTERM),
        ("cachegrind", libc::SIGINT),
        ("cachegrind", libc::SIGTERM),
    ];
    for (n, (tool, sig)) in runs.into_iter().enumerate() {
        let tmp = tempfile::tempdir().unwrap();
        // About 1.5 s of sleep: cachegrind starts only once lackey's run has ended.
        let marker = format!("1.5{}{n}", std::process::id());
        let mut h = Command::new(env!("CARGO_BIN_EXE_smtsched"))
            .args(["trace", "crosscheck", "--", "sleep", &marker])
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_until_running_under(&marker, tool);
        let (status, err, took) = util::signal_and_wait(&mut h, sig);
        assert!(took.as_secs() < 5, "took {took:?}");
        assert_eq!(status.code(), Some(1), "{tool} {sig}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("interrupted by a signal"), "{err}");
        assert!(
            util::gone_within(&marker, std::time::Duration::from_secs(5)),
            "{tool} left running after signal {sig}"
        );
        let left = names_in(tmp.path());
        assert!(left.is_empty(), "{tool} {sig}: left in TMPDIR: {left:?}");
    }
}

#[test]
fn an_interrupted_crosscheck_keeps_the_whole_trace_it_was_asked_to_keep() {
    // `--keep FILE`: once lackey's run has ended the trace is complete; Ctrl-C during cachegrind
    // leaves it (the user asked for it) and says so, rather than "no output written".
    assert!(have_valgrind(), "valgrind is needed");
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("1.5{}9", std::process::id());
    let mut h = Command::new(env!("CARGO_BIN_EXE_smtsched"))
        .args([
            "trace",
            "crosscheck",
            "--keep",
            "kept.smtt",
            "--",
            "sleep",
            &marker,
        ])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_running_under(&marker, "cachegrind");
    let (status, err, _) = util::signal_and_wait(&mut h, libc::SIGINT);
    assert_eq!(status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("the trace kept.smtt is kept"), "{err}");
    let o = smtsched(dir.path(), &["trace", "info", "kept.smtt"]);
    assert!(o.status.success(), "the kept trace reads back whole");
}

#[test]
fn a_crosscheck_killed_by_sigkill_has_its_work_directory_removed_by_the_next_start() {
    // SIGKILL leaves the temporary directory (and the trace in it); the next crosscheck removes
    // it, as its process is gone, and leaves a live one's alone.
    assert!(have_valgrind(), "valgrind is needed");
    let tmp = tempfile::tempdir().unwrap();
    let marker = format!("1.5{}7", std::process::id());
    let mut h = Command::new(env!("CARGO_BIN_EXE_smtsched"))
        .args(["trace", "crosscheck", "--", "sleep", &marker])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until_running_under(&marker, "lackey");
    h.kill().unwrap();
    h.wait().unwrap();
    let killed = format!("smtsched-crosscheck-{}", h.id());
    assert_eq!(names_in(tmp.path()), [killed], "what SIGKILL leaves");
    // A directory of a live process (this test's) stays.
    let live = format!("smtsched-crosscheck-{}", std::process::id());
    std::fs::create_dir(tmp.path().join(&live)).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_smtsched"))
        .args(["trace", "crosscheck", "--", "true"])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(names_in(tmp.path()), [live]);
    assert!(
        util::gone_within(&marker, std::time::Duration::from_secs(5)),
        "valgrind or the program outlived the SIGKILL"
    );
}
