//! Writing output files so that a failure never leaves a half-written file behind, and nothing
//! a path points at is clobbered: a symlink's target is written (the link stays), a character
//! device or FIFO (`/dev/null`, `/dev/stdout`, a named pipe) is written through, an existing
//! file keeps its permissions, and what cannot be written safely (a directory, a block device,
//! a socket) is refused.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Symlinks followed before giving up (the kernel's own limit, MAXSYMLINKS).
const MAX_LINKS: usize = 40;

fn invalid(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)
}

/// The file `path` finally names: symlinks followed, even a dangling last one (whose target is
/// then created).
pub fn final_target(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(invalid(format!(
        "{}: more than {MAX_LINKS} symbolic links",
        path.display()
    )))
}

/// Writes `bytes` to `path` as [`AtomicFile`] does.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes)?;
    f.commit()
}

/// Writes several files as one output: each is written whole and synced under its temporary
/// name first, and only then are they renamed into place, so that a failure while writing (a
/// full disk, a path that cannot take a file) leaves every target as it was. The error names
/// the file it concerns.
pub fn write_atomic_set(files: &[(&Path, &[u8])]) -> Result<(), (PathBuf, std::io::Error)> {
    let mut staged = Vec::with_capacity(files.len());
    for &(path, bytes) in files {
        let written = AtomicFile::create(path).and_then(|mut f| {
            f.write_all(bytes)?;
            f.finish()?;
            Ok(f)
        });
        staged.push(written.map_err(|e| (path.to_path_buf(), e))?);
    }
    for f in staged {
        let target = f.target.clone();
        f.commit().map_err(|e| (target, e))?;
    }
    Ok(())
}

/// An output being written. A regular file (new or existing) is written under a temporary name
/// in its directory and renamed into place by [`AtomicFile::commit`], keeping an existing file's
/// mode (and owner, where permitted); dropped without a commit (an error, a panic) the temporary
/// file is removed and the target is untouched. A character device or FIFO is written through.
pub struct AtomicFile {
    target: PathBuf,
    /// The temporary file, or `None` when writing through to a device or FIFO.
    tmp: Option<PathBuf>,
    out: Option<BufWriter<File>>,
}

static SERIAL: AtomicU32 = AtomicU32::new(0);

/// Removes the temporary files a killed writer of `target` left (for a file that will not be
/// written again, whose next write would have removed them): see [`remove_stale_temporaries`].
pub fn remove_stale_temporaries_of(target: &Path) {
    if let Some(name) = target.file_name() {
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        remove_stale_temporaries(dir, &name.to_string_lossy());
    }
}

/// Removes the temporary files a writer of `name` in `dir` left when it was killed (SIGKILL gives
/// it no chance to): those whose process no longer exists. A live process's file, this one's
/// included, is left alone; a file that cannot be removed is left for the next start.
fn remove_stale_temporaries(dir: &Path, name: &str) {
    let prefix = format!(".{name}.tmp-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let pid = rest
            .split_once('-')
            .and_then(|(p, _)| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

impl AtomicFile {
    pub fn create(path: &Path) -> std::io::Result<AtomicFile> {
        // A device or FIFO is opened by the name given: the kernel follows links such as
        // /dev/stdout -> /proc/self/fd/1 -> a pipe, which have no path to resolve.
        let through = std::fs::metadata(path)
            .is_ok_and(|m| m.file_type().is_char_device() || m.file_type().is_fifo());
        if through {
            let f = OpenOptions::new().write(true).open(path)?;
            return Ok(AtomicFile {
                target: path.to_path_buf(),
                tmp: None,
                out: Some(BufWriter::with_capacity(1 << 16, f)),
            });
        }
        let target = final_target(path)?;
        let old = match std::fs::metadata(&target) {
            Ok(m) if m.is_dir() => {
                return Err(invalid(format!("{} is a directory", target.display())))
            }
            Ok(m) if !m.is_file() => {
                return Err(invalid(format!(
                    "{} is not a regular file, character device or FIFO (a block device or a \
                     socket): refusing to write to it",
                    target.display()
                )))
            }
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = target
            .file_name()
            .ok_or_else(|| invalid(format!("{}: no file name", target.display())))?;
        remove_stale_temporaries(dir, &name.to_string_lossy());
        let tmp = dir.join(format!(
            ".{}.tmp-{}-{}",
            name.to_string_lossy(),
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        // O_EXCL: never write through something already at the temporary name.
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        if let Some(m) = &old {
            opts.mode(m.permissions().mode() & 0o7777);
        }
        // (Without this context, /proc's refusal would read "no such file" of the output.)
        let f = opts.open(&tmp).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot make a file in {} to write it: {e}", dir.display()),
            )
        })?;
        let kept = (|| {
            if let Some(m) = &old {
                // The mode given to open is masked by the umask: set it exactly, and keep the
                // owner where the kernel lets us (root writing a user's file).
                f.set_permissions(std::fs::Permissions::from_mode(
                    m.permissions().mode() & 0o7777,
                ))?;
                let _ = std::os::unix::fs::fchown(&f, Some(m.uid()), Some(m.gid()));
            }
            Ok(())
        })();
        if let Err(e) = kept {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        Ok(AtomicFile {
            target,
            tmp: Some(tmp),
            out: Some(BufWriter::with_capacity(1 << 20, f)),
        })
    }

    /// The file finally written (symlinks followed).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Discards everything written so far, to start again (a trace whose program exec'd another).
    /// A device or FIFO cannot take back what it was given: an `Unsupported` error.
    pub fn rewind(&mut self) -> std::io::Result<()> {
        if self.tmp.is_none() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "a device or FIFO cannot be rewound",
            ));
        }
        let out = self.out.as_mut().expect("open");
        out.flush()?;
        let f = out.get_mut();
        f.set_len(0)?;
        std::io::Seek::rewind(f)
    }

    /// Flushes what is written and syncs it, without putting the file in place: what can fail
    /// for want of space fails here ([`write_atomic_set`]).
    pub fn finish(&mut self) -> std::io::Result<()> {
        let out = self.out.as_mut().expect("open");
        out.flush()?;
        if self.tmp.is_some() {
            out.get_ref().sync_all()?;
        }
        Ok(())
    }

    /// Flushes, syncs and renames the file into place (a device or FIFO: flushes); on failure
    /// the temporary file is removed.
    pub fn commit(mut self) -> std::io::Result<()> {
        let out = self.out.take().expect("not committed twice");
        let file = out.into_inner().map_err(|e| e.into_error());
        let Some(tmp) = self.tmp.take() else {
            return file.map(drop);
        };
        let result = file
            .and_then(|f| f.sync_all())
            .and_then(|()| std::fs::rename(&tmp, &self.target));
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.as_mut().expect("open").write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.out.as_mut().expect("open").write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.as_mut().expect("open").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            self.out.take();
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.csv");
        std::fs::write(&p, "old").unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn failure_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-dir").join("out.csv");
        assert!(write_atomic(&missing, b"x").is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // Dropped before its commit (an error or a panic mid-write): nothing appears.
        let p = dir.path().join("half.bin");
        std::fs::write(&p, "whole").unwrap();
        {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(b"half").unwrap();
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "whole");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_existing_file_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("secret.json");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&p, b"new").unwrap();
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!(m.permissions().mode() & 0o7777, 0o600);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
    }

    #[test]
    fn a_symlink_stays_and_its_target_is_written_even_when_dangling() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink("real.txt", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        // A dangling link: its target is created, the link kept.
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("made.txt"), &dangling).unwrap();
        write_atomic(&dangling, b"made").unwrap();
        assert!(std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("made.txt")).unwrap(),
            "made"
        );
        // A loop is refused.
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        assert!(write_atomic(&a, b"x").is_err());
    }

    #[test]
    fn devices_and_fifos_are_written_through_and_directories_refused() {
        // /dev/null stays the character device it is (as root, a rename would replace it).
        write_atomic(Path::new("/dev/null"), b"discarded").unwrap();
        let m = std::fs::metadata("/dev/null").unwrap();
        assert!(m.file_type().is_char_device());
        // A named pipe: what a reader at its other end receives.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        write_atomic(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), "through the pipe");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        let err = write_atomic(dir.path(), b"x").unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
        // An anonymous pipe (what /dev/stdout is under `| cat`): its /proc/self/fd link names
        // no path (`pipe:[…]`), yet the kernel opens it.
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let (read_end, write_end) = (fds[0], fds[1]);
        write_atomic(
            Path::new(&format!("/proc/self/fd/{write_end}")),
            b"down the pipe",
        )
        .unwrap();
        unsafe { libc::close(write_end) };
        let mut got = String::new();
        use std::io::Read;
        use std::os::fd::FromRawFd;
        unsafe { std::fs::File::from_raw_fd(read_end) }
            .read_to_string(&mut got)
            .unwrap();
        assert_eq!(got, "down the pipe");
    }
}
