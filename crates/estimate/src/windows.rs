//! Training windows (thesis §3.4, DESIGN §2): each subject run is cut into windows of equal
//! retired instructions; a window's performance ratio is the subject's solo cycles over its co-run
//! cycles for the same instructions, and its features are the events per cycle of the subject and
//! of the background thread over the co-run window's span of time.
//!
//! Counters are read as periodic samples (the thesis read them every ~100 ms) and interpolated
//! linearly to the window boundaries, so the same code serves the simulator's samples and samples
//! measured on a real machine ([`crate::samples`]).

use crate::csv_table::CsvTable;
use crate::error::EstimateError;
use smtsched_model::matrix::{is_performance_ratio, MAX_PR};
use smtsched_os::estimate::{CounterEvent, Epc, Feature, Side};
use smtsched_os::oracle::epc_of;
use smtsched_uarch::ThreadCounters;

/// Number of events per thread (every [`CounterEvent`]).
pub const NE: usize = smtsched_model::events::EVENT_COUNT;

/// Events of one thread, in the order of [`CounterEvent::ALL`] (`instructions` first).
pub type Events = [f64; NE];

/// The feature columns in order: every event of the subject, then every event of the background.
pub fn feature_names() -> Vec<String> {
    Feature::all().iter().map(ToString::to_string).collect()
}

/// Counts of a simulated thread's events, with the last cache level of the machine's data path
/// as `llc` (the same mapping [`epc_of`] applies online).
pub fn events_of_counters(c: &ThreadCounters, llc_level: u8) -> Events {
    // epc_of divides by max(cycles, 1): with cycles = 1 it returns the counts themselves.
    let unit = ThreadCounters { cycles: 1.0, ..*c };
    epc_of(&unit, llc_level).0
}

/// One training window.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct WindowRecord {
    pub subject: String,
    pub background: String,
    /// Which of the pair's runs (each with another offset of the background).
    pub run: u32,
    /// Index of the window within its run.
    pub window: u32,
    /// Instructions the subject retired in the window.
    pub instructions: f64,
    /// Cycles the same instructions took alone.
    pub solo_cycles: f64,
    /// Cycles they took beside the background.
    pub corun_cycles: f64,
    /// `solo_cycles / corun_cycles`.
    pub pr: f64,
    /// Subject events per co-run cycle ([`CounterEvent::ALL`] order; NaN where a file had no value).
    pub subj: Events,
    /// Background events per co-run cycle over the same span of time.
    pub back: Events,
}

impl WindowRecord {
    /// The value of a feature (NaN where the file had none).
    pub fn feature(&self, f: Feature) -> f64 {
        let i = f.event.index();
        match f.side {
            Side::Subject => self.subj[i],
            Side::Background => self.back[i],
        }
    }

    /// The features as the online model sees them.
    pub fn epc(&self) -> (Epc, Epc) {
        (Epc(self.subj), Epc(self.back))
    }
}

/// A thread's counters sampled over a run: cumulative events at increasing times.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Time of each sample, in cycles since the start of the run.
    pub cycles: Vec<f64>,
    /// Cumulative events at each sample ([`CounterEvent::ALL`] order).
    pub events: Vec<Events>,
}

impl Series {
    pub fn push(&mut self, cycle: f64, events: Events) {
        self.cycles.push(cycle);
        self.events.push(events);
    }

    pub fn len(&self) -> usize {
        self.cycles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cycles.is_empty()
    }

    /// Retired instructions at the last sample.
    pub fn last_instructions(&self) -> f64 {
        self.events.last().map_or(0.0, |e| e[0])
    }

    /// Checks that times increase and counters never fall.
    pub fn check(&self) -> Result<(), String> {
        for k in 1..self.len() {
            if self.cycles[k].partial_cmp(&self.cycles[k - 1]) != Some(std::cmp::Ordering::Greater)
            {
                return Err(format!(
                    "sample {k}: time {} does not increase (previous {})",
                    self.cycles[k],
                    self.cycles[k - 1]
                ));
            }
            for e in CounterEvent::ALL {
                let i = e.index();
                let (a, b) = (self.events[k - 1][i], self.events[k][i]);
                if b < a {
                    return Err(format!(
                        "sample {k}: counter {e} falls from {a} to {b} (counters must be cumulative)"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The time at which the thread had retired `n` instructions, interpolated linearly between
    /// the samples around it; `None` outside the samples.
    pub fn time_at_instructions(&self, n: f64) -> Option<f64> {
        let k = self.events.partition_point(|e| e[0] < n);
        if k >= self.len() {
            return None;
        }
        if k == 0 {
            return (self.events[0][0] == n).then_some(self.cycles[0]);
        }
        let (i0, i1) = (self.events[k - 1][0], self.events[k][0]);
        let (t0, t1) = (self.cycles[k - 1], self.cycles[k]);
        Some(t0 + (t1 - t0) * (n - i0) / (i1 - i0))
    }

    /// Every counter at time `t`, interpolated linearly; `None` outside the samples.
    pub fn at_time(&self, t: f64) -> Option<Events> {
        let k = self.cycles.partition_point(|&c| c < t);
        if k >= self.len() {
            return None;
        }
        if k == 0 {
            return (self.cycles[0] == t).then_some(self.events[0]);
        }
        let (t0, t1) = (self.cycles[k - 1], self.cycles[k]);
        let f = (t - t0) / (t1 - t0);
        let (a, b) = (&self.events[k - 1], &self.events[k]);
        let mut out = [0.0; NE];
        for i in 0..NE {
            out[i] = a[i] + (b[i] - a[i]) * f;
        }
        Some(out)
    }
}

/// One window before it is labelled with its pair.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowValues {
    pub instructions: f64,
    pub solo_cycles: f64,
    pub corun_cycles: f64,
    pub subj: Events,
    pub back: Events,
}

/// Cuts the subject's instructions `[start, end)` into `n` windows of equal instructions and
/// measures each: its solo and co-run cycles (from `solo` and `subj`) and the subject's and the
/// background's events per co-run cycle (from `subj` and `back`, which share one clock).
pub fn cut_windows(
    solo: &Series,
    subj: &Series,
    back: &Series,
    start: f64,
    end: f64,
    n: u32,
) -> Result<Vec<WindowValues>, String> {
    if n == 0 {
        return Err("no windows asked for".into());
    }
    if end.partial_cmp(&start) != Some(std::cmp::Ordering::Greater) {
        return Err(format!("empty instruction range [{start}, {end})"));
    }
    let bounds: Vec<f64> = (0..=n)
        .map(|k| start + (end - start) * k as f64 / n as f64)
        .collect();
    let times = |s: &Series, what: &str| -> Result<Vec<f64>, String> {
        bounds
            .iter()
            .map(|&b| {
                s.time_at_instructions(b).ok_or_else(|| {
                    format!(
                        "the {what} samples cover instructions {}..{}, not {b}",
                        s.events.first().map_or(0.0, |e| e[0]),
                        s.last_instructions()
                    )
                })
            })
            .collect()
    };
    let solo_t = times(solo, "solo")?;
    let co_t = times(subj, "co-run subject")?;
    let at = |s: &Series, t: f64, what: &str| {
        s.at_time(t).ok_or_else(|| {
            format!(
                "the {what} samples cover cycles {}..{}, not {t}",
                s.cycles.first().copied().unwrap_or(0.0),
                s.cycles.last().copied().unwrap_or(0.0)
            )
        })
    };
    let subj_at: Vec<Events> = co_t
        .iter()
        .map(|&t| at(subj, t, "co-run subject"))
        .collect::<Result<_, _>>()?;
    let back_at: Vec<Events> = co_t
        .iter()
        .map(|&t| at(back, t, "background"))
        .collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(n as usize);
    for k in 0..n as usize {
        let solo_cycles = solo_t[k + 1] - solo_t[k];
        let corun_cycles = co_t[k + 1] - co_t[k];
        if !(solo_cycles > 0.0 && corun_cycles > 0.0) {
            return Err(format!(
                "window {k} takes no time (solo {solo_cycles} cycles, co-run {corun_cycles}); use fewer windows or finer samples"
            ));
        }
        let mut subj_epc = [0.0; NE];
        let mut back_epc = [0.0; NE];
        for i in 0..NE {
            subj_epc[i] = (subj_at[k + 1][i] - subj_at[k][i]) / corun_cycles;
            back_epc[i] = (back_at[k + 1][i] - back_at[k][i]) / corun_cycles;
        }
        out.push(WindowValues {
            instructions: bounds[k + 1] - bounds[k],
            solo_cycles,
            corun_cycles,
            subj: subj_epc,
            back: back_epc,
        });
    }
    Ok(out)
}

/// Labels windows of one run.
pub fn label(
    values: Vec<WindowValues>,
    subject: &str,
    background: &str,
    run: u32,
) -> Vec<WindowRecord> {
    values
        .into_iter()
        .enumerate()
        .map(|(k, v)| WindowRecord {
            subject: subject.to_string(),
            background: background.to_string(),
            run,
            window: k as u32,
            instructions: v.instructions,
            solo_cycles: v.solo_cycles,
            corun_cycles: v.corun_cycles,
            pr: v.solo_cycles / v.corun_cycles,
            subj: v.subj,
            back: v.back,
        })
        .collect()
}

/// Windows and what produced them (written as `# key: value` lines at the top of the CSV).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WindowSet {
    pub meta: Vec<(String, String)>,
    pub rows: Vec<WindowRecord>,
}

impl WindowSet {
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The distinct subjects, in order of first appearance.
    pub fn subjects(&self) -> Vec<String> {
        subjects(&self.rows)
    }
}

/// The distinct subjects of `rows`, in order of first appearance.
pub fn subjects(rows: &[WindowRecord]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows {
        if !out.contains(&r.subject) {
            out.push(r.subject.clone());
        }
    }
    out
}

/// The fixed columns of a windows CSV, before the features.
pub const FIXED_COLUMNS: &[&str] = &[
    "subject",
    "background",
    "run",
    "window",
    "instructions",
    "solo_cycles",
    "corun_cycles",
    "pr",
];

/// The windows as CSV: `# key: value` lines, a header, one row per window. Numbers are written
/// in the shortest form that reads back to the same value.
pub fn to_csv(set: &WindowSet) -> String {
    let preamble: Vec<String> = set.meta.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let names = feature_names();
    let header: Vec<&str> = FIXED_COLUMNS
        .iter()
        .copied()
        .chain(names.iter().map(String::as_str))
        .collect();
    let num = smtsched_report::csv::num;
    let rows = set.rows.iter().map(|r| {
        let mut cells = vec![
            r.subject.clone(),
            r.background.clone(),
            r.run.to_string(),
            r.window.to_string(),
            num(r.instructions),
            num(r.solo_cycles),
            num(r.corun_cycles),
            num(r.pr),
        ];
        cells.extend(r.subj.iter().chain(&r.back).map(|&x| num(x)));
        cells
    });
    smtsched_report::csv::csv_text(&preamble, &header, rows)
}

/// Most events of one kind per cycle a window may report (a machine retires, misses or
/// mispredicts far fewer).
const MAX_EVENTS_PER_CYCLE: f64 = 1000.0;
/// Largest instruction or cycle count of a window.
const MAX_COUNT: f64 = 1e18;

/// Reads a windows CSV. `subject`, `background` and `pr` are required; `run` and `window` default
/// to 0 and the cycle columns to empty; feature columns may be missing or empty (NaN) — a fit
/// that uses one checks for it. Unknown columns are ignored.
pub fn parse_csv(text: &str, file: &str) -> Result<WindowSet, EstimateError> {
    let Some(mut t) = CsvTable::parse(text, file)? else {
        return Err(EstimateError::Empty(format!(
            "{file} has no header row and no windows"
        )));
    };
    t.require(&["subject", "background", "pr"], |missing| {
        format!(
            "{missing} (found: {}; a windows file comes from `smtsched train windows`)",
            t.header_line()
        )
    })?;
    let idx: Vec<Option<usize>> = FIXED_COLUMNS.iter().map(|c| t.column(c)).collect();
    let feat_idx: Vec<Option<usize>> = feature_names().iter().map(|c| t.column(c)).collect();
    let col_is_feature = |col: usize| feat_idx.contains(&Some(col));
    let mut set = WindowSet {
        meta: std::mem::take(&mut t.meta),
        ..WindowSet::default()
    };
    for row in &t.rows {
        let cells = &row.cells;
        let number = |col: usize, required: bool| -> Result<f64, EstimateError> {
            let cell = cells[col].as_str();
            if cell.is_empty() && !required {
                return Ok(f64::NAN);
            }
            let v: f64 = cell
                .parse()
                .map_err(|_| t.bad(row, col, format!("{cell:?} is not a number")))?;
            if !v.is_finite() {
                return Err(t.bad(row, col, format!("{cell:?} is not a finite number")));
            }
            if Some(col) == idx[7] {
                return Ok(v); // the performance ratio has a range of its own, below
            }
            // Counts, cycles and events per cycle are never negative; no event happens more
            // than MAX_EVENTS_PER_CYCLE times a cycle, and no run is longer than MAX_COUNT.
            let limit = if col_is_feature(col) {
                MAX_EVENTS_PER_CYCLE
            } else {
                MAX_COUNT
            };
            if !(0.0..=limit).contains(&v) {
                return Err(t.bad(row, col, format!("{cell} is outside 0 to {limit:e}")));
            }
            Ok(v)
        };
        let opt = |i: usize, required: bool| -> Result<f64, EstimateError> {
            match idx[i] {
                Some(c) => number(c, required),
                None => Ok(f64::NAN),
            }
        };
        let int = |i: usize| -> Result<u32, EstimateError> {
            let Some(c) = idx[i] else { return Ok(0) };
            cells[c].parse().map_err(|_| {
                t.bad(
                    row,
                    c,
                    format!("{:?} is not a non-negative integer", cells[c]),
                )
            })
        };
        let pr = opt(7, true)?;
        if !(is_performance_ratio(pr) && pr > 0.0) {
            let c = idx[7].expect("checked");
            return Err(t.bad(
                row,
                c,
                format!(
                    "{} is not a performance ratio (above 0, at most {MAX_PR})",
                    cells[c]
                ),
            ));
        }
        let mut feats = [f64::NAN; 2 * NE];
        for (j, c) in feat_idx.iter().enumerate() {
            if let Some(c) = c {
                feats[j] = number(*c, false)?;
            }
        }
        let mut subj = [0.0; NE];
        let mut back = [0.0; NE];
        subj.copy_from_slice(&feats[..NE]);
        back.copy_from_slice(&feats[NE..]);
        set.rows.push(WindowRecord {
            subject: cells[idx[0].expect("checked")].to_string(),
            background: cells[idx[1].expect("checked")].to_string(),
            run: int(2)?,
            window: int(3)?,
            instructions: opt(4, false)?,
            solo_cycles: opt(5, false)?,
            corun_cycles: opt(6, false)?,
            pr,
            subj,
            back,
        });
    }
    Ok(set)
}

/// Reads a windows CSV file.
pub fn read_csv(path: &std::path::Path) -> Result<WindowSet, EstimateError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| EstimateError::Read {
        file: file.clone(),
        source,
    })?;
    parse_csv(&text, &file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(points: &[(f64, f64, f64)]) -> Series {
        // (cycle, instructions, l1d misses)
        let mut s = Series::default();
        for &(t, n, m) in points {
            let mut e = [0.0; NE];
            e[0] = n;
            e[2] = m;
            s.push(t, e);
        }
        s
    }

    #[test]
    fn interpolation_between_samples() {
        let s = series(&[(0.0, 0.0, 0.0), (100.0, 50.0, 10.0), (200.0, 150.0, 10.0)]);
        assert_eq!(s.time_at_instructions(25.0), Some(50.0));
        assert_eq!(s.time_at_instructions(100.0), Some(150.0));
        assert_eq!(s.time_at_instructions(0.0), Some(0.0));
        assert_eq!(s.time_at_instructions(151.0), None);
        let e = s.at_time(150.0).unwrap();
        assert_eq!((e[0], e[2]), (100.0, 10.0));
        assert_eq!(s.at_time(50.0).unwrap()[2], 5.0);
        assert_eq!(s.at_time(201.0), None);
    }

    #[test]
    fn windows_by_hand() {
        // Alone the subject retires 1 instruction per cycle; beside the background it retires 1
        // per 2 cycles for its first 100 instructions and 1 per 4 after. The background retires
        // 3 per cycle throughout and misses once every 10 cycles.
        let solo = series(&[(0.0, 0.0, 0.0), (1000.0, 1000.0, 0.0)]);
        let subj = series(&[(0.0, 0.0, 0.0), (200.0, 100.0, 20.0), (600.0, 200.0, 60.0)]);
        let back = series(&[(0.0, 0.0, 0.0), (600.0, 1800.0, 60.0)]);
        let w = cut_windows(&solo, &subj, &back, 0.0, 200.0, 2).unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!((w[0].solo_cycles, w[0].corun_cycles), (100.0, 200.0));
        assert_eq!((w[1].solo_cycles, w[1].corun_cycles), (100.0, 400.0));
        assert_eq!(w[0].subj[0], 0.5);
        assert_eq!(w[1].subj[0], 0.25);
        assert_eq!(w[0].subj[2], 0.1);
        assert_eq!(w[1].back[0], 3.0);
        assert!((w[1].back[2] - 0.1).abs() < 1e-15);
        let r = label(w, "a", "b", 2);
        assert_eq!(r[1].pr, 0.25);
        assert_eq!((r[1].run, r[1].window), (2, 1));
        // Past the samples is an error, not a guess.
        assert!(cut_windows(&solo, &subj, &back, 0.0, 300.0, 2).is_err());
    }

    #[test]
    fn csv_round_trip_is_exact() {
        let solo = series(&[(0.0, 0.0, 0.0), (1000.0, 1000.0, 7.0)]);
        let subj = series(&[(0.0, 0.0, 0.0), (3001.0, 1000.0, 13.0)]);
        let w = label(
            cut_windows(&solo, &subj, &subj, 0.0, 1000.0, 3).unwrap(),
            "x, \"the\" one",
            "y-like",
            1,
        );
        // A name with a comma and quotes, and metadata: all come back as they were.
        let set = WindowSet {
            meta: vec![("machine".into(), "northwood".into())],
            rows: w,
        };
        assert!(to_csv(&set).contains("\"x, \"\"the\"\" one\""));
        let back = parse_csv(&to_csv(&set), "t.csv").unwrap();
        assert_eq!(back, set);
    }

    #[test]
    fn messages_stay_one_line_whatever_the_header_holds() {
        // Found by fuzzing: a quoted header cell with a line break.
        let e = parse_csv("\"sub\nject\",x\n1,2\n", "f.csv")
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\n') && e.contains("sub\\nject"), "{e}");
    }

    #[test]
    fn missing_required_columns_are_named() {
        let e = parse_csv("subject,window\nx,1\n", "f.csv").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("f.csv") && msg.contains("background, pr"),
            "{msg}"
        );
        assert!(e.is_bad_input());
    }

    #[test]
    fn bad_cells_name_line_and_column() {
        let e = parse_csv("subject,background,pr\nx,y,abc\n", "f.csv").unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.csv, line 2, column pr: \"abc\" is not a number"
        );
        let e = parse_csv("subject,background,pr\nx,y\n", "f.csv").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        // Values out of range, each named by line and column; comments and blank lines count.
        let cases = [
            ("x,y,1e300", "column pr: 1e300 is not a performance ratio"),
            ("x,y,0", "column pr: 0 is not a performance ratio"),
            ("x,y,inf", "column pr: \"inf\" is not a finite number"),
            ("x,y,0.5,-3", "column instructions: -3 is outside 0 to 1e18"),
        ];
        for (row, want) in cases {
            let header = if row.matches(',').count() == 2 {
                "subject,background,pr"
            } else {
                "subject,background,pr,instructions"
            };
            let text = format!("# m: n\n{header}\n\n{row}\n");
            let e = parse_csv(&text, "f.csv").unwrap_err().to_string();
            assert!(e.starts_with("f.csv, line 4, ") && e.contains(want), "{e}");
        }
    }
}
