//! The real machine (DESIGN §9): topology from sysfs, performance counters through
//! `perf_event_open`, CPU affinity, native benchmark kernels, and the co-run measurement harness
//! that writes the same performance-ratio matrix as the simulator.

pub mod error;
pub mod sysfs;
pub mod topology;

pub use error::{HostError, Result};
pub use topology::{Cache, CacheKind, Core, NumaNode, Package, Topology};
