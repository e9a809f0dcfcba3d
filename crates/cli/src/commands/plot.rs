//! `smtsched plot` draws a saved matrix or timeline again; `smtsched diff` compares two matrices.

use super::{check_outputs, json_out, out, write_file};
use crate::args::{DiffArgs, PlotArgs};
use crate::errors::bad_input;
use anyhow::Result;
use smtsched_model::{PrMatrix, PR_MATRIX_FORMAT};
use smtsched_os::runs::{TimelineFile, TIMELINE_FORMAT};
use std::path::Path;

pub fn plot(a: PlotArgs) -> Result<()> {
    check_outputs([a.output.as_deref()])?;
    let file = a.file.display();
    let text = std::fs::read_to_string(&a.file).map_err(|e| bad_input(format!("{file}: {e}")))?;
    let format = serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|e| bad_input(format!("{file}: not JSON: {e}")))?["format"]
        .as_str()
        .map(str::to_string);
    let svg = match format.as_deref() {
        Some(PR_MATRIX_FORMAT) => {
            let m = PrMatrix::from_json(&text, &file.to_string())
                .map_err(|e| bad_input(e.to_string()))?;
            smtsched_report::matrix::heatmap_svg(&m)
        }
        Some(TIMELINE_FORMAT) => {
            let t: TimelineFile = serde_json::from_str(&text)
                .map_err(|e| bad_input(format!("{file}: not a timeline file: {e}")))?;
            t.svg(a.timeline_seconds)
        }
        other => {
            return Err(bad_input(format!(
                "{file}: format = {}: expected a PR matrix ({PR_MATRIX_FORMAT}, from matrix -o or \
                 measure pairs -o) or a timeline ({TIMELINE_FORMAT}, from run --timeline)",
                other.map_or("(none)".into(), |f| format!("{f:?}"))
            )))
        }
    }
    .map_err(anyhow::Error::msg)?;
    match &a.output {
        Some(p) => write_file(p, svg.as_bytes()),
        None => out(&svg),
    }
}

fn read_matrix(path: &Path) -> Result<PrMatrix> {
    PrMatrix::read(path).map_err(|e| bad_input(e.to_string()))
}

pub fn diff(a: DiffArgs) -> Result<()> {
    check_outputs([a.svg.as_deref()])?;
    let (ma, mb) = (read_matrix(&a.a)?, read_matrix(&a.b)?);
    let d = smtsched_report::diff::diff(&ma, &mb).ok_or_else(|| {
        bad_input(format!(
            "{} and {}: no workload in common ({} against {})",
            a.a.display(),
            a.b.display(),
            ma.workloads.join(", "),
            mb.workloads.join(", ")
        ))
    })?;
    if let Some(p) = &a.svg {
        write_file(p, d.heatmap_svg().map_err(anyhow::Error::msg)?.as_bytes())?;
    }
    if a.json {
        return json_out(&d);
    }
    out(&d.render())
}
