//! This machine as a machine file to start from (`smtsched host topology --machine-toml`): the
//! topology and caches sysfs describes, and for what sysfs cannot tell (pipeline, latencies,
//! memory, OS costs) a template preset's values, each marked as such in the file.

use crate::error::HostError;
use crate::topology::Topology;
use serde::Serialize;
use smtsched_model::topology::CacheKind;
use smtsched_model::{
    load_machine, machine_from_source, CacheContents, CacheSpec, CpuNumbering, CpuSet,
    MachineModel, Origin, Source,
};

/// A machine model of this host's shape, for simulations whose results depend on the shape
/// alone (CPU shares without interference): the `smt2-modern` preset with the host's packages,
/// cores and threads, its CPUs numbered as the host numbers them.
pub fn host_shaped(topo: &Topology) -> Result<MachineModel, HostError> {
    let n = topo.online.len() as u32;
    if topo.online != (0..n).collect::<CpuSet>() {
        return Err(HostError::bad(format!(
            "the online CPUs ({}) are not numbered 0-{}: the simulator cannot mirror them",
            topo.online,
            n - 1
        )));
    }
    let packages = topo.packages.len().max(1) as u32;
    let threads = topo.threads_per_core().max(1) as u32;
    let cores = (n / threads / packages).max(1);
    if packages * cores * threads != n {
        return Err(HostError::bad(format!(
            "this machine's {n} CPUs are not {packages} package(s) of equal cores of {threads} thread(s)"
        )));
    }
    let mut m = load_machine("smt2-modern", &[]).map_err(|e| HostError::bad(e.to_string()))?;
    m.name = format!("this host ({packages}x{cores}x{threads})");
    m.topology.packages = packages;
    m.topology.cores_per_package = cores;
    m.topology.threads_per_core = threads;
    // Siblings are n and n+1, or n and n+cores: pick the numbering the host uses.
    for numbering in [CpuNumbering::SiblingsAdjacent, CpuNumbering::ThreadMajor] {
        m.topology.cpu_numbering = numbering;
        if same_siblings(&m, topo) {
            return Ok(m);
        }
    }
    Err(HostError::bad(
        "this machine numbers its sibling threads neither n,n+1 nor n,n+cores: the simulator cannot mirror it",
    ))
}

/// Whether every CPU has the same siblings in `m` as on the host.
fn same_siblings(m: &MachineModel, topo: &Topology) -> bool {
    let n = topo.online.len() as u32;
    let core = |c: u32| m.cpu_location(c).map(|l| l.core);
    (0..n).all(|c| {
        let sim: CpuSet = (0..n).filter(|&d| core(d) == core(c)).collect();
        sim == topo.siblings_of(c)
    })
}

/// The machine file text for `t`, with `template` supplying what sysfs does not describe.
pub fn machine_toml(
    t: &Topology,
    name: &str,
    template: &MachineModel,
) -> Result<String, HostError> {
    let shape = Shape::of(t)?;
    let mut s = String::new();
    s += &format!(
        "# {} as `smtsched host topology --machine-toml` read it from {}.\n\
         # Topology and caches are this machine's (sysfs); values marked [template] are the\n\
         # `{}` preset's, standing in for what sysfs does not describe: replace them with\n\
         # published figures for this processor.\n",
        t.cpu_model.as_deref().unwrap_or("This machine"),
        t.root,
        template.name
    );
    s += &format!("name = {}\n", toml_string(name));
    s += &format!(
        "description = {}\n",
        toml_string(t.cpu_model.as_deref().unwrap_or("this machine"))
    );
    s += &format!("clock_ghz = {}  # [template]\n\n", template.clock_ghz);
    s += &format!(
        "[topology]\npackages = {}\ncores_per_package = {}\nthreads_per_core = {}\n\
         cpu_numbering = \"{}\"{}\n\n",
        shape.packages,
        shape.cores_per_package,
        shape.threads,
        shape.numbering,
        shape.numbering_note
    );
    s += &template_table("core", &template.core)?;
    for c in caches(t, &shape, template)? {
        s += &c;
    }
    s += &template_table("memory", &template.memory)?;
    s += &template_table("os", &template.os)?;
    // What is written must load: a machine the model cannot describe is refused here.
    let src = Source {
        origin: Origin::Inline(format!("the machine file of {}", t.root)),
        text: s.clone(),
    };
    machine_from_source(&src, &[]).map_err(|e| HostError::bad(e.to_string()))?;
    Ok(s)
}

/// Packages, cores and threads of a uniform topology, and how its CPUs are numbered.
struct Shape {
    packages: usize,
    cores_per_package: usize,
    threads: usize,
    numbering: &'static str,
    numbering_note: &'static str,
}

impl Shape {
    fn of(t: &Topology) -> Result<Shape, HostError> {
        let uneven = |what: &str| {
            HostError::bad(format!(
                "{}: {what}; a machine file describes packages × cores × threads alike",
                t.root
            ))
        };
        let threads = t.threads_per_core();
        if t.cores.is_empty() || t.cores.iter().any(|c| c.cpus.len() != threads) {
            return Err(uneven("cores have different numbers of online threads"));
        }
        let packages = t.packages.len().max(1);
        if !t.cores.len().is_multiple_of(packages) {
            return Err(uneven("packages have different numbers of cores"));
        }
        let cores = t.cores.len();
        // The model numbers cores package by package; thread i of core k is CPU k·threads + i
        // (siblings adjacent) or i·cores + k (thread-major).
        let mut ordered: Vec<&crate::topology::Core> = t.cores.iter().collect();
        ordered.sort_by_key(|c| (c.package, c.cpus.first()));
        let numbered = |cpu: &dyn Fn(usize, usize) -> usize| {
            ordered.iter().enumerate().all(|(k, c)| {
                c.cpus
                    .iter()
                    .enumerate()
                    .all(|(i, real)| real as usize == cpu(k, i))
            })
        };
        let (numbering, note) = if numbered(&|k, i| k * threads + i) {
            ("siblings-adjacent", "")
        } else if numbered(&|k, i| i * cores + k) {
            ("thread-major", "")
        } else {
            (
                "siblings-adjacent",
                "  # this machine numbers its CPUs otherwise: simulated CPU numbers are not its own",
            )
        };
        Ok(Shape {
            packages,
            cores_per_package: cores / packages,
            threads,
            numbering,
            numbering_note: note,
        })
    }
}

/// The cache tables: one per (level, kind) sysfs lists, sized and shared as it says; what it
/// leaves out (a size, an associativity, a level-1 cache) is the template's, marked.
fn caches(t: &Topology, shape: &Shape, template: &MachineModel) -> Result<Vec<String>, HostError> {
    let mut out = Vec::new();
    let mut seen: Vec<(u8, CacheKind)> = Vec::new();
    for c in &t.caches {
        if seen.contains(&(c.level, c.kind)) {
            continue;
        }
        seen.push((c.level, c.kind));
        let (holds, contents) = holds(c.kind);
        let stand_in = template_cache(template, c.level, contents);
        let field = |ours: Option<u64>, theirs: Option<u64>, what: &str| match (ours, theirs) {
            (Some(v), _) => Ok(format!("{v}")),
            (None, Some(v)) => Ok(format!("{v}  # [template] sysfs gives none")),
            (None, None) => Err(HostError::bad(format!(
                "{}: sysfs gives no {what} for the {} cache, nor has the template one",
                t.root,
                c.label()
            ))),
        };
        let size = field(c.size_bytes, stand_in.map(|s| s.size_bytes), "size")?;
        let ways = field(
            c.ways.map(u64::from),
            stand_in.map(|s| s.ways as u64),
            "ways",
        )?;
        let line = field(
            c.line_bytes.map(u64::from),
            stand_in.map(|s| s.line_bytes as u64),
            "line size",
        )?;
        let shared_by = if c.cpus.len() <= shape.threads {
            "core"
        } else if c.cpus.len() <= shape.threads * shape.cores_per_package {
            "package"
        } else {
            "machine"
        };
        out.push(format!(
            "[cache.{}]\nlevel = {}\nholds = \"{holds}\"\nsize_bytes = {size}\nways = {ways}\n\
             line_bytes = {line}\nlatency_cycles = {}  # [template]\nshared_by = \"{shared_by}\"\n\n",
            c.label(),
            c.level,
            template_latency(template, c.level, contents),
        ));
    }
    // The model needs a level-1 cache for instructions and one for data.
    for (kind, name) in [(CacheKind::Instruction, "L1i"), (CacheKind::Data, "L1d")] {
        if seen.contains(&(1, kind)) {
            continue;
        }
        if let Some(c) = template_cache(template, 1, holds(kind).1) {
            out.push(template_table(&format!("cache.{name}"), c)?);
        }
    }
    Ok(out)
}

/// What a cache of `kind` holds, as the machine file says it and as the model types it.
fn holds(kind: CacheKind) -> (&'static str, CacheContents) {
    match kind {
        CacheKind::Instruction => ("instructions", CacheContents::Instructions),
        CacheKind::Data => ("data", CacheContents::Data),
        CacheKind::Unified => ("unified", CacheContents::Unified),
    }
}

/// The template's cache at `level` holding `contents`.
fn template_cache(
    template: &MachineModel,
    level: u8,
    contents: CacheContents,
) -> Option<&CacheSpec> {
    template
        .cache
        .values()
        .find(|c| c.level == level && c.holds == contents)
}

/// The template's load-to-use latency at `level` for what the cache holds (its last level's
/// for a level it lacks).
fn template_latency(template: &MachineModel, level: u8, contents: CacheContents) -> u32 {
    let contents = match contents {
        CacheContents::Instructions => CacheContents::Instructions,
        _ => CacheContents::Data,
    };
    let path: Vec<&CacheSpec> = template
        .cache_path(contents)
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    path.iter()
        .find(|c| c.level == level)
        .or(path.last())
        .map_or(0, |c| c.latency_cycles)
}

/// `[name]` (a dotted path; and its subtables) with the template's values, marked as such.
fn template_table(name: &str, value: &impl Serialize) -> Result<String, HostError> {
    let cannot = |e: String| HostError::bad(format!("cannot write the [{name}] table: {e}"));
    let mut nested = toml::Value::try_from(value).map_err(|e| cannot(e.to_string()))?;
    for key in name.rsplit('.') {
        let mut table = toml::Table::new();
        table.insert(key.to_string(), nested);
        nested = toml::Value::Table(table);
    }
    let text = toml::to_string(&nested).map_err(|e| cannot(e.to_string()))?;
    Ok(format!("# [template] every value of [{name}]\n{text}\n"))
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}
