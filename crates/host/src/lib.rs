//! The real machine (DESIGN §9): topology from sysfs, performance counters through
//! `perf_event_open`, CPU affinity, native benchmark kernels, and the co-run measurement harness
//! that writes the same performance-ratio matrix as the simulator.

pub mod affinity;
pub mod error;
pub mod kernels;
pub mod looper;
pub mod measure;
pub mod perf;
pub mod shutdown;
pub mod sysfs;
pub mod topology;

pub use error::{HostError, Result};
pub use kernels::{KernelKind, KernelSpec};
pub use perf::{CounterSet, Event, EventStatus, Target};
pub use shutdown::Shutdown;
pub use topology::{Cache, CacheKind, Core, NumaNode, Package, Topology};
