//! Native benchmark kernels built into the binary: each does a fixed amount of work over a
//! configurable memory footprint, so that co-running them on real CPUs exercises different
//! shared resources — memory latency, memory bandwidth, floating-point units, branch
//! prediction, and a mix of integer work and cache-resident data.
//!
//! Work is counted in the kernel's natural unit (loads, elements, multiply-adds, searches,
//! bytes) so that changing the footprint changes cache behaviour, not the length of a run.
//! Results pass through `std::hint::black_box`, so the optimiser cannot drop the work.

use crate::error::{HostError, Result};
use serde::{Deserialize, Serialize};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The built-in kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KernelKind {
    PointerChase,
    StreamTriad,
    DenseFp,
    BranchySearch,
    Compress,
}

impl KernelKind {
    pub const ALL: &'static [KernelKind] = &[
        KernelKind::PointerChase,
        KernelKind::StreamTriad,
        KernelKind::DenseFp,
        KernelKind::BranchySearch,
        KernelKind::Compress,
    ];

    pub fn name(self) -> &'static str {
        match self {
            KernelKind::PointerChase => "pointer-chase",
            KernelKind::StreamTriad => "stream-triad",
            KernelKind::DenseFp => "dense-fp",
            KernelKind::BranchySearch => "branchy-search",
            KernelKind::Compress => "compress",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            KernelKind::PointerChase => {
                "dependent loads around a random cycle of cache lines: memory latency bound once the footprint exceeds the last-level cache"
            }
            KernelKind::StreamTriad => "a[i] = b[i] + s*c[i] over three arrays: memory bandwidth bound",
            KernelKind::DenseFp => "dense matrix multiply (C = A*B) on cache-resident matrices: floating-point bound",
            KernelKind::BranchySearch => {
                "binary searches for random keys with an early exit: unpredictable branches over an L2-sized array"
            }
            KernelKind::Compress => "LZ77-style match finding with a hash table over compressible text: byte-wise integer work",
        }
    }

    /// What one unit of `work` is.
    pub fn work_unit(self) -> &'static str {
        match self {
            KernelKind::PointerChase => "loads",
            KernelKind::StreamTriad => "elements",
            KernelKind::DenseFp => "multiply-adds",
            KernelKind::BranchySearch => "searches",
            KernelKind::Compress => "bytes",
        }
    }

    /// Work of one run by default: about 0.15 s on a 2020s x86-64 core (an AMD EPYC virtual
    /// machine when these were chosen).
    pub fn default_work(self) -> u64 {
        match self {
            KernelKind::PointerChase => 1_000_000,
            KernelKind::StreamTriad => 200_000_000,
            KernelKind::DenseFp => 800_000_000,
            KernelKind::BranchySearch => 1_200_000,
            KernelKind::Compress => 50_000_000,
        }
    }

    /// Default memory footprint in bytes.
    pub fn default_footprint(self) -> u64 {
        match self {
            KernelKind::PointerChase => 64 << 20,
            KernelKind::StreamTriad => 96 << 20,
            KernelKind::DenseFp => 96 << 10,
            KernelKind::BranchySearch => 256 << 10,
            KernelKind::Compress => 1 << 20,
        }
    }

    /// Smallest footprint the kernel can work with.
    pub fn min_footprint(self) -> u64 {
        match self {
            KernelKind::PointerChase => 2 * LINE as u64,
            KernelKind::StreamTriad => 3 * 8,
            KernelKind::DenseFp => 3 * 8 * 4,
            KernelKind::BranchySearch => 4 * 16,
            KernelKind::Compress => 64,
        }
    }

    pub fn parse(name: &str) -> Result<KernelKind> {
        KernelKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                HostError::bad(format!(
                    "unknown kernel {name:?} (built-in kernels: {})",
                    KernelKind::ALL
                        .iter()
                        .map(|k| k.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }
}

impl std::fmt::Display for KernelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel with its run length and footprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelSpec {
    pub kind: KernelKind,
    pub work: u64,
    pub footprint_bytes: u64,
}

impl KernelSpec {
    pub fn new(kind: KernelKind) -> Self {
        KernelSpec {
            kind,
            work: kind.default_work(),
            footprint_bytes: kind.default_footprint(),
        }
    }

    pub fn validate(&self) -> Result<()> {
        if self.work == 0 {
            return Err(HostError::bad(format!(
                "{}: --work must be at least 1 {}",
                self.kind,
                self.kind.work_unit()
            )));
        }
        if self.footprint_bytes < self.kind.min_footprint() {
            return Err(HostError::bad(format!(
                "{}: footprint {} bytes is below the minimum of {} bytes",
                self.kind,
                self.footprint_bytes,
                self.kind.min_footprint()
            )));
        }
        let limit = physical_memory_bytes().map_or(1 << 40, |m| m / 2);
        if self.footprint_bytes > limit {
            return Err(HostError::bad(format!(
                "{}: footprint {} bytes is more than half of this machine's memory ({limit} \
                 bytes): the allocation would fail or push everything else out",
                self.kind, self.footprint_bytes
            )));
        }
        Ok(())
    }

    /// Allocates and initialises the kernel's data (not part of a timed run).
    pub fn prepare(&self, seed: u64) -> Result<Prepared> {
        self.validate()?;
        let mut rng = SplitMix(seed ^ 0x005e_ed0f_5175_c0de);
        let state = match self.kind {
            KernelKind::PointerChase => State::Chase(Chase::new(self.footprint_bytes, &mut rng)),
            KernelKind::StreamTriad => State::Triad(Triad::new(self.footprint_bytes)),
            KernelKind::DenseFp => State::Dense(Dense::new(self.footprint_bytes, &mut rng)),
            KernelKind::BranchySearch => State::Search(Search::new(self.footprint_bytes, &mut rng)),
            KernelKind::Compress => State::Compress(Compress::new(self.footprint_bytes, &mut rng)),
        };
        Ok(Prepared {
            spec: *self,
            state,
            rng,
        })
    }
}

/// The machine's physical memory, if the system says.
fn physical_memory_bytes() -> Option<u64> {
    // SAFETY: sysconf only reads system values.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && page > 0).then(|| pages as u64 * page as u64)
}

/// A kernel ready to run: its data is allocated and touched.
pub struct Prepared {
    spec: KernelSpec,
    state: State,
    rng: SplitMix,
}

/// One timed run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub seconds: f64,
    /// Depends on every unit of work; printed so that the work is observable.
    pub checksum: u64,
}

impl Prepared {
    pub fn spec(&self) -> &KernelSpec {
        &self.spec
    }

    /// Does one run's work and returns its checksum.
    pub fn run(&mut self) -> u64 {
        let work = black_box(self.spec.work);
        match &mut self.state {
            State::Chase(s) => s.run(work),
            State::Triad(s) => s.run(work),
            State::Dense(s) => s.run(work),
            State::Search(s) => s.run(work, &mut self.rng),
            State::Compress(s) => s.run(work),
        }
    }

    /// Does one run's work and times it.
    pub fn timed_run(&mut self) -> RunResult {
        let t = Instant::now();
        let checksum = black_box(self.run());
        RunResult {
            seconds: t.elapsed().as_secs_f64(),
            checksum,
        }
    }
}

enum State {
    Chase(Chase),
    Triad(Triad),
    Dense(Dense),
    Search(Search),
    Compress(Compress),
}

/// splitmix64: small, fast, good enough to shuffle and to draw keys.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

const LINE: usize = 64;
const WORDS_PER_LINE: usize = LINE / std::mem::size_of::<usize>();

/// One random cycle through every cache line of the buffer (Sattolo's algorithm), so each load
/// depends on the previous one and the hardware prefetchers cannot guess the next line.
struct Chase {
    next: Vec<usize>,
    at: usize,
}

impl Chase {
    fn new(footprint: u64, rng: &mut SplitMix) -> Chase {
        let lines = (footprint as usize / LINE).max(2);
        let mut order: Vec<usize> = (0..lines).collect();
        for i in (1..lines).rev() {
            let j = rng.below(i as u64) as usize; // j < i: a single cycle
            order.swap(i, j);
        }
        let mut next = vec![0usize; lines * WORDS_PER_LINE];
        for (i, &line) in order.iter().enumerate() {
            let to = order[(i + 1) % lines];
            next[line * WORDS_PER_LINE] = to * WORDS_PER_LINE;
        }
        Chase { next, at: 0 }
    }

    fn run(&mut self, loads: u64) -> u64 {
        let next = &self.next;
        let mut p = self.at;
        for _ in 0..loads {
            p = next[p];
        }
        self.at = black_box(p);
        p as u64
    }
}

/// STREAM's triad.
struct Triad {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    at: usize,
}

impl Triad {
    fn new(footprint: u64) -> Triad {
        let n = (footprint as usize / (3 * 8)).max(1);
        Triad {
            a: vec![0.0; n],
            b: (0..n).map(|i| (i % 1024) as f64).collect(),
            c: (0..n).map(|i| (i % 7) as f64 * 0.5).collect(),
            at: 0,
        }
    }

    fn run(&mut self, elements: u64) -> u64 {
        let n = self.a.len();
        let mut left = elements as usize;
        while left > 0 {
            let start = self.at;
            let end = (start + left).min(n);
            let s = black_box(3.0f64);
            let (a, b, c) = (
                &mut self.a[start..end],
                &self.b[start..end],
                &self.c[start..end],
            );
            for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
                *x = y + s * z;
            }
            black_box(&mut self.a);
            left -= end - start;
            self.at = if end == n { 0 } else { end };
        }
        self.a[n / 2].to_bits() ^ self.a[n - 1].to_bits()
    }
}

/// C = A*B with square matrices of side n, in i-k-j order (the inner loop vectorises).
struct Dense {
    n: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    /// Multiply-adds already done in the current product (runs may end mid-product).
    carry: u64,
}

impl Dense {
    fn new(footprint: u64, rng: &mut SplitMix) -> Dense {
        let n = (((footprint / (3 * 8)) as f64).sqrt() as usize).max(2);
        let mut m = || {
            (0..n * n)
                .map(|_| (rng.below(1000) as f64 + 1.0) / (1000.0 * n as f64))
                .collect::<Vec<f64>>()
        };
        let (a, b) = (m(), m());
        Dense {
            n,
            a,
            b,
            c: vec![0.0; n * n],
            carry: 0,
        }
    }

    fn run(&mut self, madds: u64) -> u64 {
        let n = self.n;
        let per_row = (n * n) as u64;
        // Whole rows of the product: one row of C is n*n multiply-adds.
        let rows_total = madds.div_ceil(per_row);
        let mut check = 0u64;
        for r in 0..rows_total {
            let i = ((self.carry + r) % n as u64) as usize;
            let row = &mut self.c[i * n..(i + 1) * n];
            row.fill(0.0);
            for k in 0..n {
                let aik = self.a[i * n + k];
                let brow = &self.b[k * n..(k + 1) * n];
                for (cij, bkj) in row.iter_mut().zip(brow) {
                    *cij += aik * bkj;
                }
            }
            black_box(&mut self.c);
            check ^= self.c[i * n + (i % n)].to_bits();
        }
        self.carry = (self.carry + rows_total) % n as u64;
        check
    }
}

/// Sorted random keys; each search draws a key that is present half of the time.
struct Search {
    keys: Vec<u32>,
}

impl Search {
    fn new(footprint: u64, rng: &mut SplitMix) -> Search {
        let n = (footprint as usize / 4).max(16);
        let mut keys: Vec<u32> = (0..n).map(|_| (rng.next_u64() >> 33) as u32 * 2).collect();
        keys.sort_unstable();
        Search { keys }
    }

    fn run(&mut self, searches: u64, rng: &mut SplitMix) -> u64 {
        let keys = &self.keys[..];
        let mut found = 0u64;
        let mut depth = 0u64;
        for _ in 0..searches {
            let r = rng.next_u64();
            // Half the keys are taken from the array (found), half are odd (never present).
            let want = if r & 1 == 0 {
                keys[(r >> 1) as usize % keys.len()]
            } else {
                ((r >> 33) as u32) | 1
            };
            let (mut lo, mut hi) = (0usize, keys.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let k = keys[mid];
                depth += 1;
                if k == want {
                    found += 1;
                    break;
                } else if k < want {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
        }
        black_box(found) ^ (depth << 20)
    }
}

/// Greedy LZ77 match finding over text made of a small vocabulary, so that matches are common
/// but their lengths and positions vary.
struct Compress {
    input: Vec<u8>,
    table: Vec<u32>,
    at: usize,
}

const HASH_BITS: u32 = 14;

impl Compress {
    fn new(footprint: u64, rng: &mut SplitMix) -> Compress {
        let table_bytes = (1usize << HASH_BITS) * 4;
        let n = (footprint as usize).saturating_sub(table_bytes).max(64);
        let words: Vec<Vec<u8>> = (0..512)
            .map(|_| {
                let len = 2 + rng.below(9) as usize;
                (0..len).map(|_| b'a' + rng.below(26) as u8).collect()
            })
            .collect();
        let mut input = Vec::with_capacity(n + 16);
        while input.len() < n {
            // Zipf-like choice: low word numbers are much more frequent.
            let w = (rng.below(512) * rng.below(512) / 512) as usize;
            input.extend_from_slice(&words[w]);
            input.push(if rng.below(8) == 0 { b'\n' } else { b' ' });
        }
        input.truncate(n);
        Compress {
            input,
            table: vec![u32::MAX; 1 << HASH_BITS],
            at: 0,
        }
    }

    fn run(&mut self, bytes: u64) -> u64 {
        let n = self.input.len();
        let mut left = bytes as usize;
        let (mut literals, mut matched, mut tokens) = (0u64, 0u64, 0u64);
        while left > 0 {
            if self.at + 4 > n {
                // Start the next pass over the input with an empty dictionary.
                self.at = 0;
                self.table.fill(u32::MAX);
            }
            let i = self.at;
            let input = &self.input;
            let word = u32::from_le_bytes([input[i], input[i + 1], input[i + 2], input[i + 3]]);
            let h = (word.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize;
            let cand = self.table[h];
            self.table[h] = i as u32;
            let mut len = 0usize;
            if cand != u32::MAX {
                let c = cand as usize;
                let max = (n - i).min(258);
                while len < max && input[c + len] == input[i + len] {
                    len += 1;
                }
            }
            let step = if len >= 4 {
                matched += len as u64;
                len
            } else {
                literals += 1;
                1
            };
            tokens += 1;
            let step = step.min(left);
            self.at += step;
            left -= step;
        }
        black_box(literals) ^ (matched << 24) ^ (tokens << 48)
    }
}

/// Times `runs` runs of a kernel after preparing it.
pub fn time_runs(spec: &KernelSpec, runs: u32, seed: u64) -> Result<(Duration, Vec<RunResult>)> {
    let t = Instant::now();
    let mut p = spec.prepare(seed)?;
    let setup = t.elapsed();
    Ok((setup, (0..runs).map(|_| p.timed_run()).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(kind: KernelKind) -> KernelSpec {
        KernelSpec {
            kind,
            work: 10_000,
            footprint_bytes: 64 << 10,
        }
    }

    #[test]
    fn chase_visits_every_line_once_per_cycle() {
        let mut rng = SplitMix(1);
        let c = Chase::new(64 * 100, &mut rng);
        let mut seen = std::collections::BTreeSet::new();
        let mut p = 0;
        for _ in 0..100 {
            assert!(
                seen.insert(p),
                "line {} visited twice within one cycle",
                p / WORDS_PER_LINE
            );
            p = c.next[p];
        }
        assert_eq!(p, 0, "after 100 loads the chase is back at the start");
    }

    #[test]
    fn triad_computes_the_triad() {
        let mut t = Triad::new(3 * 8 * 10);
        t.run(10);
        for i in 0..10 {
            assert_eq!(t.a[i], t.b[i] + 3.0 * t.c[i]);
        }
    }

    #[test]
    fn dense_multiplies_matrices() {
        let mut rng = SplitMix(3);
        let mut d = Dense::new(3 * 8 * 16, &mut rng); // n = 4
        assert_eq!(d.n, 4);
        d.run(4 * 16); // all four rows
        for i in 0..4 {
            for j in 0..4 {
                let want: f64 = (0..4).map(|k| d.a[i * 4 + k] * d.b[k * 4 + j]).sum();
                assert!((d.c[i * 4 + j] - want).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn search_finds_present_keys() {
        let mut rng = SplitMix(5);
        let mut s = Search::new(4 * 1000, &mut rng);
        let out = s.run(10_000, &mut rng);
        let found = out & ((1 << 20) - 1);
        // About half the searches look for a present key.
        assert!((4000..6000).contains(&found), "found {found} of 10000");
    }

    #[test]
    fn compress_finds_matches_in_repetitive_text() {
        let mut rng = SplitMix(7);
        let mut c = Compress::new(1 << 20, &mut rng);
        let out = c.run(200_000);
        let tokens = out >> 48;
        assert!(
            tokens > 0 && tokens < 150_000,
            "{tokens} tokens for 200000 bytes: too few matches"
        );
    }

    #[test]
    fn every_kernel_runs_and_is_deterministic() {
        for &k in KernelKind::ALL {
            let (_, a) = time_runs(&small(k), 2, 1).unwrap();
            let (_, b) = time_runs(&small(k), 2, 1).unwrap();
            assert_eq!(
                a.iter().map(|r| r.checksum).collect::<Vec<_>>(),
                b.iter().map(|r| r.checksum).collect::<Vec<_>>(),
                "{k}"
            );
            assert!(a.iter().all(|r| r.seconds > 0.0));
        }
    }

    #[test]
    fn bad_specs_are_bad_input() {
        assert!(KernelKind::parse("nope")
            .unwrap_err()
            .to_string()
            .contains("\"nope\""));
        let mut s = small(KernelKind::PointerChase);
        s.work = 0;
        assert!(s.validate().unwrap_err().is_bad_input());
        s.work = 1;
        s.footprint_bytes = 1;
        assert!(s.validate().unwrap_err().is_bad_input());
    }
}
