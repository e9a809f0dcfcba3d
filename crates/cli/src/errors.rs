//! Which failures are the user's input (exit 2) and which are ours (exit 1).

use smtsched_model::ModelError;
use smtsched_uarch::{PlanError, ProtocolError};

pub const EXIT_BAD_INPUT: i32 = 2;
pub const EXIT_FAILURE: i32 = 1;

/// Bad input found by the command itself (an unknown placement name, a CPU list out of range…).
#[derive(Debug)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Shorthand for returning a [`BadInput`].
pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

pub fn exit_code(e: &anyhow::Error) -> i32 {
    let bad = e.chain().any(|c| {
        c.is::<BadInput>()
            || c.is::<ModelError>()
            || c.is::<ProtocolError>()
            || c.is::<PlanError>()
            || c.downcast_ref::<smtsched_host::HostError>()
                .is_some_and(|h| h.is_bad_input())
            || c.downcast_ref::<smtsched_trace::TraceError>()
                .is_some_and(|t| t.is_bad_input())
            || c.downcast_ref::<smtsched_cachemodel::error::CacheModelError>()
                .is_some_and(|e| e.is_bad_input())
            || c.downcast_ref::<smtsched_experiments::run::RunError>()
                .is_some_and(|e| e.is_bad_input())
            || c.downcast_ref::<smtsched_experiments::bench::BenchError>()
                .is_some_and(|e| e.is_bad_input())
            || c.downcast_ref::<smtsched_estimate::EstimateError>()
                .is_some_and(|e| e.is_bad_input())
            || matches!(
                c.downcast_ref::<smtsched_experiments::sweep::SweepError>(),
                Some(smtsched_experiments::sweep::SweepError::Bad(_))
            )
    });
    if bad {
        EXIT_BAD_INPUT
    } else {
        EXIT_FAILURE
    }
}

pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The error and its causes on one line.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string().replace('\n', " ");
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}
