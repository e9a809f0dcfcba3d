//! One module per command.

pub mod agent;
mod bench;
pub mod cachemodel;
mod corun;
mod describe;
mod docs;
pub mod host;
mod matrix;
mod plot;
mod reproduce;
mod reproduce_all;
mod run;
mod sched;
mod server;
mod server_profile;
mod solo;
pub mod sweep;
pub mod trace;
pub mod train;

use crate::args::{Command, SimArgs};
use crate::errors::bad_input;
use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smtsched_model::{load_machine, load_workload, MachineModel, Override};
use smtsched_uarch::{Protocol, Workload};
use std::io::{IsTerminal, Write};
use std::path::Path;

/// A progress bar on stderr drawn with `template` (indicatif's syntax) when stderr is a
/// terminal, hidden otherwise; without `len` it counts up (a spinner or an open-ended bar).
pub(crate) fn progress_bar(len: Option<u64>, template: &str) -> Result<ProgressBar> {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(ProgressStyle::with_template(template)?.progress_chars("=> "));
    Ok(bar)
}

/// A spinner with `msg` and the time elapsed, for work whose length is not known beforehand;
/// drawn on stderr only when it is a terminal.
pub(crate) fn spinner(msg: impl Into<String>) -> Result<ProgressBar> {
    let bar = progress_bar(None, "{spinner} {msg} ({elapsed})")?;
    bar.set_message(msg.into());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    Ok(bar)
}

/// The usual bar: `len` things of `unit`, time elapsed and left.
pub(crate) fn counting_bar(len: u64, unit: &str) -> Result<ProgressBar> {
    progress_bar(
        Some(len),
        &format!("{{msg}} [{{bar:40}}] {{pos}}/{{len}} {unit}, {{elapsed}} elapsed, ~{{eta}} left"),
    )
}

/// An experiment's progress on the terminal: a counting bar per stage, notes always, passing
/// status lines only when someone watches. Experiments running side by side share `multi`,
/// each bar a line of its own, notes printed above them.
#[derive(Default)]
pub(crate) struct Bars {
    bar: std::sync::Mutex<Option<ProgressBar>>,
    multi: Option<indicatif::MultiProgress>,
}

impl Bars {
    pub fn in_multi(multi: &indicatif::MultiProgress) -> Self {
        Bars {
            bar: Default::default(),
            multi: Some(multi.clone()),
        }
    }

    /// A line on stderr, above the bars when there are bars.
    pub fn say(&self, line: &str) {
        match &self.multi {
            Some(m) if std::io::stderr().is_terminal() => {
                let _ = m.println(line);
            }
            _ => eprintln!("{line}"),
        }
    }
}

impl smtsched_experiments::run::Progress for Bars {
    fn begin(&self, label: &str, total: u64, unit: &str) {
        let mut bar = counting_bar(total, unit).unwrap_or_else(|_| ProgressBar::hidden());
        if let Some(m) = &self.multi {
            bar = m.add(bar);
        }
        bar.set_message(label.to_string());
        *self.bar.lock().unwrap_or_else(|p| p.into_inner()) = Some(bar);
    }
    fn step(&self) {
        if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            b.inc(1);
        }
    }
    fn end(&self) {
        if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).take() {
            b.finish_and_clear();
        }
    }
    fn note(&self, line: &str) {
        self.say(line);
    }
    fn status(&self, line: &str) {
        if std::io::stderr().is_terminal() {
            self.say(&format!("  {line}"));
        }
    }
}

/// A comma-separated `--policies` list.
pub(crate) fn parse_policies(list: &str) -> Result<Vec<smtsched_os::PolicyName>> {
    list.split(',')
        .map(|p| {
            p.trim()
                .parse()
                .map_err(|e: String| bad_input(format!("--policies: {e}")))
        })
        .collect()
}

/// Where a PR matrix is written: `-o` JSON, `--csv` grid, `--pairs-csv` list, `--svg` heatmap.
pub(crate) struct MatrixFiles<'a> {
    pub json: Option<&'a Path>,
    pub csv: Option<&'a Path>,
    pub pairs_csv: Option<&'a Path>,
    pub svg: Option<&'a Path>,
}

impl MatrixFiles<'_> {
    /// The text of every file asked for, at `path(file)`; nothing is written, so that a failure
    /// leaves no partial set of files.
    pub fn render(
        &self,
        x: &smtsched_model::PrMatrix,
        path: impl Fn(&Path) -> std::path::PathBuf,
    ) -> Result<Vec<(std::path::PathBuf, String)>> {
        use smtsched_report::matrix::{grid_csv, heatmap_svg, pairs_csv};
        let mut files = Vec::new();
        if let Some(p) = self.json {
            files.push((path(p), serde_json::to_string_pretty(x)? + "\n"));
        }
        if let Some(p) = self.csv {
            files.push((path(p), grid_csv(x)));
        }
        if let Some(p) = self.pairs_csv {
            files.push((path(p), pairs_csv(x)));
        }
        if let Some(p) = self.svg {
            files.push((path(p), heatmap_svg(x).map_err(anyhow::Error::msg)?));
        }
        Ok(files)
    }
}

pub fn run(command: Command) -> Result<()> {
    match command {
        Command::Machines(a) => describe::machines(a),
        Command::Workloads(a) => describe::workloads(a),
        Command::Solo(a) => solo::run(a),
        Command::Corun(a) => corun::run(a),
        Command::Matrix(a) => matrix::run(a),
        Command::Run(a) => run::run(a),
        Command::Reproduce(a) => reproduce::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Trace(a) => trace::run(a),
        Command::Host(a) => host::run_host(a),
        Command::Measure(a) => host::run_measure(a),
        Command::Cachemodel(a) => cachemodel::run(a),
        Command::Train(a) => train::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Agent(a) => agent::run(a),
        Command::Plot(a) => plot::plot(a),
        Command::Diff(a) => plot::diff(a),
        Command::Completions(a) => docs::completions(a),
        Command::Man(a) => docs::man(a),
    }
}

pub(crate) fn parse_overrides(set: &[String]) -> Result<Vec<Override>> {
    set.iter()
        .map(|s| s.parse::<Override>().map_err(anyhow::Error::new))
        .collect()
}

pub(crate) fn machine(name: &str, set: &[String]) -> Result<MachineModel> {
    Ok(load_machine(name, &parse_overrides(set)?)?)
}

/// A workload by preset name or file.
pub(crate) fn workload(name: &str) -> Result<Box<dyn Workload>> {
    // A recorded trace (`FILE` or `FILE@PROFILE`, told apart by the file's signature) replays
    // wherever a profile runs.
    if let Some(trace) = smtsched_trace::replay::load_trace_workload(name)? {
        return Ok(Box::new(trace));
    }
    Ok(Box::new(load_workload(name, &[])?))
}

/// The measurement protocol the simulation options describe.
pub(crate) fn protocol(sim: &SimArgs, machine: &MachineModel, rounds: u32) -> Result<Protocol> {
    if !(sim.quantum_ms > 0.0 && sim.quantum_ms.is_finite()) {
        return Err(bad_input(format!(
            "--quantum-ms {}: must be a positive number of milliseconds",
            sim.quantum_ms
        )));
    }
    if rounds == 0 {
        return Err(bad_input(
            "--rounds 0: at least one measured round is needed",
        ));
    }
    Ok(Protocol {
        seed: sim.seed,
        warmup_instructions: sim.warmup,
        measure_instructions: sim.instructions,
        quantum_cycles: (sim.quantum_ms * 1e6 * machine.clock_ghz).round().max(1.0) as u64,
        timeshare_rounds: rounds,
        refill_only: !sim.full_quanta,
    })
}

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
/// and takes files, and it is not itself a directory. A long run must not end in "cannot write".
pub(crate) fn check_outputs<'a>(paths: impl IntoIterator<Item = Option<&'a Path>>) -> Result<()> {
    for p in paths.into_iter().flatten() {
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
        if !dir.is_dir() {
            return Err(bad_input(format!(
                "cannot write {}: no directory {}",
                p.display(),
                dir.display()
            )));
        }
        if !writable_dir(dir) {
            return Err(bad_input(format!(
                "cannot write {}: {} does not take new files ({})",
                p.display(),
                dir.display(),
                std::io::Error::last_os_error()
            )));
        }
    }
    Ok(())
}

/// Whether this process may create files in `dir` (access(2), which also answers for a
/// read-only file system).
fn writable_dir(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// Writes an output file atomically, naming it in any error.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::ErrorKind::{InvalidInput, NotFound, PermissionDenied};
    smtsched_report::write_atomic(path, bytes).map_err(|e| match e.kind() {
        // The path the user gave cannot be written: their input, exit 2.
        NotFound | InvalidInput | PermissionDenied => {
            bad_input(format!("cannot write {}: {e}", path.display()))
        }
        _ => anyhow::Error::new(e).context(format!("cannot write {}", path.display())),
    })
}
