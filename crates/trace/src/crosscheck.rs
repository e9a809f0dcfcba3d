//! The cross-check with valgrind's cache simulator (DESIGN §5): the same run of a program is
//! recorded with lackey and measured by cachegrind (address randomisation off for both); the trace
//! then goes through
//!
//! * a replica of cachegrind's model (I1 and D1 in front of one unified LL, LRU, an access that
//!   straddles two lines touches both and counts one miss, a modify counts as one read), which
//!   must match cachegrind exactly or within a handful of misses: it checks the trace;
//! * the smtsched simulator on the equivalent machine (`data/cachegrind-machine.toml`): the full
//!   engine for D1 and total LL misses, and its memory system alone for LL data misses (the
//!   engine's counters do not split the unified level by instruction and data).

use crate::error::{Result, TraceError};
use crate::format::{AccessKind, Chunk, TraceFile};
use crate::replay::{ReplayTiming, TraceWorkload};
use crate::valgrind::{CacheConfig, CachegrindCounts, Geometry};
use smtsched_model::{machine_from_source, MachineModel, Origin, Override, Source};
use smtsched_uarch::memory::{MemorySystem, Requester};
use smtsched_uarch::stream::InstrKind;
use smtsched_uarch::Protocol;

const MACHINE: &str = include_str!("../data/cachegrind-machine.toml");

/// One set-associative LRU cache as cachegrind models it (tags are whole line numbers).
#[derive(Clone, Debug)]
pub struct LruCache {
    ways: usize,
    set_mask: u64,
    line_shift: u32,
    /// sets × ways line numbers, most recent first; u64::MAX = empty.
    tags: Vec<u64>,
}

impl LruCache {
    pub fn new(g: Geometry) -> Self {
        let sets = g.sets() as usize;
        LruCache {
            ways: g.ways as usize,
            set_mask: sets as u64 - 1,
            line_shift: g.line_bytes.trailing_zeros(),
            tags: vec![u64::MAX; sets * g.ways as usize],
        }
    }

    fn line_is_miss(&mut self, line: u64) -> bool {
        let base = (line & self.set_mask) as usize * self.ways;
        let set = &mut self.tags[base..base + self.ways];
        match set.iter().position(|&t| t == line) {
            Some(p) => {
                set.copy_within(0..p, 1);
                set[0] = line;
                false
            }
            None => {
                set.copy_within(0..self.ways - 1, 1);
                set[0] = line;
                true
            }
        }
    }

    /// An access of `size` bytes at `addr`: both lines are looked up if it straddles two, and it
    /// misses if either does (cachegrind's `cachesim_ref_is_miss`). Accesses are capped at two
    /// lines, as cachegrind caps the sizes it simulates.
    pub fn ref_is_miss(&mut self, addr: u64, size: u32) -> bool {
        let b1 = addr >> self.line_shift;
        let b2 = (addr + size.max(1) as u64 - 1) >> self.line_shift;
        if b1 == b2 {
            self.line_is_miss(b1)
        } else {
            let m1 = self.line_is_miss(b1);
            let m2 = self.line_is_miss(b1 + 1);
            m1 || m2
        }
    }
}

/// A replica of cachegrind's cache simulation, fed from a trace.
pub struct CachegrindModel {
    i1: LruCache,
    d1: LruCache,
    ll: LruCache,
    pub counts: CachegrindCounts,
}

impl CachegrindModel {
    pub fn new(c: &CacheConfig) -> Self {
        CachegrindModel {
            i1: LruCache::new(c.i1),
            d1: LruCache::new(c.d1),
            ll: LruCache::new(c.ll),
            counts: CachegrindCounts::default(),
        }
    }

    pub fn instruction(&mut self, pc: u64, size: u32) {
        self.counts.ir += 1;
        if self.i1.ref_is_miss(pc, size) {
            self.counts.i1mr += 1;
            if self.ll.ref_is_miss(pc, size) {
                self.counts.ilmr += 1;
            }
        }
    }

    pub fn data(&mut self, kind: AccessKind, addr: u64, size: u32) {
        let write = kind == AccessKind::Store;
        let (refs, m1, ml) = if write {
            (
                &mut self.counts.dw,
                &mut self.counts.d1mw,
                &mut self.counts.dlmw,
            )
        } else {
            (
                &mut self.counts.dr,
                &mut self.counts.d1mr,
                &mut self.counts.dlmr,
            )
        };
        *refs += 1;
        if self.d1.ref_is_miss(addr, size) {
            *m1 += 1;
            if self.ll.ref_is_miss(addr, size) {
                *ml += 1;
            }
        }
    }

    /// Runs a whole trace through the model.
    pub fn run(c: &CacheConfig, file: &TraceFile) -> Result<CachegrindCounts> {
        let mut m = CachegrindModel::new(c);
        let mut chunk = Chunk::default();
        for i in 0..file.chunks().len() {
            file.read_chunk(i, &mut chunk)?;
            let mut k = 0;
            for insn in &chunk.insns {
                m.instruction(insn.pc, insn.size);
                for a in &chunk.accesses[k..k + insn.accesses as usize] {
                    m.data(a.kind, a.addr, a.size);
                }
                k += insn.accesses as usize;
            }
        }
        Ok(m.counts)
    }
}

/// The simulator machine equivalent to cachegrind with caches `c`.
pub fn cachegrind_machine(c: &CacheConfig) -> Result<MachineModel> {
    let mut overrides: Vec<Override> = Vec::new();
    for (name, g) in [("I1", c.i1), ("D1", c.d1), ("LL", c.ll)] {
        g.validate(name)?;
        for (field, v) in [
            ("size_bytes", g.size_bytes),
            ("ways", g.ways as u64),
            ("line_bytes", g.line_bytes as u64),
        ] {
            overrides.push(
                format!("cache.{name}.{field}={v}")
                    .parse()
                    .map_err(TraceError::Model)?,
            );
        }
    }
    let source = Source {
        origin: Origin::Inline("crates/trace/data/cachegrind-machine.toml".into()),
        text: MACHINE.to_string(),
    };
    Ok(machine_from_source(&source, &overrides)?)
}

/// Miss counts of the smtsched simulator on a trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SimulatorCounts {
    /// Instructions the engine ran (one pass over the trace).
    pub instructions: u64,
    /// Full engine: level-1 data misses.
    pub d1_misses: u64,
    /// Full engine: last-level misses, instruction and data together.
    pub ll_misses: u64,
    /// Memory system alone: level-1 data misses.
    pub memory_d1_misses: u64,
    /// Memory system alone: last-level misses of data accesses.
    pub memory_ll_data_misses: u64,
    /// Memory system alone: last-level misses of instruction fetches.
    pub memory_ll_fetch_misses: u64,
}

/// Runs one pass of `trace` through the simulator on `machine` (a two-level cachegrind-like
/// machine): the full engine, and the memory system on its own.
pub fn simulate(trace: &TraceWorkload, machine: &MachineModel) -> Result<SimulatorCounts> {
    // The memory system alone first: its pass also counts the instructions one pass replays
    // (what `TraceWorkload::replayed_instructions` would read the whole trace again for).
    let mut out = SimulatorCounts::default();
    let mut mem = MemorySystem::new(machine, 1);
    let who = Requester::new(0, 0, 1, 1);
    let shift = mem.fetch_line_shift(0);
    let levels = mem.data_path(0).len();
    let mut last_line = u64::MAX;
    let mut n = 0;
    trace.for_each_event(|e| {
        n += e.run as u64 + 1;
        for line in (e.run_pc >> shift)..=(e.last_byte() >> shift) {
            if line != last_line {
                last_line = line;
                let f = mem.fetch(who, line << shift, 0.0);
                out.memory_ll_fetch_misses += (f.depth == levels) as u64;
            }
        }
        if matches!(e.kind, InstrKind::Load | InstrKind::Store) {
            let d = mem.data(who, e.addr, e.access_bytes, e.kind == InstrKind::Store, 0.0);
            out.memory_d1_misses += (d.depth > 0) as u64;
            out.memory_ll_data_misses += (d.depth == levels) as u64;
        }
    });
    let proto = Protocol {
        seed: 1,
        warmup_instructions: 0,
        measure_instructions: n,
        quantum_cycles: 1 << 40,
        timeshare_rounds: 1,
        refill_only: false,
    };
    let r = smtsched_uarch::protocol::solo(machine, trace, 0, 0, &proto)
        .map_err(|e| TraceError::Invalid(e.to_string()))?;
    out.instructions = r.window.instructions;
    out.d1_misses = r.window.l1d_misses;
    out.ll_misses = r.window.l2_misses + r.window.l3_misses;
    Ok(out)
}

/// Opens a trace for the cross-check (default replay timing: timing does not change misses).
pub fn open_for_check(path: &std::path::Path) -> Result<TraceWorkload> {
    TraceWorkload::open(path, ReplayTiming::defaults(), &path.display().to_string())
}

/// Relative difference of `ours` from `reference` (0 when both are 0).
pub fn relative_difference(ours: u64, reference: u64) -> f64 {
    if reference == 0 {
        if ours == 0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (ours as f64 - reference as f64) / reference as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(size: u64, ways: u32) -> Geometry {
        Geometry {
            size_bytes: size,
            ways,
            line_bytes: 64,
        }
    }

    #[test]
    fn straddling_access_touches_two_lines_and_counts_one_miss() {
        let mut c = LruCache::new(g(1024, 2)); // 8 sets
        assert!(c.ref_is_miss(60, 8)); // lines 0 and 1, both cold: one miss
        assert!(!c.ref_is_miss(64, 8)); // line 1 is now present
        assert!(!c.ref_is_miss(0, 4));
        assert!(c.ref_is_miss(120, 16)); // line 1 hit, line 2 cold: a miss
    }

    #[test]
    fn the_simulator_looks_up_both_lines_of_a_straddling_access() {
        // The same sequence as above through the simulator's memory system: depth 0 is a D1 hit,
        // 2 (the path's length) memory.
        let cfg = CacheConfig {
            i1: g(1024, 2),
            d1: g(1024, 2),
            ll: g(8192, 4),
        };
        let mut mem = MemorySystem::new(&cachegrind_machine(&cfg).unwrap(), 1);
        let who = Requester::new(0, 0, 1, 1);
        let mut depth = |addr, bytes| mem.data(who, addr, bytes, false, 0.0).depth;
        assert_eq!(depth(60, 8), 2); // lines 0 and 1 cold
        assert_eq!(depth(64, 8), 0); // line 1 was brought in too
        assert_eq!(depth(0, 4), 0);
        assert_eq!(depth(120, 16), 2); // line 1 hits, line 2 is cold
        assert_eq!(depth(128, 1), 0);
    }

    #[test]
    fn lru_order_hand_worked() {
        // One set of two ways: lines 0, 8, 16 map to set 0 of an 8-set cache.
        let mut c = LruCache::new(g(1024, 2));
        let line = |l: u64| l * 64;
        assert!(c.ref_is_miss(line(0), 1));
        assert!(c.ref_is_miss(line(8), 1));
        assert!(!c.ref_is_miss(line(0), 1)); // 8 is now LRU
        assert!(c.ref_is_miss(line(16), 1)); // evicts 8
        assert!(!c.ref_is_miss(line(0), 1));
        assert!(c.ref_is_miss(line(8), 1));
    }

    #[test]
    fn the_machine_matches_the_geometry() {
        let cfg = CacheConfig {
            i1: g(16384, 4),
            d1: g(8192, 2),
            ll: g(131072, 16),
        };
        let m = cachegrind_machine(&cfg).unwrap();
        assert_eq!(m.cache["D1"].size_bytes, 8192);
        assert_eq!(m.cache["D1"].ways, 2);
        assert_eq!(m.cache["LL"].ways, 16);
        assert!(m
            .cache
            .values()
            .all(|c| c.prefetch.is_none() && !c.fill_adjacent_line));
    }
}
