//! Output files that appear whole or not at all: written to a temporary file in the target
//! directory and renamed over the target when complete; removed on any error (or panic).

use crate::error::{Result, TraceError};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A file being written under a temporary name next to its destination.
pub struct AtomicFile {
    dest: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
}

static SERIAL: AtomicU32 = AtomicU32::new(0);

impl AtomicFile {
    pub fn create(dest: &Path) -> Result<Self> {
        let name = dest
            .file_name()
            .ok_or_else(|| TraceError::Invalid(format!("{}: not a file name", dest.display())))?;
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tmp = dir.join(format!(
            ".{}.tmp-{}-{}",
            name.to_string_lossy(),
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let f = File::create(&tmp).map_err(|e| TraceError::write(dest, e))?;
        Ok(AtomicFile {
            dest: dest.to_path_buf(),
            tmp,
            out: Some(BufWriter::with_capacity(1 << 20, f)),
        })
    }

    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Flushes, syncs and renames the file into place; on failure the temporary file is removed.
    pub fn commit(mut self) -> Result<()> {
        let out = self.out.take().expect("not committed twice");
        let result = out
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .and_then(|()| std::fs::rename(&self.tmp, &self.dest));
        if result.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        result.map_err(|e| TraceError::write(&self.dest, e))
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
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
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
