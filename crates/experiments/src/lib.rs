//! Experiments as data, run as jobs. Today: sweeps (machines × overrides × workloads ×
//! placements or policies × seeds) that run in shards on one host or as a Slurm job array and
//! merge into one result.

pub mod slurm;
pub mod sweep;
