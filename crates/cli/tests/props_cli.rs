//! Property test over the files users write: a real machine, workload, task-set or matrix file
//! with one number replaced by a value across or beyond its valid range (zero, negative, tiny,
//! huge, infinite, NaN, the largest integers) is either simulated to finite results (exit 0) or
//! refused in one line naming the file or the field (exit 2) — never a panic, never longer than
//! a time limit, never more memory than a limit.

mod util;

use proptest::prelude::*;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Wall-clock and address-space limits of one run.
const TIME_LIMIT: Duration = Duration::from_secs(30);
const MEMORY_LIMIT_BYTES: u64 = 8 << 30;

/// Values a number is replaced by.
fn extreme() -> impl Strategy<Value = toml::Value> {
    use toml::Value::{Float, Integer};
    prop_oneof![
        Just(Integer(0)),
        Just(Integer(-1)),
        Just(Integer(1)),
        Just(Integer(i64::MAX)),
        Just(Integer(i64::MIN)),
        Just(Integer(1 << 40)),
        Just(Float(1e-300)),
        Just(Float(1e300)),
        Just(Float(-1e300)),
        Just(Float(f64::INFINITY)),
        Just(Float(f64::NAN)),
        Just(Float(0.5)),
        (1u32..100_000).prop_map(|n| Integer(n as i64)),
        (-10.0f64..10.0).prop_map(Float),
    ]
}

/// Paths of every number in a TOML document (`["cache", 0, "size_bytes"]` as strings/indices).
fn numbers(v: &toml::Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        toml::Value::Integer(_) | toml::Value::Float(_) => out.push(path.clone()),
        toml::Value::Table(t) => {
            for (k, x) in t {
                path.push(k.clone());
                numbers(x, path, out);
                path.pop();
            }
        }
        toml::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(format!("#{i}"));
                numbers(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn set(v: &mut toml::Value, path: &[String], to: toml::Value) {
    let mut cur = v;
    for p in path {
        cur = match p.strip_prefix('#') {
            Some(i) => &mut cur.as_array_mut().unwrap()[i.parse::<usize>().unwrap()],
            None => cur.as_table_mut().unwrap().get_mut(p).unwrap(),
        };
    }
    *cur = to;
}

/// The base file with number `which` (modulo their count) replaced; and that number's key.
fn mutated(base: &str, which: usize, to: toml::Value) -> (String, String) {
    let mut doc: toml::Value = toml::from_str(base).unwrap();
    let mut paths = Vec::new();
    numbers(&doc, &mut Vec::new(), &mut paths);
    let path = paths[which % paths.len()].clone();
    set(&mut doc, &path, to);
    let key = path
        .iter()
        .rev()
        .find(|p| !p.starts_with('#'))
        .unwrap()
        .clone();
    (toml::to_string(&doc).unwrap(), key)
}

/// Runs smtsched under the limits; panics on a crash, a hang or a multi-line error.
fn check(dir: &Path, args: &[&str], file: &str, key: &str) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smtsched"));
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: MEMORY_LIMIT_BYTES,
                rlim_max: MEMORY_LIMIT_BYTES,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    // Drained while it runs: a child blocked on a full pipe would look like a hang.
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("smtsched {args:?} ran longer than {TIME_LIMIT:?} ({key})");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out_stdout = stdout.join().unwrap();
    let out_stderr = stderr.join().unwrap();
    let stderr = String::from_utf8_lossy(&out_stderr);
    match status.code() {
        Some(0) => {
            let v: serde_json::Value = serde_json::from_slice(&out_stdout)
                .unwrap_or_else(|e| panic!("{args:?} ({key}): not JSON: {e}"));
            // JSON cannot hold NaN or infinities: serde writes them as null.
            assert!(
                !has_null_number(&v),
                "{args:?} ({key}): a non-finite result"
            );
        }
        Some(2) => {
            let lines: Vec<&str> = stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{args:?} ({key}): {stderr}");
            assert!(
                lines[0].starts_with("smtsched: error:")
                    && (lines[0].contains(file) || lines[0].contains(key)),
                "{args:?} ({key}): the error names neither file nor field: {stderr}"
            );
        }
        other => panic!("{args:?} ({key}): exit {other:?} (a panic or a signal): {stderr}"),
    }
}

/// Reads `r` to its end on a thread of its own.
fn drain(mut r: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        r.read_to_end(&mut buf).unwrap();
        buf
    })
}

/// Whether a result the program prints holds a null where a number must be: serde writes a
/// non-finite float as null. (A task's PR or ANTT may rightly be absent: a server task completes
/// requests, not runs; and a scheduler run's summary — the object listing the tasks `missing` a
/// run — gives no figure over the set unless every task completed one.)
fn has_null_number(v: &serde_json::Value) -> bool {
    const ALWAYS: [&str; 5] = [
        "ipc",
        "cycles",
        "system_speedup",
        "requests_per_s",
        "megabits_per_s",
    ];
    match v {
        serde_json::Value::Object(m) => m.iter().any(|(k, x)| {
            let may_be_absent = m.contains_key("missing") && k == "system_speedup";
            (x.is_null() && ALWAYS.contains(&k.as_str()) && !may_be_absent) || has_null_number(x)
        }),
        serde_json::Value::Array(a) => a.iter().any(has_null_number),
        _ => false,
    }
}

const SMALL: &[&str] = &["--instructions", "20000", "--warmup", "5000", "--json"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn machine_files(which in 0usize..10_000, to in extreme()) {
        let dir = tempfile::tempdir().unwrap();
        let base = include_str!("../../../machines/northwood.toml");
        let (text, key) = mutated(base, which, to);
        std::fs::write(dir.path().join("m.toml"), text).unwrap();
        let mut args = vec!["solo", "gzip-like", "-m", "m.toml"];
        args.extend_from_slice(SMALL);
        check(dir.path(), &args, "m.toml", &key);
    }

    #[test]
    fn workload_files(which in 0usize..10_000, to in extreme()) {
        let dir = tempfile::tempdir().unwrap();
        let base = include_str!("../../../workloads/servers/apache-mp-like.toml");
        let (text, key) = mutated(base, which, to);
        std::fs::write(dir.path().join("w.toml"), text).unwrap();
        let mut args = vec!["solo", "w.toml", "-m", "xeon-ruan"];
        args.extend_from_slice(SMALL);
        check(dir.path(), &args, "w.toml", &key);
    }

    #[test]
    fn task_set_files(which in 0usize..10_000, to in extreme()) {
        let dir = tempfile::tempdir().unwrap();
        let base = include_str!("../../../tasksets/specweb96-flash.toml");
        let (text, key) = mutated(base, which, to);
        std::fs::write(dir.path().join("t.toml"), text).unwrap();
        let args = [
            "run", "-t", "t.toml", "-m", "xeon-ruan", "--cpus", "0-1", "-p", "naive",
            "--duration", "2", "--stagger", "1", "--json",
        ];
        check(dir.path(), &args, "t.toml", &key);
    }

    #[test]
    fn matrix_files(which in 0usize..10_000, to in extreme()) {
        let dir = tempfile::tempdir().unwrap();
        // A matrix as `matrix -o` writes it, as TOML numbers are mutated, then back to JSON.
        let base: serde_json::Value = serde_json::from_str(MATRIX).unwrap();
        let as_toml = toml::to_string(&base).unwrap();
        let (text, key) = mutated(&as_toml, which, to);
        let doc: toml::Value = toml::from_str(&text).unwrap();
        std::fs::write(dir.path().join("m.json"), serde_json::to_string(&doc).unwrap()).unwrap();
        let args = [
            "run", "-t", "gzip-like,mcf-like", "--oracle", "measured:m.json", "-p", "naive",
            "--duration", "5", "--stagger", "1", "--run-seconds", "1", "--json",
        ];
        check(dir.path(), &args, "m.json", &key);
    }
}

/// A small PR matrix (gzip-like and mcf-like on Northwood's siblings), as `matrix -o` writes.
const MATRIX: &str = r#"{
  "format": "smtsched-pr-matrix/1",
  "source": "simulated",
  "machine": "northwood",
  "placement": "siblings",
  "settings": {"seed": "1"},
  "workloads": ["gzip-like", "mcf-like"],
  "solo": [
    {"workload": "gzip-like", "rate": 0.5, "counters": {"cycles": 40000.0, "instructions": 20000.0}},
    {"workload": "mcf-like", "rate": 0.1, "counters": {"cycles": 200000.0, "instructions": 20000.0}}
  ],
  "pairs": [
    {"a": 0, "b": 0, "pr_a": 0.6, "pr_b": 0.6, "counters_a": {}, "counters_b": {}},
    {"a": 0, "b": 1, "pr_a": 0.8, "pr_b": 0.7, "counters_a": {}, "counters_b": {}},
    {"a": 1, "b": 1, "pr_a": 0.55, "pr_b": 0.55, "counters_a": {}, "counters_b": {}}
  ]
}"#;
