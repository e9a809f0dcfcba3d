//! `trace info`: a trace's instructions, accesses and footprint.

use super::super::{json_out, out};
use anyhow::Result;
use smtsched_report::Table;
use smtsched_trace::stats::TraceInfo;
use smtsched_trace::TraceFile;

pub(super) fn run_info(t: &TraceFile, json: bool) -> Result<()> {
    let i = TraceInfo::of(t)?;
    if json {
        return json_out(&i);
    }
    let s = &i.summary;
    let n = s.instructions.max(1) as f64;
    let per_k = |x: u64| format!("{:.1}", x as f64 * 1000.0 / n);
    let mut tab = Table::new(["", "value", "per 1000 instr"]);
    tab.row([
        "instructions".to_string(),
        s.instructions.to_string(),
        String::new(),
    ]);
    tab.row(["loads".to_string(), s.loads.to_string(), per_k(s.loads)]);
    tab.row(["stores".to_string(), s.stores.to_string(), per_k(s.stores)]);
    tab.row([
        "modifies (read+write)".to_string(),
        s.modifies.to_string(),
        per_k(s.modifies),
    ]);
    tab.row([
        "taken branches, calls, returns".to_string(),
        s.jumps.to_string(),
        per_k(s.jumps),
    ]);
    tab.row([
        "accesses crossing a 64 B line".to_string(),
        s.line_crossings.to_string(),
        per_k(s.line_crossings),
    ]);
    tab.row([
        "mean instruction length".to_string(),
        format!("{:.2} B", s.instruction_bytes as f64 / n),
        String::new(),
    ]);
    let kb = |lines: u64, unit: u64| format!("{} KB", lines * unit / 1024);
    tab.row([
        "data footprint (64 B lines)".to_string(),
        i.data_lines.to_string(),
        kb(i.data_lines, 64),
    ]);
    tab.row([
        "data footprint (4 KB pages)".to_string(),
        i.data_pages.to_string(),
        kb(i.data_pages, 4096),
    ]);
    tab.row([
        "code footprint (64 B lines)".to_string(),
        i.code_lines.to_string(),
        kb(i.code_lines, 64),
    ]);
    tab.row([
        "code footprint (4 KB pages)".to_string(),
        i.code_pages.to_string(),
        kb(i.code_pages, 4096),
    ]);
    tab.row([
        "file size".to_string(),
        format!("{} bytes", i.file_bytes),
        String::new(),
    ]);
    tab.row([
        "bytes per million instructions".to_string(),
        format!("{:.0}", i.bytes_per_million_instructions),
        String::new(),
    ]);
    let m = &i.meta;
    let origin = if !m.command.is_empty() {
        format!("recorded from `{}`", m.command.join(" "))
    } else {
        format!("imported from {}", m.imported_from)
    };
    out(&format!(
        "{} ({} trace, {}{})\n\n{}",
        i.file,
        m.format,
        origin,
        if m.stopped_at_limit {
            ", stopped at an instruction limit"
        } else {
            ""
        },
        tab.render()
    ))
}
