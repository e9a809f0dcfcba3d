//! Reading the kernel's text files under a root directory (`/` on the live machine, an unpacked
//! snapshot in tests): trimmed strings, integers, CPU lists and hexadecimal CPU masks.

use crate::error::{HostError, Result};
use smtsched_model::CpuSet;
use std::path::{Path, PathBuf};

/// A directory standing in for `/`.
#[derive(Clone, Debug)]
pub struct Root(PathBuf);

impl Root {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Root(root.into())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `rel` (written as an absolute path such as `/sys/devices/system/cpu`) under this root.
    pub fn join(&self, rel: &str) -> PathBuf {
        self.0.join(rel.trim_start_matches('/'))
    }
}

/// The trimmed content of a file, `None` if it does not exist (or cannot be read: sysfs files
/// of offline CPUs may refuse reads).
pub fn read_opt(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// An integer file (`-1` is a valid value of `physical_package_id`).
pub fn read_int(path: &Path) -> Result<Option<i64>> {
    match read_opt(path) {
        None => Ok(None),
        Some(s) => s.parse::<i64>().map(Some).map_err(|_| HostError::Parse {
            path: path.to_path_buf(),
            reason: format!("{s:?} is not an integer"),
        }),
    }
}

/// A CPU list file (`0-3,8`).
pub fn read_list(path: &Path) -> Result<Option<CpuSet>> {
    match read_opt(path) {
        None => Ok(None),
        Some(s) => CpuSet::parse(&s).map(Some).map_err(|e| HostError::Parse {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }),
    }
}

/// A hexadecimal CPU mask file (`00000000,00000101`: comma-separated 32-bit words, most
/// significant first).
pub fn read_mask(path: &Path) -> Result<Option<CpuSet>> {
    match read_opt(path) {
        None => Ok(None),
        Some(s) => parse_mask(&s).map(Some).map_err(|reason| HostError::Parse {
            path: path.to_path_buf(),
            reason,
        }),
    }
}

/// Parses the kernel's `%*pb` bitmap format.
pub fn parse_mask(text: &str) -> std::result::Result<CpuSet, String> {
    let mut set = CpuSet::new();
    let text = text.trim();
    if text.is_empty() {
        return Ok(set);
    }
    for (word_index, word) in text.rsplit(',').enumerate() {
        let word = word.trim().trim_start_matches("0x");
        if word.is_empty() || word.len() > 8 {
            return Err(format!("{text:?} is not a CPU mask (word {word:?})"));
        }
        let bits = u32::from_str_radix(word, 16)
            .map_err(|_| format!("{text:?} is not a CPU mask (word {word:?})"))?;
        for bit in 0..32 {
            if bits & (1 << bit) != 0 {
                set.insert(word_index as u32 * 32 + bit);
            }
        }
    }
    Ok(set)
}

/// The first of `dir/<list>` (CPU list) and `dir/<mask>` (hex mask) that exists.
pub fn read_cpus(dir: &Path, list: &str, mask: &str) -> Result<Option<CpuSet>> {
    if let Some(s) = read_list(&dir.join(list))? {
        return Ok(Some(s));
    }
    read_mask(&dir.join(mask))
}

/// Sizes as sysfs writes them for caches: `32K`, `4096K`, `1M`, or a plain byte count.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1024),
        'M' | 'm' => (&t[..t.len() - 1], 1024 * 1024),
        'G' | 'g' => (&t[..t.len() - 1], 1024 * 1024 * 1024),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

/// Numbers `N` of the entries `<prefix>N` of a directory, ascending.
pub fn numbered_entries(dir: &Path, prefix: &str) -> Vec<u32> {
    let mut ids: Vec<u32> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix(prefix)?
                .parse::<u32>()
                .ok()
        })
        .collect();
    ids.sort_unstable();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_are_words_most_significant_first() {
        // Hand-worked: 0x101 = bits 0 and 8; the second word from the right is bits 32..63.
        let s = parse_mask("00000000,00000101").unwrap();
        assert_eq!(s.to_string(), "0,8");
        // f0000000 is the third word from the right: bits 64+28 .. 64+31.
        let s = parse_mask("f0000000,00000000,00000001").unwrap();
        assert_eq!(s.to_string(), "0,92-95");
        assert_eq!(parse_mask("00006024").unwrap().to_string(), "2,5,13-14");
        assert!(parse_mask("xyz").is_err());
        assert!(parse_mask("").unwrap().is_empty());
    }

    #[test]
    fn cache_sizes() {
        assert_eq!(parse_size("32K"), Some(32 * 1024));
        assert_eq!(parse_size("4096K\n"), Some(4 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("K"), None);
    }
}
