//! The experiments of Fedorova et al. 2005 under `smtsched reproduce fedorova-*`.

use crate::error::{bad, CacheModelError};
use smtsched_os::experiment::Experiment;

/// Runs a `fedorova-*` experiment; returns its report (JSON when `json`).
pub fn reproduce(
    e: &Experiment,
    _seed: u64,
    _json: bool,
    _progress: &(dyn Fn(&str) + Sync),
) -> Result<String, CacheModelError> {
    Err(bad(format!("{}: not available yet", e.name)))
}
