//! Collecting a thread's reuse-distance histogram from its instruction stream — a synthetic
//! profile or a replayed trace, anything that is a [`smtsched_uarch::Workload`] — over a window of
//! instructions after a warm-up (Fedorova et al. built theirs over 500 million instructions; the
//! window is configurable). Every load and store counts as one reference to its cache line; the
//! warm-up only records when lines were last touched, so references in the window whose previous
//! touch was in the warm-up get their true distance instead of counting as cold.

use crate::histogram::{Accumulator, Histogram};
use serde::{Deserialize, Serialize};
use smtsched_uarch::stream::InstrKind;
use smtsched_uarch::InstructionSource;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// What to collect.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectOptions {
    /// Cache line size the distances are counted in.
    pub line_bytes: u32,
    /// Instructions run before the window (they only prime the last-touch table).
    pub warmup_instructions: u64,
    /// Instructions in the window.
    pub window_instructions: u64,
    /// Also collect exact LRU stack distances (distinct lines in between); costs a table the
    /// size of the run.
    pub stack_distances: bool,
}

impl Default for CollectOptions {
    fn default() -> Self {
        CollectOptions {
            line_bytes: 64,
            warmup_instructions: 2_000_000,
            window_instructions: 10_000_000,
            stack_distances: false,
        }
    }
}

/// One thread's locality profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadProfile {
    pub name: String,
    /// Instructions in the window.
    pub instructions: u64,
    /// Data references in the window.
    pub references: u64,
    /// Reuse distances at full resolution.
    pub histogram: Histogram,
    /// LRU stack distances, if asked for.
    pub stack: Option<Histogram>,
    /// Distinct lines touched in the warm-up and the window (the footprint).
    pub distinct_lines: u64,
}

impl ThreadProfile {
    pub fn refs_per_instruction(&self) -> f64 {
        if self.instructions == 0 {
            0.0
        } else {
            self.references as f64 / self.instructions as f64
        }
    }

    /// The histogram compressed to fewer than 20 buckets.
    pub fn compressed(&self) -> Histogram {
        self.histogram.compressed()
    }
}

/// Multiplicative hashing for line numbers (the table is hot; SipHash is several times slower).
#[derive(Default)]
pub struct LineHasher(u64);

impl Hasher for LineHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ (x >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

pub type LineMap<V> = HashMap<u64, V, BuildHasherDefault<LineHasher>>;

/// A Fenwick tree over reference positions marking the latest touch of each line: the number of
/// marks after a line's previous touch is its stack distance.
struct Fenwick(Vec<u32>);

impl Fenwick {
    fn add(&mut self, mut i: usize, v: i32) {
        i += 1;
        while i < self.0.len() {
            self.0[i] = (self.0[i] as i64 + v as i64) as u32;
            i += i & i.wrapping_neg();
        }
    }
    /// Sum of positions `0..i`.
    fn prefix(&self, mut i: usize) -> u64 {
        let mut s = 0u64;
        while i > 0 {
            s += self.0[i] as u64;
            i -= i & i.wrapping_neg();
        }
        s
    }
}

/// Collects the reuse-distance histogram of a stream of line numbers (one per reference).
/// `in_window(i)` says whether reference `i` counts.
pub struct LineCollector {
    last: LineMap<u64>,
    index: u64,
    reuse: Accumulator,
    stack: Option<(Fenwick, Accumulator)>,
    marks: u64,
}

impl LineCollector {
    /// `capacity` bounds the references when stack distances are wanted.
    pub fn new(stack_capacity: Option<usize>) -> Self {
        LineCollector {
            last: LineMap::default(),
            index: 0,
            reuse: Accumulator::default(),
            stack: stack_capacity.map(|n| (Fenwick(vec![0; n + 1]), Accumulator::default())),
            marks: 0,
        }
    }

    /// One reference to `line`; counted in the histograms when `count` is set.
    #[inline]
    pub fn touch(&mut self, line: u64, count: bool) {
        let i = self.index;
        self.index += 1;
        let prev = self.last.insert(line, i);
        if count {
            match prev {
                Some(p) => self.reuse.add(i - p - 1),
                None => self.reuse.add_cold(),
            }
        }
        if let Some((tree, acc)) = self.stack.as_mut() {
            if (i as usize) + 1 >= tree.0.len() {
                // Out of room: stop collecting stack distances rather than guess.
                self.stack = None;
                return;
            }
            match prev {
                Some(p) => {
                    // Distinct lines touched after p: marks in (p, i).
                    let after = self.marks - tree.prefix(p as usize + 1);
                    if count {
                        acc.add(after);
                    }
                    tree.add(p as usize, -1);
                }
                None => {
                    if count {
                        acc.add_cold();
                    }
                    self.marks += 1;
                }
            }
            tree.add(i as usize, 1);
        }
    }

    pub fn reuse(&self) -> Histogram {
        self.reuse.histogram()
    }

    pub fn stack(&self) -> Option<Histogram> {
        self.stack.as_ref().map(|(_, a)| a.histogram())
    }

    /// Distinct lines touched so far.
    pub fn distinct_lines(&self) -> u64 {
        self.last.len() as u64
    }
}

/// The locality profile of `source` under `opts`.
pub fn collect(
    name: &str,
    source: &mut dyn InstructionSource,
    opts: &CollectOptions,
) -> ThreadProfile {
    let shift = opts.line_bytes.trailing_zeros();
    let total = opts.warmup_instructions + opts.window_instructions;
    let mut c = LineCollector::new(opts.stack_distances.then_some(total as usize));
    let mut done = 0u64;
    let mut references = 0u64;
    let mut instructions = 0u64;
    while done < total {
        let instr = source.next_instr();
        done += instr.run as u64 + 1;
        let counting = done > opts.warmup_instructions;
        if counting {
            instructions += instr.run as u64 + 1;
        }
        if matches!(instr.kind, InstrKind::Load | InstrKind::Store) {
            c.touch(instr.addr >> shift, counting);
            if counting {
                references += 1;
            }
        }
    }
    ThreadProfile {
        name: name.to_string(),
        instructions,
        references,
        histogram: c.reuse(),
        stack: c.stack(),
        distinct_lines: c.distinct_lines(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist_of(lines: &[u64]) -> (Histogram, Histogram) {
        let mut c = LineCollector::new(Some(lines.len()));
        for &l in lines {
            c.touch(l, true);
        }
        (c.reuse(), c.stack().unwrap())
    }

    #[test]
    fn hand_computed_reuse_and_stack_distances() {
        // A B A C B A A:
        //  A cold; B cold; A: 1 between (B), 1 distinct; C cold;
        //  B: 2 between (A C), 2 distinct; A: 2 between (C B), 2 distinct; A: 0, 0.
        let (reuse, stack) = hist_of(&[1, 2, 1, 3, 2, 1, 1]);
        assert_eq!(reuse.cold, 3.0);
        assert_eq!(reuse.points, vec![(0.0, 1.0), (1.0, 1.0), (2.0, 2.0)]);
        assert_eq!(stack.cold, 3.0);
        assert_eq!(stack.points, vec![(0.0, 1.0), (1.0, 1.0), (2.0, 2.0)]);
        // A B C C C B A: B sees 3 references but 1 distinct line; A sees 5 and 2.
        let (reuse, stack) = hist_of(&[1, 2, 3, 3, 3, 2, 1]);
        assert_eq!(reuse.points, vec![(0.0, 2.0), (3.0, 1.0), (5.0, 1.0)]);
        assert_eq!(stack.points, vec![(0.0, 2.0), (1.0, 1.0), (2.0, 1.0)]);
    }

    #[test]
    fn warmup_references_prime_but_do_not_count() {
        let mut c = LineCollector::new(None);
        c.touch(7, false);
        c.touch(8, false);
        c.touch(7, true);
        assert_eq!(c.reuse().points, vec![(1.0, 1.0)]);
        assert_eq!(c.reuse().cold, 0.0);
    }
}
