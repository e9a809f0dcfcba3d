//! Recorded traces of real programs (DESIGN §4): valgrind lackey logs imported or recorded into a
//! compact compressed trace file, replayed as a simulator workload, summarised, turned into a
//! synthetic profile, and cross-checked against valgrind's own cache simulator.

pub mod crosscheck;
pub mod error;
pub mod format;
pub mod lackey;
pub mod output;
pub mod profile;
pub mod replay;
pub mod stats;
pub mod valgrind;

pub use error::{Result, TraceError};
pub use format::{Access, AccessKind, Chunk, Insn, Summary, TraceFile, TraceMeta, TraceWriter};
