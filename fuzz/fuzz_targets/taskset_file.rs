//! A task set on arbitrary text, as `run -t FILE` reads it: an error or a checked set.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smtsched_model::{Origin, Source};
use smtsched_os::taskset::taskset_from_source;

fn source(data: &[u8]) -> Option<Source> {
    Some(Source {
        origin: Origin::Inline("fuzz".into()),
        text: std::str::from_utf8(data).ok()?.to_string(),
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(src) = source(data) else { return };
    if let Ok(set) = taskset_from_source(&src) {
        assert!(set.oracle_workloads().len() >= set.tasks.len());
    }
});
