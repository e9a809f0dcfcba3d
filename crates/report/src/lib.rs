//! Output for smtsched: tables for people, CSV/JSON for programs, SVG plots, statistics, and
//! writing files without leaving half-written ones.

pub mod bars;
pub mod boxes;
pub mod csv;
pub mod diff;
pub mod heatmap;
pub mod lines;
pub mod matrix;
pub mod palette;
pub mod perfetto;
pub mod stats;
pub mod table;
pub mod timeline;
pub mod verdict;
pub mod write;

pub use stats::Summary;
pub use table::Table;
pub use write::{
    final_target, remove_stale_temporaries_of, write_atomic, write_atomic_set, AtomicFile,
};
