//! Training windows from counters sampled on a real machine.
//!
//! `smtsched measure` reports PR matrices (one number per pair), not the periodic samples the
//! window method needs, so measured samples come in a CSV of their own, one row per sample of one
//! thread:
//!
//! ```text
//! subject,background,run,thread,cycles,instructions,l1i_misses,l1d_misses,llc_misses,fp_ops
//! mcf,,0,subj,0,0,0,0,0,0                  <- a solo run of mcf (background empty)
//! mcf,,0,subj,240000000,61000000,...
//! mcf,gzip,1,subj,0,0,0,0,0,0              <- run 1 of mcf beside gzip: the subject's counters
//! mcf,gzip,1,back,0,0,0,0,0,0              <- … and the background's, on the sibling thread
//! ```
//!
//! `cycles` is time since the start of the run in cycles (the TSC, or seconds × clock rate) and
//! every counter is cumulative since the start of the run (sum the intervals of `perf stat -I 100
//! -x,`). The subject must run the same work alone and in every co-run, from its start; the
//! background may be anywhere in its loop. Event columns are those of `smtsched train windows`
//! (`instructions`, `l1i_misses` — the trace cache on a Pentium 4 —, `l1d_misses`, `llc_misses`,
//! `fp_ops`, `loads`, `stores`, `branch_mispredicts`); `instructions` is required, the others may
//! be left out (their features are then empty, and a fit that needs them says so). Rows may come
//! in any order; a run's samples are sorted by time.

use crate::csv_table::CsvTable;
use crate::error::EstimateError;
use crate::windows::{cut_windows, label, Events, Series, WindowRecord, NE};
use smtsched_os::estimate::CounterEvent;
use std::collections::BTreeMap;

/// Which run a sample belongs to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct RunKey {
    subject: String,
    /// Empty for a solo run.
    background: String,
    run: u32,
}

/// A sample: time, cumulative counters, and the line it came from.
type Sample = (f64, Events, usize);

/// Samples of every run in a file, by run and thread (`true` = subject).
#[derive(Clone, Debug, Default)]
pub struct SampleFile {
    runs: BTreeMap<(RunKey, bool), Vec<Sample>>,
}

/// Parses a samples CSV (see the module documentation).
pub fn parse_samples(text: &str, file: &str) -> Result<SampleFile, EstimateError> {
    let Some(t) = CsvTable::parse(text, file)? else {
        return Err(EstimateError::Empty(format!("{file} has no header row")));
    };
    let required = [
        "subject",
        "background",
        "run",
        "thread",
        "cycles",
        "instructions",
    ];
    t.require(&required, |missing| {
        format!(
            "{missing} (a samples file has subject,background,run,thread,cycles and cumulative counters: {})",
            CounterEvent::ALL.map(|e| e.name()).join(",")
        )
    })?;
    let [s, b, r, th, cy] = [0, 1, 2, 3, 4].map(|i| t.column(required[i]).expect("checked"));
    let ev_cols: Vec<Option<usize>> = CounterEvent::ALL
        .iter()
        .map(|e| t.column(e.name()))
        .collect();
    let mut out = SampleFile::default();
    for row in &t.rows {
        let cells = &row.cells;
        let bad = |c: usize, reason: String| t.bad(row, c, reason);
        let num = |c: usize| -> Result<f64, EstimateError> {
            let v: f64 = cells[c]
                .parse()
                .map_err(|_| bad(c, format!("{:?} is not a number", cells[c])))?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(c, format!("{v} is not a count (finite, ≥ 0)")));
            }
            Ok(v)
        };
        if cells[s].is_empty() {
            return Err(bad(s, "empty subject".into()));
        }
        let run: u32 = cells[r]
            .parse()
            .map_err(|_| bad(r, format!("{:?} is not a run number", cells[r])))?;
        let subj = match cells[th].as_str() {
            "subj" => true,
            "back" => false,
            other => return Err(bad(th, format!("{other:?}: expected subj or back"))),
        };
        if !subj && cells[b].is_empty() {
            return Err(bad(
                th,
                "a solo run (empty background) has no background thread".into(),
            ));
        }
        let mut ev = [f64::NAN; NE];
        for (i, c) in ev_cols.iter().enumerate() {
            if let Some(c) = c {
                if !cells[*c].is_empty() {
                    ev[i] = num(*c)?;
                }
            }
        }
        if ev[0].is_nan() {
            return Err(bad(ev_cols[0].expect("checked"), "empty".into()));
        }
        let key = RunKey {
            subject: cells[s].to_string(),
            background: cells[b].to_string(),
            run,
        };
        out.runs
            .entry((key, subj))
            .or_default()
            .push((num(cy)?, ev, row.line));
    }
    Ok(out)
}

fn series(samples: &[Sample], file: &str, what: &str) -> Result<Series, EstimateError> {
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
    let mut s = Series::default();
    for (t, e, _) in &v {
        s.push(*t, *e);
    }
    s.check().map_err(|reason| EstimateError::BadLine {
        file: file.into(),
        line: v.first().map_or(0, |x| x.2),
        reason: format!("{what}: {reason}"),
    })?;
    if s.len() < 2 {
        return Err(EstimateError::BadLine {
            file: file.into(),
            line: v.first().map_or(0, |x| x.2),
            reason: format!("{what}: needs at least two samples"),
        });
    }
    Ok(s)
}

/// Cuts every co-run in the file into `windows` windows of the instructions both it and the
/// subject's solo run retired.
pub fn windows_from_samples(
    f: &SampleFile,
    file: &str,
    windows: u32,
) -> Result<Vec<WindowRecord>, EstimateError> {
    let mut out = Vec::new();
    for ((key, subj), samples) in &f.runs {
        if key.background.is_empty() || !*subj {
            continue;
        }
        let what = format!("{} with {}, run {}", key.subject, key.background, key.run);
        let solo_key = f
            .runs
            .keys()
            .find(|(k, s)| *s && k.subject == key.subject && k.background.is_empty())
            .ok_or_else(|| {
                EstimateError::Invalid(format!(
                    "{file}: {what} has no solo run of {} (rows with an empty background)",
                    key.subject
                ))
            })?;
        let back = f.runs.get(&(key.clone(), false)).ok_or_else(|| {
            EstimateError::Invalid(format!(
                "{file}: {what} has no background samples (thread back)"
            ))
        })?;
        let solo = series(
            &f.runs[solo_key],
            file,
            &format!("solo run of {}", key.subject),
        )?;
        let subj = series(samples, file, &what)?;
        let back = series(back, file, &format!("{what}, background"))?;
        let start = solo.events[0][0].max(subj.events[0][0]);
        let end = solo.last_instructions().min(subj.last_instructions());
        let values = cut_windows(&solo, &subj, &back, start, end, windows)
            .map_err(|e| EstimateError::Invalid(format!("{file}: {what}: {e}")))?;
        out.extend(label(values, &key.subject, &key.background, key.run));
    }
    if out.is_empty() {
        return Err(EstimateError::Empty(format!(
            "{file} has no co-run (rows with a background) to cut into windows"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
# a solo run at 1 instruction per cycle, a co-run at 1 per 2 with the background at 2 per cycle
subject,background,run,thread,cycles,instructions,l1d_misses
a,,0,subj,0,0,0
a,,0,subj,1000,1000,10
a,b,0,subj,2000,1000,30
a,b,0,subj,0,0,0
a,b,0,back,0,0,0
a,b,0,back,2000,4000,400
";

    #[test]
    fn windows_by_hand_from_a_samples_file() {
        let f = parse_samples(FILE, "s.csv").unwrap();
        let w = windows_from_samples(&f, "s.csv", 4).unwrap();
        assert_eq!(w.len(), 4);
        for (k, x) in w.iter().enumerate() {
            assert_eq!(x.window, k as u32);
            assert_eq!((x.subject.as_str(), x.background.as_str()), ("a", "b"));
            assert_eq!(x.instructions, 250.0);
            assert_eq!(x.solo_cycles, 250.0);
            assert_eq!(x.corun_cycles, 500.0);
            assert_eq!(x.pr, 0.5);
            assert_eq!(x.subj[0], 0.5);
            assert_eq!(x.subj[2], 0.015);
            assert_eq!(x.back[0], 2.0);
            assert_eq!(x.back[2], 0.2);
            // Columns the file does not have stay empty.
            assert!(x.subj[1].is_nan() && x.back[3].is_nan());
        }
    }

    #[test]
    fn bad_files_say_where() {
        let e = parse_samples("subject,run\n", "s.csv").unwrap_err();
        assert!(
            e.to_string()
                .contains("missing column(s) background, thread, cycles, instructions"),
            "{e}"
        );
        let bad = FILE.replace("a,b,0,back,2000,4000,400", "a,b,0,back,2000,-4,400");
        let e = parse_samples(&bad, "s.csv").unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.csv, line 8, column instructions: -4 is not a count (finite, ≥ 0)"
        );
        let bad = FILE.replace("a,b,0,back,2000,4000,400", "a,b,0,both,2000,4000,400");
        assert!(parse_samples(&bad, "s.csv")
            .unwrap_err()
            .to_string()
            .contains("expected subj or back"));
        // Counters must be cumulative.
        let bad = FILE.replace(
            "a,b,0,subj,0,0,0",
            "a,b,0,subj,0,0,0\na,b,0,subj,1000,500,40",
        );
        let f = parse_samples(&bad, "s.csv").unwrap();
        let e = windows_from_samples(&f, "s.csv", 4).unwrap_err();
        assert!(e.to_string().contains("counter l1d_misses falls"), "{e}");
        // A co-run needs its solo run.
        let bad = FILE.replace("a,,0,subj,0,0,0\na,,0,subj,1000,1000,10\n", "");
        let f = parse_samples(&bad, "s.csv").unwrap();
        let e = windows_from_samples(&f, "s.csv", 4).unwrap_err();
        assert!(e.to_string().contains("no solo run of a"), "{e}");
        assert!(e.is_bad_input());
    }
}
