//! An experiment on arbitrary text, as `reproduce FILE` reads it: an error or a checked
//! experiment whose task set is usable.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smtsched_model::{Origin, Source};
use smtsched_experiments::experiment::experiment_from_source;

fn source(data: &[u8]) -> Option<Source> {
    Some(Source {
        origin: Origin::Inline("fuzz".into()),
        text: std::str::from_utf8(data).ok()?.to_string(),
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(src) = source(data) else { return };
    if let Ok(e) = experiment_from_source(&src) {
        let set = e.task_set();
        assert_eq!(set.tasks.len(), e.tasks.len());
    }
});
