//! What can go wrong, and whose fault it is: bad input (exit 2) or ours.

use smtsched_uarch::ProtocolError;

#[derive(Debug, thiserror::Error)]
pub enum EstimateError {
    /// A windows or samples file lacks columns the task needs.
    #[error("{file}: missing column(s) {columns}")]
    MissingColumns { file: String, columns: String },
    /// A cell that does not parse or is out of range.
    #[error("{file}, line {line}, column {column}: {reason}")]
    BadValue {
        file: String,
        line: usize,
        column: String,
        reason: String,
    },
    /// A row or file that is malformed as a whole.
    #[error("{file}, line {line}: {reason}")]
    BadLine {
        file: String,
        line: usize,
        reason: String,
    },
    /// Nothing to train on or to validate.
    #[error("empty training set: {0}")]
    Empty(String),
    /// Fewer observations than coefficients.
    #[error("too few windows: {windows} for {coefficients} coefficients (the intercept and {features} features)")]
    TooFew {
        windows: usize,
        coefficients: usize,
        features: usize,
    },
    /// A feature is constant or a linear combination of the others (and the intercept).
    #[error("singular design matrix: feature {feature} {why}; leave it out with --features")]
    Singular { feature: String, why: String },
    /// A feature name the online model cannot compute.
    #[error("unknown feature {name:?} (features are <event>_subj and <event>_back with event one of {events})")]
    UnknownFeature { name: String, events: String },
    /// An option out of range, a workload list that names nothing…
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    #[error("cannot read {file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    /// Drawing a plot failed (ours).
    #[error("plot: {0}")]
    Plot(String),
    /// A run of ours that did not produce what the protocol needs.
    #[error("{0}")]
    Internal(String),
}

impl EstimateError {
    /// Whether the user's input caused it (exit code 2).
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, EstimateError::Plot(_) | EstimateError::Internal(_))
    }
}
