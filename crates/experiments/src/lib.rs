//! The experiments of smtsched (DESIGN §10): the seeds' headline results as typed data, each with
//! its claims, run and judged ([`experiment`], [`run`], [`pairs`], [`configurations`],
//! [`fedorova`]); a web server measured on this machine as an experiment ([`server_profile`]);
//! the simulator's own speed ([`bench`]); and
//! sweeps (machines × overrides × workloads × placements or policies × seeds) that run in shards
//! on one host or as a Slurm job array and merge into one result ([`sweep`], [`slurm`]).

pub mod bench;
pub mod configurations;
pub mod experiment;
pub mod fedorova;
pub mod pairs;
pub mod progress;
pub mod run;
pub mod server_profile;
pub mod shards;
pub mod slurm;
pub mod suite;
pub mod sweep;
pub mod windows;
