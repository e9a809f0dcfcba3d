//! The trace reader on arbitrary bytes: opening, verifying and decoding must return an error or
//! succeed, never panic, hang or allocate without bound. A verified trace must replay.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smtsched_trace::format::{decode_raw_chunk, Chunk};
use smtsched_trace::replay::{ReplayTiming, TraceWorkload};
use smtsched_trace::TraceFile;
use smtsched_uarch::stream::InstructionSource;

fuzz_target!(|data: &[u8]| {
    // The column decoder directly (the checksums would keep most mutations away from it).
    let mut chunk = Chunk::default();
    let _ = decode_raw_chunk(data, &mut chunk);
    // The whole-file reader.
    if let Ok(t) = TraceFile::from_bytes(data.to_vec(), "fuzz") {
        if t.verify().is_ok() {
            let timing = ReplayTiming {
                source: "fuzz".into(),
                ilp: 1.0,
                uops_per_instruction: 1.0,
                fp_ops: 0.1,
                mispredicts_per_instruction: 0.01,
            };
            let w = TraceWorkload::from_file(t, timing, "fuzz", "fuzz");
            let mut s = w.stream_at(3);
            for _ in 0..1000 {
                let e = s.next_instr();
                assert!(e.run <= smtsched_uarch::stream::MAX_RUN);
                assert!(e.run_pc <= e.pc);
            }
        }
    }
});
