//! Instruction streams generated on the fly from a workload profile and a seed: no files, fully
//! reproducible (DESIGN §4).

use crate::rng::{threshold, SimRng};
use smtsched_model::{AccessPattern, PhaseSpec, PowerLaw, WorkloadProfile};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstrKind {
    Int,
    Load,
    Store,
    Branch,
    Fp,
}

/// Longest run of plain instructions delivered with one event (keeps threads interleaving finely).
pub const MAX_RUN: u32 = 64;

/// One dynamic instruction as the timing models see it — a load, store or branch (an "event") —
/// together with the run of plain integer and floating-point instructions that precede it in
/// program order. Batching the plain ones is what makes the simulator fast; the timing models
/// still account for each of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instr {
    /// Plain instructions before this one, at `run_pc`, `run_pc + instr_bytes`, …
    pub run: u32,
    /// How many of the run are floating-point operations.
    pub run_fp: u32,
    pub run_pc: u64,
    pub instr_bytes: u32,
    /// Usually a load, store or branch; `Int`/`Fp` when a run ends at a phase or code boundary.
    pub kind: InstrKind,
    /// Byte address of the instruction in the program's code.
    pub pc: u64,
    /// Byte address of the data for loads and stores (in the thread's own address space).
    pub addr: u64,
    /// A load whose address depends on the previous such load (pointer chasing).
    pub dependent: bool,
    pub mispredict: bool,
    /// Index of the phase this instruction belongs to.
    pub phase: u16,
}

/// Something that produces a thread's instructions: a synthetic profile or a replayed trace.
pub trait InstructionSource: Send {
    fn next_instr(&mut self) -> Instr;
    /// Timing characteristics of phase `index` (what a trace cannot carry).
    fn phase_timing(&self, index: u16) -> PhaseTiming;
}

/// What the core needs to know about a phase beyond its instructions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseTiming {
    pub ilp: f64,
    pub uops_per_instruction: f64,
    pub loads: f64,
    pub stores: f64,
    pub fp_ops: f64,
}

impl PhaseTiming {
    fn of(p: &PhaseSpec) -> Self {
        PhaseTiming {
            ilp: p.ilp,
            uops_per_instruction: p.uops_per_instruction,
            loads: p.loads,
            stores: p.stores,
            fp_ops: p.fp_ops,
        }
    }
}

/// Gap kept between regions so that region starts do not all fall in cache set 0.
const REGION_SKEW_BYTES: u64 = 37 * 64;
/// Successive streams of one region are offset by this much beyond their equal slices, as separate
/// arrays in a real program rarely align on the same cache sets.
const STREAM_SKEW_BYTES: u64 = 65 * 64;

#[derive(Clone, Debug)]
struct DataState {
    base: u64,
    size: u64,
    pattern: AccessPattern,
    stride: u64,
    slice: u64,
    cursors: Vec<u64>,
    next_stream: usize,
    /// Quantile table of a power-law region (offsets as fractions of the region).
    quantiles: Vec<f64>,
}

/// Resolution of a power law's quantile table (interpolated linearly between points; the table is
/// finer than any cache the profiles are characterised against).
const QUANTILE_STEPS: usize = 1024;

/// Offsets, as fractions of the region, at `QUANTILE_STEPS + 1` evenly spaced probabilities.
fn quantiles(law: &PowerLaw) -> Vec<f64> {
    let size = law.size_bytes as f64;
    (0..=QUANTILE_STEPS)
        .map(|i| (law.quantile(i as f64 / QUANTILE_STEPS as f64) / size).clamp(0.0, 1.0))
        .collect()
}

impl DataState {
    #[inline]
    fn address(&mut self, rng: &mut SimRng) -> u64 {
        match self.pattern {
            AccessPattern::Random | AccessPattern::PointerChase => {
                self.base + rng.below(self.size / 8) * 8
            }
            AccessPattern::PowerLaw => {
                let q = skewed_fraction(&self.quantiles, rng.next_u64());
                let words = self.size / 8;
                self.base + ((q * words as f64) as u64).min(words - 1) * 8
            }
            AccessPattern::Sequential | AccessPattern::Strided => {
                let s = self.next_stream;
                self.next_stream = if s + 1 == self.cursors.len() {
                    0
                } else {
                    s + 1
                };
                let off = self.cursors[s];
                let mut next = off + self.stride;
                if next >= self.slice {
                    next -= self.slice;
                }
                self.cursors[s] = next;
                let start = s as u64 * (self.slice + STREAM_SKEW_BYTES);
                self.base + start + off
            }
        }
    }
}

#[derive(Clone, Debug)]
struct CodeArea {
    base: u64,
    size: u64,
    /// Quantile table of a skewed target distribution; empty for uniform targets.
    quantiles: Vec<f64>,
}

/// A position in [0, 1) drawn from the distribution whose quantile table is `q`.
#[inline]
fn skewed_fraction(q: &[f64], r: u64) -> f64 {
    let i = (r >> 54) as usize; // the top 10 bits choose the step
    let frac = (r & ((1 << 54) - 1)) as f64 * (1.0 / (1u64 << 54) as f64);
    q[i] + (q[i + 1] - q[i]) * frac
}

#[derive(Clone, Debug)]
struct Phase {
    instructions: u64,
    t_load: u64,
    t_store: u64,
    t_branch: u64,
    t_fp: u64,
    t_mispredict: u32,
    t_taken: u32,
    instr_bytes: u64,
    /// (cumulative weight threshold, index into `code`).
    code: Vec<(u64, usize)>,
    /// (cumulative weight threshold, index into `data`).
    data: Vec<(u64, usize)>,
    timing: PhaseTiming,
}

/// The generator for one thread running one profile.
#[derive(Clone, Debug)]
pub struct SyntheticStream {
    rng: SimRng,
    phases: Vec<Phase>,
    code: Vec<CodeArea>,
    data: Vec<DataState>,
    phase: usize,
    remaining: u64,
    pc: u64,
    area_end: u64,
    area_start: u64,
}

fn cumulative(weights: impl Iterator<Item = (f64, usize)>) -> Vec<(u64, usize)> {
    let items: Vec<(f64, usize)> = weights.collect();
    let total: f64 = items.iter().map(|(w, _)| w).sum();
    let mut acc = 0.0;
    let mut out: Vec<(u64, usize)> = items
        .iter()
        .map(|&(w, i)| {
            acc += w / total;
            (threshold(acc), i)
        })
        .collect();
    if let Some(last) = out.last_mut() {
        last.0 = u64::MAX;
    }
    out
}

#[inline]
fn pick(table: &[(u64, usize)], r: u64) -> usize {
    for &(t, i) in table {
        if r < t {
            return i;
        }
    }
    table.last().map_or(0, |&(_, i)| i)
}

impl SyntheticStream {
    /// A stream of `profile` from `seed`, starting `start_offset` instructions into its phase
    /// cycle (a staggered start).
    pub fn new(profile: &WorkloadProfile, seed: u64, start_offset: u64) -> Self {
        let mut code: Vec<CodeArea> = Vec::new();
        let mut data: Vec<DataState> = Vec::new();
        let mut code_names: BTreeMap<String, usize> = BTreeMap::new();
        let mut data_names: BTreeMap<String, usize> = BTreeMap::new();
        let mut phases = Vec::with_capacity(profile.phase.len());
        for p in &profile.phase {
            let code_idx: Vec<(f64, usize)> = p
                .code
                .iter()
                .map(|c| {
                    let existing = (!c.name.is_empty())
                        .then(|| code_names.get(&c.name).copied())
                        .flatten();
                    let idx = existing.unwrap_or_else(|| {
                        let i = code.len();
                        let base =
                            (1u64 << 44) + ((i as u64 + 1) << 32) + i as u64 * REGION_SKEW_BYTES;
                        let size =
                            c.size_bytes / p.instruction_bytes as u64 * p.instruction_bytes as u64;
                        code.push(CodeArea {
                            base,
                            size,
                            quantiles: c.power_law().map(|l| quantiles(&l)).unwrap_or_default(),
                        });
                        if !c.name.is_empty() {
                            code_names.insert(c.name.clone(), i);
                        }
                        i
                    });
                    (c.weight, idx)
                })
                .collect();
            let data_idx: Vec<(f64, usize)> = p
                .data
                .iter()
                .map(|d| {
                    let existing = (!d.name.is_empty())
                        .then(|| data_names.get(&d.name).copied())
                        .flatten();
                    let idx = existing.unwrap_or_else(|| {
                        let i = data.len();
                        let base = ((i as u64 + 1) << 36) + i as u64 * REGION_SKEW_BYTES;
                        let streams = d.streams.max(1) as u64;
                        let slice = (d.size_bytes / streams) / d.stride_bytes * d.stride_bytes;
                        data.push(DataState {
                            base,
                            size: d.size_bytes,
                            pattern: d.pattern,
                            stride: d.stride_bytes,
                            slice: slice.max(d.stride_bytes),
                            cursors: vec![0; streams as usize],
                            next_stream: 0,
                            quantiles: d.power_law().map(|l| quantiles(&l)).unwrap_or_default(),
                        });
                        if !d.name.is_empty() {
                            data_names.insert(d.name.clone(), i);
                        }
                        i
                    });
                    (d.weight, idx)
                })
                .collect();
            let mut acc = 0.0;
            let mut cum = |x: f64| {
                acc += x;
                threshold(acc)
            };
            phases.push(Phase {
                instructions: p.instructions,
                t_load: cum(p.loads),
                t_store: cum(p.stores),
                t_branch: cum(p.branches),
                t_fp: cum(p.fp_ops),
                t_mispredict: (threshold(p.branch_mispredict_rate) >> 32) as u32,
                t_taken: (threshold(p.taken_branches) >> 32) as u32,
                instr_bytes: p.instruction_bytes as u64,
                code: cumulative(code_idx.into_iter()),
                data: cumulative(data_idx.into_iter()),
                timing: PhaseTiming::of(p),
            });
        }
        let mut s = SyntheticStream {
            rng: SimRng::new(seed),
            phases,
            code,
            data,
            phase: 0,
            remaining: 0,
            pc: 0,
            area_end: 0,
            area_start: 0,
        };
        // Position at the staggered start without generating the skipped instructions.
        let cycle = profile.cycle_instructions();
        let mut offset = if cycle > 0 { start_offset % cycle } else { 0 };
        let mut phase = 0;
        while offset >= s.phases[phase].instructions {
            offset -= s.phases[phase].instructions;
            phase += 1;
        }
        s.enter_phase(phase);
        s.remaining -= offset;
        s
    }

    fn enter_phase(&mut self, phase: usize) {
        self.phase = phase;
        self.remaining = self.phases[phase].instructions;
        self.jump();
    }

    /// Moves the program counter to a random instruction of a code area chosen by weight.
    #[inline]
    fn jump(&mut self) {
        let p = &self.phases[self.phase];
        let area = &self.code[pick(&p.code, self.rng.next_u64())];
        let slots = (area.size / p.instr_bytes).max(1);
        self.area_start = area.base;
        self.area_end = area.base + area.size;
        let slot = if area.quantiles.is_empty() {
            self.rng.below(slots)
        } else {
            ((skewed_fraction(&area.quantiles, self.rng.next_u64()) * slots as f64) as u64)
                .min(slots - 1)
        };
        self.pc = area.base + slot * p.instr_bytes;
    }
}

impl InstructionSource for SyntheticStream {
    #[inline]
    fn next_instr(&mut self) -> Instr {
        if self.remaining == 0 {
            let next = if self.phase + 1 == self.phases.len() {
                0
            } else {
                self.phase + 1
            };
            self.enter_phase(next);
        }
        let p = &self.phases[self.phase];
        let run_pc = self.pc;
        let mut run = 0;
        let mut run_fp = 0;
        // Plain instructions accumulate into the run until an event, the end of the phase, the
        // end of the code area or the run limit.
        let r = loop {
            self.remaining -= 1;
            let r = self.rng.next_u64();
            let last =
                self.remaining == 0 || self.pc + p.instr_bytes >= self.area_end || run == MAX_RUN;
            if r < p.t_branch || last {
                break r;
            }
            run += 1;
            run_fp += (r < p.t_fp) as u32;
            self.pc += p.instr_bytes;
        };
        let pc = self.pc;
        self.pc += p.instr_bytes;
        if self.pc >= self.area_end {
            self.pc = self.area_start;
        }
        let mut instr = Instr {
            run,
            run_fp,
            run_pc,
            instr_bytes: p.instr_bytes as u32,
            kind: InstrKind::Int,
            pc,
            addr: 0,
            dependent: false,
            mispredict: false,
            phase: self.phase as u16,
        };
        if r < p.t_store {
            instr.kind = if r < p.t_load {
                InstrKind::Load
            } else {
                InstrKind::Store
            };
            let region = pick(&p.data, self.rng.next_u64());
            let d = &mut self.data[region];
            instr.dependent =
                d.pattern == AccessPattern::PointerChase && instr.kind == InstrKind::Load;
            instr.addr = d.address(&mut self.rng);
        } else if r < p.t_branch {
            instr.kind = InstrKind::Branch;
            let r2 = self.rng.next_u64();
            instr.mispredict = (r2 as u32) < p.t_mispredict;
            if ((r2 >> 32) as u32) < p.t_taken {
                self.jump();
            }
        } else if r < p.t_fp {
            instr.kind = InstrKind::Fp;
        }
        instr
    }

    fn phase_timing(&self, index: u16) -> PhaseTiming {
        self.phases[index as usize].timing
    }
}
