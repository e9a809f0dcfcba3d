//! Workload profiles: a thread as a loop over phases, each with an instruction mix, intrinsic ILP,
//! branch behaviour, code footprint and data regions with access patterns (DESIGN §4).

use crate::error::{ModelError, Origin};
use crate::loader::{self, Override, Preset, Source};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadProfile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The real program the profile stands for, if any (`181.mcf`).
    #[serde(default)]
    pub program: String,
    /// Copies of this workload are threads of one process (Apache-MT's thread per connection):
    /// they share user memory as well as code, where copies of other workloads are processes
    /// with memory of their own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub threads_share_memory: bool,
    /// The thread runs these phases in order, then starts again.
    pub phase: Vec<PhaseSpec>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    #[serde(default)]
    pub name: String,
    /// Length of the phase in retired instructions.
    pub instructions: u64,
    /// Instructions per cycle the program's dependences allow on an unbounded machine with perfect
    /// caches and branch prediction.
    pub ilp: f64,
    #[serde(default = "default_uops")]
    pub uops_per_instruction: f64,
    /// Fractions of instructions that are loads, stores, conditional branches and floating-point
    /// operations; the rest are integer operations.
    pub loads: f64,
    pub stores: f64,
    pub branches: f64,
    #[serde(default)]
    pub fp_ops: f64,
    /// Fraction of branches mispredicted.
    pub branch_mispredict_rate: f64,
    /// Fraction of branches taken; a taken branch jumps to a new place in the code.
    #[serde(default = "default_taken")]
    pub taken_branches: f64,
    /// Average instruction length, which sets how many instructions one fetch line holds.
    #[serde(default = "default_instruction_bytes")]
    pub instruction_bytes: u32,
    /// Code regions; a taken branch lands in one chosen by weight.
    pub code: Vec<CodeRegion>,
    /// Data regions; each memory reference goes to one chosen by weight.
    #[serde(default)]
    pub data: Vec<DataRegion>,
    /// Work the phase does in the kernel: system calls, or all of it for an interrupt handler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelWork>,
}

/// The kernel part of a phase (DESIGN §4). Kernel code and data live in the kernel half of every
/// address space, so a kernel region is the same memory for every thread on the machine: threads
/// on sibling CPUs evict each other's kernel lines and also fetch them for each other.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KernelWork {
    /// Share of the phase's instructions executed in the kernel (1 = all of them: an interrupt
    /// handler or a kernel thread).
    pub share: f64,
    /// Mean instructions of one kernel entry (one system call, or one interrupt and its softirq);
    /// every entry costs the machine's `os.mode_switch_cycles`.
    pub instructions_per_entry: u64,
    /// Locked read-modify-writes (spinlocks, atomics) per thousand kernel instructions in an SMP
    /// kernel build; a UP build executes none ([`WorkloadProfile::built_for`]).
    #[serde(default)]
    pub locked_per_kilo_instructions: f64,
    /// The kernel code's instruction mix, as for a phase.
    pub ilp: f64,
    #[serde(default = "default_uops")]
    pub uops_per_instruction: f64,
    pub loads: f64,
    pub stores: f64,
    pub branches: f64,
    pub branch_mispredict_rate: f64,
    #[serde(default = "default_taken")]
    pub taken_branches: f64,
    #[serde(default = "default_instruction_bytes")]
    pub instruction_bytes: u32,
    /// Kernel code and data regions; each must be named, and a name means the same kernel memory
    /// in every phase and every workload.
    pub code: Vec<CodeRegion>,
    #[serde(default)]
    pub data: Vec<DataRegion>,
}

/// Which build of the kernel runs: Ruan et al.'s 1T-UP and 1T-SMP configurations differ only in
/// this.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum KernelBuild {
    /// Uniprocessor: spinlocks compile away and atomics lose their `lock` prefix.
    Up,
    #[default]
    Smp,
}

impl std::fmt::Display for KernelBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KernelBuild::Up => "up",
            KernelBuild::Smp => "smp",
        })
    }
}

impl std::str::FromStr for KernelBuild {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "up" => Ok(KernelBuild::Up),
            "smp" => Ok(KernelBuild::Smp),
            _ => Err(format!("unknown kernel build {s:?} (expected smp or up)")),
        }
    }
}

/// Largest kernel region: kernel regions are placed by name in 4 GiB slots.
pub const KERNEL_REGION_MAX_BYTES: u64 = 1 << 31;

fn default_uops() -> f64 {
    1.0
}
fn default_taken() -> f64 {
    0.6
}
fn default_instruction_bytes() -> u32 {
    4
}
fn default_stride() -> u64 {
    8
}
fn default_streams() -> u32 {
    1
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CodeRegion {
    /// Regions with the same name in different phases are the same code.
    #[serde(default)]
    pub name: String,
    pub size_bytes: u64,
    pub weight: f64,
    /// Branch targets follow the power law of a `power-law` data region with this scale (bytes of
    /// the hottest code); absent, targets are uniform over the region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_bytes: Option<u64>,
    /// Exponent of that power law (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exponent: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DataRegion {
    /// Regions with the same name in different phases are the same memory.
    #[serde(default)]
    pub name: String,
    pub size_bytes: u64,
    /// Share of the phase's loads and stores that go to this region.
    pub weight: f64,
    pub pattern: AccessPattern,
    /// Step of a sequential or strided walk.
    #[serde(default = "default_stride")]
    pub stride_bytes: u64,
    /// Independent walks through equal slices of the region (stencil codes touch several arrays).
    #[serde(default = "default_streams")]
    pub streams: u32,
    /// For `pattern = "power-law"`: the scale of the distribution, roughly the bytes of the
    /// hottest data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_bytes: Option<u64>,
    /// For `pattern = "power-law"`: the exponent α (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exponent: Option<f64>,
}

/// The default exponent of power-law reference distributions: miss ratios fall as the square root
/// of cache size on average (Hartstein, Srinivasan, Puzak and Moreno, "Cache miss behavior: is it
/// √2?", Computing Frontiers 2006).
pub const DEFAULT_POWER_LAW_EXPONENT: f64 = 0.5;

/// Parameters of a truncated power-law (Pareto) reference distribution over a region: the offset X
/// of a reference satisfies P(X ≥ x) ∝ (x + h)^-α − (S + h)^-α, so an LRU cache of C bytes
/// (h ≪ C ≤ S) misses a share ((C + h)^-α − (S + h)^-α) / (h^-α − (S + h)^-α) of the references.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PowerLaw {
    pub size_bytes: u64,
    pub hot_bytes: u64,
    pub exponent: f64,
}

impl PowerLaw {
    /// Share of references that fall beyond the hottest `cache_bytes` of the region: the miss ratio
    /// of a fully associative LRU cache of that size under independent references.
    pub fn miss_ratio(&self, cache_bytes: f64) -> f64 {
        let (h, s, a) = (self.hot_bytes as f64, self.size_bytes as f64, self.exponent);
        if cache_bytes >= s {
            return 0.0;
        }
        let f = |x: f64| (x + h).powf(-a);
        ((f(cache_bytes) - f(s)) / (f(0.0) - f(s))).clamp(0.0, 1.0)
    }

    /// Offset (in bytes, within the region) at cumulative probability `u` in [0, 1).
    pub fn quantile(&self, u: f64) -> f64 {
        let (h, s, a) = (self.hot_bytes as f64, self.size_bytes as f64, self.exponent);
        let lo = h.powf(-a);
        let hi = (s + h).powf(-a);
        (lo - u * (lo - hi)).powf(-1.0 / a) - h
    }
}

impl DataRegion {
    /// The power law of a `power-law` region.
    pub fn power_law(&self) -> Option<PowerLaw> {
        (self.pattern == AccessPattern::PowerLaw).then(|| PowerLaw {
            size_bytes: self.size_bytes,
            hot_bytes: self.hot_bytes.unwrap_or(64),
            exponent: self.exponent.unwrap_or(DEFAULT_POWER_LAW_EXPONENT),
        })
    }
}

impl CodeRegion {
    /// The power law of branch targets, if the region has one.
    pub fn power_law(&self) -> Option<PowerLaw> {
        self.hot_bytes.map(|h| PowerLaw {
            size_bytes: self.size_bytes,
            hot_bytes: h,
            exponent: self.exponent.unwrap_or(DEFAULT_POWER_LAW_EXPONENT),
        })
    }
}

/// How references within a region are chosen. A hot/cold reuse mix is two regions of different
/// sizes and weights.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum AccessPattern {
    /// Walks forward `stride_bytes` at a time, wrapping at the end.
    Sequential,
    /// Like sequential; named for strides of a line or more.
    Strided,
    /// Uniformly random 8-byte words; independent of each other.
    Random,
    /// Uniformly random, and each load needs the previous one's result (no overlap of misses).
    PointerChase,
    /// Random with a truncated power-law concentration on hot data (see [`PowerLaw`]): a smooth
    /// miss-ratio curve, as real programs have, rather than the cliff of a uniform region.
    PowerLaw,
}

impl WorkloadProfile {
    pub fn validate(&self, origin: &Origin) -> Result<(), ModelError> {
        ModelError::check_name(origin, &self.name)?;
        if self.phase.is_empty() {
            return Err(ModelError::invalid(
                origin,
                "phase",
                "(none)",
                "a workload needs at least one [[phase]]",
            ));
        }
        for (i, p) in self.phase.iter().enumerate() {
            let at = format!("phase[{i}]");
            if p.instructions == 0 {
                return Err(ModelError::invalid(
                    origin,
                    format!("{at}.instructions"),
                    0,
                    "must be positive",
                ));
            }
            let mix = p.mix();
            mix.check(&at, origin)?;
            check_regions(&at, &mix, &p.code, &p.data, false, origin)?;
            if let Some(k) = &p.kernel {
                let at = format!("{at}.kernel");
                k.check(&at, origin)?;
            }
        }
        self.check_shared_names(origin)
    }

    /// Regions that share a name are one memory, so they must agree on their size.
    fn check_shared_names(&self, origin: &Origin) -> Result<(), ModelError> {
        // (phase, "code" or "data", kernel half, name, size) of every named region.
        let mut named: Vec<(usize, &str, bool, &str, u64)> = Vec::new();
        for (i, p) in self.phase.iter().enumerate() {
            let halves = std::iter::once((false, &p.code, &p.data))
                .chain(p.kernel.iter().map(|k| (true, &k.code, &k.data)));
            for (kernel, code, data) in halves {
                let code = code.iter().map(|c| ("code", c.name.as_str(), c.size_bytes));
                let data = data.iter().map(|d| ("data", d.name.as_str(), d.size_bytes));
                for (kind, name, size) in code.chain(data).filter(|r| !r.1.is_empty()) {
                    named.push((i, kind, kernel, name, size));
                }
            }
        }
        for &(i, kind, kernel, name, size) in &named {
            let other = named
                .iter()
                .find(|o| (o.1, o.2, o.3) == (kind, kernel, name) && o.4 != size);
            if let Some(o) = other {
                return Err(ModelError::invalid(
                    origin,
                    format!("phase[{i}] {kind} region {name:?}.size_bytes"),
                    size,
                    format!("the region has another size ({}) elsewhere", o.4),
                ));
            }
        }
        Ok(())
    }

    /// The profile as it runs on a kernel of `build`: a UP build executes no locked
    /// instructions.
    pub fn built_for(&self, build: KernelBuild) -> WorkloadProfile {
        let mut w = self.clone();
        if build == KernelBuild::Up {
            for k in w.phase.iter_mut().filter_map(|p| p.kernel.as_mut()) {
                k.locked_per_kilo_instructions = 0.0;
            }
        }
        w
    }

    /// Whether any phase enters the kernel.
    pub fn has_kernel_work(&self) -> bool {
        self.phase.iter().any(|p| p.kernel.is_some())
    }

    /// Instructions in one pass over all phases.
    pub fn cycle_instructions(&self) -> u64 {
        self.phase.iter().map(|p| p.instructions).sum()
    }
}

/// The instruction mix of a phase or of its kernel part: what the simulator's streams and its
/// core timing need of either.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InstructionMix {
    pub ilp: f64,
    pub uops_per_instruction: f64,
    pub loads: f64,
    pub stores: f64,
    pub branches: f64,
    /// Locked read-modify-writes (an SMP kernel's); zero in user code.
    pub locked: f64,
    pub fp_ops: f64,
    pub branch_mispredict_rate: f64,
    pub taken_branches: f64,
    pub instruction_bytes: u32,
}

impl PhaseSpec {
    /// The mix of the phase's user part.
    pub fn mix(&self) -> InstructionMix {
        InstructionMix {
            ilp: self.ilp,
            uops_per_instruction: self.uops_per_instruction,
            loads: self.loads,
            stores: self.stores,
            branches: self.branches,
            locked: 0.0,
            fp_ops: self.fp_ops,
            branch_mispredict_rate: self.branch_mispredict_rate,
            taken_branches: self.taken_branches,
            instruction_bytes: self.instruction_bytes,
        }
    }
}

/// The range of a phase's dependence-limited ILP (instructions per cycle).
pub const MIN_ILP: f64 = 0.01;
pub const MAX_ILP: f64 = 64.0;
/// The most micro-operations one instruction may decode into.
pub const MAX_UOPS_PER_INSTRUCTION: f64 = 16.0;

impl InstructionMix {
    fn check(&self, at: &str, origin: &Origin) -> Result<(), ModelError> {
        let bad = |k: &str, value: &dyn std::fmt::Display, reason: &str| {
            Err(ModelError::invalid(
                origin,
                format!("{at}.{k}"),
                value,
                reason,
            ))
        };
        // Ranges bound the timing arithmetic: an ILP of 1e-300 would make a phase's cycles
        // overflow any counter.
        if !(MIN_ILP..=MAX_ILP).contains(&self.ilp) {
            return bad(
                "ilp",
                &format!("{:?}", self.ilp),
                &format!("must be {MIN_ILP} to {MAX_ILP} instructions per cycle"),
            );
        }
        if !(1.0..=MAX_UOPS_PER_INSTRUCTION).contains(&self.uops_per_instruction) {
            return bad(
                "uops_per_instruction",
                &format!("{:?}", self.uops_per_instruction),
                &format!("must be 1 to {MAX_UOPS_PER_INSTRUCTION}"),
            );
        }
        for (k, v) in [
            ("loads", self.loads),
            ("stores", self.stores),
            ("branches", self.branches),
            ("fp_ops", self.fp_ops),
            ("branch_mispredict_rate", self.branch_mispredict_rate),
            ("taken_branches", self.taken_branches),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(k, &v, "must be a fraction between 0 and 1");
            }
        }
        let sum = self.loads + self.stores + self.branches + self.fp_ops;
        if sum > 1.0 + 1e-9 {
            return bad(
                "loads",
                &format!("{} (+stores+branches+fp_ops = {sum})", self.loads),
                "the instruction classes add up to more than 1",
            );
        }
        if self.instruction_bytes == 0 || self.instruction_bytes > 64 {
            return bad(
                "instruction_bytes",
                &self.instruction_bytes,
                "must be 1 to 64",
            );
        }
        Ok(())
    }
}

/// Checks the code and data regions of a phase (`kernel`: of its kernel part, whose regions must
/// be named and fit a kernel slot).
fn check_regions(
    at: &str,
    mix: &InstructionMix,
    code: &[CodeRegion],
    data: &[DataRegion],
    kernel: bool,
    origin: &Origin,
) -> Result<(), ModelError> {
    let bad = |field: String, value: &dyn std::fmt::Display, reason: &str| {
        Err(ModelError::invalid(origin, field, value, reason))
    };
    if code.is_empty() {
        return bad(
            format!("{at}.code"),
            &"(none)",
            "a phase needs at least one [[phase.code]] region",
        );
    }
    let kernel_name = |field: String, name: &str, size: u64| {
        if !kernel {
            return Ok(());
        }
        if name.is_empty() {
            return bad(
                field,
                &"\"\"",
                "kernel regions need a name: the same name is the same kernel memory everywhere",
            );
        }
        if size > KERNEL_REGION_MAX_BYTES {
            return bad(field, &size, "a kernel region may hold at most 2 GiB");
        }
        Ok(())
    };
    for (j, c) in code.iter().enumerate() {
        let g = |k: &str| format!("{at}.code[{j}].{k}");
        if c.size_bytes < mix.instruction_bytes as u64 {
            return bad(
                g("size_bytes"),
                &c.size_bytes,
                "must hold at least one instruction",
            );
        }
        if !(c.weight > 0.0 && c.weight.is_finite()) {
            return bad(g("weight"), &c.weight, "must be positive");
        }
        kernel_name(g("name"), &c.name, c.size_bytes)?;
        check_power_law(&g, c.hot_bytes, c.exponent, c.size_bytes, origin)?;
    }
    if mix.loads + mix.stores > 0.0 && data.is_empty() {
        return bad(
            format!("{at}.data"),
            &"(none)",
            "loads or stores need at least one [[phase.data]] region",
        );
    }
    for (j, d) in data.iter().enumerate() {
        let g = |k: &str| format!("{at}.data[{j}].{k}");
        if d.size_bytes < 8 {
            return bad(g("size_bytes"), &d.size_bytes, "must be at least 8");
        }
        if !(d.weight > 0.0 && d.weight.is_finite()) {
            return bad(g("weight"), &d.weight, "must be positive");
        }
        if d.stride_bytes == 0 {
            return bad(g("stride_bytes"), &0, "must be positive");
        }
        if d.pattern != AccessPattern::PowerLaw && (d.hot_bytes.is_some() || d.exponent.is_some()) {
            return bad(
                g("hot_bytes"),
                &format!("{:?}", d.pattern),
                "hot_bytes and exponent only apply to pattern = \"power-law\"",
            );
        }
        kernel_name(g("name"), &d.name, d.size_bytes)?;
        check_power_law(&g, d.hot_bytes, d.exponent, d.size_bytes, origin)?;
        if d.streams == 0 || d.size_bytes / (d.streams as u64) < d.stride_bytes {
            return bad(
                g("streams"),
                &d.streams,
                "each stream needs at least one stride of the region",
            );
        }
    }
    Ok(())
}

impl KernelWork {
    fn check(&self, at: &str, origin: &Origin) -> Result<(), ModelError> {
        let bad = |k: &str, value: &dyn std::fmt::Display, reason: &str| {
            Err(ModelError::invalid(
                origin,
                format!("{at}.{k}"),
                value,
                reason,
            ))
        };
        if !(self.share > 0.0 && self.share <= 1.0) {
            return bad("share", &self.share, "must be a fraction in (0, 1]");
        }
        if self.instructions_per_entry == 0 {
            return bad("instructions_per_entry", &0, "must be positive");
        }
        let locked = self.locked_per_kilo_instructions;
        if !(0.0..=1000.0).contains(&locked) {
            return bad(
                "locked_per_kilo_instructions",
                &locked,
                "must be between 0 and 1000",
            );
        }
        let mix = self.mix();
        mix.check(at, origin)?;
        let classes = mix.loads + mix.stores + mix.branches + mix.locked;
        if classes > 1.0 + 1e-9 {
            return bad(
                "locked_per_kilo_instructions",
                &locked,
                &format!("loads + stores + branches + locked = {classes}: more than 1"),
            );
        }
        check_regions(at, &mix, &self.code, &self.data, true, origin)
    }

    /// The mix of the kernel code (no floating point).
    pub fn mix(&self) -> InstructionMix {
        InstructionMix {
            ilp: self.ilp,
            uops_per_instruction: self.uops_per_instruction,
            loads: self.loads,
            stores: self.stores,
            branches: self.branches,
            locked: self.locked_per_kilo_instructions / 1000.0,
            fp_ops: 0.0,
            branch_mispredict_rate: self.branch_mispredict_rate,
            taken_branches: self.taken_branches,
            instruction_bytes: self.instruction_bytes,
        }
    }
}

fn check_power_law(
    field: &dyn Fn(&str) -> String,
    hot: Option<u64>,
    exponent: Option<f64>,
    size: u64,
    origin: &Origin,
) -> Result<(), ModelError> {
    if let Some(h) = hot {
        if h == 0 || h >= size {
            return Err(ModelError::invalid(
                origin,
                field("hot_bytes"),
                h,
                "must be positive and below size_bytes",
            ));
        }
    }
    if let Some(a) = exponent {
        if !(a > 0.0 && a <= 4.0) {
            return Err(ModelError::invalid(
                origin,
                field("exponent"),
                a,
                "must be in (0, 4]",
            ));
        }
    }
    Ok(())
}

/// Workload profiles embedded in the binary.
pub const WORKLOAD_PRESETS: &[Preset] = &[
    preset!("workloads/spec2000", "gzip-like"),
    preset!("workloads/spec2000", "vpr-like"),
    preset!("workloads/spec2000", "gcc-like"),
    preset!("workloads/spec2000", "mcf-like"),
    preset!("workloads/spec2000", "crafty-like"),
    preset!("workloads/spec2000", "parser-like"),
    preset!("workloads/spec2000", "eon-like"),
    preset!("workloads/spec2000", "perlbmk-like"),
    preset!("workloads/spec2000", "gap-like"),
    preset!("workloads/spec2000", "vortex-like"),
    preset!("workloads/spec2000", "bzip2-like"),
    preset!("workloads/spec2000", "twolf-like"),
    preset!("workloads/spec2000", "wupwise-like"),
    preset!("workloads/spec2000", "swim-like"),
    preset!("workloads/spec2000", "mgrid-like"),
    preset!("workloads/spec2000", "applu-like"),
    preset!("workloads/spec2000", "mesa-like"),
    preset!("workloads/spec2000", "art-like"),
    preset!("workloads/spec2000", "equake-like"),
    preset!("workloads/spec2000", "ammp-like"),
    preset!("workloads/spec2000", "sixtrack-like"),
    preset!("workloads/spec2000", "apsi-like"),
    preset!("workloads/desktop", "mp3-like"),
    preset!("workloads/desktop", "image-like"),
    preset!("workloads/desktop", "glx-like"),
    preset!("workloads", "cpi-1"),
    preset!("workloads", "cpi-6"),
    preset!("workloads", "cpi-11"),
    preset!("workloads", "cpi-16"),
    preset!("workloads/servers", "apache-mp-like"),
    preset!("workloads/servers", "apache-mt-like"),
    preset!("workloads/servers", "flash-like"),
    preset!("workloads/servers", "tux-like"),
    preset!("workloads/servers", "haboob-like"),
    preset!("workloads/servers", "apache13-bulk-like"),
    preset!("workloads/servers", "ttcp-recv-like"),
    preset!("workloads/servers", "nic-irq-like"),
];

/// The 22 SPEC CPU2000 stand-ins of thesis Table 3.3, in the table's order (integer, then FP).
pub const SPEC2000: &[&str] = &[
    "gzip-like",
    "vpr-like",
    "gcc-like",
    "mcf-like",
    "crafty-like",
    "parser-like",
    "eon-like",
    "perlbmk-like",
    "gap-like",
    "vortex-like",
    "bzip2-like",
    "twolf-like",
    "wupwise-like",
    "swim-like",
    "mgrid-like",
    "applu-like",
    "mesa-like",
    "art-like",
    "equake-like",
    "ammp-like",
    "sixtrack-like",
    "apsi-like",
];

/// The Fedorova CPI microbenchmarks.
pub const FEDOROVA_CPI: &[&str] = &["cpi-1", "cpi-6", "cpi-11", "cpi-16"];

/// Expands a workload list: comma-separated names or files, where `all` (or `spec2000`) stands for
/// the 22 SPEC stand-ins and `fedorova-cpi` for the CPI microbenchmarks.
pub fn expand_workload_list(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item {
            "all" | "spec2000" => out.extend(SPEC2000.iter().map(|s| s.to_string())),
            "fedorova-cpi" => out.extend(FEDOROVA_CPI.iter().map(|s| s.to_string())),
            other => out.push(other.to_string()),
        }
    }
    out
}

/// Loads a workload by preset name or file path, applies overrides and validates it.
pub fn load_workload(name: &str, overrides: &[Override]) -> Result<WorkloadProfile, ModelError> {
    let source = loader::resolve("workload", name, WORKLOAD_PRESETS)?;
    workload_from_source(&source, overrides)
}

pub fn workload_from_source(
    source: &Source,
    overrides: &[Override],
) -> Result<WorkloadProfile, ModelError> {
    let w: WorkloadProfile = loader::parse(source, overrides)?;
    w.validate(&loader::overridden(&source.origin, overrides))?;
    Ok(w)
}
