//! Output files that appear whole or not at all: written to a temporary file in the target
//! directory and renamed over the target when complete; removed on any error (or panic).

use crate::error::{Result, TraceError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A file being written under a temporary name next to its destination (the project's one
/// atomic writer, `smtsched_report::write::AtomicFile`), with errors naming the destination.
pub struct AtomicFile {
    dest: PathBuf,
    inner: smtsched_report::write::AtomicFile,
}

impl AtomicFile {
    pub fn create(dest: &Path) -> Result<Self> {
        let inner = smtsched_report::write::AtomicFile::create(dest)
            .map_err(|e| TraceError::write(dest, e))?;
        Ok(AtomicFile {
            dest: dest.to_path_buf(),
            inner,
        })
    }

    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Flushes, syncs and renames the file into place; on failure the temporary file is removed.
    pub fn commit(self) -> Result<()> {
        let dest = self.dest;
        self.inner.commit().map_err(|e| TraceError::write(&dest, e))
    }
}

/// An output that can discard what it was given and start again: a trace restarts when the
/// program traced execs another (a wrapper script, `env`), so that it holds the last program only.
pub trait Rewind: Write {
    fn rewind(&mut self) -> std::io::Result<()>;
}

impl Rewind for AtomicFile {
    fn rewind(&mut self) -> std::io::Result<()> {
        self.inner.rewind()
    }
}

impl<T: Rewind + ?Sized> Rewind for &mut T {
    fn rewind(&mut self) -> std::io::Result<()> {
        (**self).rewind()
    }
}

impl Rewind for Vec<u8> {
    fn rewind(&mut self) -> std::io::Result<()> {
        self.clear();
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appears_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("t.smtt");
        let mut f = AtomicFile::create(&dest).unwrap();
        f.write_all(b"hello").unwrap();
        assert!(!dest.exists());
        f.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"hello");
        let mut g = AtomicFile::create(&dest).unwrap();
        g.write_all(b"partial").unwrap();
        drop(g);
        assert_eq!(std::fs::read(&dest).unwrap(), b"hello");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temp file left"
        );
    }
}
