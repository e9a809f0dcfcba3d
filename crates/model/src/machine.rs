//! Machine models: topology, core pipeline, caches and memory, as data (DESIGN §3).

use crate::error::{ModelError, Origin};
use crate::loader::{self, Override, Preset, Source};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A whole machine: what `machines/*.toml` describes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MachineModel {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub clock_ghz: f64,
    pub topology: TopologySpec,
    pub core: CoreSpec,
    /// Cache levels by name (`L1D`, `TC`, `L2`, …).
    pub cache: BTreeMap<String, CacheSpec>,
    pub memory: MemorySpec,
    #[serde(default)]
    pub os: OsCosts,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    pub packages: u32,
    pub cores_per_package: u32,
    pub threads_per_core: u32,
    #[serde(default)]
    pub cpu_numbering: CpuNumbering,
}

/// How logical CPU numbers map onto (package, core, thread).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CpuNumbering {
    /// Siblings get adjacent numbers: cpu = (core_index * threads) + thread (Linux 2.4 on the
    /// Northwood Xeon, thesis §2.3.1: "ignoring the LSB" finds the package).
    #[default]
    SiblingsAdjacent,
    /// First thread of every core, then the second thread of every core (Linux on most Intel parts
    /// today).
    ThreadMajor,
}

/// The pipeline of every core of the machine.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CoreSpec {
    /// Out-of-order superscalar core with simultaneous multithreading, timed interval style.
    SmtOoo(OooCoreSpec),
    /// Single-issue in-order core that interleaves ready hardware contexts every cycle.
    FgmtInorder(InorderCoreSpec),
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OooCoreSpec {
    /// Sustained uops per cycle through the narrowest of fetch/rename/retire.
    pub frontend_uops_per_cycle: f64,
    pub loads_per_cycle: f64,
    pub stores_per_cycle: f64,
    pub fp_ops_per_cycle: f64,
    pub branch_mispredict_penalty_cycles: u32,
    /// Instruction window (reorder buffer), in uops.
    pub rob: WindowResource,
    pub load_buffer: WindowResource,
    pub store_buffer: WindowResource,
    /// Outstanding L1 data-cache misses (fill buffers / MSHRs).
    pub miss_buffers: WindowResource,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InorderCoreSpec {
    /// Instructions issued per cycle by the whole core (from one context).
    pub issue_per_cycle: u32,
    /// Cycles a context is not ready after a mispredicted (or, without a predictor, any taken)
    /// branch.
    pub branch_penalty_cycles: u32,
    /// Cycles a context waits for a floating-point result before its next instruction.
    pub fp_latency_cycles: u32,
}

/// A per-core buffer and how SMT threads share it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WindowResource {
    pub entries: u32,
    pub smt: SmtSharing,
    /// For `smt = "watermark"`: the share of `entries` one thread may hold while others run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark_fraction: Option<f64>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SmtSharing {
    /// Split equally among running threads; recombined when a sibling halts.
    Partitioned,
    /// One pool any thread may fill.
    Shared,
    /// Shared up to a per-thread threshold.
    Watermark,
}

impl WindowResource {
    /// Entries one thread may use when `running` threads are active on its core.
    pub fn per_thread(&self, running: u32) -> u32 {
        if running <= 1 {
            return self.entries;
        }
        match self.smt {
            SmtSharing::Partitioned => (self.entries / running).max(1),
            SmtSharing::Shared => self.entries,
            SmtSharing::Watermark => {
                let f = self.watermark_fraction.unwrap_or(1.0);
                ((self.entries as f64 * f).floor() as u32).max(1)
            }
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum CacheContents {
    Instructions,
    Data,
    Unified,
}

/// Most logical CPUs a machine model may have.
pub const MAX_LOGICAL_CPUS: u64 = 4096;
/// Most cache capacity, summed over every instance, a machine model may simulate.
pub const MAX_SIMULATED_CACHE_BYTES: u64 = 4 << 30;

/// Which logical CPUs share one instance of a cache or memory path.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    Core,
    Package,
    Machine,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Replacement {
    #[default]
    Lru,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    pub level: u8,
    pub holds: CacheContents,
    pub size_bytes: u64,
    pub ways: u32,
    pub line_bytes: u32,
    /// Load-to-use latency of a hit at this level, counted from the core.
    pub latency_cycles: u32,
    pub shared_by: Scope,
    /// Entries are tagged with the hardware thread, so threads never hit on each other's lines
    /// (the P4 trace cache).
    #[serde(default)]
    pub thread_tagged: bool,
    /// A miss also fills the adjacent line of the aligned pair (the P4 L2's 128-byte sectors).
    #[serde(default)]
    pub fill_adjacent_line: bool,
    #[serde(default)]
    pub replacement: Replacement,
    /// Dirty lines evicted from this cache are written into the next level (or over the memory
    /// path). `false` drops them, as cachegrind's model does (it simulates a write as a read):
    /// only the cross-check's machine sets it.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub write_back: bool,
    /// A hardware stream prefetcher that fills this cache ahead of sequential misses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch: Option<StreamPrefetch>,
}

/// A sequential stream prefetcher: after two misses to consecutive lines it keeps `distance_bytes`
/// ahead of the stream, tracking up to `streams` streams at once.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StreamPrefetch {
    pub streams: u32,
    pub distance_bytes: u32,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl CacheSpec {
    pub fn sets(&self) -> u64 {
        self.size_bytes / (self.ways as u64 * self.line_bytes as u64)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    /// Unloaded latency of a memory access, counted from the core.
    pub latency_cycles: u32,
    /// Sustained bandwidth of the shared memory path, in bytes per core cycle.
    pub bus_bytes_per_cycle: f64,
    pub shared_by: Scope,
}

/// Costs the OS pays on this machine.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OsCosts {
    /// Direct cost of one context switch (cache refill is simulated, not included).
    pub context_switch_cycles: u64,
    /// Cost of one entry into the kernel and the return from it (a system call or an interrupt):
    /// the pipeline drains on entry and on return. Zero: not modelled.
    #[serde(default)]
    pub mode_switch_cycles: u64,
    /// Cost of one locked read-modify-write (`lock`-prefixed instruction), which an SMP kernel
    /// build executes for every spinlock and atomic operation and a UP build does not. Zero: not
    /// modelled.
    #[serde(default)]
    pub locked_instruction_cycles: u64,
}

/// Where one logical CPU sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CpuLocation {
    pub package: u32,
    /// Core index across the whole machine.
    pub core: u32,
    /// Hardware thread within the core.
    pub thread: u32,
}

impl MachineModel {
    pub fn logical_cpus(&self) -> u32 {
        let t = &self.topology;
        t.packages * t.cores_per_package * t.threads_per_core
    }

    pub fn cores(&self) -> u32 {
        self.topology.packages * self.topology.cores_per_package
    }

    /// Location of logical CPU `cpu`, or `None` if the machine has no such CPU.
    pub fn cpu_location(&self, cpu: u32) -> Option<CpuLocation> {
        if cpu >= self.logical_cpus() {
            return None;
        }
        let t = &self.topology;
        let (core, thread) = match t.cpu_numbering {
            CpuNumbering::SiblingsAdjacent => (cpu / t.threads_per_core, cpu % t.threads_per_core),
            CpuNumbering::ThreadMajor => (cpu % self.cores(), cpu / self.cores()),
        };
        Some(CpuLocation {
            package: core / t.cores_per_package,
            core,
            thread,
        })
    }

    /// The logical CPU at (core, thread).
    pub fn cpu_at(&self, core: u32, thread: u32) -> u32 {
        let t = &self.topology;
        match t.cpu_numbering {
            CpuNumbering::SiblingsAdjacent => core * t.threads_per_core + thread,
            CpuNumbering::ThreadMajor => thread * self.cores() + core,
        }
    }

    /// Caches in lookup order for one kind of access: the level-1 cache holding `contents`, then
    /// every unified level above it.
    pub fn cache_path(&self, contents: CacheContents) -> Vec<(&str, &CacheSpec)> {
        let mut path: Vec<(&str, &CacheSpec)> = self
            .cache
            .iter()
            .filter(|(_, c)| {
                c.holds == contents || (c.holds == CacheContents::Unified && c.level > 1)
            })
            .map(|(n, c)| (n.as_str(), c))
            .collect();
        path.sort_by_key(|(_, c)| c.level);
        path
    }

    /// Checks everything serde cannot: positive sizes, power-of-two geometry, a complete hierarchy.
    pub fn validate(&self, origin: &Origin) -> Result<(), ModelError> {
        ModelError::check_name(origin, &self.name)?;
        let bad = |field: &str, value: &dyn std::fmt::Display, reason: &str| {
            Err(ModelError::invalid(origin, field, value, reason))
        };
        if !(self.clock_ghz > 0.0 && self.clock_ghz.is_finite()) {
            return bad("clock_ghz", &self.clock_ghz, "must be positive");
        }
        let t = &self.topology;
        for (field, v) in [
            ("topology.packages", t.packages),
            ("topology.cores_per_package", t.cores_per_package),
            ("topology.threads_per_core", t.threads_per_core),
        ] {
            if v == 0 || v > 1024 {
                return bad(field, &v, "must be between 1 and 1024");
            }
        }
        let cpus = t.packages as u64 * t.cores_per_package as u64 * t.threads_per_core as u64;
        if cpus > MAX_LOGICAL_CPUS {
            return bad(
                "topology",
                &format!(
                    "{} x {} x {} = {cpus} logical CPUs",
                    t.packages, t.cores_per_package, t.threads_per_core
                ),
                &format!("at most {MAX_LOGICAL_CPUS}"),
            );
        }
        match &self.core {
            CoreSpec::SmtOoo(c) => {
                for (field, v) in [
                    ("core.frontend_uops_per_cycle", c.frontend_uops_per_cycle),
                    ("core.loads_per_cycle", c.loads_per_cycle),
                    ("core.stores_per_cycle", c.stores_per_cycle),
                    ("core.fp_ops_per_cycle", c.fp_ops_per_cycle),
                ] {
                    if !(v > 0.0 && v.is_finite()) {
                        return bad(field, &v, "must be positive");
                    }
                }
                for (name, w) in [
                    ("rob", &c.rob),
                    ("load_buffer", &c.load_buffer),
                    ("store_buffer", &c.store_buffer),
                    ("miss_buffers", &c.miss_buffers),
                ] {
                    if w.entries == 0 {
                        return bad(&format!("core.{name}.entries"), &0, "must be at least 1");
                    }
                    match (w.smt, w.watermark_fraction) {
                        (SmtSharing::Watermark, None) => {
                            return bad(
                                &format!("core.{name}.watermark_fraction"),
                                &"(missing)",
                                "required when smt = \"watermark\"",
                            )
                        }
                        (_, Some(f)) if !(f > 0.0 && f <= 1.0) => {
                            return bad(
                                &format!("core.{name}.watermark_fraction"),
                                &f,
                                "must be in (0, 1]",
                            )
                        }
                        _ => {}
                    }
                }
            }
            CoreSpec::FgmtInorder(c) => {
                if c.issue_per_cycle == 0 {
                    return bad("core.issue_per_cycle", &0, "must be at least 1");
                }
            }
        }
        if self.cache.is_empty() {
            return bad(
                "cache",
                &"(none)",
                "a machine needs at least one cache level",
            );
        }
        let mut simulated_bytes: u64 = 0;
        for (name, c) in &self.cache {
            let f = |k: &str| format!("cache.{name}.{k}");
            if c.size_bytes == 0 {
                return bad(&f("size_bytes"), &0, "must be positive");
            }
            // Every instance of every cache is simulated line by line: bound the memory.
            let instances = match c.shared_by {
                Scope::Core => t.packages as u64 * t.cores_per_package as u64,
                Scope::Package => t.packages as u64,
                Scope::Machine => 1,
            };
            simulated_bytes =
                simulated_bytes.saturating_add(c.size_bytes.saturating_mul(instances));
            if simulated_bytes > MAX_SIMULATED_CACHE_BYTES {
                return bad(
                    &f("size_bytes"),
                    &c.size_bytes,
                    &format!(
                        "the machine's caches (every instance) would exceed {} GiB of simulated \
                         cache, the limit",
                        MAX_SIMULATED_CACHE_BYTES >> 30
                    ),
                );
            }
            if c.ways == 0 {
                return bad(&f("ways"), &0, "must be at least 1");
            }
            if c.line_bytes == 0 || !c.line_bytes.is_power_of_two() {
                return bad(&f("line_bytes"), &c.line_bytes, "must be a power of two");
            }
            let set_bytes = c.ways as u64 * c.line_bytes as u64;
            if c.size_bytes % set_bytes != 0 {
                return bad(
                    &f("size_bytes"),
                    &c.size_bytes,
                    &format!("is not a multiple of ways × line_bytes = {set_bytes}"),
                );
            }
            if !c.sets().is_power_of_two() {
                return bad(
                    &f("size_bytes"),
                    &c.size_bytes,
                    &format!(
                        "gives {} sets (size / (ways × line_bytes)); the set count must be a power of two",
                        c.sets()
                    ),
                );
            }
            if let Some(p) = &c.prefetch {
                if c.level == 1 {
                    return bad(
                        &f("prefetch"),
                        &"(set)",
                        "stream prefetch is modelled at unified levels only",
                    );
                }
                if p.streams == 0 || p.streams > 64 {
                    return bad(&f("prefetch.streams"), &p.streams, "must be 1 to 64");
                }
                if p.distance_bytes < c.line_bytes || p.distance_bytes > 64 * c.line_bytes {
                    return bad(
                        &f("prefetch.distance_bytes"),
                        &p.distance_bytes,
                        "must be 1 to 64 lines",
                    );
                }
            }
            if c.level == 0 || c.level > 4 {
                return bad(&f("level"), &c.level, "must be 1 to 4");
            }
            if c.level == 1 && c.holds == CacheContents::Unified {
                return bad(
                    &f("holds"),
                    &"unified",
                    "level-1 caches hold instructions or data",
                );
            }
            if c.level > 1 && c.holds != CacheContents::Unified {
                return bad(
                    &f("holds"),
                    &format!("{:?}", c.holds),
                    "levels above 1 must be unified",
                );
            }
        }
        for contents in [CacheContents::Instructions, CacheContents::Data] {
            let path = self.cache_path(contents);
            let l1s = path.iter().filter(|(_, c)| c.level == 1).count();
            if l1s != 1 {
                return bad(
                    "cache",
                    &format!("{l1s} level-1 {contents:?} caches"),
                    "need exactly one level-1 cache for instructions and one for data",
                );
            }
            for pair in path.windows(2) {
                let ((_, lo), (hi_name, hi)) = (pair[0], pair[1]);
                if hi.level == lo.level {
                    return bad(
                        &format!("cache.{hi_name}.level"),
                        &hi.level,
                        "two unified caches at the same level",
                    );
                }
                if hi.latency_cycles < lo.latency_cycles {
                    return bad(
                        &format!("cache.{hi_name}.latency_cycles"),
                        &hi.latency_cycles,
                        "is below the latency of the level beneath it",
                    );
                }
                if hi.shared_by < lo.shared_by {
                    return bad(
                        &format!("cache.{hi_name}.shared_by"),
                        &format!("{:?}", hi.shared_by),
                        "a higher level must be shared at least as widely as the level beneath it",
                    );
                }
            }
            let last = path.last().expect("checked non-empty").1;
            if self.memory.latency_cycles < last.latency_cycles {
                return bad(
                    "memory.latency_cycles",
                    &self.memory.latency_cycles,
                    "is below the last cache level's latency",
                );
            }
        }
        if !(self.memory.bus_bytes_per_cycle > 0.0 && self.memory.bus_bytes_per_cycle.is_finite()) {
            return bad(
                "memory.bus_bytes_per_cycle",
                &self.memory.bus_bytes_per_cycle,
                "must be positive",
            );
        }
        if self.memory.shared_by == Scope::Core {
            return bad(
                "memory.shared_by",
                &"core",
                "memory is shared by a package or the machine",
            );
        }
        Ok(())
    }
}

/// Machine presets embedded in the binary.
pub const MACHINE_PRESETS: &[Preset] = &[
    preset!("machines", "northwood"),
    preset!("machines", "prescott"),
    preset!("machines", "xeon-ruan"),
    preset!("machines", "xeon-ruan-l3"),
    preset!("machines", "cmt-fedorova"),
    preset!("machines", "smt2-modern"),
    preset!("machines", "smt8-redstone"),
    preset!("machines", "superscalar-redstone"),
];

/// Loads a machine by preset name or file path, applies overrides and validates it.
pub fn load_machine(name: &str, overrides: &[Override]) -> Result<MachineModel, ModelError> {
    let source = loader::resolve("machine", name, MACHINE_PRESETS)?;
    machine_from_source(&source, overrides)
}

pub fn machine_from_source(
    source: &Source,
    overrides: &[Override],
) -> Result<MachineModel, ModelError> {
    let m: MachineModel = loader::parse(source, overrides)?;
    m.validate(&loader::overridden(&source.origin, overrides))?;
    Ok(m)
}
