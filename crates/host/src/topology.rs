//! The machine's topology as sysfs describes it: packages, cores and their sibling threads,
//! caches and which logical CPUs share each, NUMA nodes, online and offline CPUs.
//!
//! Reading (`RawSysfs::read`) is kept apart from assembly (`Topology::assemble`), which is pure.
//! Grouping follows the kernel's own sibling masks (`core_cpus`/`thread_siblings` for cores,
//! `package_cpus`/`core_siblings` for packages, `shared_cpu_list` for caches) restricted to online
//! CPUs, as hwloc's Linux backend does, so that interleaved numbering (siblings 0 and 8) and
//! offline CPUs come out right. Where sysfs says nothing, the topology says so in `notes`
//! instead of guessing.

use crate::error::{HostError, Result};
use crate::sysfs::{self, Root};
pub use smtsched_model::topology::{Cache, CacheKind, Core, NumaNode, Package, Topology};
use smtsched_model::CpuSet;
use std::collections::BTreeMap;
use std::path::Path;

/// What sysfs says about one logical CPU.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawCpu {
    pub id: u32,
    /// `cpuN/online`: `None` where the file is absent (CPU 0 often has none).
    pub online_file: Option<bool>,
    pub package_id: Option<i64>,
    pub core_id: Option<i64>,
    /// `package_cpus` or `core_siblings`.
    pub package_cpus: Option<CpuSet>,
    /// `core_cpus` or `thread_siblings`.
    pub core_cpus: Option<CpuSet>,
    pub caches: Vec<RawCache>,
}

/// One `cpuN/cache/indexM` directory.
#[derive(Clone, Debug, PartialEq)]
pub struct RawCache {
    pub level: u8,
    pub kind: CacheKind,
    pub size_bytes: Option<u64>,
    pub ways: Option<u32>,
    pub line_bytes: Option<u32>,
    /// `shared_cpu_list` or `shared_cpu_map`.
    pub shared: Option<CpuSet>,
}

/// One `node/nodeN` directory.
#[derive(Clone, Debug, PartialEq)]
pub struct RawNode {
    pub id: u32,
    pub cpus: Option<CpuSet>,
    pub memory_bytes: Option<u64>,
}

/// Everything read from the files, before assembly.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawSysfs {
    pub root: String,
    pub cpu_model: Option<String>,
    pub online: Option<CpuSet>,
    pub possible: Option<CpuSet>,
    pub present: Option<CpuSet>,
    pub cpus: Vec<RawCpu>,
    /// `None` where there is no `node` directory at all (a kernel without NUMA support).
    pub nodes: Option<Vec<RawNode>>,
    /// `MemTotal` of /proc/meminfo.
    pub mem_total_bytes: Option<u64>,
}

impl RawSysfs {
    /// Reads `<root>/sys/devices/system/{cpu,node}` and `<root>/proc/{cpuinfo,meminfo}`.
    pub fn read(root: &Path) -> Result<RawSysfs> {
        let r = Root::new(root);
        let cpu_dir = r.join("/sys/devices/system/cpu");
        if !cpu_dir.is_dir() {
            return Err(HostError::bad(format!(
                "{}: no such directory (is {} a sysfs root?)",
                cpu_dir.display(),
                root.display()
            )));
        }
        let mut raw = RawSysfs {
            root: root.display().to_string(),
            online: sysfs::read_list(&cpu_dir.join("online"))?,
            possible: sysfs::read_list(&cpu_dir.join("possible"))?,
            present: sysfs::read_list(&cpu_dir.join("present"))?,
            ..RawSysfs::default()
        };
        for id in sysfs::numbered_entries(&cpu_dir, "cpu") {
            raw.cpus
                .push(read_cpu(&cpu_dir.join(format!("cpu{id}")), id)?);
        }
        let node_dir = r.join("/sys/devices/system/node");
        if node_dir.is_dir() {
            let mut nodes = Vec::new();
            for id in sysfs::numbered_entries(&node_dir, "node") {
                let d = node_dir.join(format!("node{id}"));
                nodes.push(RawNode {
                    id,
                    cpus: sysfs::read_cpus(&d, "cpulist", "cpumap")?,
                    memory_bytes: sysfs::read_opt(&d.join("meminfo"))
                        .and_then(|t| meminfo_total(&t)),
                });
            }
            raw.nodes = Some(nodes);
        }
        if let Some(info) = sysfs::read_opt(&r.join("/proc/cpuinfo")) {
            raw.cpu_model = cpu_model(&info);
        }
        raw.mem_total_bytes =
            sysfs::read_opt(&r.join("/proc/meminfo")).and_then(|t| meminfo_total(&t));
        Ok(raw)
    }
}

fn read_cpu(dir: &Path, id: u32) -> Result<RawCpu> {
    let online_file = sysfs::read_opt(&dir.join("online")).map(|s| s == "1");
    let topo = dir.join("topology");
    let mut cpu = RawCpu {
        id,
        online_file,
        package_id: sysfs::read_int(&topo.join("physical_package_id"))?,
        core_id: sysfs::read_int(&topo.join("core_id"))?,
        package_cpus: match sysfs::read_cpus(&topo, "package_cpus_list", "package_cpus")? {
            Some(s) => Some(s),
            None => sysfs::read_cpus(&topo, "core_siblings_list", "core_siblings")?,
        },
        core_cpus: match sysfs::read_cpus(&topo, "core_cpus_list", "core_cpus")? {
            Some(s) => Some(s),
            None => sysfs::read_cpus(&topo, "thread_siblings_list", "thread_siblings")?,
        },
        caches: Vec::new(),
    };
    let cache_dir = dir.join("cache");
    for index in sysfs::numbered_entries(&cache_dir, "index") {
        let d = cache_dir.join(format!("index{index}"));
        let level = sysfs::read_int(&d.join("level"))?;
        let kind = sysfs::read_opt(&d.join("type")).and_then(|t| CacheKind::from_sysfs_name(&t));
        let (Some(level), Some(kind)) = (level, kind) else {
            continue;
        };
        let positive = |v: Option<i64>| v.filter(|&x| x > 0).map(|x| x as u32);
        cpu.caches.push(RawCache {
            level: level.clamp(0, 255) as u8,
            kind,
            size_bytes: sysfs::read_opt(&d.join("size")).and_then(|s| sysfs::parse_size(&s)),
            ways: positive(sysfs::read_int(&d.join("ways_of_associativity"))?),
            line_bytes: positive(sysfs::read_int(&d.join("coherency_line_size"))?),
            shared: sysfs::read_cpus(&d, "shared_cpu_list", "shared_cpu_map")?,
        });
    }
    Ok(cpu)
}

fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        let k = k.trim();
        (k == "model name" || k == "cpu")
            .then(|| v.trim().to_string())
            .filter(|v| !v.is_empty())
    })
}

/// `MemTotal:  16384 kB` (also `Node 0 MemTotal: …` in node meminfo).
fn meminfo_total(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = &l[l.find("MemTotal:")? + "MemTotal:".len()..];
        let mut parts = rest.split_whitespace();
        let n: u64 = parts.next()?.parse().ok()?;
        Some(match parts.next() {
            Some("kB") => n * 1024,
            _ => n,
        })
    })
}

/// A [`Topology`] as a Linux machine's sysfs gives it.
pub trait SysfsTopology: Sized {
    /// Reads and assembles the topology of the machine whose `/` is `root`.
    fn from_sysfs(root: &Path) -> Result<Self>;
    /// The live machine.
    fn live() -> Result<Self>;
    /// Builds the topology from what was read. Pure.
    fn assemble(raw: RawSysfs) -> Self;
    /// Checks that every CPU of `cpus` exists and is online. `what` names the option in errors
    /// (`--cpus 0-7`).
    fn check_online(&self, cpus: &CpuSet, what: &str) -> Result<()>;
}

impl SysfsTopology for Topology {
    fn from_sysfs(root: &Path) -> Result<Topology> {
        Ok(Topology::assemble(RawSysfs::read(root)?))
    }

    fn live() -> Result<Topology> {
        Topology::from_sysfs(Path::new("/"))
    }

    fn assemble(raw: RawSysfs) -> Topology {
        let mut notes = Vec::new();
        let known: CpuSet = raw.cpus.iter().map(|c| c.id).collect();
        let online: CpuSet = match &raw.online {
            Some(list) => list.clone(),
            None => raw
                .cpus
                .iter()
                .filter(|c| c.online_file != Some(false))
                .map(|c| c.id)
                .collect(),
        };
        let present = raw.present.clone().unwrap_or_else(|| known.clone());
        let offline: CpuSet = present.iter().filter(|c| !online.contains(*c)).collect();
        let by_id: BTreeMap<u32, &RawCpu> = raw.cpus.iter().map(|c| (c.id, c)).collect();
        let online_cpus: Vec<&RawCpu> = online
            .iter()
            .filter_map(|id| by_id.get(&id).copied())
            .collect();
        let missing: CpuSet = online.iter().filter(|id| !by_id.contains_key(id)).collect();
        if !missing.is_empty() {
            notes.push(format!(
                "CPUs {missing} are listed online but have no cpuN directory; they are left out"
            ));
        }
        let online: CpuSet = online.iter().filter(|id| by_id.contains_key(id)).collect();

        // Packages.
        let mut packages: Vec<Package> = Vec::new();
        let have_pkg_masks = online_cpus.iter().all(|c| c.package_cpus.is_some());
        let have_pkg_ids = online_cpus.iter().all(|c| c.package_id.is_some());
        if have_pkg_masks && !online_cpus.is_empty() {
            for g in group_by_mask(
                &online_cpus,
                &online,
                |c| c.package_cpus.as_ref(),
                &mut notes,
                "package",
            ) {
                let id = by_id[&g.first().unwrap()]
                    .package_id
                    .filter(|&p| p >= 0)
                    .map(|p| p as u32);
                packages.push(Package { id, cpus: g });
            }
        } else if have_pkg_ids && !online_cpus.is_empty() {
            let mut groups: BTreeMap<i64, CpuSet> = BTreeMap::new();
            for c in &online_cpus {
                groups
                    .entry(c.package_id.unwrap())
                    .or_default()
                    .insert(c.id);
            }
            let mut v: Vec<Package> = groups
                .into_iter()
                .map(|(id, cpus)| Package {
                    id: (id >= 0).then_some(id as u32),
                    cpus,
                })
                .collect();
            v.sort_by_key(|p| p.cpus.first());
            packages = v;
        } else if !online_cpus.is_empty() {
            notes.push("sysfs gives no package information (no physical_package_id or core_siblings): packages unknown".into());
        }
        let package_of = |cpu: u32| packages.iter().position(|p| p.cpus.contains(cpu));

        // Cores.
        let mut cores: Vec<Core> = Vec::new();
        let have_core_masks = online_cpus.iter().all(|c| c.core_cpus.is_some());
        let core_groups: Vec<CpuSet> = if have_core_masks {
            group_by_mask(
                &online_cpus,
                &online,
                |c| c.core_cpus.as_ref(),
                &mut notes,
                "core",
            )
        } else if online_cpus.iter().all(|c| c.core_id.is_some()) {
            let mut groups: BTreeMap<(Option<usize>, i64), CpuSet> = BTreeMap::new();
            for c in &online_cpus {
                groups
                    .entry((package_of(c.id), c.core_id.unwrap()))
                    .or_default()
                    .insert(c.id);
            }
            notes.push("no thread_siblings masks: cores grouped by (package, core_id)".into());
            let mut v: Vec<CpuSet> = groups.into_values().collect();
            v.sort_by_key(|s| s.first());
            v
        } else {
            if !online_cpus.is_empty() {
                notes.push("no thread_siblings or core_id: sibling threads unknown, each logical CPU listed as its own core".into());
            }
            online_cpus
                .iter()
                .map(|c| std::iter::once(c.id).collect())
                .collect()
        };
        for g in core_groups {
            let first = g.first().unwrap();
            let id = by_id[&first].core_id.filter(|&c| c >= 0).map(|c| c as u32);
            cores.push(Core {
                id,
                package: package_of(first),
                cpus: g,
            });
        }

        // Caches.
        let mut caches: BTreeMap<(u8, CacheKind, Vec<u32>), Cache> = BTreeMap::new();
        let mut unshared_note = false;
        for c in &online_cpus {
            for rc in &c.caches {
                let shared = match &rc.shared {
                    Some(s) => s.intersection(&online),
                    None => {
                        unshared_note = true;
                        CpuSet::new()
                    }
                };
                let mut shared = shared;
                if !shared.contains(c.id) {
                    shared.insert(c.id);
                }
                let key = (rc.level, rc.kind, shared.iter().collect::<Vec<_>>());
                caches.entry(key).or_insert_with(|| Cache {
                    level: rc.level,
                    kind: rc.kind,
                    size_bytes: rc.size_bytes,
                    ways: rc.ways,
                    line_bytes: rc.line_bytes,
                    cpus: shared,
                });
            }
        }
        if unshared_note {
            notes.push("some caches have no shared_cpu_list: each is listed as private to the CPU that shows it".into());
        }
        let mut caches: Vec<Cache> = caches.into_values().collect();
        caches.sort_by_key(|c| (c.level, c.kind, c.cpus.first()));
        if online_cpus.iter().all(|c| c.caches.is_empty()) && !online_cpus.is_empty() {
            notes.push("sysfs lists no caches".into());
        }

        // NUMA nodes.
        let numa_nodes = match &raw.nodes {
            Some(nodes) => nodes
                .iter()
                .map(|n| NumaNode {
                    id: n.id,
                    cpus: n
                        .cpus
                        .as_ref()
                        .map(|s| s.intersection(&online))
                        .unwrap_or_default(),
                    memory_bytes: n.memory_bytes,
                })
                .collect(),
            None => {
                notes.push(
                    "no /sys/devices/system/node: a kernel without NUMA, so all memory is node 0"
                        .into(),
                );
                vec![NumaNode {
                    id: 0,
                    cpus: online.clone(),
                    memory_bytes: raw.mem_total_bytes,
                }]
            }
        };

        Topology {
            root: raw.root,
            cpu_model: raw.cpu_model,
            possible: raw.possible,
            online,
            offline,
            packages,
            cores,
            caches,
            numa_nodes,
            notes,
        }
    }

    fn check_online(&self, cpus: &CpuSet, what: &str) -> Result<()> {
        if cpus.is_empty() {
            return Err(HostError::bad(format!("{what}: names no CPU")));
        }
        let present = self.online.union(&self.offline);
        for c in cpus.iter() {
            if self.offline.contains(c) {
                return Err(HostError::bad(format!(
                    "{what}: CPU {c} is offline (online CPUs: {})",
                    self.online
                )));
            }
            if !present.contains(c) {
                return Err(HostError::bad(format!(
                    "{what}: CPU {c} does not exist on this machine (online CPUs: {})",
                    self.online
                )));
            }
        }
        Ok(())
    }
}

/// Groups CPUs by a sibling mask: each group is the first ungrouped CPU's mask restricted to
/// online, ungrouped CPUs (the CPU itself always included).
fn group_by_mask(
    cpus: &[&RawCpu],
    online: &CpuSet,
    mask: impl Fn(&RawCpu) -> Option<&CpuSet>,
    notes: &mut Vec<String>,
    what: &str,
) -> Vec<CpuSet> {
    let mut assigned = CpuSet::new();
    let mut groups = Vec::new();
    for c in cpus {
        if assigned.contains(c.id) {
            continue;
        }
        let m = mask(c).cloned().unwrap_or_default();
        let mut g: CpuSet = m
            .intersection(online)
            .iter()
            .filter(|x| !assigned.contains(*x))
            .collect();
        if !m.contains(c.id) {
            notes.push(format!(
                "CPU {}'s {what} mask {m} does not contain it; the kernel's masks are inconsistent",
                c.id
            ));
        }
        g.insert(c.id);
        for x in g.iter() {
            assigned.insert(x);
        }
        groups.push(g);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(id: u32, pkg: i64, core: i64, pkg_cpus: &str, core_cpus: &str) -> RawCpu {
        RawCpu {
            id,
            online_file: None,
            package_id: Some(pkg),
            core_id: Some(core),
            package_cpus: Some(CpuSet::parse(pkg_cpus).unwrap()),
            core_cpus: Some(CpuSet::parse(core_cpus).unwrap()),
            caches: vec![],
        }
    }

    #[test]
    fn interleaved_siblings_group_by_mask_not_by_number() {
        // 1 package, 2 cores, siblings 0+2 and 1+3 (the usual Intel numbering).
        let raw = RawSysfs {
            cpus: vec![
                cpu(0, 0, 0, "0-3", "0,2"),
                cpu(1, 0, 1, "0-3", "1,3"),
                cpu(2, 0, 0, "0-3", "0,2"),
                cpu(3, 0, 1, "0-3", "1,3"),
            ],
            ..RawSysfs::default()
        };
        let t = Topology::assemble(raw);
        assert_eq!(
            t.cores
                .iter()
                .map(|c| c.cpus.to_string())
                .collect::<Vec<_>>(),
            vec!["0,2", "1,3"]
        );
        assert_eq!(t.packages.len(), 1);
        assert!(t.has_smt());
        assert_eq!(t.siblings_of(3).to_string(), "1,3");
    }

    #[test]
    fn offline_cpus_leave_the_groups_and_are_reported() {
        let mut c1 = cpu(1, 0, 0, "0-1", "0-1");
        c1.online_file = Some(false);
        let raw = RawSysfs {
            cpus: vec![cpu(0, 0, 0, "0-1", "0-1"), c1],
            ..RawSysfs::default()
        };
        let t = Topology::assemble(raw);
        assert_eq!(t.online.to_string(), "0");
        assert_eq!(t.offline.to_string(), "1");
        assert_eq!(t.cores[0].cpus.to_string(), "0");
        assert!(!t.has_smt());
        let err = t
            .check_online(&CpuSet::parse("1").unwrap(), "--cpus 1")
            .unwrap_err();
        assert!(err.to_string().contains("CPU 1 is offline"), "{err}");
        let err = t
            .check_online(&CpuSet::parse("0,9").unwrap(), "--cpus 0,9")
            .unwrap_err();
        assert!(err.to_string().contains("CPU 9 does not exist"), "{err}");
        assert!(t
            .check_online(&CpuSet::parse("0").unwrap(), "--cpus 0")
            .is_ok());
    }

    #[test]
    fn missing_information_is_noted_not_guessed() {
        let raw = RawSysfs {
            cpus: vec![RawCpu {
                id: 0,
                ..RawCpu::default()
            }],
            ..RawSysfs::default()
        };
        let t = Topology::assemble(raw);
        assert!(t.packages.is_empty());
        assert_eq!(t.cores.len(), 1);
        assert!(t.notes.iter().any(|n| n.contains("packages unknown")));
        assert!(t
            .notes
            .iter()
            .any(|n| n.contains("sibling threads unknown")));
    }

    #[test]
    fn meminfo_and_cpuinfo() {
        assert_eq!(
            meminfo_total("MemTotal:       16384 kB\nMemFree: 1 kB"),
            Some(16384 * 1024)
        );
        assert_eq!(meminfo_total("Node 0 MemTotal:  8 kB\n"), Some(8192));
        assert_eq!(
            cpu_model("processor\t: 0\nmodel name\t: AMD EPYC\n").as_deref(),
            Some("AMD EPYC")
        );
        assert_eq!(
            cpu_model("cpu\t\t: POWER7 (architected)\n").as_deref(),
            Some("POWER7 (architected)")
        );
    }
}
