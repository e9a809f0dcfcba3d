//! A workload description on arbitrary text: an error, or a profile whose mix and kernel builds
//! are usable, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smtsched_model::{workload_from_source, KernelBuild, Origin, Source};

fn source(data: &[u8]) -> Option<Source> {
    Some(Source {
        origin: Origin::Inline("fuzz".into()),
        text: std::str::from_utf8(data).ok()?.to_string(),
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(src) = source(data) else { return };
    if let Ok(p) = workload_from_source(&src, &[]) {
        for ph in &p.phase {
            let _ = ph.mix();
        }
        let _ = p.cycle_instructions();
        let up = p.built_for(KernelBuild::Up);
        assert_eq!(up.phase.len(), p.phase.len());
    }
});
