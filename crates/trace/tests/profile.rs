//! `trace profile` on a trace whose behaviour is known: the stream of a built-in profile written
//! out as a trace. The derived profile must follow the trace's miss-ratio curve closely and keep
//! its access mix.

use smtsched_model::load_workload;
use smtsched_trace::format::{AccessKind, TraceFile, TraceMeta, TraceWriter};
use smtsched_trace::profile::derive;
use smtsched_trace::replay::ReplayTiming;
use smtsched_uarch::stream::{InstrKind, InstructionSource};
use smtsched_uarch::synthetic_stream;

#[test]
fn a_profile_derived_from_a_synthetic_trace_follows_its_miss_ratio_curve() {
    let source = load_workload("gzip-like", &[]).unwrap();
    let mut s = synthetic_stream(&source, 3, 0);
    let mut w = TraceWriter::new(Vec::new()).unwrap();
    let mut n = 0u64;
    while n < 1_500_000 {
        let e = s.next_instr();
        for i in 0..e.run as u64 {
            w.instruction(e.run_pc + i * e.instr_bytes as u64, e.instr_bytes)
                .unwrap();
        }
        w.instruction(e.pc, e.instr_bytes).unwrap();
        match e.kind {
            InstrKind::Load => w.access(AccessKind::Load, e.addr, 8).unwrap(),
            InstrKind::Store => w.access(AccessKind::Store, e.addr, 8).unwrap(),
            _ => {}
        }
        n += e.run as u64 + 1;
    }
    let bytes = w.finish(&TraceMeta::default()).unwrap().0;
    let t = TraceFile::from_bytes(bytes, "gzip-like.smtt").unwrap();
    let d = derive(&t, "derived", &ReplayTiming::defaults()).unwrap();
    let sum = t.summary();
    let p = &d.profile.phase;
    let loads: f64 = p
        .iter()
        .map(|x| x.loads * x.instructions as f64)
        .sum::<f64>()
        / n as f64;
    assert!((loads - sum.loads as f64 / n as f64).abs() < 1e-9);
    assert!((loads - 0.28).abs() < 0.01, "{loads}");
    let worst = d
        .data_curve
        .iter()
        .map(|&(_, a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    for &(c, a, b) in &d.data_curve {
        eprintln!("{:>8} B  trace {a:.4}  profile {b:.4}", c * 64);
    }
    assert!(worst < 0.03, "largest miss-ratio difference {worst}");
    // One phase: the source profile has one.
    assert_eq!(d.phase_starts, vec![0]);
}
