//! The OS scheduling simulator (DESIGN §6, §7): tasks with priorities, time slices, blocking and
//! forking on a machine model; the Linux 2.4 baseline the thesis modified and a present-day
//! baseline; the policy interface and the SMT-aware policies; the interaction oracle that says how
//! fast each task runs beside its co-runners; online PR estimation; metrics and the timeline.

pub mod estimate;
pub mod matrix_estimate;
pub mod metrics;
pub mod oracle;
pub mod policy;
pub mod runs;
pub mod samples;
pub mod sim;
pub mod taskset;

pub use estimate::LinearModel;
pub use matrix_estimate::MatrixEstimates;
pub use metrics::{Metrics, Summary};
pub use oracle::{MeasuredOracle, Occupant, Oracle, SimulatedOracle};
pub use policy::{Policy, PolicyName, ALL_POLICIES};
pub use sim::{Baseline, Corunners, Estimator, EstimatorSpec, OsSim, SimConfig};
pub use taskset::{TaskSetSpec, TaskSpec};
