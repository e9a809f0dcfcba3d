//! One run at a time per output: a run that keeps a progress journal claims the journal's name
//! for as long as it runs, so that two commands writing the same output cannot mix their items.
//!
//! The claim is a listening Unix socket in Linux's abstract namespace, named after the journal's
//! resolved path: the kernel lets go of it when the process ends, however it ends (SIGKILL too),
//! and it leaves no file behind. (A lock on a file would not do: the journal and the output are
//! replaced by renames, and a lock file would be left by a killed run.)

use super::output::resolved;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::path::Path;

/// Held while a run writes `path`; dropping it lets another run claim it.
pub(crate) struct OneWriter {
    _claim: UnixListener,
}

impl OneWriter {
    /// Claims `path`, or says which process holds it (one line, exit 2).
    pub fn claim(path: &Path) -> Result<Self> {
        let resolved = resolved(path);
        let key = smtsched_uarch::rng::derive_seed(0, &resolved.to_string_lossy());
        let name = format!("smtsched-output-{key:016x}");
        let addr = SocketAddr::from_abstract_name(name.as_bytes())?;
        match UnixListener::bind_addr(&addr) {
            Ok(claim) => Ok(OneWriter { _claim: claim }),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                let who = holder(&addr).map_or(String::new(), |pid| format!(" (pid {pid})"));
                Err(bad_input(format!(
                    "{}: another smtsched{who} is writing this journal's output now; let it \
                     finish, or write elsewhere",
                    path.display()
                )))
            }
            Err(e) => Err(e).with_context(|| format!("cannot claim {}", path.display())),
        }
    }
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
        let path = dir.path().join("new-dir/out.json.progress");
        let first = OneWriter::claim(&path).unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("link")).unwrap();
        let other_spelling = dir.path().join("link/new-dir/out.json.progress");
        let refused = OneWriter::claim(&other_spelling).err().unwrap().to_string();
        let pid = format!("(pid {})", std::process::id());
        assert!(refused.contains(&pid), "{refused}");
        assert!(OneWriter::claim(&dir.path().join("other.progress")).is_ok());
        // Existing or not yet made, a path is the same claim.
        std::fs::create_dir(dir.path().join("new-dir")).unwrap();
        std::fs::write(&path, "").unwrap();
        assert!(OneWriter::claim(&path).is_err());
        drop(first);
        assert!(OneWriter::claim(&path).is_ok());
    }
}
