//! Errors of the real-machine layer. Each says where: the sysfs file, the option and value, the
//! process.

use std::path::PathBuf;

/// Why a host operation failed.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A file that had to be read could not be.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file was read but its content is not what the kernel writes there.
    #[error("{}: {reason}", path.display())]
    Parse { path: PathBuf, reason: String },
    /// The user asked for something that cannot be (an unknown kernel, a CPU that does not exist
    /// or is offline, a command that is not found, a placement the machine cannot provide).
    #[error("{0}")]
    BadInput(String),
    /// The machine lacks what was asked for (a kernel feature, a controller, a PMU); says which
    /// and why.
    #[error("{0}")]
    Unsupported(String),
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A child process misbehaved (exited early, wrote something unexpected).
    #[error("{0}")]
    Child(String),
    /// A measurement came out outside what its quantity can be (a performance ratio above
    /// `MAX_PR`): timing noise, or runs that differ, make it no measurement; nothing is written.
    #[error("{0}")]
    Unusable(String),
    /// Stopped by SIGINT or SIGTERM; every child was killed and reaped.
    #[error("interrupted by {signal}: stopped and reaped {children} child process(es); no output written")]
    Interrupted {
        signal: &'static str,
        children: usize,
    },
}

impl HostError {
    /// True for errors caused by the user's input (the CLI exits with code 2 for these).
    pub fn is_bad_input(&self) -> bool {
        matches!(self, HostError::BadInput(_) | HostError::Unsupported(_))
    }

    pub(crate) fn bad(msg: impl Into<String>) -> Self {
        HostError::BadInput(msg.into())
    }

    pub(crate) fn os(what: impl Into<String>, source: std::io::Error) -> Self {
        HostError::Os {
            what: what.into(),
            source,
        }
    }
}

pub type Result<T, E = HostError> = std::result::Result<T, E>;
