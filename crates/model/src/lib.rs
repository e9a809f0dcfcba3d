//! Machine and workload descriptions for smtsched (DESIGN §3, §4): TOML schemas, validation with
//! errors that name file, field and value, and the presets embedded in the binary.

/// Embeds `<dir>/<name>.toml` from the repository root as a [`loader::Preset`].
macro_rules! preset {
    ($dir:literal, $name:literal) => {
        $crate::loader::Preset {
            name: $name,
            file: concat!($dir, "/", $name, ".toml"),
            text: include_str!(concat!("../../../", $dir, "/", $name, ".toml")),
        }
    };
}

pub mod cpulist;
pub mod error;
pub mod events;
pub mod loader;
pub mod machine;
pub mod matrix;
pub mod memo;
pub mod rates;
pub mod topology;
pub mod workload;

pub use cpulist::{CpuSequence, CpuSet};
pub use error::{ModelError, Origin};
pub use loader::{Override, Preset, Source};
pub use machine::*;
pub use matrix::{PairRecord, Placement, PrMatrix, SoloRecord, PR_MATRIX_FORMAT};
pub use workload::*;

/// Whether `name` can head a table, a header line or a file's `name` field: not empty and one
/// line of visible text (no control character).
pub fn is_visible_name(name: &str) -> bool {
    !name.trim().is_empty() && !name.chars().any(char::is_control)
}

/// The first item of `items` equal to an earlier one, with its index (a list that names
/// something twice: workloads of a matrix, experiments of a run).
pub fn first_repeat<T: PartialEq>(items: &[T]) -> Option<(usize, &T)> {
    (1..items.len()).find_map(|i| items[..i].contains(&items[i]).then_some((i, &items[i])))
}
