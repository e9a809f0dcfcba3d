//! The agent's errors. Each names the process, file, option or value.

use smtsched_host::HostError;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// What the user asked for cannot be (a PID that does not exist or is not theirs, a cgroup
    /// path that does not exist, a matrix without a task's label, a period of 0).
    #[error("{0}")]
    BadInput(String),
    /// The machine lacks what was asked for (core scheduling, counters, a cgroup controller).
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Host(#[from] HostError),
    /// A system call or file operation failed.
    #[error("{what}: {source}")]
    Os {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl AgentError {
    /// Errors of the user's input or the machine's abilities: the CLI exits with code 2.
    pub fn is_bad_input(&self) -> bool {
        match self {
            AgentError::BadInput(_) | AgentError::Unsupported(_) => true,
            AgentError::Host(h) => h.is_bad_input(),
            AgentError::Os { .. } => false,
        }
    }

    pub fn bad(msg: impl Into<String>) -> Self {
        AgentError::BadInput(msg.into())
    }

    pub fn os(what: impl Into<String>, source: std::io::Error) -> Self {
        AgentError::Os {
            what: what.into(),
            source,
        }
    }
}

pub type Result<T, E = AgentError> = std::result::Result<T, E>;
