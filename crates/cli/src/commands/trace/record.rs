//! `trace record` and `trace import`: a program's trace through valgrind's lackey, or a saved
//! lackey log, into a compressed trace file.

use super::super::{json_out, out};
use super::{interrupt_flag, log_spinner};
use anyhow::Result;
use smtsched_trace::valgrind::{import_file, record, RecordOptions};
use std::path::Path;
use std::time::Instant;

pub(super) fn run_record(opts: &RecordOptions, output: &Path, json: bool) -> Result<()> {
    let bar = log_spinner(&format!("recording {}", opts.command.join(" ")))?;
    let flag = interrupt_flag();
    let started = Instant::now();
    let r = record(opts, output, Some(&flag), &|b| bar.set_position(b));
    bar.finish_and_clear();
    let r = r?;
    let secs = started.elapsed().as_secs_f64();
    let s = r.summary;
    if json {
        return json_out(&serde_json::json!({
            "file": output.display().to_string(), "command": opts.command,
            "summary": s, "file_bytes": r.file_bytes, "lackey_lines": r.import.lines,
            "stopped_at_limit": r.import.stopped_at_limit, "seconds": secs,
            "programs": r.import.programs,
        }));
    }
    // The program may write to stdout: our report goes to stderr.
    if r.import.programs.len() > 1 {
        eprintln!(
            "followed the exec: {} (the trace is of the last)",
            r.import.programs.join(" -> ")
        );
    }
    eprintln!(
        "recorded {} instructions ({} loads, {} stores, {} modifies) of `{}` into {}{}\n{} bytes ({:.0} bytes per million instructions); {} lackey lines in {:.1} s",
        s.instructions,
        s.loads,
        s.stores,
        s.modifies,
        opts.command.join(" "),
        output.display(),
        if r.import.stopped_at_limit {
            " (stopped at --max-instructions)"
        } else {
            ""
        },
        r.file_bytes,
        r.file_bytes as f64 * 1e6 / s.instructions.max(1) as f64,
        r.import.lines,
        secs
    );
    Ok(())
}

pub(super) fn run_import(
    input: &str,
    output: &Path,
    max_instructions: Option<u64>,
    json: bool,
) -> Result<()> {
    let bar = log_spinner(&format!("importing {input}"))?;
    let flag = interrupt_flag();
    let started = Instant::now();
    let r = import_file(input, output, max_instructions, Some(&flag), &|b| {
        bar.set_position(b)
    });
    bar.finish_and_clear();
    let (stats, s) = r?;
    let secs = started.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    let rate = stats.lines as f64 / secs.max(1e-9);
    if json {
        return json_out(&serde_json::json!({
            "file": output.display().to_string(), "input": input, "summary": s,
            "file_bytes": bytes, "lackey_lines": stats.lines, "seconds": secs,
            "lines_per_second": rate, "stopped_at_limit": stats.stopped_at_limit,
        }));
    }
    out(&format!(
        "imported {} instructions ({} loads, {} stores, {} modifies) from {} into {}{}\n{} lackey lines in {:.2} s ({:.1} million lines/s); {} bytes ({:.0} bytes per million instructions)\n",
        s.instructions,
        s.loads,
        s.stores,
        s.modifies,
        input,
        output.display(),
        if stats.stopped_at_limit {
            " (stopped at --max-instructions)"
        } else {
            ""
        },
        stats.lines,
        secs,
        rate / 1e6,
        bytes,
        bytes as f64 * 1e6 / s.instructions.max(1) as f64
    ))
}
