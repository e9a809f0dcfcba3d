//! Instruction streams generated on the fly from a workload profile and a seed: no files, fully
//! reproducible (DESIGN §4).

use crate::rng::{derive_seed, threshold, SimRng};
use smtsched_model::{
    AccessPattern, CodeRegion, DataRegion, InstructionMix, PhaseSpec, PowerLaw, WorkloadProfile,
};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstrKind {
    Int,
    Load,
    Store,
    Branch,
    Fp,
    /// A locked read-modify-write of kernel data (an SMP kernel's spinlocks and atomics): it
    /// drains the pipeline.
    Locked,
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
    /// Length of the instruction at `pc`: it is fetched to its last byte, which may lie in the
    /// next line.
    pub event_bytes: u32,
    /// Byte address of the data for loads and stores (in the thread's own address space).
    pub addr: u64,
    /// Bytes the load or store touches from `addr` (at least 1): an access that crosses a line
    /// boundary looks up both lines, as cachegrind does. Synthetic streams give 1, since a
    /// profile describes which lines a program touches, not how wide its accesses are.
    pub access_bytes: u16,
    /// A load whose address depends on the previous such load (pointer chasing).
    pub dependent: bool,
    pub mispredict: bool,
    /// Index of the phase this instruction belongs to.
    pub phase: u16,
    /// Executed in the kernel (the whole run and the event).
    pub kernel: bool,
    /// The first instruction of a kernel entry (a system call or an interrupt): the core pays a
    /// mode switch before it.
    pub entry: bool,
}

impl Instr {
    /// The last byte of the instruction at `pc`.
    #[inline]
    pub fn last_byte(&self) -> u64 {
        self.pc + self.event_bytes.max(1) as u64 - 1
    }

    /// The key of this instruction's timing characteristics: its phase, with the top bit set for
    /// the phase's kernel part.
    #[inline]
    pub fn timing_key(&self) -> u16 {
        self.phase | ((self.kernel as u16) << 15)
    }
}

/// Kernel code and data sit at and above this address in every address space, as a real kernel
/// is mapped into every process: the memory system gives them no address-space tag, so a kernel
/// line is the same line for every thread on the machine.
pub const KERNEL_BASE: u64 = 1 << 51;
/// Kernel data regions start here (code regions below it).
const KERNEL_DATA_BASE: u64 = KERNEL_BASE + (1 << 50);
/// Kernel regions are placed by name in one of this many 4 GiB slots.
const KERNEL_SLOTS: u64 = 1 << 17;

/// Where the kernel region named `name` starts (`data`: in the data half): the same place in
/// every stream, whatever workload it runs.
fn kernel_region_base(name: &str, data: bool) -> u64 {
    let slot = derive_seed(0, name) % KERNEL_SLOTS;
    let half = if data { KERNEL_DATA_BASE } else { KERNEL_BASE };
    half + (slot << 32) + (slot % 61) * REGION_SKEW_BYTES
}

/// Something that produces a thread's instructions: a synthetic profile or a replayed trace.
pub trait InstructionSource: Send {
    fn next_instr(&mut self) -> Instr;
    /// Timing characteristics of phase `index` (what a trace cannot carry).
    fn phase_timing(&self, index: u16) -> PhaseTiming;
    /// Instructions left before the stream's behaviour may change (the end of its current
    /// phase), or `None` if it cannot tell: then its time-shared quanta are simulated whole,
    /// never credited at a measured rate (see [`crate::refill`]).
    fn steady_instructions(&self) -> Option<u64> {
        None
    }
    /// A copy of the stream as it stands (to continue a run two ways), or `None` if it cannot be
    /// copied: then every run that needs it starts from the beginning.
    fn try_clone(&self) -> Option<Box<dyn InstructionSource>> {
        None
    }
    /// Moves the stream on by at least `instructions` instructions that run without being
    /// simulated (the credited rest of a refill-only quantum), so that it stays where its program
    /// would be. By default they are generated and dropped.
    fn skip(&mut self, instructions: u64) {
        let mut done = 0;
        while done < instructions {
            done += self.next_instr().run as u64 + 1;
        }
    }
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
    fn of(m: &InstructionMix) -> Self {
        PhaseTiming {
            ilp: m.ilp,
            uops_per_instruction: m.uops_per_instruction,
            loads: m.loads,
            stores: m.stores,
            fp_ops: m.fp_ops,
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

/// An instruction mix as thresholds on a random draw, with the code and data it uses.
#[derive(Clone, Debug)]
struct Mix {
    t_load: u64,
    t_store: u64,
    t_branch: u64,
    /// Draws below this (and at or above `t_branch`) are locked instructions (kernel only).
    t_locked: u64,
    t_fp: u64,
    t_mispredict: u32,
    t_taken: u32,
    instr_bytes: u64,
    /// Bytes of the longest run and its event: nearer the end of a code area than this, a run
    /// may have to stop short of it.
    run_bytes: u64,
    /// (cumulative weight threshold, index into `code`).
    code: Vec<(u64, usize)>,
    /// (cumulative weight threshold, index into `data`).
    data: Vec<(u64, usize)>,
    timing: PhaseTiming,
}

/// The kernel part of a phase.
#[derive(Clone, Debug)]
struct KernelPart {
    mix: Mix,
    /// Instructions of one entry.
    entry_instructions: u64,
    /// Mean user instructions between entries (0: the phase runs only in the kernel).
    mean_gap: f64,
}

#[derive(Clone, Debug)]
struct Phase {
    instructions: u64,
    mix: Mix,
    kernel: Option<KernelPart>,
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
    /// Instructions left in the current kernel entry (0: running in user mode).
    kernel_left: u64,
    /// User instructions until the next kernel entry (`u64::MAX` in a phase without one).
    user_gap: u64,
    /// Where user code resumes after the kernel entry: (pc, area start, area end).
    user_resume: (u64, u64, u64),
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

/// Code and data areas of a stream, interned by region name and half (a user region and a
/// kernel region of one name are different memory).
#[derive(Default)]
struct Areas {
    code: Vec<CodeArea>,
    data: Vec<DataState>,
    code_names: BTreeMap<(String, bool), usize>,
    data_names: BTreeMap<(String, bool), usize>,
}

impl Areas {
    /// The code area of `c` (`kernel`: in the shared kernel half).
    fn code(&mut self, c: &CodeRegion, instr_bytes: u64, kernel: bool) -> usize {
        if let Some(&i) = (!c.name.is_empty())
            .then(|| self.code_names.get(&(c.name.clone(), kernel)))
            .flatten()
        {
            return i;
        }
        let i = self.code.len();
        let base = if kernel {
            kernel_region_base(&c.name, false)
        } else {
            (1u64 << 44) + ((i as u64 + 1) << 32) + i as u64 * REGION_SKEW_BYTES
        };
        self.code.push(CodeArea {
            base,
            size: c.size_bytes / instr_bytes * instr_bytes,
            quantiles: c.power_law().map(|l| quantiles(&l)).unwrap_or_default(),
        });
        if !c.name.is_empty() {
            self.code_names.insert((c.name.clone(), kernel), i);
        }
        i
    }

    /// The data area of `d` (`kernel`: in the shared kernel half).
    fn data(&mut self, d: &DataRegion, kernel: bool) -> usize {
        if let Some(&i) = (!d.name.is_empty())
            .then(|| self.data_names.get(&(d.name.clone(), kernel)))
            .flatten()
        {
            return i;
        }
        let i = self.data.len();
        let base = if kernel {
            kernel_region_base(&d.name, true)
        } else {
            ((i as u64 + 1) << 36) + i as u64 * REGION_SKEW_BYTES
        };
        let streams = d.streams.max(1) as u64;
        let slice = (d.size_bytes / streams) / d.stride_bytes * d.stride_bytes;
        self.data.push(DataState {
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
            self.data_names.insert((d.name.clone(), kernel), i);
        }
        i
    }

    /// The thresholds of a mix and the areas of its regions (`kernel`: in the kernel half).
    fn mix(
        &mut self,
        m: &InstructionMix,
        code: &[CodeRegion],
        data: &[DataRegion],
        kernel: bool,
    ) -> Mix {
        let bytes = m.instruction_bytes as u64;
        let code_idx: Vec<(f64, usize)> = code
            .iter()
            .map(|c| (c.weight, self.code(c, bytes, kernel)))
            .collect();
        let data_idx: Vec<(f64, usize)> = data
            .iter()
            .map(|d| (d.weight, self.data(d, kernel)))
            .collect();
        let mut acc = 0.0;
        let mut cum = |x: f64| {
            acc += x;
            threshold(acc)
        };
        Mix {
            t_load: cum(m.loads),
            t_store: cum(m.stores),
            t_branch: cum(m.branches),
            t_locked: cum(m.locked),
            t_fp: cum(m.fp_ops),
            t_mispredict: (threshold(m.branch_mispredict_rate) >> 32) as u32,
            t_taken: (threshold(m.taken_branches) >> 32) as u32,
            instr_bytes: bytes,
            run_bytes: (MAX_RUN as u64 + 1) * bytes,
            code: cumulative(code_idx.into_iter()),
            data: cumulative(data_idx.into_iter()),
            timing: PhaseTiming::of(m),
        }
    }

    fn phase(&mut self, p: &PhaseSpec) -> Phase {
        let mix = self.mix(&p.mix(), &p.code, &p.data, false);
        let kernel = p.kernel.as_ref().map(|k| KernelPart {
            mix: self.mix(&k.mix(), &k.code, &k.data, true),
            entry_instructions: k.instructions_per_entry,
            mean_gap: k.instructions_per_entry as f64 * (1.0 - k.share) / k.share,
        });
        Phase {
            instructions: p.instructions,
            mix,
            kernel,
        }
    }
}

impl SyntheticStream {
    /// A stream of `profile` from `seed`, starting `start_offset` instructions into its phase
    /// cycle (a staggered start).
    pub fn new(profile: &WorkloadProfile, seed: u64, start_offset: u64) -> Self {
        let mut areas = Areas::default();
        let phases = profile.phase.iter().map(|p| areas.phase(p)).collect();
        let mut s = SyntheticStream {
            rng: SimRng::new(seed),
            phases,
            code: areas.code,
            data: areas.data,
            phase: 0,
            remaining: 0,
            pc: 0,
            area_end: 0,
            area_start: 0,
            kernel_left: 0,
            user_gap: u64::MAX,
            user_resume: (0, 0, 0),
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
        self.kernel_left = 0;
        self.user_gap = self.draw_gap();
        self.jump(false);
    }

    /// User instructions until the next kernel entry: exponentially distributed around the
    /// phase's mean (at least one), none in a kernel-only phase, never in a user-only phase.
    fn draw_gap(&mut self) -> u64 {
        match &self.phases[self.phase].kernel {
            None => u64::MAX,
            Some(k) if k.mean_gap <= 0.0 => 0,
            Some(k) => {
                let mean = k.mean_gap;
                ((-mean * (1.0 - self.rng.unit()).ln()).round() as u64).max(1)
            }
        }
    }

    /// Enters the kernel: remembers where user code resumes and jumps into kernel code.
    fn enter_kernel(&mut self) {
        let k = self.phases[self.phase]
            .kernel
            .as_ref()
            .expect("a phase with kernel work");
        self.kernel_left = k.entry_instructions;
        self.user_resume = (self.pc, self.area_start, self.area_end);
        self.jump(true);
    }

    /// Returns from the kernel to where user code left off.
    fn leave_kernel(&mut self) {
        (self.pc, self.area_start, self.area_end) = self.user_resume;
        self.user_gap = self.draw_gap();
    }

    /// Moves the program counter to a random instruction of a code area chosen by weight, in
    /// the kernel's code or the user's.
    #[inline]
    fn jump(&mut self, kernel: bool) {
        let p = &self.phases[self.phase];
        let m = match (&p.kernel, kernel) {
            (Some(k), true) => &k.mix,
            _ => &p.mix,
        };
        let area = &self.code[pick(&m.code, self.rng.next_u64())];
        let slots = (area.size / m.instr_bytes).max(1);
        self.area_start = area.base;
        self.area_end = area.base + area.size;
        let slot = if area.quantiles.is_empty() {
            self.rng.below(slots)
        } else {
            ((skewed_fraction(&area.quantiles, self.rng.next_u64()) * slots as f64) as u64)
                .min(slots - 1)
        };
        self.pc = area.base + slot * m.instr_bytes;
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
        let entry = self.kernel_left == 0 && self.user_gap == 0;
        if entry {
            self.enter_kernel();
        }
        let kernel = self.kernel_left > 0;
        let p = &self.phases[self.phase];
        let m = match (&p.kernel, kernel) {
            (Some(k), true) => &k.mix,
            _ => &p.mix,
        };
        // Instructions left in this mode: the kernel entry, or user code until the next entry.
        let mut mode_left = if kernel {
            self.kernel_left
        } else {
            self.user_gap
        };
        let run_pc = self.pc;
        // Plain instructions accumulate into the run until an event, the end of the phase, the
        // end of the code area, a change of mode or the run limit: the instruction at index
        // `limit` ends the run whatever its draw.
        let mut limit = (self.remaining - 1).min(mode_left - 1).min(MAX_RUN as u64);
        let room = self.area_end.saturating_sub(self.pc);
        if room <= m.run_bytes {
            // Near the end of the code area (rarely: a division is dear).
            limit = limit.min(room.div_ceil(m.instr_bytes).saturating_sub(1));
        }
        let limit = limit as u32;
        let mut run = 0;
        let mut run_fp = 0;
        let r = loop {
            let r = self.rng.next_u64();
            if r < m.t_locked || run == limit {
                break r;
            }
            run += 1;
            run_fp += (r < m.t_fp) as u32;
        };
        self.remaining -= run as u64 + 1;
        mode_left -= run as u64 + 1;
        self.pc += run as u64 * m.instr_bytes;
        let pc = self.pc;
        self.pc += m.instr_bytes;
        if self.pc >= self.area_end {
            self.pc = self.area_start;
        }
        let mut instr = Instr {
            run,
            run_fp,
            run_pc,
            instr_bytes: m.instr_bytes as u32,
            kind: InstrKind::Int,
            pc,
            event_bytes: m.instr_bytes as u32,
            addr: 0,
            access_bytes: 1,
            dependent: false,
            mispredict: false,
            phase: self.phase as u16,
            kernel,
            entry,
        };
        let t_taken = m.t_taken;
        let t_mispredict = m.t_mispredict;
        if r < m.t_store || (r >= m.t_branch && r < m.t_locked) {
            instr.kind = if r < m.t_load {
                InstrKind::Load
            } else if r < m.t_store {
                InstrKind::Store
            } else {
                InstrKind::Locked
            };
            let region = pick(&m.data, self.rng.next_u64());
            let d = &mut self.data[region];
            instr.dependent =
                d.pattern == AccessPattern::PointerChase && instr.kind == InstrKind::Load;
            instr.addr = d.address(&mut self.rng);
        } else if r < m.t_branch {
            instr.kind = InstrKind::Branch;
            let r2 = self.rng.next_u64();
            instr.mispredict = (r2 as u32) < t_mispredict;
            if ((r2 >> 32) as u32) < t_taken {
                self.jump(kernel);
            }
        } else if r < m.t_fp {
            instr.kind = InstrKind::Fp;
        }
        if kernel {
            self.kernel_left = mode_left;
            if mode_left == 0 {
                self.leave_kernel();
            }
        } else {
            self.user_gap = mode_left;
        }
        instr
    }

    fn steady_instructions(&self) -> Option<u64> {
        Some(self.remaining)
    }

    fn try_clone(&self) -> Option<Box<dyn InstructionSource>> {
        Some(Box::new(self.clone()))
    }

    /// Advances the position in the phase cycle without drawing the skipped instructions: the
    /// profile describes each phase statistically, so only where the stream is in its phases
    /// matters.
    fn skip(&mut self, mut instructions: u64) {
        while instructions >= self.remaining {
            instructions -= self.remaining;
            let next = if self.phase + 1 == self.phases.len() {
                0
            } else {
                self.phase + 1
            };
            self.enter_phase(next);
        }
        self.remaining -= instructions;
    }

    fn phase_timing(&self, key: u16) -> PhaseTiming {
        let p = &self.phases[(key & 0x7fff) as usize];
        match &p.kernel {
            Some(k) if key & 0x8000 != 0 => k.mix.timing,
            _ => p.mix.timing,
        }
    }
}
