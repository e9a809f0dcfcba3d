//! What commands print and write: standard output, output files checked before the work and
//! written whole, and the files a PR matrix is written as.

use crate::errors::bad_input;
use anyhow::Result;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Prints to stdout (a closed pipe ends the program quietly, see main).
pub(crate) fn out(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    Ok(())
}

pub(crate) fn json_out<T: serde::Serialize>(value: &T) -> Result<()> {
    out(&(serde_json::to_string_pretty(value)? + "\n"))
}

/// Checks, before any work, that every output file given can be written: its directory exists
/// and takes files, it is not itself a directory, and no other output of the command names the
/// same file (one would be lost). A long run must not end in "cannot write".
pub(crate) fn check_outputs<'a>(paths: impl IntoIterator<Item = Option<&'a Path>>) -> Result<()> {
    let paths: Vec<&Path> = paths.into_iter().flatten().collect();
    for (i, p) in paths.iter().enumerate() {
        if let Some(q) = paths[..i].iter().find(|q| same_file(q, p)) {
            return Err(bad_input(format!(
                "{} and {}: two outputs name one file (one would be lost)",
                q.display(),
                p.display()
            )));
        }
    }
    for &p in &paths {
        if p.as_os_str().as_encoded_bytes().ends_with(b"/") {
            return Err(bad_input(format!(
                "{}: names a directory (it ends in /), not a file",
                p.display()
            )));
        }
        if p.is_dir() {
            return Err(bad_input(format!(
                "{}: is a directory, not a file",
                p.display()
            )));
        }
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let what = format!("cannot write {}", p.display());
        if !dir.is_dir() {
            return Err(bad_input(format!("{what}: no directory {}", dir.display())));
        }
        if std::fs::metadata(p).is_ok_and(|m| !m.is_file()) {
            // A device or FIFO is written through, not replaced: it must take writes.
            if !has_access(p, libc::W_OK) {
                let e = std::io::Error::last_os_error();
                return Err(bad_input(format!("{what}: {e}")));
            }
        } else {
            takes_files(dir, &what)?;
            made_beside(p, &what)?;
        }
    }
    note_outputs(&paths)
}

/// Checks, before any work, that no output file is one of the command's `inputs`: it would be
/// replaced by what was made from it. The inputs are noted too (see [`note_inputs`]).
pub(crate) fn check_inputs_kept<'a>(
    inputs: &[&Path],
    outputs: impl IntoIterator<Item = Option<&'a Path>>,
) -> Result<()> {
    note_inputs(inputs.iter().copied())?;
    let outputs: Vec<&Path> = outputs.into_iter().flatten().collect();
    refuse_replacing(inputs, &outputs)
}

thread_local! {
    /// The files this command's plan has read and the outputs it has checked so far (plans are
    /// made on the main thread), so that an output never replaces an input, whichever of the two
    /// was named first and whichever loader read the input (a machine or workload file, a trace,
    /// a timing profile).
    static NAMED: std::cell::RefCell<(Vec<PathBuf>, Vec<PathBuf>)> = Default::default();
}

/// Notes files the command reads (those that are not regular files, such as `-` for standard
/// input, are not replaced by an output) and refuses one an output already checked names.
pub(crate) fn note_inputs<'a>(inputs: impl IntoIterator<Item = &'a Path>) -> Result<()> {
    let inputs: Vec<&Path> = inputs.into_iter().filter(|p| p.is_file()).collect();
    NAMED.with_borrow_mut(|(read, written)| {
        let written: Vec<&Path> = written.iter().map(PathBuf::as_path).collect();
        refuse_replacing(&inputs, &written)?;
        read.extend(inputs.iter().map(|p| p.to_path_buf()));
        Ok(())
    })
}

/// Refuses outputs that an input already noted names, and notes them for inputs read later.
fn note_outputs(outputs: &[&Path]) -> Result<()> {
    NAMED.with_borrow_mut(|(read, written)| {
        let read: Vec<&Path> = read.iter().map(PathBuf::as_path).collect();
        refuse_replacing(&read, outputs)?;
        written.extend(outputs.iter().map(|p| p.to_path_buf()));
        Ok(())
    })
}

fn refuse_replacing(inputs: &[&Path], outputs: &[&Path]) -> Result<()> {
    // `-` reads standard input, not a file of that name.
    let files: Vec<&&Path> = inputs.iter().filter(|i| i.as_os_str() != "-").collect();
    for out in outputs {
        if let Some(input) = files.iter().find(|i| same_file(i, out)) {
            return Err(bad_input(format!(
                "{}: would replace this command's input {}; write the output elsewhere",
                out.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

/// Whether `a` and `b` name one regular file: the same place once links are resolved (`-o x
/// --csv ./x`, a link to the other). A device or FIFO may take any number of outputs
/// (`/dev/null`); two hard links are two names an output replaces apart (by rename), so each
/// keeps its own.
fn same_file(a: &Path, b: &Path) -> bool {
    let special = |p: &Path| std::fs::metadata(p).is_ok_and(|m| !m.is_file());
    !special(a) && !special(b) && resolved(a) == resolved(b)
}

/// `path` made absolute, with the links of the part that exists resolved: two spellings of one
/// place give one path.
pub(crate) fn resolved(path: &Path) -> PathBuf {
    // The file a write lands in: a link, even dangling, names its target.
    let target = smtsched_report::final_target(path).unwrap_or_else(|_| path.to_path_buf());
    let abs = std::path::absolute(&target).unwrap_or(target);
    for ancestor in abs.ancestors() {
        if let Ok(real) = ancestor.canonicalize() {
            // (Joining an empty rest would add a slash.)
            let rest = abs.strip_prefix(ancestor).expect("an ancestor is a prefix");
            return if rest.as_os_str().is_empty() {
                real
            } else {
                real.join(rest)
            };
        }
    }
    abs
}

/// Checks, before any work, that `dir` is a directory that takes files, or can be made: its parent
/// exists (as for any output file, parents are not made) and a directory made there now is
/// removed again, so that a run never ends in "cannot create" and an empty directory is not left
/// if it fails.
pub(crate) fn check_output_dir(dir: &Path, flag: &str) -> Result<()> {
    let what = format!("{flag} {}", dir.display());
    if dir.exists() {
        if !dir.is_dir() {
            return Err(bad_input(format!("{what}: not a directory")));
        }
        takes_files(dir, &what)?;
        return made_beside(&dir.join(".smtsched-probe"), &what);
    }
    if let Ok(target) = std::fs::read_link(dir) {
        return Err(bad_input(format!(
            "{what}: a link to {}, which leads nowhere (a directory is not made through a link)",
            target.display()
        )));
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(bad_input(format!(
            "{what}: no directory {}",
            parent.display()
        )));
    }
    std::fs::create_dir(dir)
        .and_then(|()| std::fs::remove_dir(dir))
        .map_err(|e| bad_input(format!("{what}: cannot be made: {e}")))
}

/// Makes the output directory `dir` (see [`check_output_dir`]).
pub(crate) fn make_output_dir(dir: &Path, flag: &str) -> Result<()> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(_) if dir.is_dir() => Ok(()),
        Err(e) => Err(bad_input(format!("{flag} {}: {e}", dir.display()))),
    }
}

/// Whether this process may create files in the directory `dir` (access(2), which also answers
/// for a read-only file system); `what` heads the refusal.
fn takes_files(dir: &Path, what: &str) -> Result<()> {
    if has_access(dir, libc::W_OK | libc::X_OK) {
        return Ok(());
    }
    Err(bad_input(format!(
        "{what}: {} does not take new files ({})",
        dir.display(),
        std::io::Error::last_os_error()
    )))
}

/// Whether this process has the access `mode` to `path` (access(2)).
fn has_access(path: &Path, mode: libc::c_int) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes());
    // SAFETY: the path is a valid NUL-terminated string for the duration of the call.
    c.is_ok_and(|c| unsafe { libc::access(c.as_ptr(), mode) } == 0)
}

/// Whether the file that will replace `path` can be made beside it: access(2) lets root past a
/// directory that takes no files (/proc, /sys), so the temporary file the write will use is
/// made, and removed again (one a SIGKILL leaves behind is removed by the next write of `path`).
fn made_beside(path: &Path, what: &str) -> Result<()> {
    smtsched_report::AtomicFile::create(path)
        .map(drop)
        .map_err(|e| bad_input(format!("{what}: {e}")))
}

/// Writes an output file atomically, naming it in any error; Ctrl-C or SIGTERM meanwhile takes
/// effect once the file is in place (see [`write_files`]).
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    write_files(&[(path, bytes)])
}

/// Writes a set of output files, each atomically, with Ctrl-C and SIGTERM held back until the
/// last is in place: an interrupted command leaves the old set or the new one, never a mix, and
/// no temporary file. A FIFO or device among them is written unprotected (a reader that never
/// comes must not make the command deaf to Ctrl-C).
pub(crate) fn write_files<P: AsRef<Path>, B: AsRef<[u8]>>(files: &[(P, B)]) -> Result<()> {
    write_files_then(files, || Ok(()))
}

/// [`write_files`], then `after` (letting go of the journal kept for these files) before a
/// held-back signal acts: a signal while the files are put in place ends the process once both
/// are done, so no journal outlives the output it was kept for.
pub(crate) fn write_files_then<P: AsRef<Path>, B: AsRef<[u8]>>(
    files: &[(P, B)],
    after: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let regular = files
        .iter()
        .all(|(p, _)| std::fs::metadata(p.as_ref()).map_or(true, |m| m.is_file()));
    // Each written whole beside its target before any is put in place: a full disk leaves the
    // old set.
    let write_all = || {
        let set: Vec<(&Path, &[u8])> = files
            .iter()
            .map(|(p, b)| (p.as_ref(), b.as_ref()))
            .collect();
        smtsched_report::write_atomic_set(&set).map_err(|(path, e)| write_error(&path, e))
    };
    if regular {
        smtsched_host::shutdown::deferring_signals(|| write_all().and_then(|()| after()))
    } else {
        write_all()?;
        after()
    }
}

fn write_error(path: &Path, e: std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind::{InvalidInput, NotFound, PermissionDenied};
    match e.kind() {
        // The path the user gave cannot be written: their input, exit 2.
        NotFound | InvalidInput | PermissionDenied => {
            bad_input(format!("cannot write {}: {e}", path.display()))
        }
        _ => anyhow::Error::new(e).context(format!("cannot write {}", path.display())),
    }
}

/// Where a PR matrix is written: `-o` JSON, `--csv` grid, `--pairs-csv` list, `--svg` heatmap.
#[derive(Debug, Default)]
pub(crate) struct MatrixFiles {
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub pairs_csv: Option<PathBuf>,
    pub svg: Option<PathBuf>,
}

impl MatrixFiles {
    /// The files asked for, each checked before the work (see [`check_outputs`]).
    pub fn checked(a: crate::args::MatrixOutputArgs) -> Result<Self> {
        let files = MatrixFiles {
            json: a.output,
            csv: a.csv,
            pairs_csv: a.pairs_csv,
            svg: a.svg,
        };
        check_outputs([
            files.json.as_deref(),
            files.csv.as_deref(),
            files.pairs_csv.as_deref(),
            files.svg.as_deref(),
        ])?;
        Ok(files)
    }

    /// The text of every file asked for, at `path(file)`; nothing is written, so that a failure
    /// leaves no partial set of files.
    pub fn render(
        &self,
        x: &smtsched_model::PrMatrix,
        path: impl Fn(&Path) -> PathBuf,
    ) -> Result<Vec<(PathBuf, String)>> {
        use smtsched_report::matrix::{grid_csv, heatmap_svg, pairs_csv};
        let mut files = Vec::new();
        if let Some(p) = &self.json {
            files.push((path(p), serde_json::to_string_pretty(x)? + "\n"));
        }
        if let Some(p) = &self.csv {
            files.push((path(p), grid_csv(x)));
        }
        if let Some(p) = &self.pairs_csv {
            files.push((path(p), pairs_csv(x)));
        }
        if let Some(p) = &self.svg {
            files.push((path(p), heatmap_svg(x).map_err(anyhow::Error::msg)?));
        }
        Ok(files)
    }
}
