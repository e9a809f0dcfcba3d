//! `smtsched plot` draws a saved matrix or timeline again; `smtsched diff` compares two matrices.
//! Their plans read the files given; drawing and comparing is the work.

use super::plan::Plan;
use super::{check_inputs_kept, check_outputs, json_out, out, write_file};
use crate::args::{DiffArgs, PlotArgs};
use crate::errors::bad_input;
use anyhow::Result;
use smtsched_model::{PrMatrix, PR_MATRIX_FORMAT};
use smtsched_os::runs::{TimelineFile, TIMELINE_FORMAT, TIMELINE_SVG_SECONDS};
use std::path::{Path, PathBuf};

/// What a saved file holds.
enum Drawing {
    Matrix(PrMatrix),
    /// A timeline and the seconds of it to draw.
    Timeline(Box<TimelineFile>, f64),
}

pub struct PlotPlan {
    drawing: Drawing,
    output: Option<PathBuf>,
}

impl Plan for PlotPlan {
    type Args = PlotArgs;

    fn from_args(a: PlotArgs) -> Result<Self> {
        check_outputs([a.output.as_deref()])?;
        check_inputs_kept(&[&a.file], [a.output.as_deref()])?;
        Ok(PlotPlan {
            drawing: read_drawing(&a.file, a.timeline_seconds)?,
            output: a.output,
        })
    }

    fn execute(self) -> Result<()> {
        let svg = match &self.drawing {
            Drawing::Matrix(m) => smtsched_report::matrix::heatmap_svg(m),
            Drawing::Timeline(t, seconds) => t.svg(*seconds),
        }
        .map_err(anyhow::Error::msg)?;
        match &self.output {
            Some(p) => write_file(p, svg.as_bytes()),
            None => out(&svg),
        }
    }
}

/// A matrix or timeline file, told apart by its `format`.
fn read_drawing(path: &Path, timeline_seconds: Option<f64>) -> Result<Drawing> {
    let file = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| bad_input(format!("{file}: {e}")))?;
    let format = serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|e| bad_input(format!("{file}: not JSON: {e}")))?["format"]
        .as_str()
        .map(str::to_string);
    match format.as_deref() {
        Some(PR_MATRIX_FORMAT) => {
            let m = PrMatrix::from_json(&text, &file.to_string())
                .map_err(|e| bad_input(e.to_string()))?;
            if let Some(s) = timeline_seconds {
                return Err(bad_input(format!(
                    "--timeline-seconds {s}: {file} is a matrix, not a timeline (it would change \
                     nothing)"
                )));
            }
            Ok(Drawing::Matrix(m))
        }
        Some(TIMELINE_FORMAT) => {
            let t: TimelineFile = serde_json::from_str(&text)
                .map_err(|e| bad_input(format!("{file}: not a timeline file: {e}")))?;
            t.check()
                .map_err(|why| bad_input(format!("{file}: {why}")))?;
            let seconds = timeline_seconds.unwrap_or(TIMELINE_SVG_SECONDS);
            Ok(Drawing::Timeline(Box::new(t), seconds))
        }
        other => Err(bad_input(format!(
            "{file}: format = {}: expected a PR matrix ({PR_MATRIX_FORMAT}, from matrix -o or \
             measure pairs -o) or a timeline ({TIMELINE_FORMAT}, from run --timeline)",
            other.map_or("(none)".into(), |f| format!("{f:?}"))
        ))),
    }
}

pub struct DiffPlan {
    diff: smtsched_report::diff::MatrixDiff,
    svg: Option<PathBuf>,
    json: bool,
}

impl Plan for DiffPlan {
    type Args = DiffArgs;

    fn from_args(a: DiffArgs) -> Result<Self> {
        check_outputs([a.svg.as_deref()])?;
        check_inputs_kept(&[&a.a, &a.b], [a.svg.as_deref()])?;
        let (ma, mb) = (read_matrix(&a.a)?, read_matrix(&a.b)?);
        // Comparing is quick; two matrices without a workload in common are the user's input.
        let diff = smtsched_report::diff::diff(&ma, &mb).ok_or_else(|| {
            bad_input(format!(
                "{} and {}: no workload in common ({} against {})",
                a.a.display(),
                a.b.display(),
                ma.workloads.join(", "),
                mb.workloads.join(", ")
            ))
        })?;
        Ok(DiffPlan {
            diff,
            svg: a.svg,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        if let Some(p) = &self.svg {
            let svg = self.diff.heatmap_svg().map_err(anyhow::Error::msg)?;
            write_file(p, svg.as_bytes())?;
        }
        if self.json {
            return json_out(&self.diff);
        }
        out(&self.diff.render())
    }
}

fn read_matrix(path: &Path) -> Result<PrMatrix> {
    PrMatrix::read(path).map_err(|e| bad_input(e.to_string()))
}
