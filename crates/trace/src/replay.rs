//! A trace as a simulator workload: instruction addresses and data accesses come from the trace,
//! the timing the trace cannot carry (ILP, micro-ops, floating-point share, mispredictions) from a
//! named profile or the documented defaults (`data/replay-defaults.toml`).
//!
//! How a trace becomes the simulator's events ([`Instr`]):
//!
//! * consecutive instructions that follow each other in memory and make no data access form the
//!   run of plain instructions before the next event (at most [`MAX_RUN`]);
//! * an instruction with a data access is a load (lackey `L` and `M`, as cachegrind counts a
//!   modify) or a store; an instruction after which execution jumps is a branch (a taken one: the
//!   trace cannot see branches that fall through); a run that hits [`MAX_RUN`] ends in an integer
//!   or floating-point instruction;
//! * an instruction's second and later accesses become extra events at the same address; each
//!   adds one instruction, which is taken back from the next run, so instruction counts match the
//!   trace;
//! * an access that crosses a line boundary looks up both lines, at every level it reaches, and
//!   counts one access and at most one miss per level, as cachegrind counts it;
//! * the run's addresses are `run_pc` up to the event's `pc`: exactly the bytes the program
//!   fetched, so every instruction-cache line the program touched is fetched. Instruction lengths
//!   vary on x86; `instr_bytes` is the run's mean length (used only by the in-order core, to place
//!   each plain instruction).
//!
//! Floating-point operations and mispredictions are spread evenly (deterministic accumulators, no
//! randomness): a share `fp_ops` of plain instructions are floating-point, and mispredictions per
//! instruction match the profile, placed on the trace's taken branches. The stream loops when the
//! trace ends, like a program run again; copies after the first start at an offset drawn from
//! (seed, copy).

use crate::error::{Result, TraceError};
use crate::format::{is_trace_file, AccessKind, Chunk, TraceFile};
use smtsched_model::{load_workload, workload_from_source, Origin, Source, WorkloadProfile};
use smtsched_uarch::rng::{derive_seed, mix64};
use smtsched_uarch::stream::{Instr, InstrKind, InstructionSource, PhaseTiming, MAX_RUN};
use smtsched_uarch::Workload;
use std::path::Path;
use std::sync::Arc;

/// Timing characteristics a trace replay takes from a profile.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ReplayTiming {
    /// The profile they came from (`trace-defaults` for the built-in defaults).
    pub source: String,
    pub ilp: f64,
    pub uops_per_instruction: f64,
    /// Share of instructions that are floating-point operations.
    pub fp_ops: f64,
    /// Branch mispredictions per instruction.
    pub mispredicts_per_instruction: f64,
}

const DEFAULTS: &str = include_str!("../data/replay-defaults.toml");

impl ReplayTiming {
    /// Instruction-weighted means over the profile's phases.
    pub fn from_profile(p: &WorkloadProfile) -> Self {
        let total: f64 = p
            .phase
            .iter()
            .map(|x| x.instructions as f64)
            .sum::<f64>()
            .max(1.0);
        let mean = |f: &dyn Fn(&smtsched_model::PhaseSpec) -> f64| {
            p.phase
                .iter()
                .map(|x| f(x) * x.instructions as f64)
                .sum::<f64>()
                / total
        };
        ReplayTiming {
            source: p.name.clone(),
            ilp: mean(&|x| x.ilp),
            uops_per_instruction: mean(&|x| x.uops_per_instruction),
            fp_ops: mean(&|x| x.fp_ops),
            mispredicts_per_instruction: mean(&|x| x.branches * x.branch_mispredict_rate),
        }
    }

    /// The documented defaults (`crates/trace/data/replay-defaults.toml`).
    pub fn defaults() -> Self {
        let source = Source {
            origin: Origin::Inline("crates/trace/data/replay-defaults.toml".into()),
            text: DEFAULTS.to_string(),
        };
        let p = workload_from_source(&source, &[]).expect("the embedded defaults are valid");
        Self::from_profile(&p)
    }
}

/// A recorded trace that runs as a workload.
pub struct TraceWorkload {
    name: String,
    program: String,
    file: Arc<TraceFile>,
    timing: ReplayTiming,
    phase: PhaseTiming,
    /// Mispredictions owed per jump.
    mispredict_per_jump: f64,
}

impl TraceWorkload {
    /// Opens (and fully verifies) the trace at `path`; `name` is what reports show.
    pub fn open(path: &Path, timing: ReplayTiming, name: &str) -> Result<Self> {
        let file = TraceFile::open(path)?;
        file.verify()?;
        Ok(Self::from_file(
            file,
            timing,
            name,
            &path
                .canonicalize()
                .unwrap_or_else(|_| path.to_path_buf())
                .display()
                .to_string(),
        ))
    }

    /// A workload over an already verified trace.
    pub fn from_file(file: TraceFile, timing: ReplayTiming, name: &str, program: &str) -> Self {
        let s = *file.summary();
        let n = s.instructions.max(1) as f64;
        let phase = PhaseTiming {
            ilp: timing.ilp,
            uops_per_instruction: timing.uops_per_instruction,
            loads: (s.loads + s.modifies) as f64 / n,
            stores: s.stores as f64 / n,
            fp_ops: timing.fp_ops,
        };
        let mispredict_per_jump = if s.jumps == 0 {
            0.0
        } else {
            (timing.mispredicts_per_instruction * n / s.jumps as f64).min(1.0)
        };
        TraceWorkload {
            name: name.to_string(),
            program: program.to_string(),
            file: Arc::new(file),
            timing,
            phase,
            mispredict_per_jump,
        }
    }

    pub fn file(&self) -> &TraceFile {
        &self.file
    }

    pub fn timing(&self) -> &ReplayTiming {
        &self.timing
    }

    /// A stream starting at instruction `start` of the trace.
    pub fn stream_at(&self, start: u64) -> TraceStream {
        let chunks = self.file.chunks();
        let total = self.file.summary().instructions;
        let start = if total == 0 { 0 } else { start % total };
        let mut first = 0;
        let mut before = 0u64;
        while before + chunks[first].instructions as u64 <= start {
            before += chunks[first].instructions as u64;
            first += 1;
        }
        let mut s = TraceStream {
            file: Arc::clone(&self.file),
            chunk: Chunk::default(),
            next_chunk: first,
            events: Vec::new(),
            pos: 0,
            run: 0,
            run_pc: 0,
            debt: 0,
            fp_acc: 0.0,
            mis_acc: 0.0,
            fp: self.timing.fp_ops.clamp(0.0, 1.0),
            p_mis: self.mispredict_per_jump,
            timing: self.phase,
        };
        s.fill();
        // Skip to `start` within the chunk.
        let mut skip = start - before;
        while skip > 0 && s.pos < s.events.len() {
            let n = s.events[s.pos].run as u64 + 1;
            if n > skip {
                break;
            }
            skip -= n;
            s.pos += 1;
        }
        if s.pos == s.events.len() {
            s.fill();
        }
        s
    }

    /// Calls `f` on every event of one pass over the trace, in order.
    pub fn for_each_event(&self, mut f: impl FnMut(&Instr)) {
        let mut s = self.stream_at(0);
        loop {
            s.events[s.pos..].iter().for_each(&mut f);
            if s.next_chunk == 0 {
                // The next fill would wrap: the pass is complete.
                break;
            }
            s.fill();
        }
    }

    /// Instructions one pass over the trace delivers as events (the trace's count, less the few
    /// extra events not yet paid back by a following run when the trace ends).
    pub fn replayed_instructions(&self) -> u64 {
        let mut n = 0;
        self.for_each_event(|e| n += e.run as u64 + 1);
        n
    }
}

impl Workload for TraceWorkload {
    fn name(&self) -> &str {
        &self.name
    }

    fn program(&self) -> &str {
        &self.program
    }

    fn stream(&self, seed: u64, copy: u32) -> Box<dyn InstructionSource> {
        let start = if copy == 0 {
            0
        } else {
            mix64(derive_seed(seed, &format!("{}#{}", self.name, copy)))
        };
        Box::new(self.stream_at(start))
    }
}

/// The replay stream of one thread.
pub struct TraceStream {
    file: Arc<TraceFile>,
    chunk: Chunk,
    next_chunk: usize,
    events: Vec<Instr>,
    pos: usize,
    // Translation state, carried across chunks.
    run: u32,
    run_pc: u64,
    debt: u64,
    fp_acc: f64,
    mis_acc: f64,
    fp: f64,
    p_mis: f64,
    timing: PhaseTiming,
}

impl TraceStream {
    /// Decodes the next chunk (wrapping at the end) into events.
    fn fill(&mut self) {
        self.events.clear();
        self.pos = 0;
        while self.events.is_empty() {
            let i = self.next_chunk;
            let chunks = self.file.chunks();
            if let Err(e) = self.file.read_chunk(i, &mut self.chunk) {
                // The file was verified when the workload was opened: it changed since.
                panic!("trace changed while being replayed: {e}");
            }
            self.next_chunk = (i + 1) % chunks.len();
            let next_pc = chunks[self.next_chunk].first_pc;
            let chunk = std::mem::take(&mut self.chunk);
            self.translate(&chunk, next_pc);
            self.chunk = chunk;
        }
    }

    fn translate(&mut self, chunk: &Chunk, next_first_pc: u64) {
        let mut k = 0usize;
        let insns = &chunk.insns;
        for (i, insn) in insns.iter().enumerate() {
            let next_pc = insns.get(i + 1).map_or(next_first_pc, |n| n.pc);
            let falls = next_pc == insn.pc + insn.size as u64;
            if self.run == 0 {
                self.run_pc = insn.pc;
            }
            let accs = &chunk.accesses[k..k + insn.accesses as usize];
            k += insn.accesses as usize;
            if accs.is_empty() && falls && self.run < MAX_RUN {
                self.run += 1;
                continue;
            }
            // This instruction is the event that ends the run.
            let mut run = self.run;
            let cut = self.debt.min(run as u64) as u32;
            run -= cut;
            self.debt -= cut as u64;
            self.fp_acc += run as f64 * self.fp;
            let run_fp = (self.fp_acc as u32).min(run);
            self.fp_acc -= run_fp as f64;
            let instr_bytes = if run > 0 {
                ((insn.pc - self.run_pc) / run as u64) as u32
            } else {
                insn.size
            };
            let mut ev = Instr {
                run,
                run_fp,
                run_pc: self.run_pc,
                instr_bytes,
                kind: InstrKind::Int,
                pc: insn.pc,
                event_bytes: insn.size,
                addr: 0,
                access_bytes: 1,
                dependent: false,
                mispredict: false,
                phase: 0,
                kernel: false,
                entry: false,
            };
            self.run = 0;
            if !falls {
                self.mis_acc += self.p_mis;
            }
            match accs.first() {
                Some(a) => {
                    ev.kind = kind_of(a.kind);
                    ev.addr = a.addr;
                    ev.access_bytes = access_bytes(a.size);
                }
                None if !falls => {
                    ev.kind = InstrKind::Branch;
                    if self.mis_acc >= 1.0 {
                        ev.mispredict = true;
                        self.mis_acc -= 1.0;
                    }
                }
                None => {
                    self.fp_acc += self.fp;
                    if self.fp_acc >= 1.0 {
                        ev.kind = InstrKind::Fp;
                        self.fp_acc -= 1.0;
                    }
                }
            }
            self.events.push(ev);
            for a in accs.iter().skip(1) {
                self.events.push(Instr {
                    run: 0,
                    run_fp: 0,
                    run_pc: insn.pc,
                    kind: kind_of(a.kind),
                    addr: a.addr,
                    access_bytes: access_bytes(a.size),
                    ..ev
                });
                self.debt += 1;
            }
        }
    }
}

/// An access's size as an event carries it (trace sizes are capped well below this).
fn access_bytes(size: u32) -> u16 {
    size.clamp(1, u16::MAX as u32) as u16
}

fn kind_of(k: AccessKind) -> InstrKind {
    match k {
        AccessKind::Load | AccessKind::Modify => InstrKind::Load,
        AccessKind::Store => InstrKind::Store,
    }
}

impl InstructionSource for TraceStream {
    #[inline]
    fn next_instr(&mut self) -> Instr {
        if self.pos == self.events.len() {
            self.fill();
        }
        let e = self.events[self.pos];
        self.pos += 1;
        e
    }

    fn phase_timing(&self, _index: u16) -> PhaseTiming {
        self.timing
    }
}

/// Splits a workload spec into a trace file and an optional timing profile: `FILE` or
/// `FILE@PROFILE`, where FILE starts with the trace signature. `None` if the spec names no trace.
pub fn trace_spec(spec: &str) -> Option<(&str, Option<&str>)> {
    // A file named as traces are (`.smtt`) is one, damaged or not: its reading says what is
    // wrong with it, not a TOML parser.
    let trace =
        |p: &Path| is_trace_file(p) || (p.extension().is_some_and(|e| e == "smtt") && p.is_file());
    if trace(Path::new(spec)) {
        return Some((spec, None));
    }
    let (file, profile) = spec.rsplit_once('@')?;
    trace(Path::new(file)).then_some((file, Some(profile)))
}

/// Loads `spec` as a trace workload if it names a trace file (`FILE` or `FILE@PROFILE`); returns
/// `None` when it does not, so that the caller can try a profile.
pub fn load_trace_workload(spec: &str) -> Result<Option<TraceWorkload>> {
    let Some((file, profile)) = trace_spec(spec) else {
        if let Some((file, _)) = spec.rsplit_once('@') {
            if Path::new(file).is_file() {
                return Err(TraceError::Invalid(format!(
                    "{spec}: {file} is not a trace file (FILE@PROFILE takes a trace made by `smtsched trace record` or `import`)"
                )));
            }
        }
        return Ok(None);
    };
    let timing = match profile {
        Some(p) => ReplayTiming::from_profile(&load_workload(p, &[])?),
        None => ReplayTiming::defaults(),
    };
    TraceWorkload::open(Path::new(file), timing, spec).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{TraceMeta, TraceWriter};

    type Rec<'a> = (u64, u32, &'a [(AccessKind, u64, u32)]);

    fn workload(insns: &[Rec], timing: ReplayTiming) -> TraceWorkload {
        let mut w = TraceWriter::new(Vec::new()).unwrap();
        for &(pc, size, accs) in insns {
            w.instruction(pc, size).unwrap();
            for &(k, a, s) in accs {
                w.access(k, a, s).unwrap();
            }
        }
        let bytes = w.finish(&TraceMeta::default()).unwrap().0;
        let f = TraceFile::from_bytes(bytes, "t").unwrap();
        f.verify().unwrap();
        TraceWorkload::from_file(f, timing, "t", "t")
    }

    fn no_timing() -> ReplayTiming {
        ReplayTiming {
            source: "test".into(),
            ilp: 1.0,
            uops_per_instruction: 1.0,
            fp_ops: 0.0,
            mispredicts_per_instruction: 0.0,
        }
    }

    #[test]
    fn hand_worked_events() {
        use AccessKind::*;
        // A loop body: 3 plain, a load, 2 plain, a store that crosses a line, then a plain
        // instruction that jumps back; then a push-like instruction with a load and a store.
        let trace: Vec<Rec> = vec![
            (0x100, 4, &[]),
            (0x104, 2, &[]),
            (0x106, 3, &[]),
            (0x109, 5, &[(Load, 0x1000, 8)]),
            (0x10e, 4, &[]),
            (0x112, 4, &[]),
            (0x116, 3, &[(Store, 0x203c, 8)]),
            (0x119, 2, &[]), // jumps to 0x400
            (0x400, 6, &[(Load, 0x3000, 8), (Store, 0x7ff0, 8)]),
            (0x406, 2, &[]),
            (0x408, 2, &[]),
            (0x40a, 1, &[]), // jumps to 0x100 (the trace loops)
        ];
        let w = workload(&trace, no_timing());
        let mut s = w.stream_at(0);
        let ev: Vec<Instr> = (0..6).map(|_| s.next_instr()).collect();
        let brief: Vec<(u32, u64, u64, InstrKind, u64, u16)> = ev
            .iter()
            .map(|e| (e.run, e.run_pc, e.pc, e.kind, e.addr, e.access_bytes))
            .collect();
        assert_eq!(
            brief,
            vec![
                (3, 0x100, 0x109, InstrKind::Load, 0x1000, 8),
                // A store crossing a line boundary (0x203c..0x2043): its size goes with it.
                (2, 0x10e, 0x116, InstrKind::Store, 0x203c, 8),
                (0, 0x119, 0x119, InstrKind::Branch, 0, 1),
                (0, 0x400, 0x400, InstrKind::Load, 0x3000, 8),
                // The second access: an extra event at the same pc.
                (0, 0x400, 0x400, InstrKind::Store, 0x7ff0, 8),
                // Two plain instructions, one taken back for the extra event.
                (1, 0x406, 0x40a, InstrKind::Branch, 0, 1),
            ]
        );
        assert_eq!(ev[0].instr_bytes, 3); // (0x109 - 0x100) / 3
                                          // 12 instructions in the trace, 12 delivered per pass.
        let n: u64 = ev.iter().map(|e| e.run as u64 + 1).sum();
        assert_eq!(n, 12);
        assert_eq!(w.replayed_instructions(), 12);
        // The stream loops.
        assert_eq!(s.next_instr().pc, 0x109);
    }

    #[test]
    fn defaults_load() {
        let d = ReplayTiming::defaults();
        assert_eq!(d.source, "trace-defaults");
        assert_eq!((d.ilp, d.uops_per_instruction, d.fp_ops), (2.0, 1.3, 0.0));
        assert!((d.mispredicts_per_instruction - 0.0075).abs() < 1e-12);
    }

    #[test]
    fn long_straight_code_is_cut_into_runs_of_max_run() {
        let trace: Vec<Rec> = (0..200).map(|i| (0x1000 + 4 * i, 4, &[][..])).collect();
        let w = workload(&trace, no_timing());
        let mut s = w.stream_at(0);
        let e = s.next_instr();
        assert_eq!(
            (e.run, e.kind, e.pc),
            (MAX_RUN, InstrKind::Int, 0x1000 + 4 * 64)
        );
        assert_eq!(e.instr_bytes, 4);
    }

    #[test]
    fn fp_and_mispredicts_follow_the_profile() {
        // 10 instructions per loop iteration, one taken branch each.
        let body: Vec<Rec> = (0..10).map(|i| (0x1000 + 4 * i, 4, &[][..])).collect();
        let mut trace = Vec::new();
        for _ in 0..1000 {
            trace.extend(body.iter().copied());
        }
        let timing = ReplayTiming {
            fp_ops: 0.25,
            mispredicts_per_instruction: 0.01,
            ..no_timing()
        };
        let w = workload(&trace, timing);
        let mut s = w.stream_at(0);
        let (mut n, mut fp, mut mis, mut br) = (0u64, 0u64, 0u64, 0u64);
        while n < 10_000 {
            let e = s.next_instr();
            n += e.run as u64 + 1;
            fp += e.run_fp as u64 + (e.kind == InstrKind::Fp) as u64;
            mis += e.mispredict as u64;
            br += (e.kind == InstrKind::Branch) as u64;
        }
        assert_eq!(br, 1000);
        assert_eq!(mis, 100); // 0.01 per instruction
        assert!((2249..=2250).contains(&fp), "{fp}"); // 0.25 of the 9000 plain instructions
    }

    #[test]
    fn copies_start_elsewhere_but_deterministically() {
        let accs: Vec<[(AccessKind, u64, u32); 1]> = (0..5000)
            .map(|i| [(AccessKind::Load, 0x10_0000 + 8 * i, 8)])
            .collect();
        let trace: Vec<Rec> = (0..5000)
            .map(|i| (0x1000 + 4 * i as u64, 4, &accs[i][..]))
            .collect();
        let w = workload(&trace, no_timing());
        let a = w.stream(7, 1).next_instr();
        let b = w.stream(7, 1).next_instr();
        let c = w.stream(7, 0).next_instr();
        assert_eq!(a, b);
        assert_ne!(a.pc, c.pc);
        assert_eq!(c.pc, 0x1000);
    }
}
