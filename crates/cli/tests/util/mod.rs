//! Running the real binary as a user would, and reading its answers (shared by the CLI tests).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs `smtsched ARGS` in `dir`; prints command, directory, exit code and output, for failures.
pub fn smtsched(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_smtsched"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
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

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// The JSON a successful command printed.
pub fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "command failed");
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Bad input: exit code 2 and exactly one line on stderr that contains every `needle`.
pub fn assert_bad_input(o: &Output, needles: &[&str]) {
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    for n in needles {
        assert!(err.contains(n), "{err:?} should mention {n:?}");
    }
}
