//! The smtsched microarchitectural simulator (DESIGN §5): exact set-associative caches with
//! per-thread attribution, an interval-style SMT out-of-order core, a fine-grained multithreaded
//! in-order core, shared caches and a memory path with bandwidth contention, and per-thread
//! counters. Deterministic: the same inputs and seed give bit-identical counters.

pub mod cache;
pub mod counters;
pub mod engine;
pub mod memory;
pub mod protocol;
pub mod refill;
pub mod rng;
pub mod share;
pub mod stream;
pub mod workload;

pub use counters::ThreadCounters;
pub use engine::{
    PlanError, RunOptions, RunResult, Sample, Simulation, ThreadPlan, ThreadResult, Window,
};
pub use protocol::{Protocol, ProtocolError};
pub use stream::{InstructionSource, SyntheticStream};
pub use workload::{synthetic_stream, Workload};
