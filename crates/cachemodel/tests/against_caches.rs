//! The models against real caches fed the same reference streams: exact LRU stack distances
//! against the simulator's own cache (fully associative, LRU), and StatCache against an
//! independent random-replacement cache.

use smtsched_cachemodel::collect::{collect, CollectOptions, LineCollector};
use smtsched_cachemodel::statcache::{lru_miss_ratio, miss_ratio, statstack_miss_ratio};
use smtsched_model::load_workload;
use smtsched_uarch::cache::Cache;
use smtsched_uarch::rng::SimRng;
use smtsched_uarch::stream::InstrKind;
use smtsched_uarch::{synthetic_stream, InstructionSource};

/// The first `warm + n` data line numbers of a workload's stream.
fn lines_of(workload: &str, warm: usize, n: usize) -> Vec<u64> {
    let p = load_workload(workload, &[]).unwrap();
    let mut s = synthetic_stream(&p, 7, 0);
    let mut out = Vec::with_capacity(warm + n);
    while out.len() < warm + n {
        let i = s.next_instr();
        if matches!(i.kind, InstrKind::Load | InstrKind::Store) {
            out.push(i.addr >> 6);
        }
    }
    out
}

#[test]
fn stack_distances_predict_a_fully_associative_lru_cache_exactly() {
    for w in ["gzip-like", "mcf-like", "vortex-like"] {
        let (warm, n) = (20_000, 200_000);
        let lines = lines_of(w, warm, n);
        let mut c = LineCollector::new(Some(lines.len()));
        for (i, &l) in lines.iter().enumerate() {
            c.touch(l, i >= warm);
        }
        let stack = c.stack().unwrap();
        for ways in [8usize, 64, 512] {
            let mut cache = Cache::with_geometry(1, ways, 64, 1);
            let mut misses = 0u64;
            for (i, &l) in lines.iter().enumerate() {
                let (hit, _) = cache.access(l, 0, false);
                if i >= warm && !hit {
                    misses += 1;
                }
            }
            let predicted = lru_miss_ratio(&stack, ways as f64) * n as f64;
            // StatStack from the reuse distances alone comes close.
            let ss = statstack_miss_ratio(&c.reuse(), ways as f64);
            assert!(
                (ss - misses as f64 / n as f64).abs() < 0.02,
                "{w}, {ways} lines: StatStack {ss} vs cache {}",
                misses as f64 / n as f64
            );
            assert_eq!(
                predicted.round() as u64,
                misses,
                "{w}, {ways} lines: model {predicted} vs cache {misses}"
            );
        }
    }
}

/// A fully associative cache with random replacement (written here, independently of the model).
fn random_replacement_misses(lines: &[u64], warm: usize, size: usize, seed: u64) -> u64 {
    let mut rng = SimRng::new(seed);
    let mut slots: Vec<u64> = Vec::with_capacity(size);
    let mut where_: std::collections::HashMap<u64, usize> = Default::default();
    let mut misses = 0;
    for (i, &l) in lines.iter().enumerate() {
        if where_.contains_key(&l) {
            continue;
        }
        if i >= warm {
            misses += 1;
        }
        if slots.len() < size {
            where_.insert(l, slots.len());
            slots.push(l);
        } else {
            let v = rng.below(size as u64) as usize;
            where_.remove(&slots[v]);
            slots[v] = l;
            where_.insert(l, v);
        }
    }
    misses
}

#[test]
fn statcache_predicts_a_random_replacement_cache() {
    let mut worst: f64 = 0.0;
    for w in ["gzip-like", "art-like", "parser-like", "ammp-like"] {
        let (warm, n) = (200_000, 400_000);
        let lines = lines_of(w, warm, n);
        let mut c = LineCollector::new(None);
        for (i, &l) in lines.iter().enumerate() {
            c.touch(l, i >= warm);
        }
        let h = c.reuse();
        for size in [128usize, 768, 6144] {
            let simulated = random_replacement_misses(&lines, warm, size, 3) as f64 / n as f64;
            let full = miss_ratio(&h, size as f64);
            let compressed = miss_ratio(&h.compressed(), size as f64);
            let err = (full - simulated).abs();
            worst = worst.max(err);
            // Absolute error of a few points of miss ratio; the compressed histogram stays close
            // to the full one.
            assert!(
                err < 0.01,
                "{w} {size}: model {full:.4} vs cache {simulated:.4}"
            );
            assert!(
                (compressed - full).abs() < 0.02,
                "{w} {size}: compressed {compressed:.4} vs full {full:.4}"
            );
        }
    }
    eprintln!("worst absolute StatCache error {worst:.4}");
}

#[test]
fn collection_counts_window_instructions_and_references() {
    let p = load_workload("gzip-like", &[]).unwrap();
    let mut s = synthetic_stream(&p, 1, 0);
    let opts = CollectOptions {
        warmup_instructions: 100_000,
        window_instructions: 500_000,
        ..Default::default()
    };
    let prof = collect("gzip-like", &mut s, &opts);
    // The window ends on an event boundary, so a run of plain instructions may spill over.
    assert!(prof.instructions >= 500_000 && prof.instructions < 500_000 + 100);
    assert_eq!(prof.histogram.references().round() as u64, prof.references);
    // gzip-like issues 0.40 loads+stores per instruction.
    assert!((prof.refs_per_instruction() - 0.40).abs() < 0.01);
    assert!(prof.compressed().points.len() < 20);
}
