//! A machine description on arbitrary text: parse and validation return an error (one line) or a
//! machine whose every CPU has a place and whose caches form a path, never panic or allocate
//! without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smtsched_model::{machine_from_source, CacheContents, Origin, Source};

fn source(data: &[u8]) -> Option<Source> {
    Some(Source {
        origin: Origin::Inline("fuzz".into()),
        text: std::str::from_utf8(data).ok()?.to_string(),
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(src) = source(data) else { return };
    match machine_from_source(&src, &[]) {
        Ok(m) => {
            for cpu in 0..m.logical_cpus() {
                assert!(m.cpu_location(cpu).is_some(), "CPU {cpu} has no place");
            }
            assert!(!m.cache_path(CacheContents::Data).is_empty());
            assert!(!m.cache_path(CacheContents::Instructions).is_empty());
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
