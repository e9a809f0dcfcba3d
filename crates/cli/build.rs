//! Puts the commit the binary is built from into `--version` (`unknown commit` outside a git
//! checkout, as in a source tarball).

use std::path::Path;
use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let version = env!("CARGO_PKG_VERSION");
    let text = match commit {
        Some(c) => format!("{version} (commit {c})"),
        None => format!("{version} (unknown commit)"),
    };
    println!("cargo:rustc-env=SMTSCHED_VERSION={text}");
    // Rebuild when HEAD moves: its file, and the branch file it names.
    let git = Path::new("../../.git");
    println!("cargo:rerun-if-changed={}", git.join("HEAD").display());
    println!(
        "cargo:rerun-if-changed={}",
        git.join("packed-refs").display()
    );
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD")) {
        if let Some(r) = head.trim().strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed={}", git.join(r).display());
        }
    }
}
