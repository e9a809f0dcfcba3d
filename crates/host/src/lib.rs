//! The real machine (DESIGN §9): topology from sysfs, performance counters through
//! `perf_event_open`, CPU affinity, native benchmark kernels, and the co-run measurement harness
//! that writes the same performance-ratio matrix as the simulator.
//!
//! ```
//! use smtsched_host::{CounterSet, Event, KernelKind, KernelSpec, SysfsTopology, Target, Topology};
//!
//! // Topology: `/` is the live machine; tests pass an unpacked sysfs snapshot instead.
//! let topo = Topology::live()?;
//! assert!(!topo.online.is_empty());
//! println!("{} CPUs, {} thread(s) per core", topo.online.len(), topo.threads_per_core());
//!
//! // Counters around a short run of a built-in kernel. Hardware events may be unsupported
//! // (virtual machines often have no PMU): then they have a reason and no value.
//! let mut counters = CounterSet::open(&[Event::TaskClockNs, Event::Instructions], Target::SelfAndDescendants)?;
//! counters.enable()?;
//! let before = counters.read()?;
//! let mut kernel = KernelSpec { kind: KernelKind::DenseFp, work: 100_000, footprint_bytes: 96 << 10 }.prepare(1)?;
//! let run = kernel.timed_run();
//! let counted = counters.read()?.since(&before).scaled();
//! assert!(run.seconds > 0.0 && counted[&Event::TaskClockNs] > 0.0);
//! for (event, status) in counters.status() {
//!     println!("{event}: {status}");
//! }
//! # Ok::<(), smtsched_host::HostError>(())
//! ```

pub mod affinity;
pub mod cgroup;
pub mod error;
pub mod kernels;
pub mod leftovers;
pub mod looper;
pub mod machine_file;
pub mod measure;
pub mod perf;
pub mod procgroup;
pub mod rundir;
pub mod schedrun;
pub mod shutdown;
pub mod sysfs;
pub mod topology;
pub mod webserver;

pub use error::{HostError, Result};
pub use kernels::{KernelKind, KernelSpec};
pub use perf::{CounterSet, Event, EventStatus, Target};
pub use shutdown::Shutdown;
pub use topology::{Cache, CacheKind, Core, NumaNode, Package, SysfsTopology, Topology};
