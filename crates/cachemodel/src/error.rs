//! Errors of the cache models and the Fedorova experiments.

use smtsched_model::ModelError;
use smtsched_uarch::PlanError;

#[derive(Debug, thiserror::Error)]
pub enum CacheModelError {
    /// Bad input, named by field or option.
    #[error("{0}")]
    BadInput(String),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The OS simulator refused the set-up.
    #[error("{0}")]
    Os(String),
}

impl CacheModelError {
    /// Whether the user's input caused it (exit code 2).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            CacheModelError::BadInput(_)
                | CacheModelError::Model(_)
                | CacheModelError::Plan(_)
                | CacheModelError::Os(_)
        )
    }
}

pub fn bad(msg: impl Into<String>) -> CacheModelError {
    CacheModelError::BadInput(msg.into())
}
