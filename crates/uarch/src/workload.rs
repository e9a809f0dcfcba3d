//! A workload as the simulator runs it: anything that can produce a thread's instruction stream
//! from a seed — a synthetic profile, or (elsewhere) a recorded trace of a real program.

use crate::rng::{derive_seed, mix64};
use crate::stream::{InstructionSource, SyntheticStream};
use smtsched_model::WorkloadProfile;

/// Something a thread can run.
pub trait Workload: Sync {
    /// The name copies are counted by and reports show.
    fn name(&self) -> &str;
    /// A program identity: copies of one program share code (text pages) in the caches.
    fn program(&self) -> &str {
        self.name()
    }
    /// Whether copies running together are threads of one process, sharing user memory.
    fn threads_share_memory(&self) -> bool {
        false
    }
    /// The stream of copy `copy` of this workload under `seed`. Copies get their own streams and a
    /// staggered start, as the thesis's random start delay did.
    fn stream(&self, seed: u64, copy: u32) -> Box<dyn InstructionSource>;
}

impl Workload for WorkloadProfile {
    fn name(&self) -> &str {
        &self.name
    }

    fn threads_share_memory(&self) -> bool {
        self.threads_share_memory
    }

    fn stream(&self, seed: u64, copy: u32) -> Box<dyn InstructionSource> {
        Box::new(synthetic_stream(self, seed, copy))
    }
}

/// The synthetic stream of copy `copy` of `profile`: its own seed, and for copies after the first
/// a start somewhere in the profile's phase cycle.
pub fn synthetic_stream(profile: &WorkloadProfile, seed: u64, copy: u32) -> SyntheticStream {
    let s = derive_seed(seed, &format!("{}#{}", profile.name, copy));
    let offset = if copy == 0 {
        0
    } else {
        mix64(s) % profile.cycle_instructions().max(1)
    };
    SyntheticStream::new(profile, s, offset)
}
