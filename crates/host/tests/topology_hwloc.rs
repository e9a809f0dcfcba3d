//! The topology read from each real-machine sysfs snapshot must agree with hwloc's reading of the
//! same machine (the `.console` file beside each tarball is `lstopo` output). The expected values
//! are parsed from that text here, independently of the code under test.

use smtsched_host::{CacheKind, SysfsTopology, Topology};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Pus = BTreeSet<u32>;
/// (level, kind) → every cache of that kind as (its PUs, its size in bytes).
type CacheGroups = BTreeMap<(u8, CacheKind), BTreeSet<(Vec<u32>, Option<u64>)>>;

fn fixtures_dir() -> PathBuf {
    if let Ok(d) = std::env::var("SMTSCHED_FIXTURES") {
        return PathBuf::from(d).join("linux-sysfs");
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/linux-sysfs")
}

fn snapshots() -> Vec<(String, PathBuf, PathBuf)> {
    let dir = fixtures_dir();
    let mut out = Vec::new();
    for e in
        std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("fixtures at {}: {e}", dir.display()))
    {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if let Some(stem) = name.strip_suffix(".tar.bz2") {
            let console = dir.join(format!("{stem}.console"));
            assert!(
                console.exists(),
                "{} has no .console beside it",
                p.display()
            );
            out.push((stem.to_string(), p, console));
        }
    }
    out.sort();
    assert!(
        out.len() >= 7,
        "expected the 7 snapshots in {}, found {}",
        dir.display(),
        out.len()
    );
    out
}

fn unpack(tarball: &Path, into: &Path) {
    let f = std::fs::File::open(tarball).unwrap();
    let mut archive = tar::Archive::new(bzip2::read::BzDecoder::new(f));
    archive
        .unpack(into)
        .unwrap_or_else(|e| panic!("unpacking {}: {e}", tarball.display()));
}

/// One object of lstopo's tree.
#[derive(Debug)]
struct Obj {
    kind: String,
    attrs: String,
    parent: Option<usize>,
    pus: Pus,
}

impl Obj {
    /// The `P#n` physical index, if lstopo printed one.
    fn os_index(&self) -> Option<u32> {
        self.attrs
            .split_whitespace()
            .find_map(|t| t.strip_prefix("P#")?.parse().ok())
    }

    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .split_whitespace()
            .find_map(|t| t.strip_prefix(key)?.strip_prefix('='))
    }
}

/// What hwloc says about one machine.
struct Expected {
    objs: Vec<Obj>,
    not_represented: Pus,
}

fn parse_console(text: &str) -> Expected {
    let mut objs: Vec<Obj> = Vec::new();
    let mut stack: Vec<(usize, usize)> = Vec::new(); // (indent, index)
    let mut lines = text.lines();
    for line in lines.by_ref() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("depth ") || trimmed.is_empty() {
            break;
        }
        let indent = line.len() - trimmed.len();
        let kind = trimmed.split_whitespace().next().unwrap().to_string();
        let attrs = match (trimmed.find('('), trimmed.rfind(')')) {
            (Some(a), Some(b)) if b > a => trimmed[a + 1..b].to_string(),
            _ => String::new(),
        };
        while stack.last().is_some_and(|&(i, _)| i >= indent) {
            stack.pop();
        }
        let parent = stack.last().map(|&(_, idx)| idx);
        objs.push(Obj {
            kind,
            attrs,
            parent,
            pus: Pus::new(),
        });
        stack.push((indent, objs.len() - 1));
    }
    for i in 0..objs.len() {
        if objs[i].kind == "PU" {
            let p = objs[i].os_index().expect("PU without P#");
            let mut at = Some(i);
            while let Some(j) = at {
                objs[j].pus.insert(p);
                at = objs[j].parent;
            }
        }
    }
    let mut not_represented = Pus::new();
    for line in text.lines() {
        if let Some((_, mask)) = line.split_once("processors not represented in topology:") {
            for (w, word) in mask.trim().rsplit(',').enumerate() {
                let bits = u32::from_str_radix(word.trim().trim_start_matches("0x"), 16).unwrap();
                for b in 0..32 {
                    if bits & (1 << b) != 0 {
                        not_represented.insert(w as u32 * 32 + b);
                    }
                }
            }
        }
    }
    Expected {
        objs,
        not_represented,
    }
}

impl Expected {
    fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Obj> + 'a {
        self.objs.iter().filter(move |o| o.kind == kind)
    }

    fn all_pus(&self) -> Pus {
        self.of_kind("PU").filter_map(Obj::os_index).collect()
    }

    /// (level, kind) → the PU sets of every cache of that kind, with its size in bytes.
    fn caches(&self) -> CacheGroups {
        let mut out: BTreeMap<_, BTreeSet<_>> = BTreeMap::new();
        for o in &self.objs {
            let Some(rest) = o
                .kind
                .strip_prefix('L')
                .and_then(|r| r.strip_suffix("Cache"))
            else {
                continue;
            };
            let (level, kind) = match rest.strip_suffix('d') {
                Some(l) => (l, CacheKind::Data),
                None => match rest.strip_suffix('i') {
                    Some(l) => (l, CacheKind::Instruction),
                    None => (rest, CacheKind::Unified),
                },
            };
            let size = o.attr("size").map(hwloc_size);
            out.entry((level.parse().unwrap(), kind))
                .or_default()
                .insert((o.pus.iter().copied().collect(), size));
        }
        out
    }
}

fn hwloc_size(s: &str) -> u64 {
    for (suffix, mult) in [
        ("KiB", 1u64 << 10),
        ("MiB", 1 << 20),
        ("GiB", 1 << 30),
        ("B", 1),
    ] {
        if let Some(n) = s.strip_suffix(suffix) {
            return n.parse::<u64>().unwrap() * mult;
        }
    }
    panic!("size {s:?}")
}

fn set(s: &smtsched_model::CpuSet) -> Pus {
    s.iter().collect()
}

fn check_snapshot(name: &str, topo: &Topology, exp: &Expected) {
    // What a hand-written topology is checked for, every real machine's reading passes.
    assert_eq!(topo.check_consistent(), Ok(()), "{name}");
    // Online CPUs and the ones hwloc could not represent (offline).
    assert_eq!(set(&topo.online), exp.all_pus(), "{name}: online CPUs");
    assert_eq!(
        set(&topo.offline),
        exp.not_represented,
        "{name}: offline CPUs"
    );

    // Cores: the same groups of PUs, the same core_id where hwloc shows one.
    let want: BTreeSet<(Vec<u32>, Option<u32>)> = exp
        .of_kind("Core")
        .map(|o| (o.pus.iter().copied().collect(), o.os_index()))
        .collect();
    let got: BTreeSet<(Vec<u32>, Option<u32>)> = topo
        .cores
        .iter()
        .map(|c| (c.cpus.iter().collect(), c.id))
        .collect();
    assert_eq!(got, want, "{name}: cores (PUs, core_id)");

    // Threads per core, as a multiset.
    let mut want_t: Vec<usize> = exp.of_kind("Core").map(|o| o.pus.len()).collect();
    let mut got_t: Vec<usize> = topo.cores.iter().map(|c| c.cpus.len()).collect();
    want_t.sort_unstable();
    got_t.sort_unstable();
    assert_eq!(got_t, want_t, "{name}: threads per core");

    // Packages: same groups and physical ids (hwloc prints no P# where the kernel says -1).
    let want_p: BTreeSet<(Vec<u32>, Option<u32>)> = exp
        .of_kind("Package")
        .map(|o| (o.pus.iter().copied().collect(), o.os_index()))
        .collect();
    let got_p: BTreeSet<(Vec<u32>, Option<u32>)> = topo
        .packages
        .iter()
        .map(|p| (p.cpus.iter().collect(), p.id))
        .collect();
    assert_eq!(got_p, want_p, "{name}: packages (PUs, physical id)");

    // Every core lies in the package that the topology says holds it.
    for c in &topo.cores {
        if let Some(p) = c.package {
            assert!(
                c.cpus.is_subset(&topo.packages[p].cpus),
                "{name}: core {} outside its package",
                c.cpus
            );
        }
    }

    // Caches: for every level and kind, the same sharing groups and sizes.
    let want_c = exp.caches();
    let mut got_c = CacheGroups::new();
    for c in &topo.caches {
        got_c
            .entry((c.level, c.kind))
            .or_default()
            .insert((c.cpus.iter().collect(), c.size_bytes));
    }
    assert_eq!(got_c, want_c, "{name}: caches");

    // NUMA nodes: hwloc attaches each node to the object whose PUs are local to it.
    let want_n: BTreeMap<u32, Pus> = exp
        .of_kind("NUMANode")
        .map(|o| {
            (
                o.os_index().unwrap(),
                exp.objs[o.parent.unwrap()].pus.clone(),
            )
        })
        .collect();
    let got_n: BTreeMap<u32, Pus> = topo
        .numa_nodes
        .iter()
        .map(|n| (n.id, set(&n.cpus)))
        .collect();
    assert_eq!(got_n, want_n, "{name}: NUMA nodes");
}

#[test]
fn topology_agrees_with_hwloc_on_every_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = Vec::new();
    for (name, tarball, console) in snapshots() {
        let dir = tmp.path().join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        unpack(&tarball, &dir);
        // Each tarball holds one top-level directory named after the snapshot.
        let root = if dir.join(&name).join("sys").is_dir() {
            dir.join(&name)
        } else {
            dir.clone()
        };
        let topo = Topology::from_sysfs(&root).unwrap_or_else(|e| panic!("{name}: {e}"));
        let exp = parse_console(&std::fs::read_to_string(&console).unwrap());
        check_snapshot(&name, &topo, &exp);
        checked.push(name);
    }
    // The cases the issue names explicitly.
    assert!(checked.iter().any(|n| n.contains("offlines")));
    assert!(checked.iter().any(|n| n == "16em64t-4s2c2t")); // siblings 0 and 8: interleaved numbering
}

#[test]
fn console_parser_reads_a_hand_written_tree() {
    // A guard on the expectation side: a small tree worked out by hand.
    let text = "Machine (P#0)\n  Package L#0 (P#3)\n    L2Cache L#0 (size=1024KiB)\n      Core L#0 (P#0)\n        PU L#0 (P#0)\n        PU L#1 (P#8)\n  NUMANode L#0 (P#0)\n2 processors not represented in topology: 0x00000006\ndepth 0: 1 Machine\n";
    let e = parse_console(text);
    assert_eq!(e.all_pus(), Pus::from([0, 8]));
    let pkg = e.of_kind("Package").next().unwrap();
    assert_eq!(
        (pkg.os_index(), pkg.pus.clone()),
        (Some(3), Pus::from([0, 8]))
    );
    assert_eq!(e.not_represented, Pus::from([1, 2]));
    let caches = e.caches();
    assert_eq!(
        caches[&(2, CacheKind::Unified)],
        BTreeSet::from([(vec![0, 8], Some(1 << 20))])
    );
}
