//! A windows CSV on arbitrary text, as `train fit FILE` reads it: an error naming a line, or
//! windows that write back to CSV and read again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smtsched_estimate::windows::{parse_csv, to_csv};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_csv(text, "fuzz.csv") {
        Ok(set) => {
            let again = parse_csv(&to_csv(&set), "again.csv").expect("our own CSV reads back");
            assert_eq!(again.rows.len(), set.rows.len());
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
});
