//! A synthetic profile derived from a trace (`smtsched trace profile`), so that long simulations
//! can use a real program's behaviour without replaying the whole trace.
//!
//! Method:
//! 1. One pass computes the exact LRU stack distance (in 64-byte lines, fully associative) of every
//!    data access and of every change of instruction line, with a Fenwick tree over access times.
//!    Distances go into log2 buckets; a fully associative LRU cache of C lines (C a power of two)
//!    misses exactly the cold accesses plus those with distance ≥ C: the trace's miss-ratio curve.
//! 2. Phase boundaries: the trace is cut into windows; a window whose load share, store share or
//!    miss ratio at 32 KB differs from its phase's mean by more than [`PHASE_THRESHOLD`] starts a
//!    new phase; phases shorter than 5% of the trace are merged into their predecessor.
//! 3. Per phase: the access mix from the trace; data as a sequential stream over the phase's
//!    first-touched lines (its cold misses, weight = their share) plus one power-law region over the
//!    reused footprint, whose hot size and exponent are fitted to the phase's miss-ratio curve with
//!    the power law's closed form; code as one power-law region over the code footprint, fitted
//!    the same way to the instruction-line curve.
//! 4. Check: the profile's own stream is generated and measured the same way; the report gives
//!    both curves side by side.

use crate::error::Result;
use crate::format::{AccessKind, Chunk, TraceFile, LINE_BYTES};
use crate::replay::ReplayTiming;
use crate::stats::LineSet;
use smtsched_model::{AccessPattern, CodeRegion, DataRegion, PhaseSpec, PowerLaw, WorkloadProfile};
use smtsched_uarch::stream::{InstrKind, InstructionSource, SyntheticStream};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Largest absolute change in load share, store share or 32 KB miss ratio tolerated within a phase.
pub const PHASE_THRESHOLD: f64 = 0.08;
/// Distance buckets: 0, [1,2), [2,4), … [2^39, 2^40).
pub const BUCKETS: usize = 41;
const CHECK_LINES: u64 = 512; // 32 KB, the miss ratio phases are told apart by

/// Exact LRU stack distances over line numbers.
pub struct StackDistance {
    last: HashMap<u64, u32, BuildHasherDefault<crate::stats::LineHasher>>,
    tree: Vec<i32>,
    now: u32,
}

impl Default for StackDistance {
    fn default() -> Self {
        StackDistance {
            last: HashMap::default(),
            tree: vec![0; 1 << 16],
            now: 0,
        }
    }
}

impl StackDistance {
    fn add(&mut self, mut i: usize, v: i32) {
        i += 1;
        while i < self.tree.len() {
            self.tree[i] += v;
            i += i & i.wrapping_neg();
        }
    }

    /// Marks at positions < i.
    fn prefix(&self, mut i: usize) -> i64 {
        let mut s = 0i64;
        while i > 0 {
            s += self.tree[i] as i64;
            i -= i & i.wrapping_neg();
        }
        s
    }

    /// Distinct other lines touched since `line` was last touched; `None` the first time.
    pub fn access(&mut self, line: u64) -> Option<u64> {
        if self.now as usize + 2 >= self.tree.len() {
            self.compact();
        }
        let now = self.now;
        let d = self.last.insert(line, now).map(|t| {
            let d = self.prefix(now as usize) - self.prefix(t as usize + 1);
            self.add(t as usize, -1);
            d as u64
        });
        self.add(now as usize, 1);
        self.now += 1;
        d
    }

    /// Renumbers live lines 0..n in time order, in a tree twice as large as needed.
    fn compact(&mut self) {
        let mut live: Vec<(u32, u64)> = self.last.iter().map(|(&l, &t)| (t, l)).collect();
        live.sort_unstable();
        let size = (live.len() * 2).max(1 << 16).next_power_of_two() + 1;
        self.tree = vec![0; size];
        for (i, &(_, l)) in live.iter().enumerate() {
            self.last.insert(l, i as u32);
            self.add(i, 1);
        }
        self.now = live.len() as u32;
    }
}

fn bucket(d: u64) -> usize {
    if d == 0 {
        0
    } else {
        (64 - d.leading_zeros() as usize).min(BUCKETS - 1)
    }
}

/// Reuse-distance histogram: counts per bucket plus cold (first) accesses.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Histogram {
    pub buckets: Vec<u64>,
    pub cold: u64,
}

impl Histogram {
    fn new() -> Self {
        Histogram {
            buckets: vec![0; BUCKETS],
            cold: 0,
        }
    }

    fn record(&mut self, d: Option<u64>) {
        match d {
            Some(d) => self.buckets[bucket(d)] += 1,
            None => self.cold += 1,
        }
    }

    fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.cold += o.cold;
    }

    pub fn total(&self) -> u64 {
        self.cold + self.buckets.iter().sum::<u64>()
    }

    /// Miss ratio of a fully associative LRU cache of `lines` lines (a power of two).
    pub fn miss_ratio(&self, lines: u64) -> f64 {
        let t = self.total();
        if t == 0 {
            return 0.0;
        }
        let k = bucket(lines); // bucket k holds [2^(k-1), 2^k): all of it is ≥ lines
        let far: u64 = self.buckets[k..].iter().sum();
        (self.cold + far) as f64 / t as f64
    }
}

/// Measures of one window of the trace.
#[derive(Clone, Debug)]
struct Window {
    instructions: u64,
    loads: u64,
    stores: u64,
    jumps: u64,
    instruction_bytes: u64,
    data: Histogram,
    code: Histogram,
    new_lines: u64,
}

impl Window {
    fn new() -> Self {
        Window {
            instructions: 0,
            loads: 0,
            stores: 0,
            jumps: 0,
            instruction_bytes: 0,
            data: Histogram::new(),
            code: Histogram::new(),
            new_lines: 0,
        }
    }

    fn merge(&mut self, o: &Window) {
        self.instructions += o.instructions;
        self.loads += o.loads;
        self.stores += o.stores;
        self.jumps += o.jumps;
        self.instruction_bytes += o.instruction_bytes;
        self.data.merge(&o.data);
        self.code.merge(&o.code);
        self.new_lines += o.new_lines;
    }

    fn features(&self) -> [f64; 3] {
        let n = self.instructions.max(1) as f64;
        [
            self.loads as f64 / n,
            self.stores as f64 / n,
            self.data.miss_ratio(CHECK_LINES),
        ]
    }
}

/// The trace's behaviour, measured in one pass.
pub struct TraceAnalysis {
    windows: Vec<Window>,
    pub data: Histogram,
    pub code: Histogram,
    pub data_lines: u64,
    pub code_lines: u64,
}

/// Measures stack distances and per-window mixes of a trace.
pub fn analyse(file: &TraceFile) -> Result<TraceAnalysis> {
    let total = file.summary().instructions;
    let window_len = (total / 64).max(50_000);
    let mut data_sd = StackDistance::default();
    let mut code_sd = StackDistance::default();
    let mut windows = vec![Window::new()];
    let mut chunk = Chunk::default();
    let mut last_code_line = u64::MAX;
    let mut prev_end = u64::MAX;
    for i in 0..file.chunks().len() {
        file.read_chunk(i, &mut chunk)?;
        let mut k = 0;
        for insn in &chunk.insns {
            if windows.last().expect("non-empty").instructions == window_len {
                windows.push(Window::new());
            }
            let w = windows.last_mut().expect("non-empty");
            w.instructions += 1;
            w.instruction_bytes += insn.size as u64;
            w.jumps += (prev_end != insn.pc && prev_end != u64::MAX) as u64;
            prev_end = insn.pc + insn.size as u64;
            let line = insn.pc / LINE_BYTES;
            if line != last_code_line {
                last_code_line = line;
                w.code.record(code_sd.access(line));
            }
            for a in &chunk.accesses[k..k + insn.accesses as usize] {
                match a.kind {
                    AccessKind::Store => w.stores += 1,
                    _ => w.loads += 1,
                }
                let d = data_sd.access(a.addr / LINE_BYTES);
                w.new_lines += d.is_none() as u64;
                w.data.record(d);
            }
            k += insn.accesses as usize;
        }
    }
    let mut data = Histogram::new();
    let mut code = Histogram::new();
    for w in &windows {
        data.merge(&w.data);
        code.merge(&w.code);
    }
    Ok(TraceAnalysis {
        windows,
        data_lines: data.cold,
        code_lines: code.cold,
        data,
        code,
    })
}

/// Splits the windows into phases (see the module documentation).
fn phases(windows: &[Window]) -> Vec<Window> {
    let mut out: Vec<Window> = Vec::new();
    for w in windows {
        let start_new = match out.last() {
            None => true,
            Some(p) => {
                let (a, b) = (p.features(), w.features());
                a.iter()
                    .zip(&b)
                    .any(|(x, y)| (x - y).abs() > PHASE_THRESHOLD)
            }
        };
        if start_new {
            out.push(w.clone());
        } else {
            out.last_mut().expect("non-empty").merge(w);
        }
    }
    let total: u64 = windows.iter().map(|w| w.instructions).sum();
    let mut merged: Vec<Window> = Vec::new();
    for p in out {
        match merged.last_mut() {
            Some(last) if p.instructions * 20 < total || last.instructions * 20 < total => {
                last.merge(&p)
            }
            _ => merged.push(p),
        }
    }
    merged
}

/// Cache sizes (in lines) the curves are compared at: 1 KB up to the first size that holds
/// everything, at most 64 MB.
pub fn sizes(footprint_lines: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut c = 16u64;
    while c <= (1 << 20) {
        v.push(c);
        if c >= footprint_lines {
            break;
        }
        c *= 2;
    }
    v
}

/// Groups of lines of a power-law region (line count, probability of one line), hottest first:
/// the first 64 lines one by one, then groups growing by 1/8.
fn line_groups(law: &PowerLaw) -> Vec<(f64, f64)> {
    let lines = (law.size_bytes / LINE_BYTES).max(1);
    let (h, s, a) = (law.hot_bytes as f64, law.size_bytes as f64, law.exponent);
    let norm = h.powf(-a) - (s + h).powf(-a);
    let cdf = |x: f64| ((h.powf(-a) - (x.min(s) + h).powf(-a)) / norm).clamp(0.0, 1.0);
    let mut out = Vec::new();
    let mut j = 0u64;
    while j < lines {
        let n = if j < 64 { 1 } else { (j / 8).max(1) }.min(lines - j);
        let mass = cdf(((j + n) * LINE_BYTES) as f64) - cdf((j * LINE_BYTES) as f64);
        out.push((n as f64, mass / n as f64));
        j += n;
    }
    out
}

/// Miss ratio of a fully associative LRU cache of `c` lines under independent references to
/// `groups` (line count, probability per access), by Che's approximation, plus a share `stream`
/// of accesses that always miss (first touches) and occupy lines while in the cache.
fn che_miss_ratio(groups: &[(f64, f64)], stream: f64, c: f64) -> f64 {
    let occupancy = |t: f64| -> f64 {
        stream * t
            + groups
                .iter()
                .map(|&(n, p)| n * -(-p * t).exp_m1())
                .sum::<f64>()
    };
    let lines: f64 = groups.iter().map(|g| g.0).sum();
    if stream == 0.0 && lines <= c {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while occupancy(hi) < c && hi < 1e18 {
        hi *= 2.0;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if occupancy(mid) < c {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let t = 0.5 * (lo + hi);
    stream
        + groups
            .iter()
            .map(|&(n, p)| n * p * (-p * t).exp())
            .sum::<f64>()
}

/// A fitted data model: a power-law region and optionally a uniform region of `uniform_lines`
/// lines taking a share `uniform` of the accesses (a working set with a sharp edge, such as a
/// compressor's window), next to a share of first touches.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Fit {
    hot: u64,
    alpha: f64,
    uniform_lines: u64,
    uniform: f64,
}

fn fit_groups(fit: &Fit, size_bytes: u64, stream: f64) -> Vec<(f64, f64)> {
    let law = PowerLaw {
        size_bytes,
        hot_bytes: fit.hot,
        exponent: fit.alpha,
    };
    let share = (1.0 - stream - fit.uniform).max(0.0);
    let mut g: Vec<(f64, f64)> = line_groups(&law)
        .into_iter()
        .map(|(n, p)| (n, p * share))
        .collect();
    if fit.uniform > 0.0 {
        let n = fit.uniform_lines as f64;
        g.push((n, fit.uniform / n));
    }
    g
}

/// The model (power law over `size` bytes, plus possibly a uniform region), next to a share
/// `stream` of first touches, whose LRU miss ratios (Che's approximation) best match `h` at the
/// cache sizes `grid`, by least squares: a grid search over the power law, then over the uniform
/// region, then the power law again.
fn fit_data(h: &Histogram, size_bytes: u64, stream: f64, grid: &[u64]) -> Fit {
    let target: Vec<f64> = grid.iter().map(|&c| h.miss_ratio(c)).collect();
    let error = |f: &Fit| -> f64 {
        let g = fit_groups(f, size_bytes, stream);
        grid.iter()
            .zip(&target)
            .map(|(&c, t)| (che_miss_ratio(&g, stream, c as f64) - t).powi(2))
            .sum()
    };
    let mut best = Fit {
        hot: 64,
        alpha: 0.5,
        uniform_lines: 16,
        uniform: 0.0,
    };
    let mut best_err = error(&best);
    let try_fit = |f: Fit, best: &mut Fit, best_err: &mut f64| {
        let e = error(&f);
        if e < *best_err {
            *best = f;
            *best_err = e;
        }
    };
    for round in 0..2 {
        let base = best;
        let mut hot = 8u64;
        while hot < size_bytes {
            for ai in 1..=24 {
                let f = Fit {
                    hot,
                    alpha: ai as f64 * 0.1,
                    ..base
                };
                try_fit(f, &mut best, &mut best_err);
            }
            hot = hot * 3 / 2 + 1;
        }
        if round == 1 || grid.len() < 3 {
            break;
        }
        let base = best;
        for &lines in grid.iter().filter(|&&c| c * LINE_BYTES <= size_bytes) {
            for wi in 1..=20 {
                let w = (1.0 - stream) * wi as f64 * 0.025;
                let f = Fit {
                    uniform_lines: lines,
                    uniform: w,
                    ..base
                };
                try_fit(f, &mut best, &mut best_err);
            }
        }
    }
    best
}

/// What `trace profile` produces.
pub struct Derived {
    pub profile: WorkloadProfile,
    /// (cache lines, trace miss ratio, profile miss ratio) for data.
    pub data_curve: Vec<(u64, f64, f64)>,
    pub analysis: TraceAnalysis,
    /// Instructions at which each phase starts.
    pub phase_starts: Vec<u64>,
}

/// Derives a profile named `name` from a trace, with timing from `timing`, and measures how
/// closely its data miss-ratio curve follows the trace's.
pub fn derive(file: &TraceFile, name: &str, timing: &ReplayTiming) -> Result<Derived> {
    let analysis = analyse(file)?;
    let phases = phases(&analysis.windows);
    let code_bytes = (analysis.code_lines * LINE_BYTES).max(4096);
    let grid_code = sizes(analysis.code_lines);
    let code_fit = fit_data(&analysis.code, code_bytes, 0.0, &grid_code);
    let (code_hot, code_alpha) = (code_fit.hot, code_fit.alpha);
    let grid = sizes(analysis.data_lines);
    let stream_bytes = grid.last().copied().unwrap_or(16) * LINE_BYTES * 4;
    let mut specs = Vec::new();
    let mut phase_starts = Vec::new();
    let mut start = 0u64;
    for (i, p) in phases.iter().enumerate() {
        phase_starts.push(start);
        start += p.instructions;
        let n = p.instructions.max(1) as f64;
        let accesses = (p.loads + p.stores).max(1) as f64;
        let cold_share = p.data.cold as f64 / accesses;
        let reused_lines = analysis.data_lines.max(2);
        let size = reused_lines * LINE_BYTES;
        let fit = fit_data(&p.data, size, cold_share, &grid);
        let mut data = vec![DataRegion {
            name: format!("reused-{i}"),
            size_bytes: size,
            weight: (1.0 - cold_share - fit.uniform).max(1e-6),
            pattern: AccessPattern::PowerLaw,
            stride_bytes: 8,
            streams: 1,
            hot_bytes: Some(fit.hot.clamp(1, size - 1)),
            exponent: Some(fit.alpha),
        }];
        if fit.uniform > 0.0 {
            data.push(DataRegion {
                name: format!("working-set-{i}"),
                size_bytes: fit.uniform_lines * LINE_BYTES,
                weight: fit.uniform,
                pattern: AccessPattern::Random,
                stride_bytes: 8,
                streams: 1,
                hot_bytes: None,
                exponent: None,
            });
        }
        if p.new_lines > 0 {
            data.push(DataRegion {
                name: format!("first-touch-{i}"),
                // Larger than every cache compared: first touches always miss.
                size_bytes: (p.new_lines * LINE_BYTES).max(stream_bytes),
                weight: cold_share.max(1e-6),
                pattern: AccessPattern::Sequential,
                stride_bytes: LINE_BYTES,
                streams: 1,
                hot_bytes: None,
                exponent: None,
            });
        }
        let taken = p.jumps as f64 / n;
        let loads = p.loads as f64 / n;
        let stores = p.stores as f64 / n;
        let branches = (taken / 0.6)
            .min((1.0 - loads - stores).max(taken))
            .max(1e-6);
        let mispredicts = timing.mispredicts_per_instruction;
        specs.push(PhaseSpec {
            name: format!("phase-{i}"),
            instructions: p.instructions,
            ilp: timing.ilp,
            uops_per_instruction: timing.uops_per_instruction,
            loads,
            stores,
            branches,
            fp_ops: timing
                .fp_ops
                .min((1.0 - loads - stores - branches).max(0.0)),
            branch_mispredict_rate: (mispredicts / branches).min(1.0),
            taken_branches: (taken / branches).min(1.0),
            instruction_bytes: ((p.instruction_bytes as f64 / n).round() as u32).max(1),
            code: vec![CodeRegion {
                name: "code".into(),
                size_bytes: code_bytes,
                weight: 1.0,
                hot_bytes: Some(code_hot.clamp(1, code_bytes - 1)),
                exponent: Some(code_alpha),
            }],
            data,
            kernel: None,
        });
    }
    let profile = WorkloadProfile {
        name: name.to_string(),
        description: format!(
            "Derived by `smtsched trace profile` from {} ({} instructions)",
            file.label(),
            file.summary().instructions
        ),
        program: file.meta().command.first().cloned().unwrap_or_default(),
        threads_share_memory: false,
        phase: specs,
    };
    // Measure the profile the same way as the trace.
    let accesses = analysis.data.total().clamp(100_000, 20_000_000);
    let mut stream = SyntheticStream::new(&profile, 1, 0);
    let mut sd = StackDistance::default();
    let mut h = Histogram::new();
    let mut seen = 0u64;
    while seen < accesses {
        let e = stream.next_instr();
        if matches!(e.kind, InstrKind::Load | InstrKind::Store) {
            h.record(sd.access(e.addr / LINE_BYTES));
            seen += 1;
        }
    }
    let data_curve = sizes(analysis.data_lines)
        .into_iter()
        .map(|c| (c, analysis.data.miss_ratio(c), h.miss_ratio(c)))
        .collect();
    Ok(Derived {
        profile,
        data_curve,
        analysis,
        phase_starts,
    })
}

/// Distinct lines in `lines` (helper for tests).
#[doc(hidden)]
pub fn distinct(lines: &[u64]) -> usize {
    lines.iter().copied().collect::<LineSet>().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_distances_hand_worked() {
        let mut s = StackDistance::default();
        let seq = [1u64, 2, 3, 1, 1, 3, 4, 2];
        let got: Vec<Option<u64>> = seq.iter().map(|&l| s.access(l)).collect();
        // 1: cold; 2: cold; 3: cold; 1: {2,3} → 2; 1: 0; 3: {1} → 1; 4: cold; 2: {3,1,4} → 3.
        assert_eq!(
            got,
            vec![None, None, None, Some(2), Some(0), Some(1), None, Some(3)]
        );
    }

    #[test]
    fn stack_distances_survive_compaction() {
        // A cyclic sweep over 1000 lines: every reuse has distance 999, across many compactions.
        let mut s = StackDistance::default();
        for i in 0..300_000u64 {
            let d = s.access(i % 1000);
            if i >= 1000 {
                assert_eq!(d, Some(999), "at {i}");
            }
        }
    }

    #[test]
    fn miss_ratio_from_buckets() {
        let mut h = Histogram::new();
        h.record(None);
        h.record(Some(0));
        h.record(Some(3)); // bucket [2,4)
        h.record(Some(4)); // bucket [4,8)
        assert_eq!(h.miss_ratio(4), 0.5); // cold + distance 4
        assert_eq!(h.miss_ratio(2), 0.75);
        assert_eq!(h.miss_ratio(8), 0.25);
        assert_eq!(distinct(&[1, 1, 2]), 2);
    }
}
