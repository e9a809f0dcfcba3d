//! A sweep file on arbitrary text: an error naming the field, or a sweep whose jobs are counted
//! without running any.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smtsched_experiments::sweep::{Sweep, SweepSpec, MAX_JOBS};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(spec) = toml::from_str::<SweepSpec>(text) else { return };
    if let Ok(s) = Sweep::new(spec) {
        assert!(s.jobs_total() <= MAX_JOBS);
    }
});
