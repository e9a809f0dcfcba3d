//! One run at a time per output: a run that keeps a progress journal claims the output for as
//! long as it runs, so that two commands writing the same output cannot mix their items.
//!
//! The claim is a listening Unix socket in Linux's abstract namespace, named after the output's
//! resolved path (a link to it is the same output) and its device: the kernel lets go of it when the process ends, however it
//! ends (SIGKILL too), and it leaves no file behind. (A lock on a file would not do: the journal
//! and the output are replaced by renames, and a lock file would be left by a killed run.) The
//! device keeps apart runs that see different files at one path (a private /tmp).

use super::output::resolved;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::path::Path;

/// Held while a run writes its output; dropping it lets another run claim it.
pub(crate) struct OneWriter {
    _claim: UnixListener,
}

impl OneWriter {
    /// Claims `output`, or says which process holds it (one line, exit 2). The output, not its
    /// journal, is claimed: two names of one output file (a link to it) have journals of two
    /// names, but their writes land in one file.
    pub fn claim(output: &Path) -> Result<Self> {
        let name = format!("smtsched-output-{:016x}", file_key(output));
        let addr = SocketAddr::from_abstract_name(name.as_bytes())?;
        match UnixListener::bind_addr(&addr) {
            Ok(claim) => Ok(OneWriter { _claim: claim }),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                let who = holder(&addr).map_or("another process".into(), |pid| {
                    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"));
                    let comm = comm.as_deref().unwrap_or("?").trim();
                    format!("another process (pid {pid}, {comm})")
                });
                Err(bad_input(format!(
                    "{}: {who} is writing this output now; let it finish, or write elsewhere",
                    output.display(),
                )))
            }
            Err(e) => Err(e).with_context(|| format!("cannot claim {}", output.display())),
        }
    }
}

/// The file `path` names, as a number: its resolved path's bytes (links resolved in the part
/// that exists) and the device of the part that exists. The device stays as the rest is made
/// (a new file or directory is on its parent's), and tells apart one path in different mount
/// namespaces (a private /tmp).
fn file_key(path: &Path) -> u64 {
    let resolved = resolved(path);
    let dev = resolved
        .ancestors()
        .find_map(|a| std::fs::metadata(a).ok())
        .map_or(0, |m| m.dev());
    let mut bytes = dev.to_le_bytes().to_vec();
    bytes.extend(resolved.as_os_str().as_encoded_bytes());
    // Stable across builds: the claim must mean the same to every version.
    smtsched_uarch::rng::fnv1a(&bytes)
}

/// The process listening at `addr`: the kernel's credentials of a connection's other end.
fn holder(addr: &SocketAddr) -> Option<i32> {
    let stream = UnixStream::connect_addr(addr).ok()?;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writing and `len` is `cred`'s size.
    let got = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (got == 0 && cred.pid > 0).then_some(cred.pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second claim of one place, spelled another way, is refused with the holder's pid;
    /// once the first is let go, it succeeds.
    #[test]
    fn one_output_has_one_writer_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new-dir/out.json");
        let claim = OneWriter::claim;
        let first = claim(&path).unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("link")).unwrap();
        let other_spelling = dir.path().join("link/new-dir/out.json");
        let refused = claim(&other_spelling).err().unwrap().to_string();
        let pid = format!("(pid {},", std::process::id());
        assert!(refused.contains(&pid), "{refused}");
        assert!(claim(&dir.path().join("other.json")).is_ok());
        // A link to it, though the file is not made yet (the write will follow the link).
        std::os::unix::fs::symlink("new-dir/out.json", dir.path().join("dangling.json")).unwrap();
        assert!(claim(&dir.path().join("dangling.json")).is_err());
        // Existing or not yet made, a path is the same claim.
        std::fs::create_dir(dir.path().join("new-dir")).unwrap();
        std::fs::write(&path, "").unwrap();
        assert!(claim(&path).is_err());
        // So is a link to the file (its journal would be the link's name's).
        std::os::unix::fs::symlink(&path, dir.path().join("out-link.json")).unwrap();
        assert!(claim(&dir.path().join("out-link.json")).is_err());
        drop(first);
        assert!(claim(&path).is_ok());
    }
}
