//! Where smtsched keeps state files (what to undo after a crash): /run/smtsched as root, else
//! $XDG_RUNTIME_DIR/smtsched, else /tmp/smtsched-UID.

use std::path::PathBuf;

pub fn default_state_dir() -> PathBuf {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        return PathBuf::from("/run/smtsched");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("smtsched"),
        _ => PathBuf::from(format!("/tmp/smtsched-{uid}")),
    }
}
