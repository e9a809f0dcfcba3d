//! Errors of the trace crate. Each displays as one line that says where: the file (and line, for a
//! lackey log), and what is wrong with it.

use std::path::Path;

/// Everything that can go wrong reading, writing, importing or recording a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// A line of a lackey log that is not a lackey trace line or valgrind message.
    #[error("{origin}:{line}: {reason}: {text:?}")]
    Lackey {
        origin: String,
        line: u64,
        reason: String,
        text: String,
    },
    #[error("{path}: not an smtsched trace (it does not start with the trace file signature)")]
    NotATrace { path: String },
    #[error("{path}: truncated trace: {detail}")]
    Truncated { path: String, detail: String },
    #[error("{path}: corrupt trace: {detail}")]
    Corrupt { path: String, detail: String },
    #[error("{path}: trace format version {version} is not supported (this build reads version {supported})")]
    Version {
        path: String,
        version: u32,
        supported: u32,
    },
    #[error("{path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Writing the output failed: a bad output path (bad input), or a full disk (not).
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: no instructions in the trace")]
    Empty { origin: String },
    #[error("valgrind was not found on PATH (install it, e.g. `apt-get install valgrind`)")]
    ValgrindMissing,
    #[error("command not found: {0}")]
    CommandNotFound(String),
    /// The program (run under valgrind) failed: `status` says how ("exited with status 1").
    #[error("`{command}` {status} under valgrind{detail}")]
    CommandFailed {
        command: String,
        status: String,
        detail: String,
    },
    #[error("{0}")]
    Invalid(String),
    /// Ctrl-C or SIGTERM arrived: stopped, nothing written.
    #[error("{origin}: interrupted by a signal before the end; no output written")]
    Interrupted { origin: String },
    #[error(transparent)]
    Model(#[from] smtsched_model::ModelError),
}

impl TraceError {
    /// Whether the error is the user's input (exit code 2) rather than a failure of ours or of the
    /// machine (exit code 1). Only failing to write output is not bad input.
    pub fn is_bad_input(&self) -> bool {
        match self {
            TraceError::Interrupted { .. } => false,
            // A path the user named that cannot be created is theirs; a full disk is not.
            TraceError::Write { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
            ),
            _ => true,
        }
    }

    pub(crate) fn read(path: &Path, source: std::io::Error) -> Self {
        TraceError::Read {
            path: path.display().to_string(),
            source,
        }
    }

    pub(crate) fn write(path: &Path, source: std::io::Error) -> Self {
        TraceError::Write {
            path: path.display().to_string(),
            source,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = TraceError> = std::result::Result<T, E>;
