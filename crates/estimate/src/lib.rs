//! Performance-ratio estimation for smtsched (DESIGN §8, thesis §3.4.1): training windows from
//! simulated or measured runs, ordinary least squares with the statistics of the thesis's Table
//! 3.8, a gradient-boosted-trees alternative, and validation on held-out workloads.

pub mod error;
pub mod simulate;
pub mod windows;

pub use error::EstimateError;
pub use windows::{WindowRecord, WindowSet};
pub mod compare;
pub mod crossval;
mod csv_table;
pub mod fit;
pub mod gbt;
pub mod linalg;
pub mod ols;
pub mod samples;
pub mod validate;
