//! The files `run` writes about its first policy's first repetition (timeline, its SVG, a
//! Perfetto trace, the decisions) and about every run (per-task CSV).

use super::super::{check_inputs_kept, check_outputs, write_files};
use crate::errors::bad_input;
use anyhow::Result;
use smtsched_model::MachineModel;
use smtsched_os::policy::DecisionRecord;
use smtsched_os::runs::{perfetto_of, PolicyRuns, TimelineFile, TIMELINE_SVG_SECONDS};
use std::path::{Path, PathBuf};

/// Where each file goes (none: not written); checked before the run.
#[derive(Debug)]
pub struct RunFiles {
    pub timeline: Option<PathBuf>,
    pub timeline_svg: Option<PathBuf>,
    /// Seconds the timeline SVG shows.
    pub timeline_seconds: Option<f64>,
    pub trace: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub decisions: Option<PathBuf>,
}

impl RunFiles {
    /// Checks the files before the run: each can be written, and none is one of the run's
    /// `inputs` (its task set, a measured matrix).
    pub fn check(&self, inputs: &[&Path]) -> Result<()> {
        let outputs = [
            self.timeline.as_deref(),
            self.timeline_svg.as_deref(),
            self.trace.as_deref(),
            self.csv.as_deref(),
            self.decisions.as_deref(),
        ];
        if let (Some(s), None) = (self.timeline_seconds, &self.timeline_svg) {
            return Err(bad_input(format!(
                "--timeline-seconds {s}: applies to --timeline-svg, which is not given (it \
                 would change nothing)"
            )));
        }
        check_outputs(outputs)?;
        check_inputs_kept(inputs, outputs)
    }

    /// Whether the simulation must record the schedule (every context switch).
    pub fn need_timeline(&self) -> bool {
        self.timeline.is_some() || self.timeline_svg.is_some() || self.trace.is_some()
    }

    /// Writes every file asked for, as one set (the old set or the new one is left, never a
    /// mix); `title` heads the timeline and the trace.
    pub fn write(&self, results: &[PolicyRuns], m: &MachineModel, title: &str) -> Result<()> {
        let first = &results[0].runs[0];
        let timeline = TimelineFile::of(first, m, title);
        let mut files: Vec<(&Path, Vec<u8>)> = Vec::new();
        if let Some(p) = &self.timeline {
            let text = serde_json::to_string_pretty(&timeline)? + "\n";
            files.push((p, text.into_bytes()));
        }
        if let Some(p) = &self.timeline_svg {
            let svg = timeline
                .svg(self.timeline_seconds.unwrap_or(TIMELINE_SVG_SECONDS))
                .map_err(anyhow::Error::msg)?;
            files.push((p, svg.into_bytes()));
        }
        if let Some(p) = &self.trace {
            let trace = perfetto_of(first, m, title);
            files.push((p, (serde_json::to_string(&trace)? + "\n").into_bytes()));
        }
        if let Some(p) = &self.decisions {
            let mut text = String::new();
            for rec in &first.periods {
                let line = DecisionRecord::new(&rec.view, &rec.decisions);
                text.push_str(&serde_json::to_string(&line)?);
                text.push('\n');
            }
            files.push((p, text.into_bytes()));
        }
        if let Some(p) = &self.csv {
            files.push((p, task_csv(results).into_bytes()));
        }
        write_files(&files)
    }
}

/// One row per task of every repetition of every policy.
fn task_csv(results: &[PolicyRuns]) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for pr in results {
        for (k, r) in pr.runs.iter().enumerate() {
            for b in &r.per_bench {
                rows.push(vec![
                    pr.policy.clone(),
                    k.to_string(),
                    b.name.clone(),
                    b.nice.to_string(),
                    b.runs.to_string(),
                    b.pr.map_or(String::new(), |v| format!("{v:.6}")),
                    format!("{:.6}", b.cpu_share),
                    b.context_switches.to_string(),
                    b.migrations.to_string(),
                ]);
            }
        }
    }
    let header = [
        "policy",
        "repetition",
        "task",
        "nice",
        "runs",
        "pr",
        "cpu_share",
        "context_switches",
        "migrations",
    ];
    smtsched_report::csv::csv_text(&[], &header, rows)
}
