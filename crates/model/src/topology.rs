//! The machine's topology as one type for every part of smtsched: packages, cores and their sibling
//! threads, caches and the logical CPUs that share each, NUMA nodes, online and offline CPUs.
//! `smtsched-host` fills it from sysfs; [`Topology::of_machine`] fills it from a machine model, so a
//! policy reads the same structure in the simulator and on a live machine.

use crate::cpulist::CpuSet;
use crate::machine::{CacheContents, MachineModel, Scope};
use serde::{Deserialize, Serialize};

/// Kind of a cache, as sysfs `type` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    Data,
    Instruction,
    Unified,
}

impl CacheKind {
    /// The kind sysfs `type` names (`Data`, `Instruction`, `Unified`).
    pub fn from_sysfs_name(s: &str) -> Option<CacheKind> {
        match s {
            "Data" => Some(CacheKind::Data),
            "Instruction" => Some(CacheKind::Instruction),
            "Unified" => Some(CacheKind::Unified),
            _ => None,
        }
    }

    /// `L1d`, `L1i`, `L2` — the names hwloc and people use.
    pub fn label(self, level: u8) -> String {
        match self {
            CacheKind::Data => format!("L{level}d"),
            CacheKind::Instruction => format!("L{level}i"),
            CacheKind::Unified => format!("L{level}"),
        }
    }
}

/// A physical package (socket).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Package {
    /// `physical_package_id`; `None` where the kernel writes -1 (e.g. POWER LPARs) or nothing.
    pub id: Option<u32>,
    /// Online logical CPUs of the package.
    pub cpus: CpuSet,
}

/// A core: its logical CPUs are siblings (SMT threads) of each other.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Core {
    /// `core_id` (unique only within a package); `None` where sysfs has none.
    pub id: Option<u32>,
    /// Index into [`Topology::packages`], if packages are known.
    pub package: Option<usize>,
    /// Online sibling threads of the core.
    pub cpus: CpuSet,
}

/// One cache instance and the online logical CPUs that share it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cache {
    pub level: u8,
    pub kind: CacheKind,
    pub size_bytes: Option<u64>,
    pub ways: Option<u32>,
    pub line_bytes: Option<u32>,
    pub cpus: CpuSet,
}

impl Cache {
    pub fn label(&self) -> String {
        self.kind.label(self.level)
    }
}

/// A NUMA node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NumaNode {
    pub id: u32,
    /// Online logical CPUs local to the node (empty for a memory-only node).
    pub cpus: CpuSet,
    pub memory_bytes: Option<u64>,
}

/// The machine: plain read-only data with lookups.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Where it was read from (`/` for the live machine).
    pub root: String,
    /// `model name` (or `cpu`) from /proc/cpuinfo.
    pub cpu_model: Option<String>,
    /// CPUs the kernel could ever bring up (`possible`), if it says.
    pub possible: Option<CpuSet>,
    pub online: CpuSet,
    /// Present CPUs that are not online (hot-unplugged).
    pub offline: CpuSet,
    pub packages: Vec<Package>,
    pub cores: Vec<Core>,
    /// Sorted by level, kind, then first CPU.
    pub caches: Vec<Cache>,
    pub numa_nodes: Vec<NumaNode>,
    /// What sysfs did not say and how that was handled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Topology {
    /// Checks that the topology describes one machine: every online CPU in exactly one core,
    /// each core in a package that exists and holds its CPUs (what sysfs always gives; a
    /// hand-written topology may not). The error says what is wrong.
    pub fn check_consistent(&self) -> Result<(), String> {
        for cpu in self.online.iter() {
            let holding: Vec<String> = self
                .cores
                .iter()
                .filter(|c| c.cpus.contains(cpu))
                .map(|c| c.cpus.to_string())
                .collect();
            if holding.len() != 1 {
                return Err(format!(
                    "online CPU {cpu} is in {} cores ({}); each is in one",
                    holding.len(),
                    holding.join(" and ")
                ));
            }
        }
        for c in &self.cores {
            if !c.cpus.is_subset(&self.online) || c.cpus.is_empty() {
                return Err(format!(
                    "core {} has CPUs outside online {}",
                    c.cpus, self.online
                ));
            }
            match c.package.map(|p| self.packages.get(p)) {
                Some(None) => {
                    return Err(format!(
                        "core {} is in package {}, of {} package(s)",
                        c.cpus,
                        c.package.unwrap_or(0),
                        self.packages.len()
                    ))
                }
                Some(Some(p)) if !c.cpus.is_subset(&p.cpus) => {
                    return Err(format!(
                        "core {} is in a package of CPUs {} that does not hold it",
                        c.cpus, p.cpus
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The core holding `cpu`.
    pub fn core_of(&self, cpu: u32) -> Option<&Core> {
        self.cores.iter().find(|c| c.cpus.contains(cpu))
    }

    /// Sibling threads of `cpu`, itself included.
    pub fn siblings_of(&self, cpu: u32) -> CpuSet {
        self.core_of(cpu)
            .map(|c| c.cpus.clone())
            .unwrap_or_default()
    }

    /// Largest number of online threads in one core.
    pub fn threads_per_core(&self) -> usize {
        self.cores.iter().map(|c| c.cpus.len()).max().unwrap_or(0)
    }

    /// True if some core has two or more online threads.
    pub fn has_smt(&self) -> bool {
        self.threads_per_core() >= 2
    }

    /// The index of the package holding `cpu`, if packages are known.
    pub fn package_of(&self, cpu: u32) -> Option<usize> {
        self.core_of(cpu).and_then(|c| c.package)
    }

    /// The largest cache level and the groups of CPUs sharing one instance of it (the machine's
    /// last-level cache domains). Without cache information: one domain per package.
    pub fn llc_domains(&self) -> Vec<CpuSet> {
        match self.caches.iter().map(|c| c.level).max() {
            Some(level) => {
                let mut v: Vec<CpuSet> = self
                    .caches
                    .iter()
                    .filter(|c| c.level == level && c.kind != CacheKind::Instruction)
                    .map(|c| c.cpus.clone())
                    .collect();
                v.dedup();
                v
            }
            None => self.packages.iter().map(|p| p.cpus.clone()).collect(),
        }
    }

    /// The topology of a machine model with only `online` CPUs in use (all when `None`): the
    /// packages, cores and caches the model's `topology` and `cache` sections describe, each
    /// restricted to the CPUs in use, as sysfs restricts its masks to online CPUs.
    pub fn of_machine(m: &MachineModel, online: Option<&CpuSet>) -> Topology {
        let n = m.logical_cpus();
        let all: CpuSet = (0..n).collect();
        let online = online.map_or(all.clone(), |o| o.intersection(&all));
        let loc = |c: u32| m.cpu_location(c).expect("a CPU of the machine");
        let group = |key: &dyn Fn(u32) -> u32| -> Vec<CpuSet> {
            let mut groups: std::collections::BTreeMap<u32, CpuSet> = Default::default();
            for c in online.iter() {
                groups.entry(key(c)).or_default().insert(c);
            }
            let mut v: Vec<CpuSet> = groups.into_values().collect();
            v.sort_by_key(|s| s.first());
            v
        };
        let packages: Vec<Package> = group(&|c| loc(c).package)
            .into_iter()
            .map(|cpus| Package {
                id: Some(loc(cpus.first().expect("non-empty")).package),
                cpus,
            })
            .collect();
        let package_index = |cpu: u32| packages.iter().position(|p| p.cpus.contains(cpu));
        let cores: Vec<Core> = group(&|c| loc(c).core)
            .into_iter()
            .map(|cpus| {
                let first = cpus.first().expect("non-empty");
                Core {
                    id: Some(loc(first).core % m.topology.cores_per_package),
                    package: package_index(first),
                    cpus,
                }
            })
            .collect();
        let mut caches = Vec::new();
        for spec in m.cache.values() {
            let kind = match spec.holds {
                CacheContents::Instructions => CacheKind::Instruction,
                CacheContents::Data => CacheKind::Data,
                CacheContents::Unified => CacheKind::Unified,
            };
            let domains = match spec.shared_by {
                Scope::Core => group(&|c| loc(c).core),
                Scope::Package => group(&|c| loc(c).package),
                Scope::Machine => vec![online.clone()],
            };
            for cpus in domains {
                caches.push(Cache {
                    level: spec.level,
                    kind,
                    size_bytes: Some(spec.size_bytes),
                    ways: Some(spec.ways),
                    line_bytes: Some(spec.line_bytes),
                    cpus,
                });
            }
        }
        caches.sort_by_key(|c| (c.level, c.kind, c.cpus.first()));
        Topology {
            root: format!("machine model {}", m.name),
            cpu_model: Some(m.name.clone()),
            possible: Some(all.clone()),
            offline: all.iter().filter(|&c| !online.contains(c)).collect(),
            online: online.clone(),
            packages,
            cores,
            caches,
            numa_nodes: vec![NumaNode {
                id: 0,
                cpus: online,
                memory_bytes: None,
            }],
            notes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::load_machine;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse(s).unwrap()
    }

    #[test]
    fn a_topology_that_contradicts_itself_is_named() {
        // northwood: packages {0,1} and {2,3}, each one core of two threads.
        let good = Topology::of_machine(&load_machine("northwood", &[]).unwrap(), None);
        assert_eq!(good.check_consistent(), Ok(()));
        let mut lost = good.clone();
        lost.cores[0].cpus = set("0");
        let e = lost.check_consistent().unwrap_err();
        assert!(e.starts_with("online CPU 1 is in 0 cores"), "{e}");
        let mut twice = good.clone();
        twice.cores[1].cpus = set("1-3");
        let e = twice.check_consistent().unwrap_err();
        assert!(e.contains("CPU 1 is in 2 cores (0-1 and 1-3)"), "{e}");
        let mut nowhere = good.clone();
        nowhere.cores[1].package = Some(5);
        let e = nowhere.check_consistent().unwrap_err();
        assert!(e.contains("package 5, of 2 package(s)"), "{e}");
        let mut astray = good;
        astray.cores[1].package = Some(0);
        let e = astray.check_consistent().unwrap_err();
        assert!(e.contains("core 2-3 is in a package of CPUs 0-1"), "{e}");
    }

    #[test]
    fn northwood_is_two_packages_of_one_two_thread_core() {
        // machines/northwood.toml: 2 packages x 1 core x 2 threads, siblings adjacent.
        let t = Topology::of_machine(&load_machine("northwood", &[]).unwrap(), None);
        let pkgs: Vec<CpuSet> = t.packages.iter().map(|p| p.cpus.clone()).collect();
        assert_eq!(pkgs, vec![set("0-1"), set("2-3")]);
        assert_eq!(t.siblings_of(3), set("2-3"));
        assert_eq!(t.package_of(2), Some(1));
        assert!(t.has_smt());
        // The L2 is per core: two last-level domains.
        assert_eq!(t.llc_domains(), vec![set("0-1"), set("2-3")]);
    }

    #[test]
    fn restricting_to_cpus_in_use_restricts_every_group() {
        // The thesis's 1x2 (CPUs 2-3): one package, one core, the other package offline.
        let t = Topology::of_machine(&load_machine("northwood", &[]).unwrap(), Some(&set("2-3")));
        assert_eq!(t.online, set("2-3"));
        assert_eq!(t.offline, set("0-1"));
        assert_eq!(t.packages.len(), 1);
        assert_eq!(t.cores.len(), 1);
        assert!(t.caches.iter().all(|c| c.cpus == set("2-3")));
    }

    #[test]
    fn thread_major_numbering_pairs_n_with_n_plus_cores() {
        // smt2-modern: 8 cores x 2 threads, CPU n and n+8 siblings, one L3 for the package.
        let t = Topology::of_machine(&load_machine("smt2-modern", &[]).unwrap(), None);
        assert_eq!(t.cores.len(), 8);
        assert_eq!(t.siblings_of(3), set("3,11"));
        assert_eq!(t.llc_domains(), vec![set("0-15")]);
    }
}
