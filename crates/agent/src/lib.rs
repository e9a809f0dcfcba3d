//! `smtsched agent`: the policies the simulator evaluates, applied to live Linux processes
//! (DESIGN §9). Every period (default 100 ms) the agent samples the threads it manages from
//! `/proc` (and hardware counters where the PMU has them) into the same
//! [`smtsched_os::policy::PeriodView`] the OS simulator builds, calls the same policy object,
//! and applies its [`smtsched_os::policy::Decisions`] through `sched_setaffinity`, nice levels or
//! cgroup weights, and `prctl(PR_SCHED_CORE)`. Every thread's settings are recorded in a state
//! file before the first change and put back on exit, on SIGINT and SIGTERM, and after SIGKILL by
//! the next start.

pub mod agent;
pub mod control;
pub mod error;
pub mod observe;
pub mod proc;
pub mod sample;
pub mod state;
pub mod targets;

pub use agent::{Agent, AgentConfig, AgentReport, EstimateSource, StopReason, WeightsVia};
pub use error::{AgentError, Result};
