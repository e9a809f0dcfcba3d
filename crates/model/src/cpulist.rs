//! CPU lists in the kernel's syntax (`0,3,9-11`), as sysfs, taskset and cpusets write them.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// A set of logical CPU numbers, printed and parsed in the kernel's list syntax.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet(BTreeSet<u32>);

/// Why a CPU list could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CPU list {list:?}: {reason}")]
pub struct CpuListError {
    pub list: String,
    pub reason: String,
}

impl CpuSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, cpu: u32) -> bool {
        self.0.insert(cpu)
    }

    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().copied()
    }

    pub fn first(&self) -> Option<u32> {
        self.0.first().copied()
    }

    pub fn max(&self) -> Option<u32> {
        self.0.last().copied()
    }

    pub fn union(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.union(&other.0).copied().collect())
    }

    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.intersection(&other.0).copied().collect())
    }

    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }

    /// Parses the kernel list syntax; surrounding whitespace and a trailing newline are allowed,
    /// an empty string is the empty set.
    pub fn parse(list: &str) -> Result<Self, CpuListError> {
        let mut set = BTreeSet::new();
        if !list.trim().is_empty() {
            for (lo, hi) in ranges(list)? {
                set.extend(lo..=hi);
            }
        }
        Ok(CpuSet(set))
    }
}

/// The elements of a kernel CPU list (`0,3,9-11`) as inclusive ranges, in the order written.
fn ranges(list: &str) -> Result<Vec<(u32, u32)>, CpuListError> {
    let err = |reason: String| CpuListError {
        list: list.to_string(),
        reason,
    };
    let mut out = Vec::new();
    for part in list.trim().split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(err("empty element".into()));
        }
        let num = |s: &str| -> Result<u32, CpuListError> {
            s.trim()
                .parse::<u32>()
                .map_err(|_| err(format!("{s:?} is not a CPU number")))
        };
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (num(lo)?, num(hi)?),
            None => (num(part)?, num(part)?),
        };
        if lo > hi {
            return Err(err(format!("range {lo}-{hi} is reversed")));
        }
        if hi - lo > 1 << 20 {
            return Err(err(format!("range {lo}-{hi} is implausibly large")));
        }
        out.push((lo, hi));
    }
    Ok(out)
}

/// Logical CPUs in the kernel's list syntax, in the order written and with repeats kept: one
/// element per thread (`2,3` puts the first thread on CPU 2; `1,1` time-shares CPU 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSequence(Vec<(u32, u32)>);

impl CpuSequence {
    /// The CPUs, ranges expanded.
    pub fn cpus(&self) -> Vec<u32> {
        self.0.iter().flat_map(|&(lo, hi)| lo..=hi).collect()
    }
}

impl FromStr for CpuSequence {
    type Err = CpuListError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ranges(s).map(CpuSequence)
    }
}

impl FromIterator<u32> for CpuSequence {
    fn from_iter<T: IntoIterator<Item = u32>>(iter: T) -> Self {
        CpuSequence(iter.into_iter().map(|c| (c, c)).collect())
    }
}

impl fmt::Display for CpuSequence {
    /// As written, without the white space.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, &(lo, hi)) in self.0.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            if lo == hi {
                write!(f, "{sep}{lo}")?;
            } else {
                write!(f, "{sep}{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

impl FromStr for CpuSet {
    type Err = CpuListError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CpuSet::parse(s)
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<T: IntoIterator<Item = u32>>(iter: T) -> Self {
        CpuSet(iter.into_iter().collect())
    }
}

impl fmt::Display for CpuSet {
    /// Canonical kernel form: ascending, runs of three or more collapsed to `a-b`… the kernel
    /// collapses runs of two as well (`0-1`), so do we.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut iter = self.0.iter().copied().peekable();
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end = iter.next().unwrap();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if end == start {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl serde::Serialize for CpuSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> serde::Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        CpuSet::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_kernel_examples() {
        let s = CpuSet::parse("0,3,9-11\n").unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 3, 9, 10, 11]);
        assert_eq!(s.to_string(), "0,3,9-11");
        assert_eq!(CpuSet::parse("").unwrap().len(), 0);
        assert_eq!(CpuSet::parse("0-1").unwrap().to_string(), "0-1");
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["a", "1-", "3-1", "1,,2", "-4", "1-2-3"] {
            assert!(CpuSet::parse(bad).is_err(), "{bad:?} should fail");
        }
    }

    #[test]
    fn sequences_keep_order_and_repeats() {
        let s: CpuSequence = "3, 1-2,1".parse().unwrap();
        assert_eq!(s.cpus(), vec![3, 1, 2, 1]);
        assert_eq!(s.to_string(), "3,1-2,1");
        for bad in ["", "a", "3-1", "1,,2"] {
            assert!(bad.parse::<CpuSequence>().is_err(), "{bad:?} should fail");
        }
    }

    proptest! {
        #[test]
        fn display_parse_roundtrip(cpus in proptest::collection::btree_set(0u32..300, 0..40)) {
            let set: CpuSet = cpus.iter().copied().collect();
            let back = CpuSet::parse(&set.to_string()).unwrap();
            prop_assert_eq!(back, set);
        }
    }
}
