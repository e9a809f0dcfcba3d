//! `trace crosscheck`: cachegrind's miss counts beside the simulator's on the same program and
//! the same caches.

use super::super::{json_out, out};
use super::{interrupt_flag, log_spinner};
use anyhow::Result;
use smtsched_model::MachineModel;
use smtsched_report::Table;
use smtsched_trace::crosscheck::{
    open_for_check, relative_difference, simulate, CachegrindModel, SimulatorCounts,
};
use smtsched_trace::valgrind::{
    record, run_cachegrind, CacheConfig, CachegrindCounts, ProgramOutput, RecordOptions,
};
use smtsched_trace::TraceError;
use std::path::PathBuf;

pub struct CrosscheckPlan {
    pub(super) caches: CacheConfig,
    /// The simulator's machine with cachegrind's caches.
    pub(super) machine: MachineModel,
    /// Where the trace goes: kept, or removed at the end.
    pub(super) keep: Option<PathBuf>,
    pub(super) json: bool,
    pub(super) command: Vec<String>,
}

impl CrosscheckPlan {
    pub(super) fn execute(self) -> Result<()> {
        let (caches, command) = (&self.caches, &self.command);
        let _cleanup;
        let keep = self.keep.clone();
        let trace_path = match self.keep {
            Some(p) => p,
            None => {
                remove_stale_work_dirs();
                let dir = std::env::temp_dir().join(format!("{WORK_DIR}{}", std::process::id()));
                std::fs::create_dir_all(&dir)?;
                _cleanup = RemoveOnDrop(dir.clone());
                dir.join("crosscheck.smtt")
            }
        };
        let bar = log_spinner(&format!("recording {}", command.join(" ")))?;
        let opts = RecordOptions {
            command: command.clone(),
            max_instructions: None,
            output: ProgramOutput::Null,
        };
        let flag = interrupt_flag();
        let rec = record(&opts, &trace_path, Some(&flag), &|b| bar.set_position(b));
        bar.finish_and_clear();
        let rec = rec?;
        // Once recorded, a kept trace is whole: an interruption from here on says so.
        let kept = |e: TraceError| match (e, &keep) {
            (TraceError::Interrupted { origin }, Some(p)) => anyhow::anyhow!(
                "{origin}: interrupted by a signal before the end; the trace {} is kept (recorded \
                 in full), nothing else written",
                p.display()
            ),
            (e, _) => e.into(),
        };
        let cg = run_cachegrind(command, caches, ProgramOutput::Null, Some(&flag)).map_err(kept)?;
        let w = open_for_check(&trace_path)?;
        let replica = CachegrindModel::run(caches, w.file())?;
        let sim = simulate(&w, &self.machine)?;
        // A signal during the simulation is seen here, before anything is printed.
        if flag.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(kept(TraceError::Interrupted {
                origin: "the simulation".into(),
            }));
        }
        // The replica counts the trace's accesses: equal to cachegrind's only if the program did
        // the same work in both runs (an input that changed between them does not).
        let same_run = (replica.ir, replica.dr, replica.dw) == (cg.ir, cg.dr, cg.dw);
        if self.json {
            return json_out(&serde_json::json!({
                "command": command, "instructions": rec.summary.instructions,
                "same_run": same_run,
                "cachegrind": cg, "replica": replica, "simulator": sim,
            }));
        }
        let warning = if same_run {
            String::new()
        } else {
            format!(
                "warning: the two runs differ (instructions {} and {}, reads {} and {}, writes {} \
                 and {}): the program did not do the same work twice, so the misses below differ \
                 partly for that\n\n",
                replica.ir, cg.ir, replica.dr, cg.dr, replica.dw, cg.dw
            )
        };
        out(&format!(
            "`{}`: {} instructions (cachegrind counted {}), I1 {} D1 {} LL {}\n\n{warning}{}",
            command.join(" "),
            rec.summary.instructions,
            cg.ir,
            caches.i1,
            caches.d1,
            caches.ll,
            misses_table(&cg, &replica, &sim).render()
        ))
    }
}

/// Misses counted by cachegrind, its replica and the simulator, side by side.
fn misses_table(cg: &CachegrindCounts, replica: &CachegrindCounts, sim: &SimulatorCounts) -> Table {
    let pct =
        |ours: u64, theirs: u64| format!("{:+.2}%", 100.0 * relative_difference(ours, theirs));
    let mut t = Table::new(["misses", "cachegrind", "replica", "simulator", "difference"]);
    t.row([
        "I1".to_string(),
        cg.i1mr.to_string(),
        replica.i1mr.to_string(),
        "-".to_string(),
        String::new(),
    ]);
    t.row([
        "D1 (engine)".to_string(),
        cg.d1_misses().to_string(),
        replica.d1_misses().to_string(),
        sim.d1_misses.to_string(),
        pct(sim.d1_misses, cg.d1_misses()),
    ]);
    t.row([
        "LL data (memory system)".to_string(),
        cg.ll_data_misses().to_string(),
        replica.ll_data_misses().to_string(),
        sim.memory_ll_data_misses.to_string(),
        pct(sim.memory_ll_data_misses, cg.ll_data_misses()),
    ]);
    t.row([
        "LL all (engine)".to_string(),
        (cg.ilmr + cg.ll_data_misses()).to_string(),
        (replica.ilmr + replica.ll_data_misses()).to_string(),
        sim.ll_misses.to_string(),
        pct(sim.ll_misses, cg.ilmr + cg.ll_data_misses()),
    ]);
    t
}

/// The prefix of a crosscheck's temporary directory, which its process id completes.
const WORK_DIR: &str = "smtsched-crosscheck-";

/// Removes the temporary directories of crosschecks that were killed (SIGKILL gives them no
/// chance to): those whose process no longer exists. A live process's is left alone.
fn remove_stale_work_dirs() {
    let tmp = std::env::temp_dir();
    let Ok(entries) = std::fs::read_dir(&tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|n| n.strip_prefix(WORK_DIR));
        if pid.is_some_and(|p| {
            p.parse::<u32>().is_ok() && !std::path::Path::new("/proc").join(p).exists()
        }) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Removes a temporary directory when the command ends, however it ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
