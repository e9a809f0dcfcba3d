//! `trace`: record, import, inspect and profile traces of real programs, and cross-check the
//! simulator's caches against cachegrind. The work is in `smtsched-trace`; this file parses
//! arguments and prints.

use super::progress_bar;
use super::{json_out, out};
use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use indicatif::ProgressBar;
use smtsched_report::Table;
use smtsched_trace::crosscheck::{
    cachegrind_machine, open_for_check, relative_difference, simulate, CachegrindModel,
};
use smtsched_trace::stats::TraceInfo;
use smtsched_trace::valgrind::{
    import_file, record, run_cachegrind, CacheConfig, Geometry, ProgramOutput, RecordOptions,
};
use smtsched_trace::TraceFile;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args, Debug)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub action: TraceAction,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// `valgrind --tool=lackey --trace-mem=yes` output.
    Lackey,
}

#[derive(Subcommand, Debug)]
pub enum TraceAction {
    /// Run a program under valgrind's lackey and record its trace (the log is streamed through a
    /// pipe into the compressed trace, never stored). Address randomisation is turned off.
    ///
    /// Example: smtsched trace record -o sort.smtt -- sort /etc/services
    Record {
        /// The trace file to write (appears only when complete).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Stop after this many instructions (the program is then killed).
        #[arg(long, value_name = "N")]
        max_instructions: Option<u64>,
        /// Discard the program's standard output and error (its input is /dev/null too).
        #[arg(long)]
        quiet: bool,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// The program and its arguments (after `--`).
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "CMD"
        )]
        command: Vec<String>,
    },
    /// Import a saved log (or `-` for standard input) into a trace file.
    ///
    /// Example: valgrind --tool=lackey --trace-mem=yes --log-fd=3 ls 3>&1 >/dev/null | smtsched trace import - -o ls.smtt
    Import {
        /// Input format.
        #[arg(long, value_enum, default_value = "lackey")]
        format: LogFormat,
        /// The trace file to write (appears only when complete).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Keep only the first N instructions.
        #[arg(long, value_name = "N")]
        max_instructions: Option<u64>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// The log file, or `-` for standard input.
        input: String,
    },
    /// Summarise a trace: instructions, loads, stores, footprint in lines and pages.
    ///
    /// Example: smtsched trace info sort.smtt
    Info {
        file: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Derive a synthetic workload profile from a trace (reuse distances, footprint, access mix,
    /// phases) and report how closely its miss ratios follow the trace's over a range of cache
    /// sizes (fully associative LRU, 64-byte lines).
    ///
    /// Example: smtsched trace profile gzip.smtt -o gzip-real.toml --timing gzip-like
    Profile {
        file: PathBuf,
        /// Where to write the profile (TOML; appears only when complete).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Profile name (default: the output file's stem).
        #[arg(long)]
        name: Option<String>,
        /// Take ILP, micro-ops, FP share and mispredictions from this profile (default: the
        /// replay defaults).
        #[arg(long, value_name = "PROFILE")]
        timing: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a program under cachegrind and under lackey, and compare cachegrind's miss counts with
    /// the smtsched simulator replaying the trace on the same caches (and with a replica of
    /// cachegrind's model, which checks the trace).
    ///
    /// Example: smtsched trace crosscheck --D1 32768,8,64 --LL 262144,8,64 -- gzip -c /etc/services
    Crosscheck {
        /// Level-1 instruction cache: SIZE,WAYS,LINE in bytes.
        #[arg(
            long = "I1",
            default_value = "32768,8,64",
            value_name = "SIZE,WAYS,LINE"
        )]
        i1: String,
        /// Level-1 data cache: SIZE,WAYS,LINE in bytes.
        #[arg(
            long = "D1",
            default_value = "32768,8,64",
            value_name = "SIZE,WAYS,LINE"
        )]
        d1: String,
        /// Last-level (unified) cache: SIZE,WAYS,LINE in bytes.
        #[arg(
            long = "LL",
            default_value = "262144,8,64",
            value_name = "SIZE,WAYS,LINE"
        )]
        ll: String,
        /// Keep the recorded trace in this file.
        #[arg(long, value_name = "FILE")]
        keep: Option<PathBuf>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// The program and its arguments (after `--`).
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "CMD"
        )]
        command: Vec<String>,
    },
}

pub fn run(a: TraceArgs) -> Result<()> {
    match a.action {
        TraceAction::Record {
            output,
            max_instructions,
            quiet,
            json,
            command,
        } => run_record(&output, max_instructions, quiet, json, command),
        TraceAction::Import {
            format: LogFormat::Lackey,
            output,
            max_instructions,
            json,
            input,
        } => run_import(&input, &output, max_instructions, json),
        TraceAction::Info { file, json } => run_info(&file, json),
        TraceAction::Profile {
            file,
            output,
            name,
            timing,
            json,
        } => run_profile(&file, &output, name, timing, json),
        TraceAction::Crosscheck {
            i1,
            d1,
            ll,
            keep,
            json,
            command,
        } => run_crosscheck(&i1, &d1, &ll, keep, json, command),
    }
}

/// A spinner that shows how much log has been read (only on a terminal).
fn log_spinner(what: &str) -> Result<ProgressBar> {
    let bar = progress_bar(
        None,
        "{spinner} {msg}: {binary_bytes} of lackey log read, {elapsed}",
    )?;
    bar.set_message(what.to_string());
    Ok(bar)
}

fn interrupt_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let _ = signal_hook::flag::register(sig, std::sync::Arc::clone(&flag));
    }
    flag
}

fn run_record(
    output: &Path,
    max_instructions: Option<u64>,
    quiet: bool,
    json: bool,
    command: Vec<String>,
) -> Result<()> {
    let opts = RecordOptions {
        command,
        max_instructions,
        output: if quiet {
            ProgramOutput::Null
        } else {
            ProgramOutput::Inherit
        },
    };
    let bar = log_spinner(&format!("recording {}", opts.command.join(" ")))?;
    let flag = interrupt_flag();
    let started = Instant::now();
    let r = record(&opts, output, Some(&flag), &|b| bar.set_position(b));
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

fn run_import(input: &str, output: &Path, max_instructions: Option<u64>, json: bool) -> Result<()> {
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

fn run_info(file: &Path, json: bool) -> Result<()> {
    let t = TraceFile::open(file)?;
    let i = TraceInfo::of(&t)?;
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

fn run_crosscheck(
    i1: &str,
    d1: &str,
    ll: &str,
    keep: Option<PathBuf>,
    json: bool,
    command: Vec<String>,
) -> Result<()> {
    let caches = CacheConfig {
        i1: i1.parse::<Geometry>()?,
        d1: d1.parse::<Geometry>()?,
        ll: ll.parse::<Geometry>()?,
    };
    let machine = cachegrind_machine(&caches)?;
    let _cleanup;
    let trace_path = match keep {
        Some(p) => p,
        None => {
            let dir =
                std::env::temp_dir().join(format!("smtsched-crosscheck-{}", std::process::id()));
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
    let cg = run_cachegrind(&command, &caches, ProgramOutput::Null)?;
    let w = open_for_check(&trace_path)?;
    let replica = CachegrindModel::run(&caches, w.file())?;
    let sim = simulate(&w, &machine)?;
    if json {
        return json_out(&serde_json::json!({
            "command": command, "instructions": rec.summary.instructions,
            "cachegrind": cg, "replica": replica, "simulator": sim,
        }));
    }
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
    out(&format!(
        "`{}`: {} instructions (cachegrind counted {}), I1 {} D1 {} LL {}\n\n{}",
        command.join(" "),
        rec.summary.instructions,
        cg.ir,
        i1,
        d1,
        ll,
        t.render()
    ))
}

/// Removes a temporary directory when the command ends, however it ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run_profile(
    file: &Path,
    output: &Path,
    name: Option<String>,
    timing: Option<String>,
    json: bool,
) -> Result<()> {
    let t = TraceFile::open(file)?;
    let timing = match timing {
        Some(p) => smtsched_trace::replay::ReplayTiming::from_profile(
            &smtsched_model::load_workload(&p, &[])?,
        ),
        None => smtsched_trace::replay::ReplayTiming::defaults(),
    };
    let name = name.unwrap_or_else(|| {
        output
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "trace-profile".into())
    });
    let d = smtsched_trace::profile::derive(&t, &name, &timing)?;
    let text = format!(
        "# Derived by `smtsched trace profile` from {} ({} instructions); timing from {}.\n{}",
        file.display(),
        t.summary().instructions,
        timing.source,
        toml::to_string(&d.profile)?
    );
    super::write_file(output, text.as_bytes())?;
    let max_diff = d
        .data_curve
        .iter()
        .map(|&(_, a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    if json {
        return json_out(&serde_json::json!({
            "profile": output.display().to_string(), "name": name,
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
