//! A long command's finished items kept in a progress journal beside its output while it runs
//! (see [`smtsched_experiments::progress`]): the same command, stopped, continues from them. The
//! journal is written whole once by each run (atomically, as any output), then appended to, and
//! removed once the output is in place. While it runs, no other run may write the same journal
//! ([`OneWriter`]).

use super::one_writer::OneWriter;
use super::write_file;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;
use smtsched_experiments::progress::{
    header_line, item_line, read_progress, Earlier, Identity, RunIdentity,
};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// An item of a run: its place in the run's list (which says whether it is this run's).
pub(crate) trait Item {
    fn place(&self) -> usize;
}

pub(crate) struct Kept<T> {
    path: PathBuf,
    header: String,
    state: Mutex<State<T>>,
    /// Items the run has in all.
    total: usize,
    /// Made before the first write (a report directory is made when first needed).
    make_dir: Option<PathBuf>,
    /// No other run writes this journal meanwhile (let go after the journal is removed).
    _writer: OneWriter,
}

struct State<T> {
    /// The items an earlier run finished (until this run writes the journal whole, with them).
    earlier: Vec<T>,
    /// Whether this run has written the journal whole (later items are appended).
    written: bool,
}

/// What a new [`Kept`] is for: the run and its inputs, how many items it has and which places
/// are its own, and what the items are called in messages ("experiment(s)").
pub(crate) struct KeptRun<'a, R> {
    pub format: &'a str,
    pub run: R,
    pub inputs: String,
    pub places: &'a [usize],
    pub unit: &'a str,
    /// What the run writes (named when another run holds it).
    pub output: &'a Path,
}

impl<T: Serialize + DeserializeOwned + Clone + Item> Kept<T> {
    /// Reads what an earlier run of `k.run` left at `path`, saying so on stderr; a journal of
    /// another run, build or inputs (or holding items that are not this run's) is set aside
    /// (replaced when the first item ends); a file that is no progress file of `k.format` is
    /// refused.
    pub fn open<R: RunIdentity>(
        path: PathBuf,
        k: KeptRun<R>,
        make_dir: Option<PathBuf>,
    ) -> Result<Self> {
        let id = Identity {
            format: k.format.into(),
            build: build_fingerprint()?,
            inputs: k.inputs,
            run: k.run,
        };
        let writer = OneWriter::claim(k.output)?;
        let (file, unit, total) = (path.display(), k.unit, k.places.len());
        let done = match read_progress::<R, T>(&path, &id).map_err(bad_input)? {
            Earlier::Continue(items) => match foreign_place(&items, k.places) {
                None => {
                    eprintln!(
                        "continuing: {} of {total} {unit} finished earlier, kept in {file}",
                        items.len()
                    );
                    items
                }
                Some(p) => {
                    eprintln!("{file}: keeps item {p}, not this run's: starting afresh");
                    Vec::new()
                }
            },
            Earlier::SetAside(why) => {
                eprintln!("{file}: {unit} of {why}: starting afresh");
                Vec::new()
            }
            Earlier::Nothing if total > 1 => {
                eprintln!(
                    "finished {unit} are kept in {file} until the output is written: if \
                     stopped, the same command continues"
                );
                Vec::new()
            }
            Earlier::Nothing => Vec::new(),
        };
        Ok(Kept {
            header: header_line(&id),
            path,
            state: Mutex::new(State {
                earlier: done,
                written: false,
            }),
            total,
            make_dir,
            _writer: writer,
        })
    }

    /// The items finished before this run started (call before keeping any).
    pub fn done(&self) -> Vec<T> {
        self.lock().earlier.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps a finished item (a run of one item keeps nothing: there is nothing to continue).
    /// The first is written whole with the earlier run's items (dropping a line cut short), the
    /// rest appended; none is held in memory.
    pub fn keep(&self, item: &T) -> Result<()> {
        let mut s = self.lock();
        if self.total <= 1 {
            return Ok(());
        }
        if s.written {
            return self.append(&item_line(item));
        }
        if let Some(d) = &self.make_dir {
            super::output::make_output_dir(d, "-o")?;
        }
        let journal: String = std::iter::once(self.header.clone())
            .chain(s.earlier.iter().chain([item]).map(item_line))
            .collect();
        write_file(&self.path, journal.as_bytes())?;
        s.written = true;
        s.earlier = Vec::new();
        Ok(())
    }

    /// Appends a line, Ctrl-C and SIGTERM held back meanwhile (SIGKILL may cut it short: reading
    /// drops such a line).
    fn append(&self, line: &str) -> Result<()> {
        smtsched_host::shutdown::deferring_signals(|| {
            let mut f = std::fs::OpenOptions::new().append(true).open(&self.path)?;
            f.write_all(line.as_bytes())
        })
        .with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// The output is in place: the journal goes, and any temporary copy a killed run left.
    pub fn remove(self) -> Result<()> {
        let removed = match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
        smtsched_report::remove_stale_temporaries_of(&self.path);
        removed.with_context(|| format!("cannot remove {}", self.path.display()))
    }
}

/// The first kept item whose place is not among `places`, or is there twice.
fn foreign_place<T: Item>(items: &[T], places: &[usize]) -> Option<usize> {
    let mine: HashSet<usize> = places.iter().copied().collect();
    let mut seen = HashSet::new();
    items
        .iter()
        .map(Item::place)
        .find(|p| !mine.contains(p) || !seen.insert(*p))
}

impl<O> Item for (usize, O) {
    fn place(&self) -> usize {
        self.0
    }
}

impl Item for smtsched_experiments::sweep::JobResult {
    fn place(&self) -> usize {
        self.index
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
    let mut h = DefaultHasher::new();
    hash_file(&std::env::current_exe()?, &mut h)?;
    Ok(format!("{:016x}", h.finish()))
}

/// A fingerprint of what a run loaded (`loaded`, serialized) and of every file a string in it
/// names (a machine file, a trace, an estimator model, a task set): an experiment or sweep whose
/// files were edited since is another run, whichever field names them. A name that is also a
/// file's (a preset beside a file so called) only makes the check stricter.
pub(crate) fn inputs_fingerprint<T: Serialize>(loaded: &T) -> Result<String> {
    let value = serde_json::to_value(loaded)?;
    let mut h = DefaultHasher::new();
    h.write(value.to_string().as_bytes());
    for name in files_named_in(&value) {
        h.write(name.as_os_str().as_encoded_bytes());
        hash_file(&name, &mut h)?;
    }
    Ok(format!("{:016x}", h.finish()))
}

/// Every file a string in `loaded` (serialized) names, sorted: what a run of it reads.
pub(crate) fn named_files<T: Serialize>(loaded: &T) -> Result<Vec<PathBuf>> {
    Ok(files_named_in(&serde_json::to_value(loaded)?))
}

fn files_named_in(value: &serde_json::Value) -> Vec<PathBuf> {
    let mut named = Vec::new();
    strings_in(value, &mut named);
    named.sort_unstable();
    named.dedup();
    named
        .into_iter()
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .collect()
}

/// Every string in `v`, in order.
fn strings_in<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    use serde_json::Value;
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings_in(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings_in(x, out)),
        _ => {}
    }
}

/// Feeds `path`'s bytes to `h` in whole pieces of one size (not the file in memory; a read may
/// return less than asked, so each piece is filled before it is hashed): the same bytes, the
/// same value. The length goes last, so that a file's end is marked.
fn hash_file(path: &Path, h: &mut DefaultHasher) -> Result<()> {
    use std::io::Read;
    let cannot = || format!("cannot read {}", path.display());
    let mut file = std::fs::File::open(path).with_context(cannot)?;
    let mut piece = vec![0; 1 << 20];
    let mut total = 0u64;
    loop {
        let mut filled = 0;
        while filled < piece.len() {
            match file.read(&mut piece[filled..]).with_context(cannot)? {
                0 => break,
                n => filled += n,
            }
        }
        h.write(&piece[..filled]);
        total += filled as u64;
        if filled < piece.len() {
            break;
        }
    }
    h.write_u64(total);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file named anywhere in what a run loaded is part of its inputs: editing it (even to
    /// the same length) makes another run; a file named nowhere does not.
    #[test]
    fn an_edited_file_a_run_names_changes_its_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let (named, other) = (dir.path().join("m.toml"), dir.path().join("n.toml"));
        std::fs::write(&named, "l2 = 512\n").unwrap();
        std::fs::write(&other, "x").unwrap();
        let loaded = serde_json::json!({
            "name": "e",
            "configurations": [{"machine": named.to_str().unwrap()}],
            "workloads": ["gzip-like"],
        });
        let before = inputs_fingerprint(&loaded).unwrap();
        std::fs::write(&other, "y").unwrap();
        assert_eq!(inputs_fingerprint(&loaded).unwrap(), before);
        std::fs::write(&named, "l2 = 256\n").unwrap();
        assert_ne!(inputs_fingerprint(&loaded).unwrap(), before);
        std::fs::write(&named, "l2 = 512\n").unwrap();
        assert_eq!(inputs_fingerprint(&loaded).unwrap(), before);
    }
}
