//! Work split into shards: shard `i` of `n` takes items i−1, i−1+n, … of a run's list, and the
//! shards' files merge back into the whole — every shard of the same run exactly once, every
//! item exactly once. Sweeps and `reproduce all` both split this way.

use serde::{Deserialize, Serialize};

/// Which part of the items: shard `index` of `count` (1-based) takes items index−1,
/// index−1+count, …
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let err = || format!("--shard {s:?}: expected I/N with 1 <= I <= N, e.g. 2/8");
        let (i, n) = s.split_once('/').ok_or_else(err)?;
        let (index, count) = (
            i.trim().parse::<u32>().map_err(|_| err())?,
            n.trim().parse::<u32>().map_err(|_| err())?,
        );
        if index == 0 || index > count {
            return Err(err());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Whether item `item` (0-based) is this shard's.
    pub fn takes(&self, item: usize) -> bool {
        item % self.count as usize == (self.index - 1) as usize
    }

    /// How many of `total` items this shard takes.
    pub fn size(&self, total: usize) -> usize {
        (total + (self.count - self.index) as usize) / self.count as usize
    }
}

/// FNV-1a, 64 bits: a stable fingerprint of a run's canonical text (not a security hash).
pub fn fingerprint(text: &str) -> String {
    format!("{:016x}", smtsched_uarch::rng::fnv1a(text.as_bytes()))
}

/// One shard file as merging sees it.
pub struct ShardPart<'a> {
    /// The file's name, for messages.
    pub file: &'a str,
    /// What the whole run is (a name and a fingerprint of its inputs): every shard says the same.
    pub run: String,
    /// `None`: the file holds a whole run, not a shard.
    pub shard: Option<Shard>,
    /// Items in the whole run.
    pub total: usize,
    /// Indices of the items the file holds.
    pub items: Vec<usize>,
}

/// Checks that `parts` are every shard of one run, each once, together holding every item
/// exactly once; the error (one line) names the file at fault.
pub fn check_complete(parts: &[ShardPart]) -> Result<(), String> {
    let first = parts.first().ok_or("merge: no shard files")?;
    let whole = |p: &ShardPart| format!("{}: holds a whole run already, not a shard", p.file);
    let count = first.shard.ok_or_else(|| whole(first))?.count;
    let mut seen = vec![None::<&str>; count as usize];
    let mut held = std::collections::HashMap::new();
    for p in parts {
        if p.run != first.run {
            return Err(format!(
                "{}: a shard of {}, not of {} like {}",
                p.file, p.run, first.run, first.file
            ));
        }
        if p.total != first.total {
            return Err(format!(
                "{}: a shard of a run of {} items, but {} is of one of {} (a file edited by hand?)",
                p.file, p.total, first.file, first.total
            ));
        }
        let s = p.shard.ok_or_else(|| whole(p))?;
        if s.count != count {
            return Err(format!(
                "{}: shard {}/{}, but {} is one of {count}",
                p.file, s.index, s.count, first.file
            ));
        }
        let slot = &mut seen[(s.index - 1) as usize];
        if let Some(other) = slot {
            return Err(format!(
                "{}: shard {}/{count} again (also {other})",
                p.file, s.index
            ));
        }
        *slot = Some(p.file);
        if let Some(i) = p.items.iter().find(|&&i| !s.takes(i)) {
            return Err(format!(
                "{}: item {i} does not belong to shard {}/{count}",
                p.file, s.index
            ));
        }
        for &i in &p.items {
            if let Some(other) = held.insert(i, p.file) {
                return Err(format!(
                    "{}: item {i} is held twice (also by {other})",
                    p.file
                ));
            }
        }
    }
    if let Some(missing) = seen.iter().position(Option::is_none) {
        return Err(format!(
            "shard {}/{count} is missing: give every shard's file",
            missing + 1
        ));
    }
    let mut items: Vec<usize> = parts.iter().flat_map(|p| p.items.iter().copied()).collect();
    items.sort_unstable();
    if items.len() != first.total || items.iter().enumerate().any(|(i, &j)| i != j) {
        return Err(format!(
            "the shards hold {} of the run's {} items: some shard is incomplete",
            items.len(),
            first.total
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_partition_the_items() {
        for bad in ["0/2", "3/2", "1/0", "a/b", "2", "1/2/3", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!("2/8".parse::<Shard>(), Ok(Shard { index: 2, count: 8 }));
        let shards: Vec<Shard> = (1..=4).map(|i| Shard { index: i, count: 4 }).collect();
        for item in 0..23 {
            assert_eq!(shards.iter().filter(|s| s.takes(item)).count(), 1);
        }
        // 23 items over 4 shards: 6, 6, 6, 5.
        let sizes: Vec<usize> = shards.iter().map(|s| s.size(23)).collect();
        assert_eq!(sizes, [6, 6, 6, 5]);
        for s in &shards {
            assert_eq!((0..23).filter(|&j| s.takes(j)).count(), s.size(23));
        }
    }

    #[test]
    fn the_fingerprint_is_fnv1a() {
        // Published FNV-1a 64-bit test vectors.
        assert_eq!(fingerprint(""), "cbf29ce484222325");
        assert_eq!(fingerprint("a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn merging_refuses_a_missing_repeated_or_foreign_shard() {
        let part = |file, run: &str, index, items: Vec<usize>| ShardPart {
            file,
            run: run.into(),
            shard: Some(Shard { index, count: 2 }),
            total: 3,
            items,
        };
        let (a, b) = (part("a", "r", 1, vec![0, 2]), part("b", "r", 2, vec![1]));
        assert!(check_complete(&[a, b]).is_ok());
        let only_a = [part("a", "r", 1, vec![0, 2])];
        assert!(check_complete(&only_a)
            .unwrap_err()
            .contains("shard 2/2 is missing"));
        let twice = [part("a", "r", 1, vec![0, 2]), part("c", "r", 1, vec![0, 2])];
        assert!(check_complete(&twice).unwrap_err().contains("again"));
        let foreign = [part("a", "r", 1, vec![0, 2]), part("b", "s", 2, vec![1])];
        assert!(check_complete(&foreign)
            .unwrap_err()
            .starts_with("b: a shard of s"));
        let short = [part("a", "r", 1, vec![0]), part("b", "r", 2, vec![1])];
        assert!(check_complete(&short).unwrap_err().contains("incomplete"));
        // Files edited by hand: an item held twice, a run's size changed.
        let doubled = [part("a", "r", 1, vec![0, 2, 2]), part("b", "r", 2, vec![1])];
        assert_eq!(
            check_complete(&doubled).unwrap_err(),
            "a: item 2 is held twice (also by a)"
        );
        let mut resized = part("b", "r", 2, vec![1]);
        resized.total = 4;
        let e = check_complete(&[part("a", "r", 1, vec![0, 2]), resized]).unwrap_err();
        assert!(
            e.starts_with("b: a shard of a run of 4 items, but a is of one of 3"),
            "{e}"
        );
    }
}
