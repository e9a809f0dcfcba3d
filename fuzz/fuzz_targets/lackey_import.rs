//! The lackey importer on arbitrary text: it must import or return an error naming a line, never
//! panic or hang; what it writes must read back and verify, with the counts it reported.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smtsched_trace::lackey::import_lackey;
use smtsched_trace::{TraceFile, TraceMeta, TraceWriter};

fuzz_target!(|data: &[u8]| {
    let mut w = TraceWriter::new(Vec::new()).unwrap();
    let limit = (data.first() == Some(&b'#')).then_some(5);
    match import_lackey(data, "fuzz", "out", &mut w, limit, None) {
        Ok(stats) => {
            let (bytes, summary) = w.finish(&TraceMeta::default()).unwrap();
            assert_eq!(summary.instructions, stats.instructions);
            assert_eq!(summary.accesses(), stats.accesses);
            if stats.instructions > 0 {
                let t = TraceFile::from_bytes(bytes, "fuzz").expect("written trace reads back");
                t.verify().expect("written trace verifies");
                assert_eq!(*t.summary(), summary);
            }
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "multi-line error: {msg}");
        }
    }
});
