//! A long command's finished items kept in a progress file beside its output while it runs (see
//! [`smtsched_experiments::progress`]): the same command, stopped, continues from them. The file
//! is replaced whole after each item (as any output: an interrupted write leaves the old one) and
//! removed once the output is in place.

use super::write_file;
use crate::errors::bad_input;
use anyhow::Result;
use serde::de::DeserializeOwned;
use serde::Serialize;
use smtsched_experiments::progress::{read_progress, Progress, RunIdentity};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

pub(crate) struct Kept<R, T> {
    path: PathBuf,
    progress: Mutex<Progress<R, T>>,
    /// Items the run has in all (the last is not kept: the output follows it).
    total: usize,
    /// Made before the first write (a report directory is made when first needed).
    make_dir: Option<PathBuf>,
}

impl<R: RunIdentity, T: Serialize + DeserializeOwned + Clone> Kept<R, T> {
    /// Reads what an earlier run of `run` by this program left at `path`, saying so on stderr
    /// (`unit`: what the items are, "experiment(s)"); a file of another run or build is set aside
    /// (replaced when the first item ends), a file that is no progress file of `format` refused.
    pub fn open(
        path: PathBuf,
        format: &str,
        run: R,
        total: usize,
        unit: &str,
        make_dir: Option<PathBuf>,
    ) -> Result<Self> {
        let mut progress = Progress::new(format, run, build_fingerprint()?);
        let file = path.display();
        match read_progress::<R, T>(&path, format).map_err(bad_input)? {
            Some(p) => match p.mismatch(&progress.run, &progress.build) {
                Some(why) => eprintln!("{file}: {unit} of {why}: starting afresh"),
                None => {
                    eprintln!(
                        "continuing: {} of {total} {unit} finished earlier, kept in {file}",
                        p.done.len()
                    );
                    progress = p;
                }
            },
            None if total > 1 => eprintln!(
                "finished {unit} are kept in {file} until the output is written: if stopped, \
                 the same command continues"
            ),
            None => {}
        }
        Ok(Kept {
            path,
            progress: Mutex::new(progress),
            total,
            make_dir,
        })
    }

    /// The items finished before this run started, or by it so far.
    pub fn done(&self) -> Vec<T> {
        self.lock().done.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Progress<R, T>> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps a finished item; the last one is not written (the output follows).
    pub fn keep(&self, item: &T) -> Result<()> {
        let mut p = self.lock();
        p.done.push(item.clone());
        if p.done.len() >= self.total {
            return Ok(());
        }
        if let Some(d) = &self.make_dir {
            super::output::make_output_dir(d, "-o")?;
        }
        write_file(&self.path, (serde_json::to_string(&*p)? + "\n").as_bytes())
    }

    /// The output is in place: what was kept for it goes.
    pub fn remove(self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(anyhow::Error::new(e).context(format!("cannot remove {}", self.path.display())))
            }
            _ => Ok(()),
        }
    }
}

/// Where the finished items of a run writing `output` are kept: `OUTPUT.progress`, unless the
/// output is not a file (a FIFO, a device: nothing is made beside those).
pub(crate) fn progress_beside(output: &Path) -> Option<PathBuf> {
    if std::fs::metadata(output).is_ok_and(|m| !m.is_file()) {
        return None;
    }
    let mut path = output.as_os_str().to_owned();
    path.push(".progress");
    Some(path.into())
}

/// A fingerprint of this program's executable: kept items continue only under the build that
/// ran them. (std's SipHash with fixed keys: the same bytes give the same value under one build of
/// the program, which is all this compares; a test build's 200 MB take a twentieth of a second.)
fn build_fingerprint() -> Result<String> {
    use std::hash::Hasher;
    let exe = std::env::current_exe()?;
    let bytes = std::fs::read(&exe)
        .map_err(|e| anyhow::Error::new(e).context(format!("cannot read {}", exe.display())))?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write(&bytes);
    Ok(format!("{:016x}", h.finish()))
}
