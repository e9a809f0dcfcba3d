//! Every command runs in two steps, as ripgrep's arguments do (its low-level arguments become
//! high-level ones, then the search reads only those). First its plan is built from what clap
//! parsed: every check of the user's input that can fail (exit 2), every file and model loaded,
//! every output path checked. Nothing long has run yet, so bad input costs nothing and leaves
//! nothing behind. Then the plan is executed: the work, and what is printed and written.

use anyhow::Result;

/// What a command will do, with everything it needs validated and loaded.
pub(crate) trait Plan: Sized {
    /// What clap parsed.
    type Args;
    /// Checks and loads everything; fails only before any work has started.
    fn from_args(args: Self::Args) -> Result<Self>;
    /// Does the work and reports it.
    fn execute(self) -> Result<()>;
}

/// Builds the plan of `args`, then executes it.
pub(crate) fn run<P: Plan>(args: P::Args) -> Result<()> {
    P::from_args(args)?.execute()
}
