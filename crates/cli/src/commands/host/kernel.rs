//! `host kernels` and `host kernel`: the native benchmark kernels, listed, and one run and
//! timed.

use super::super::plan::Plan;
use super::super::{json_out, out};
use super::size_text;
use super::values::{ByteSize, Events};
use anyhow::Result;
use clap::Args;
use smtsched_host::kernels::{KernelKind, KernelSpec, RunResult};
use smtsched_host::perf::{CounterSet, Event, Target};
use smtsched_host::{affinity, SysfsTopology, Topology};
use smtsched_model::CpuSet;
use smtsched_report::Table;
use std::collections::BTreeMap;

#[derive(Args, Debug)]
pub struct KernelsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct KernelArgs {
    /// Kernel name (see `smtsched host kernels`).
    pub name: String,
    /// Work per run, in the kernel's unit (default: the kernel's default, about 0.1-0.2 s).
    #[arg(long)]
    pub work: Option<u64>,
    /// Memory footprint: bytes, or with a unit (64KiB, 16MiB, 1GiB; K, M, G are binary too).
    #[arg(long, value_name = "SIZE")]
    pub footprint: Option<ByteSize>,
    /// Timed runs (after preparing the data; no warm-up run is discarded).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Pin to this logical CPU first (the affinity is read back and checked).
    #[arg(long = "cpus", alias = "cpu", value_name = "CPU")]
    pub cpu: Option<u32>,
    /// Events to count per run (`none` to skip counters).
    #[arg(long, short = 'e', default_value = "default")]
    pub events: Events,
    /// Seed of the kernel's data.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}
pub(super) fn kernels(a: KernelsArgs) -> Result<()> {
    if a.json {
        let v: Vec<_> = KernelKind::ALL
            .iter()
            .map(|k| {
                serde_json::json!({
                    "name": k.name(), "description": k.description(), "work_unit": k.work_unit(),
                    "default_work": k.default_work(), "default_footprint_bytes": k.default_footprint(),
                })
            })
            .collect();
        return json_out(&v);
    }
    let mut t = Table::new(["kernel", "work per run", "footprint", "what it stresses"]);
    for k in KernelKind::ALL {
        t.row([
            k.name().to_string(),
            format!("{} {}", k.default_work(), k.work_unit()),
            size_text(Some(k.default_footprint())),
            k.description().to_string(),
        ]);
    }
    out(&t.render())
}
pub struct KernelPlan {
    kind: KernelKind,
    spec: KernelSpec,
    events: Vec<Event>,
    /// The CPU to pin to, known online.
    cpu: Option<u32>,
    runs: u32,
    seed: u64,
    json: bool,
}

impl Plan for KernelPlan {
    type Args = KernelArgs;

    fn from_args(a: KernelArgs) -> Result<Self> {
        let kind = KernelKind::parse(&a.name)?;
        let mut spec = KernelSpec::new(kind);
        if let Some(w) = a.work {
            spec.work = w;
        }
        if let Some(f) = a.footprint {
            spec.footprint_bytes = f.0;
        }
        spec.validate()?;
        if let Some(cpu) = a.cpu {
            let set: CpuSet = std::iter::once(cpu).collect();
            Topology::live()?.check_online(&set, &format!("--cpus {cpu}"))?;
        }
        Ok(KernelPlan {
            kind,
            spec,
            events: a.events.0,
            cpu: a.cpu,
            runs: a.runs,
            seed: a.seed,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let (kind, spec) = (self.kind, &self.spec);
        if let Some(cpu) = self.cpu {
            let set: CpuSet = std::iter::once(cpu).collect();
            affinity::set_affinity(0, &set)?;
            affinity::verify_affinity(std::process::id() as i32, &set)?;
        }
        let mut counters = CounterSet::open(&self.events, Target::SelfAndDescendants)?;
        counters.enable()?;
        let t = std::time::Instant::now();
        let mut prepared = spec.prepare(self.seed)?;
        let setup = t.elapsed().as_secs_f64();
        let mut runs = Vec::new();
        for _ in 0..self.runs {
            let before = counters.read()?;
            let r = prepared.timed_run();
            let c = counters.read()?.since(&before).scaled();
            runs.push((r, c));
        }
        if self.json {
            let v: Vec<_> = runs
                .iter()
                .map(|(r, c)| {
                    serde_json::json!({"seconds": r.seconds, "checksum": r.checksum, "work_per_second": spec.work as f64 / r.seconds,
                    "counters": c.iter().map(|(e, v)| (e.name(), v)).collect::<BTreeMap<_, _>>()})
                })
                .collect();
            return json_out(
                &serde_json::json!({"kernel": spec, "setup_seconds": setup, "events": counters.status(), "runs": v}),
            );
        }
        out(&format!(
            "{}: {} {} per run, footprint {} ({} bytes), data prepared in {:.3} s\n\n",
            kind,
            spec.work,
            kind.work_unit(),
            size_text(Some(spec.footprint_bytes)),
            spec.footprint_bytes,
            setup
        ))?;
        out(&runs_table(spec, &counters.supported(), &runs).render())?;
        let unsupported: Vec<String> = counters
            .status()
            .iter()
            .filter(|(_, s)| !s.is_supported())
            .map(|(e, s)| format!("{e} ({s})"))
            .collect();
        if !unsupported.is_empty() {
            out(&format!("not counted: {}\n", unsupported.join("; ")))?;
        }
        Ok(())
    }
}

/// Each run's time, rate and checksum, and the counts of the events `shown`.
fn runs_table(
    spec: &KernelSpec,
    shown: &[Event],
    runs: &[(RunResult, BTreeMap<Event, f64>)],
) -> Table {
    let mut header = vec![
        "run".to_string(),
        "seconds".into(),
        format!("{}/s", spec.kind.work_unit()),
        "checksum".into(),
    ];
    header.extend(shown.iter().map(|e| e.name().to_string()));
    let mut t = Table::new(header);
    for (i, (r, c)) in runs.iter().enumerate() {
        let mut row = vec![
            (i + 1).to_string(),
            format!("{:.4}", r.seconds),
            format!("{:.4e}", spec.work as f64 / r.seconds),
            format!("{:016x}", r.checksum),
        ];
        row.extend(
            shown
                .iter()
                .map(|e| c.get(e).map_or("not counted".into(), |v| format!("{v:.0}"))),
        );
        t.row(row);
    }
    t
}
