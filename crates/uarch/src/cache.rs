//! An exact set-associative cache with true LRU replacement, write-allocate and write-back, that
//! attributes accesses, misses and occupancy to the hardware thread that caused them.

use serde::{Deserialize, Serialize};
use smtsched_model::CacheSpec;

const EMPTY: u64 = u64::MAX;
const DIRTY: u8 = 0x80;
const OWNER: u8 = 0x7f;
/// Stand-in lines of one cache are numbered modulo this (a repeat needs a quarter-billion).
const STAND_IN_LINES: u64 = 1 << 28;

/// Accesses and misses of one thread at one cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessMiss {
    pub accesses: u64,
    pub misses: u64,
}

/// How one thread's lines come and go in a cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Turnover {
    /// Lines it brought in (demand misses, prefetches, adjacent lines, write-backs).
    pub fills: u64,
    /// Lines of its pushed out by fills, and how many of them were dirty.
    pub evicted: u64,
    pub evicted_dirty: u64,
}

impl std::ops::Sub for Turnover {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Turnover {
            fills: self.fills - o.fills,
            evicted: self.evicted - o.evicted,
            evicted_dirty: self.evicted_dirty - o.evicted_dirty,
        }
    }
}

/// A line pushed out by a fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eviction {
    pub line: u64,
    pub dirty: bool,
    pub owner: u8,
}

/// One cache instance. Addresses are given as line numbers (byte address >> line shift) so that
/// callers decide how address spaces are tagged.
#[derive(Clone, Debug)]
pub struct Cache {
    ways: usize,
    set_mask: u64,
    line_shift: u32,
    /// `sets × ways` line numbers, most recently used first within each set.
    tags: Vec<u64>,
    /// Owner thread (low 7 bits) and dirty flag, parallel to `tags`.
    meta: Vec<u8>,
    stats: Vec<AccessMiss>,
    turnover: Vec<Turnover>,
    /// Stand-in lines made so far by [`Cache::age`] (numbers them apart).
    stand_ins: u64,
}

impl Cache {
    /// Builds an empty cache; `threads` is the number of thread slots that may access it.
    pub fn new(spec: &CacheSpec, threads: usize) -> Self {
        Self::with_geometry(
            spec.sets() as usize,
            spec.ways as usize,
            spec.line_bytes,
            threads,
        )
    }

    pub fn with_geometry(sets: usize, ways: usize, line_bytes: u32, threads: usize) -> Self {
        assert!(sets.is_power_of_two() && ways > 0 && line_bytes.is_power_of_two());
        assert!(
            threads <= OWNER as usize + 1,
            "at most 128 threads share a cache"
        );
        Cache {
            ways,
            set_mask: sets as u64 - 1,
            line_shift: line_bytes.trailing_zeros(),
            tags: vec![EMPTY; sets * ways],
            meta: vec![0; sets * ways],
            stats: vec![AccessMiss::default(); threads.max(1)],
            turnover: vec![Turnover::default(); threads.max(1)],
            stand_ins: 0,
        }
    }

    pub fn line_shift(&self) -> u32 {
        self.line_shift
    }

    pub fn sets(&self) -> usize {
        self.tags.len() / self.ways
    }

    pub fn ways(&self) -> usize {
        self.ways
    }

    /// Looks `line` up for `thread`. Returns whether it hit and, on a miss, the line evicted to
    /// make room (the missing line is always allocated).
    #[inline(always)]
    pub fn access(&mut self, line: u64, thread: u8, write: bool) -> (bool, Option<Eviction>) {
        let stats = &mut self.stats[thread as usize];
        stats.accesses += 1;
        let base = (line & self.set_mask) as usize * self.ways;
        // Most hits are on the most recently used line: no reordering.
        if self.tags[base] == line {
            if write {
                self.meta[base] |= DIRTY;
            }
            return (true, None);
        }
        let set = &mut self.tags[base..base + self.ways];
        if let Some(pos) = set.iter().position(|&t| t == line) {
            let meta = &mut self.meta[base..base + self.ways];
            if pos > 0 {
                // Move to the most-recently-used position (sets are small: a loop beats memmove).
                let m = meta[pos];
                for i in (0..pos).rev() {
                    set[i + 1] = set[i];
                    meta[i + 1] = meta[i];
                }
                set[0] = line;
                meta[0] = m;
            }
            if write {
                meta[0] |= DIRTY;
            }
            return (true, None);
        }
        stats.misses += 1;
        (false, self.insert(base, line, thread, write))
    }

    /// Puts `line` in the cache without counting an access (a prefetch, an adjacent-line fill or a
    /// write-back from the level below, which sets `dirty`). A present line only gains the flag.
    pub fn fill(&mut self, line: u64, thread: u8, dirty: bool) -> Option<Eviction> {
        let base = (line & self.set_mask) as usize * self.ways;
        if let Some(pos) = self.tags[base..base + self.ways]
            .iter()
            .position(|&t| t == line)
        {
            if dirty {
                self.meta[base + pos] |= DIRTY;
            }
            return None;
        }
        self.insert(base, line, thread, dirty)
    }

    /// Whether `line` is present, without touching LRU state or statistics.
    pub fn probe(&self, line: u64) -> bool {
        let base = (line & self.set_mask) as usize * self.ways;
        self.tags[base..base + self.ways].contains(&line)
    }

    #[inline]
    fn insert(&mut self, base: usize, line: u64, thread: u8, write: bool) -> Option<Eviction> {
        let last = base + self.ways - 1;
        let victim = self.tags[last];
        let victim_meta = self.meta[last];
        for i in (base..last).rev() {
            self.tags[i + 1] = self.tags[i];
            self.meta[i + 1] = self.meta[i];
        }
        self.tags[base] = line;
        self.meta[base] = (thread & OWNER) | if write { DIRTY } else { 0 };
        self.turnover[thread as usize].fills += 1;
        if victim == EMPTY {
            return None;
        }
        let ev = Eviction {
            line: victim,
            dirty: victim_meta & DIRTY != 0,
            owner: victim_meta & OWNER,
        };
        let t = &mut self.turnover[ev.owner as usize];
        t.evicted += 1;
        t.evicted_dirty += ev.dirty as u64;
        Some(ev)
    }

    /// How `thread`'s lines have come and gone so far.
    pub fn turnover(&self, thread: u8) -> Turnover {
        self.turnover[thread as usize]
    }

    /// Ages the cache as `insertions` further fills by `thread`, spread evenly over the sets,
    /// would: in each set, the lines they would push out (the least recently used) that are
    /// other threads' or empty are handed to `evicted` (a dirty one must be written back) and
    /// replaced by stand-ins for the thread's new lines: lines numbered from `stand_in_line` up
    /// (an address no access uses), owned by the thread, dirty in the share `dirty_share` of its
    /// lines leave dirty (when not known, the share of its lines here that are dirty now). With
    /// no `stand_in_line` (a thread-tagged cache, whose line numbers carry the thread) the slots
    /// are left empty. The thread's own lines stay: it has run long enough that what it holds is
    /// what it keeps holding (its hits keep its working set from the bottom of the sets).
    pub fn age(
        &mut self,
        thread: u8,
        insertions: u64,
        dirty_share: Option<f64>,
        stand_in_line: Option<u64>,
        mut evicted: impl FnMut(Eviction),
    ) {
        let share = dirty_share.unwrap_or_else(|| self.dirty_share_now(thread));
        let sets = self.sets() as u128;
        let set_bits = self.set_mask.count_ones();
        let total = insertions as u128;
        let (mut made, mut made_dirty) = (0u64, 0u64);
        for set in 0..self.sets() {
            let s = set as u128;
            let here = ((s + 1) * total / sets - s * total / sets).min(self.ways as u128) as usize;
            let base = set * self.ways;
            for i in base + self.ways - here..base + self.ways {
                if self.tags[i] != EMPTY {
                    if self.meta[i] & OWNER == thread {
                        continue;
                    }
                    evicted(Eviction {
                        line: self.tags[i],
                        dirty: self.meta[i] & DIRTY != 0,
                        owner: self.meta[i] & OWNER,
                    });
                }
                let Some(first) = stand_in_line else {
                    self.tags[i] = EMPTY;
                    self.meta[i] = 0;
                    continue;
                };
                // Dirty while that keeps the dirty stand-ins' share at most `share`.
                made += 1;
                let is_dirty = (made_dirty + 1) as f64 <= made as f64 * share;
                made_dirty += is_dirty as u64;
                let n = self.stand_ins % STAND_IN_LINES;
                self.stand_ins += 1;
                self.tags[i] = first | (n << set_bits) | set as u64;
                self.meta[i] = thread | if is_dirty { DIRTY } else { 0 };
            }
        }
    }

    /// The share of `thread`'s lines here that are dirty (0 if it has none).
    fn dirty_share_now(&self, thread: u8) -> f64 {
        let (mine, dirty) = self
            .meta
            .iter()
            .zip(&self.tags)
            .filter(|(&m, &t)| t != EMPTY && m & OWNER == thread)
            .fold((0u64, 0u64), |(n, d), (&m, _)| {
                (n + 1, d + (m & DIRTY != 0) as u64)
            });
        if mine == 0 {
            0.0
        } else {
            dirty as f64 / mine as f64
        }
    }

    /// Lines currently held on behalf of `thread`.
    pub fn occupancy(&self, thread: u8) -> usize {
        self.tags
            .iter()
            .zip(&self.meta)
            .filter(|(&t, &m)| t != EMPTY && m & OWNER == thread)
            .count()
    }

    /// Valid lines in the cache.
    pub fn valid_lines(&self) -> usize {
        self.tags.iter().filter(|&&t| t != EMPTY).count()
    }

    pub fn stats(&self, thread: u8) -> AccessMiss {
        self.stats[thread as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    fn small(sets: usize, ways: usize) -> Cache {
        Cache::with_geometry(sets, ways, 64, 2)
    }

    #[test]
    fn sweep_over_twice_the_capacity_misses_every_time() {
        // 4 sets × 4 ways = 16 lines; a cyclic sweep over 32 lines under LRU evicts each line
        // before it comes back, so every access after the first pass is a miss too.
        let mut c = small(4, 4);
        for _pass in 0..5 {
            for line in 0..32u64 {
                c.access(line, 0, false);
            }
        }
        assert_eq!(
            c.stats(0),
            AccessMiss {
                accesses: 160,
                misses: 160
            }
        );
    }

    #[test]
    fn working_set_that_fits_misses_only_compulsorily() {
        let mut c = small(4, 4);
        for _pass in 0..10 {
            for line in 0..16u64 {
                c.access(line, 1, false);
            }
        }
        assert_eq!(
            c.stats(1),
            AccessMiss {
                accesses: 160,
                misses: 16
            }
        );
        assert_eq!(c.occupancy(1), 16);
    }

    #[test]
    fn lru_keeps_the_recently_used_line() {
        let mut c = small(1, 2);
        c.access(1, 0, false);
        c.access(2, 0, false);
        c.access(1, 0, false); // 2 is now LRU
        let (hit, ev) = c.access(3, 0, true);
        assert!(!hit);
        assert_eq!(ev.map(|e| e.line), Some(2));
        assert!(c.probe(1) && c.probe(3) && !c.probe(2));
        // 3 was written: evicting it reports it dirty.
        c.access(4, 0, false);
        let ev = c.access(5, 0, false).1.unwrap();
        assert_eq!((ev.line, ev.dirty), (3, true));
    }

    /// A reference LRU cache: one deque per set, front = most recent.
    struct Reference {
        sets: Vec<VecDeque<u64>>,
        ways: usize,
    }

    impl Reference {
        fn access(&mut self, line: u64) -> bool {
            let n = self.sets.len() as u64;
            let set = &mut self.sets[(line % n) as usize];
            if let Some(p) = set.iter().position(|&l| l == line) {
                set.remove(p);
                set.push_front(line);
                true
            } else {
                if set.len() == self.ways {
                    set.pop_back();
                }
                set.push_front(line);
                false
            }
        }
    }

    proptest! {
        #[test]
        fn agrees_with_reference_lru(
            sets_log in 0u32..4, ways in 1usize..9,
            trace in proptest::collection::vec((0u64..200, 0u8..2), 1..600)
        ) {
            let sets = 1usize << sets_log;
            let mut c = small(sets, ways);
            let mut r = Reference { sets: vec![VecDeque::new(); sets], ways };
            let mut misses = [0u64; 2];
            for &(line, t) in &trace {
                let hit = c.access(line, t, false).0;
                prop_assert_eq!(hit, r.access(line));
                if !hit { misses[t as usize] += 1; }
            }
            // Invariants: no duplicate lines in a set, capacity respected, stats add up.
            for s in 0..sets {
                let set = &c.tags[s * ways..(s + 1) * ways];
                let valid: Vec<_> = set.iter().filter(|&&t| t != EMPTY).collect();
                let mut dedup = valid.clone();
                dedup.sort();
                dedup.dedup();
                prop_assert_eq!(dedup.len(), valid.len());
                prop_assert!(valid.iter().all(|&&l| (l as usize) % sets == s));
            }
            prop_assert!(c.valid_lines() <= sets * ways);
            prop_assert_eq!(c.occupancy(0) + c.occupancy(1), c.valid_lines());
            prop_assert_eq!(c.stats(0).misses, misses[0]);
            prop_assert_eq!(c.stats(1).misses, misses[1]);
            prop_assert_eq!(c.stats(0).accesses + c.stats(1).accesses, trace.len() as u64);
        }

        #[test]
        fn filling_one_set_never_evicts_another(k in 0u64..8, lines in proptest::collection::vec(0u64..64, 1..100)) {
            // ChampSim's set-independence test: traffic to set k leaves set k+1 untouched.
            let mut c = small(8, 2);
            let other = (k + 1) % 8;
            c.access(other, 0, false);
            for l in lines {
                c.access(l * 8 + k, 0, false);
            }
            prop_assert!(c.probe(other));
        }
    }
}
