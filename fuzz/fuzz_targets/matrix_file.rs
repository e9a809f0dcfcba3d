//! A PR matrix on arbitrary bytes, as `run --oracle measured:FILE` reads it: a JSON error, a
//! validation error, or a whole matrix whose grid has every cell.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smtsched_model::PrMatrix;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = serde_json::from_slice::<PrMatrix>(data) else { return };
    if m.validate().is_ok() {
        let grid = m.grid();
        assert_eq!(grid.len(), m.workloads.len());
        for row in grid {
            assert!(row.iter().all(|c| c.is_some_and(|v| v.is_finite())));
        }
    }
});
