//! `trace profile`: a synthetic workload profile derived from a trace, and how closely its miss
//! ratios follow the trace's.

use super::super::{check_inputs_kept, check_name_flag, check_outputs, json_out, note_named_file};
use super::super::{out, write_file};
use anyhow::Result;
use smtsched_report::Table;
use smtsched_trace::replay::ReplayTiming;
use smtsched_trace::TraceFile;
use std::path::PathBuf;

pub struct ProfilePlan {
    trace: TraceFile,
    file: PathBuf,
    output: PathBuf,
    name: String,
    timing: ReplayTiming,
    json: bool,
}

impl ProfilePlan {
    pub(super) fn new(
        file: PathBuf,
        output: PathBuf,
        name: Option<String>,
        timing: Option<String>,
        json: bool,
    ) -> Result<Self> {
        let trace = TraceFile::open(&file)?;
        let timing = match timing {
            Some(p) => {
                let profile = smtsched_model::load_workload(&p, &[])?;
                note_named_file(&p, smtsched_model::WORKLOAD_PRESETS)?;
                ReplayTiming::from_profile(&profile)
            }
            None => ReplayTiming::defaults(),
        };
        check_outputs([Some(output.as_path())])?;
        check_inputs_kept(&[&file], [Some(output.as_path())])?;
        check_name_flag(name.as_ref())?;
        let name = name.unwrap_or_else(|| {
            output
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "trace-profile".into())
        });
        Ok(ProfilePlan {
            trace,
            file,
            output,
            name,
            timing,
            json,
        })
    }

    pub(super) fn execute(self) -> Result<()> {
        let (t, output) = (&self.trace, &self.output);
        let d = smtsched_trace::profile::derive(t, &self.name, &self.timing)?;
        let text = format!(
            "# Derived by `smtsched trace profile` from {} ({} instructions); timing from {}.\n{}",
            self.file.display(),
            t.summary().instructions,
            self.timing.source,
            toml::to_string(&d.profile)?
        );
        write_file(output, text.as_bytes())?;
        let max_diff = d
            .data_curve
            .iter()
            .map(|&(_, a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        if self.json {
            return json_out(&serde_json::json!({
                "profile": output.display().to_string(), "name": self.name,
                "phases": d.phase_starts, "data_lines": d.analysis.data_lines,
                "code_lines": d.analysis.code_lines,
                "reuse_histogram": d.analysis.data,
                "curve": d.data_curve.iter().map(|&(c, a, b)| serde_json::json!({
                    "cache_bytes": c * 64, "trace_miss_ratio": a, "profile_miss_ratio": b,
                })).collect::<Vec<_>>(),
                "max_abs_difference": max_diff,
            }));
        }
        let mut tab = Table::new([
            "cache",
            "trace miss ratio",
            "profile miss ratio",
            "difference",
        ]);
        for &(c, a, b) in &d.data_curve {
            let bytes = c * 64;
            let size = if bytes >= 1 << 20 {
                format!("{} MB", bytes >> 20)
            } else {
                format!("{} KB", bytes >> 10)
            };
            tab.row([
                size,
                format!("{:.4}", a),
                format!("{:.4}", b),
                format!("{:+.4}", b - a),
            ]);
        }
        out(&format!(
            "wrote {} ({} phases starting at instructions {:?}; data footprint {} lines, code {} lines)\n\ndata miss ratios, fully associative LRU, 64-byte lines:\n{}largest difference {:.4}\n",
            output.display(),
            d.phase_starts.len(),
            d.phase_starts,
            d.analysis.data_lines,
            d.analysis.code_lines,
            tab.render(),
            max_diff
        ))
    }
}
