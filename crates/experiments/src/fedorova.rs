//! The experiments of Fedorova, Seltzer, Small & Nussbaum 2005 under
//! `smtsched reproduce fedorova-*`: CPI-based co-scheduling (§3.1), the L1D sweep (§3.2.1), the
//! L2 sweep under a scheduler that sees the chip as a multiprocessor (§3.2.2), and balance-set
//! scheduling (§4). Every number comes from the microarchitectural simulator; the reuse-distance
//! models only choose the balance-set groups (and give the OS simulator its rates).
//!
//! Schedules made by the OS simulator are measured by sampling: the schedule timeline is read at
//! moments spread over the measurement window (one at random in each of equal strata), and each distinct set of co-running threads
//! found there is simulated for one window. The mean over the moments is the schedule's IPC; the
//! L2 miss ratio is their misses over their accesses.

use crate::experiment::{Experiment, ExperimentKind, FedorovaMetric};
use rayon::prelude::*;
use serde::Serialize;
use smtsched_cachemodel::analytic::ReuseRateModel;
use smtsched_cachemodel::balance::{candidates, fair_schedule, perf_schedule};
use smtsched_cachemodel::collect::CollectOptions;
use smtsched_cachemodel::error::{bad, CacheModelError};
use smtsched_cachemodel::group::{Estimator, Solver, ALL_ESTIMATORS};
use smtsched_cachemodel::measure::{run_group, CycleWindow, Measured, Placed};
use smtsched_cachemodel::model::{
    collect_profiles, models_from, predict, Geometry, ModelOptions, ThreadModel,
};
use smtsched_cachemodel::report::{relative_error, search_groups, GroupSearch};
use smtsched_model::{load_machine, load_workload, MachineModel, Override, WorkloadProfile};
use smtsched_os::metrics::Metrics;
use smtsched_os::oracle::AnalyticOracle;
use smtsched_os::policy::balance_set::CacheInputs;
use smtsched_os::policy::PolicyInputs;
use smtsched_os::sim::{Baseline, Estimator as PrEstimator, OsSim, SimConfig};
use smtsched_os::taskset::{TaskSetSpec, TaskSpec};
use smtsched_os::PolicyName;
use smtsched_report::Table;
use smtsched_uarch::rng::{derive_seed, SimRng};
use smtsched_uarch::Workload;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

type Progress<'a> = &'a (dyn Fn(&str) + Sync);

/// What a `fedorova-*` experiment found: the report, the result as JSON, and the value of each
/// metric its claims can name.
pub struct FedorovaRun {
    pub text: String,
    pub json: serde_json::Value,
    pub values: BTreeMap<FedorovaMetric, f64>,
    /// Figures for the report: (caption, SVG).
    pub figures: Vec<(String, String)>,
}

/// Runs a `fedorova-*` experiment.
pub fn reproduce(
    e: &Experiment,
    seed: u64,
    progress: Progress<'_>,
) -> Result<FedorovaRun, CacheModelError> {
    // The outcome's text holds no timing (the report gives each experiment's time apart), so
    // that reports of one run are identical but for their timing fields.
    let run = match e.kind {
        ExperimentKind::FedorovaCpi => cpi(e, seed, progress)?,
        ExperimentKind::FedorovaL1 => l1(e, seed, progress)?,
        ExperimentKind::FedorovaL2 => l2(e, seed, progress)?,
        ExperimentKind::FedorovaBalanceSet => balance_set(e, seed, progress)?,
        other => {
            return Err(bad(format!(
                "{}: kind {other:?} is not a fedorova experiment",
                e.name
            )))
        }
    };
    Ok(run)
}

/// The experiment's machine with `extra` overrides after its own.
fn machine_with(e: &Experiment, extra: &[String]) -> Result<MachineModel, CacheModelError> {
    let overrides: Vec<Override> = e
        .set
        .iter()
        .chain(extra)
        .map(|s| s.parse::<Override>())
        .collect::<Result<_, _>>()?;
    Ok(load_machine(&e.machine, &overrides)?)
}

fn window_of(e: &Experiment) -> CycleWindow {
    CycleWindow {
        warmup_cycles: if e.cmt.warmup_cycles > 0 {
            e.cmt.warmup_cycles
        } else {
            2_000_000
        },
        measure_cycles: if e.cmt.measure_cycles > 0 {
            e.cmt.measure_cycles
        } else {
            4_000_000
        },
    }
}

fn profiles_of<'a>(
    names: impl IntoIterator<Item = &'a String>,
) -> Result<BTreeMap<String, WorkloadProfile>, CacheModelError> {
    let mut out = BTreeMap::new();
    for n in names {
        if !out.contains_key(n) {
            out.insert(n.clone(), load_workload(n, &[])?);
        }
    }
    Ok(out)
}

/// Copies numbered in order of appearance.
fn numbered(names: &[String]) -> Vec<(String, u32)> {
    let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
    names
        .iter()
        .map(|n| {
            let c = seen.entry(n).or_insert(0);
            *c += 1;
            (n.clone(), *c - 1)
        })
        .collect()
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", 100.0 * x)
}

fn paper_block(e: &Experiment) -> String {
    let mut s = format!("\nThe paper ({}):\n", e.paper.figure);
    for f in &e.paper.findings {
        s.push_str(&format!("  - {f}\n"));
    }
    s
}

fn json_of<T: Serialize>(e: &Experiment, result: &T) -> serde_json::Value {
    serde_json::json!({
        "experiment": e.name,
        "result": result,
        "paper": e.paper,
    })
}

// ---------------------------------------------------------------------------------------------
// §3.1: CPI-based co-scheduling.

#[derive(Clone, Debug, Serialize)]
pub struct ScheduleResult {
    pub name: String,
    /// Workloads per core.
    pub cores: Vec<Vec<String>>,
    pub core_ipc: Vec<f64>,
    pub ipc: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct CpiResult {
    pub schedules: Vec<ScheduleResult>,
    /// Best of (a) and (b) over (d).
    pub ab_over_d: Option<f64>,
    /// Single-thread CPIs of the SPEC-like mix's programs.
    pub spec_cpi: BTreeMap<String, f64>,
    /// Pairing by CPI (each core a mix) against grouping similar CPIs.
    pub spec_paired: Option<ScheduleResult>,
    pub spec_grouped: Option<ScheduleResult>,
    pub spec_gain: Option<f64>,
}

fn run_schedule(
    m: &MachineModel,
    profiles: &BTreeMap<String, WorkloadProfile>,
    name: &str,
    cores: &[Vec<String>],
    seed: u64,
    window: CycleWindow,
) -> Result<ScheduleResult, CacheModelError> {
    if cores.len() > m.cores() as usize {
        return Err(bad(format!(
            "schedule {name}: {} cores on a machine with {}",
            cores.len(),
            m.cores()
        )));
    }
    let flat: Vec<String> = cores.iter().flatten().cloned().collect();
    let copies = numbered(&flat);
    let mut placed = Vec::new();
    let mut core_of = Vec::new();
    let mut k = 0;
    for (c, names) in cores.iter().enumerate() {
        if names.len() > m.topology.threads_per_core as usize {
            return Err(bad(format!(
                "schedule {name}: core {c} has {} threads, the machine {} contexts per core",
                names.len(),
                m.topology.threads_per_core
            )));
        }
        for t in 0..names.len() {
            let (w, copy) = &copies[k];
            placed.push(Placed {
                workload: &profiles[w] as &dyn Workload,
                copy: *copy,
                cpu: m.cpu_at(c as u32, t as u32),
            });
            core_of.push(c);
            k += 1;
        }
    }
    let r = run_group(m, &placed, seed, window)?;
    let mut core_ipc = vec![0.0; cores.len()];
    for (i, &c) in core_of.iter().enumerate() {
        core_ipc[c] += r.thread_ipc(i);
    }
    Ok(ScheduleResult {
        name: name.to_string(),
        cores: cores.to_vec(),
        core_ipc,
        ipc: r.ipc(),
    })
}

fn cpi(e: &Experiment, seed: u64, progress: Progress<'_>) -> Result<FedorovaRun, CacheModelError> {
    let m = machine_with(e, &[])?;
    let window = window_of(e);
    if e.cmt.schedules.is_empty() {
        return Err(bad(format!("{}: cmt.schedule: no schedules", e.name)));
    }
    let profiles = profiles_of(
        e.cmt
            .schedules
            .iter()
            .flat_map(|s| s.cores.iter().flatten())
            .chain(&e.cmt.spec_mix),
    )?;
    progress(&format!(
        "{} schedules of the CPI microbenchmarks",
        e.cmt.schedules.len()
    ));
    let schedules: Vec<ScheduleResult> = e
        .cmt
        .schedules
        .par_iter()
        .map(|s| run_schedule(&m, &profiles, &s.name, &s.cores, seed, window))
        .collect::<Result<_, _>>()?;
    let get = |n: &str| schedules.iter().find(|s| s.name == n).map(|s| s.ipc);
    let ab_over_d = match (get("a"), get("b"), get("d")) {
        (Some(a), Some(b), Some(d)) if d > 0.0 => Some(a.max(b) / d),
        _ => None,
    };
    // The SPEC-like mix: single-thread CPIs, then pairing by CPI or grouping.
    let mut spec_cpi = BTreeMap::new();
    let (mut spec_paired, mut spec_grouped, mut spec_gain) = (None, None, None);
    if !e.cmt.spec_mix.is_empty() {
        progress("single-thread CPIs of the SPEC-like mix");
        let distinct: Vec<&String> = profiles
            .keys()
            .filter(|k| e.cmt.spec_mix.contains(k))
            .collect();
        let cpis: Vec<f64> = distinct
            .par_iter()
            .map(|w| {
                let r = run_group(
                    &m,
                    &[Placed {
                        workload: &profiles[*w] as &dyn Workload,
                        copy: 0,
                        cpu: 0,
                    }],
                    seed,
                    window,
                )?;
                Ok(r.cycles / r.threads[0].instructions.max(1) as f64)
            })
            .collect::<Result<_, CacheModelError>>()?;
        for (w, c) in distinct.iter().zip(cpis) {
            spec_cpi.insert((*w).clone(), c);
        }
        let mut order: Vec<&String> = e.cmt.spec_mix.iter().collect();
        order.sort_by(|a, b| spec_cpi[*a].total_cmp(&spec_cpi[*b]));
        let cores = m.cores() as usize;
        let per = order.len().div_ceil(cores);
        let mut paired = vec![Vec::new(); cores];
        let mut grouped = vec![Vec::new(); cores];
        for (r, w) in order.iter().enumerate() {
            paired[r % cores].push((*w).clone());
            grouped[(r / per).min(cores - 1)].push((*w).clone());
        }
        progress("the SPEC-like mix paired by CPI and grouped by CPI");
        let both: Vec<ScheduleResult> = [("paired", paired), ("grouped", grouped)]
            .par_iter()
            .map(|(n, c)| run_schedule(&m, &profiles, n, c, seed, window))
            .collect::<Result<_, _>>()?;
        spec_gain = Some(both[0].ipc / both[1].ipc - 1.0);
        spec_paired = Some(both[0].clone());
        spec_grouped = Some(both[1].clone());
    }
    let result = CpiResult {
        schedules,
        ab_over_d,
        spec_cpi,
        spec_paired,
        spec_grouped,
        spec_gain,
    };
    let json = json_of(e, &result);
    let mut s = format!(
        "{} on {} ({} cores x {} contexts), each schedule measured over {} cycles after {} of warm-up\n\n",
        e.workloads.join(", "),
        m.name,
        m.cores(),
        m.topology.threads_per_core,
        window.measure_cycles,
        window.warmup_cycles
    );
    let mut t = Table::new(
        std::iter::once("schedule".to_string())
            .chain((0..m.cores()).map(|c| format!("core {c} IPC")))
            .chain(["IPC".to_string(), "single-thread CPIs per core".to_string()]),
    );
    for r in &result.schedules {
        let cpis = r
            .cores
            .iter()
            .map(|c| {
                c.iter()
                    .map(|w| w.trim_start_matches("cpi-").to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect::<Vec<_>>()
            .join(" | ");
        t.row(
            std::iter::once(format!("({})", r.name))
                .chain(
                    (0..m.cores() as usize)
                        .map(|c| r.core_ipc.get(c).map_or("-".into(), |x| format!("{x:.3}"))),
                )
                .chain([format!("{:.3}", r.ipc), cpis]),
        );
    }
    s.push_str(&t.render());
    if let Some(x) = result.ab_over_d {
        s.push_str(&format!(
            "\nbest of (a), (b) over (d): {x:.2}x (paper: a factor of two)\n"
        ));
    }
    if let (Some(p), Some(g), Some(gain)) =
        (&result.spec_paired, &result.spec_grouped, result.spec_gain)
    {
        let (lo, hi) = result.spec_cpi.iter().fold(
            (None::<(&String, f64)>, None::<(&String, f64)>),
            |(lo, hi), (w, &c)| {
                (
                    Some(lo.filter(|l| l.1 <= c).unwrap_or((w, c))),
                    Some(hi.filter(|h| h.1 >= c).unwrap_or((w, c))),
                )
            },
        );
        let (lo, hi) = (lo.expect("a CPI"), hi.expect("a CPI"));
        s.push_str(&format!(
            "\nSPEC-like mix ({} threads): single-thread CPIs {:.2} ({}) to {:.2} ({}) (paper: 2.37 gzip to 5.11 mcf, most near 4)\n",
            e.cmt.spec_mix.len(),
            lo.1,
            lo.0,
            hi.1,
            hi.0
        ));
        s.push_str(&format!(
            "  paired by CPI (each core one of every CPI quartile): IPC {:.3}\n  similar CPIs together: IPC {:.3}\n  gain of pairing: {} (paper: about 5%)\n",
            p.ipc,
            g.ipc,
            pct(gain)
        ));
    }
    s.push_str(&paper_block(e));
    let schedule_ipc = |n: &str| result.schedules.iter().find(|r| r.name == n).map(|r| r.ipc);
    let values = [
        (FedorovaMetric::AbOverD, result.ab_over_d),
        (
            FedorovaMetric::BOverA,
            schedule_ipc("b").zip(schedule_ipc("a")).map(|(b, a)| b / a),
        ),
        (FedorovaMetric::SpecPairingGain, result.spec_gain),
    ];
    Ok(FedorovaRun {
        text: s,
        json,
        values: found(values),
        figures: Vec::new(),
    })
}

/// The metrics that have a value.
fn found(
    values: impl IntoIterator<Item = (FedorovaMetric, Option<f64>)>,
) -> BTreeMap<FedorovaMetric, f64> {
    values
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.filter(|x| x.is_finite())?)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// §3.2.1: the L1 data cache.

#[derive(Clone, Debug, Serialize)]
pub struct L1Cell {
    pub workload: String,
    pub l1d_bytes: u64,
    pub l1d_miss_ratio: f64,
    pub ipc: f64,
}

fn l1(e: &Experiment, seed: u64, progress: Progress<'_>) -> Result<FedorovaRun, CacheModelError> {
    let window = window_of(e);
    let sizes = if e.cmt.l1_sizes.is_empty() {
        vec![8192, 16384, 32768, 65536, 131072]
    } else {
        e.cmt.l1_sizes.clone()
    };
    let copies = if e.cmt.copies > 0 { e.cmt.copies } else { 4 };
    let profiles = profiles_of(&e.workloads)?;
    let machines: Vec<MachineModel> = sizes
        .iter()
        .map(|s| machine_with(e, &[format!("cache.L1D.size_bytes={s}")]))
        .collect::<Result<_, _>>()?;
    if copies > machines[0].topology.threads_per_core {
        return Err(bad(format!(
            "{}: cmt.copies = {copies}, but a core has {} contexts",
            e.name, machines[0].topology.threads_per_core
        )));
    }
    progress(&format!(
        "{} workloads x {} L1D sizes",
        e.workloads.len(),
        sizes.len()
    ));
    let jobs: Vec<(&String, usize)> = e
        .workloads
        .iter()
        .flat_map(|w| (0..sizes.len()).map(move |i| (w, i)))
        .collect();
    let cells: Vec<L1Cell> = jobs
        .par_iter()
        .map(|&(w, i)| {
            let m = &machines[i];
            let placed: Vec<Placed> = (0..copies)
                .map(|k| Placed {
                    workload: &profiles[w] as &dyn Workload,
                    copy: k,
                    cpu: m.cpu_at(0, k),
                })
                .collect();
            let r = run_group(m, &placed, seed, window)?.for_miss_ratios(window)?;
            Ok(L1Cell {
                workload: w.clone(),
                l1d_bytes: sizes[i],
                l1d_miss_ratio: r.l1d_miss_ratio(),
                ipc: r.ipc(),
            })
        })
        .collect::<Result<_, CacheModelError>>()?;
    let json = json_of(e, &cells);
    let mut s = format!(
        "{copies} copies of each program on one core of {} (4 contexts, no shared data); L1D miss ratio and core IPC\n\n",
        machines[0].name
    );
    let mut t = Table::new(
        std::iter::once("workload".to_string())
            .chain(sizes.iter().map(|b| format!("{} KB", b / 1024))),
    );
    for w in &e.workloads {
        t.row(std::iter::once(w.clone()).chain(sizes.iter().map(|&b| {
            cells
                .iter()
                .find(|c| &c.workload == w && c.l1d_bytes == b)
                .map_or("-".into(), |c| {
                    format!("{:.1}% / {:.3}", 100.0 * c.l1d_miss_ratio, c.ipc)
                })
        })));
    }
    s.push_str(&t.render());
    let high: Vec<&L1Cell> = cells.iter().filter(|c| c.l1d_miss_ratio > 0.2).collect();
    let (mut high_lo, mut high_hi) = (None, None);
    if high.is_empty() {
        s.push_str("\nno configuration has an L1D miss ratio above 20%\n");
    } else {
        let lo = high.iter().map(|c| c.ipc).fold(f64::INFINITY, f64::min);
        let hi = high.iter().map(|c| c.ipc).fold(0.0, f64::max);
        (high_lo, high_hi) = (Some(lo), Some(hi));
        s.push_str(&format!(
            "\nwith L1D miss ratios above 20% ({} cases): IPC {lo:.2} to {hi:.2} (paper: 0.7 to 0.9)\n",
            high.len()
        ));
    }
    let mut largest_change: f64 = 0.0;
    for w in &e.workloads {
        let mine: Vec<&L1Cell> = cells.iter().filter(|c| &c.workload == w).collect();
        let lo = mine.iter().map(|c| c.ipc).fold(f64::INFINITY, f64::min);
        let hi = mine.iter().map(|c| c.ipc).fold(0.0, f64::max);
        let m_lo = mine.iter().map(|c| c.l1d_miss_ratio).fold(1.0, f64::min);
        let m_hi = mine.iter().map(|c| c.l1d_miss_ratio).fold(0.0, f64::max);
        let change = (hi - lo) / hi.max(1e-9);
        largest_change = largest_change.max(change);
        s.push_str(&format!(
            "  {w}: miss ratio {:.1}% to {:.1}%, IPC changes by {:.1}% across the sizes\n",
            100.0 * m_lo,
            100.0 * m_hi,
            100.0 * change
        ));
    }
    s.push_str(&paper_block(e));
    let values = [
        (FedorovaMetric::HighMissIpcMin, high_lo),
        (FedorovaMetric::HighMissIpcMax, high_hi),
        (FedorovaMetric::IpcChangeAcrossL1Sizes, Some(largest_change)),
    ];
    Ok(FedorovaRun {
        text: s,
        json,
        values: found(values),
        figures: Vec::new(),
    })
}

// ---------------------------------------------------------------------------------------------
// §3.2.2 and §4: the 18-thread mix, the default scheduler, balance-set scheduling.

/// The threads of the mix: copies of every workload of the experiment.
struct Mix {
    profiles: BTreeMap<String, WorkloadProfile>,
    /// (workload, copy) per thread.
    threads: Vec<(String, u32)>,
}

impl Mix {
    fn of(e: &Experiment) -> Result<Mix, CacheModelError> {
        let copies = if e.cmt.copies > 0 { e.cmt.copies } else { 2 };
        let names: Vec<String> = e
            .workloads
            .iter()
            .flat_map(|w| std::iter::repeat_n(w.clone(), copies as usize))
            .collect();
        Ok(Mix {
            profiles: profiles_of(&names)?,
            threads: numbered(&names),
        })
    }

    fn label(&self, i: usize) -> String {
        format!("{}#{}", self.threads[i].0, self.threads[i].1)
    }

    fn workloads(&self) -> Vec<(&dyn Workload, u32)> {
        self.threads
            .iter()
            .map(|(w, c)| (&self.profiles[w] as &dyn Workload, *c))
            .collect()
    }

    fn task_set(&self) -> TaskSetSpec {
        TaskSetSpec {
            name: "fedorova-mix".into(),
            tasks: (0..self.threads.len())
                .map(|i| TaskSpec {
                    name: self.label(i),
                    run_seconds: 20.0,
                    ..TaskSpec::new(&self.threads[i].0)
                })
                .collect(),
            groups: Vec::new(),
            devices: Vec::new(),
            clients: Vec::new(),
            profiles: Vec::new(),
        }
    }
}

/// Threads per core, cores sorted: the situation as the shared L2 and the cores see it.
type Situation = Vec<Vec<usize>>;

fn canonical(mut cores: Vec<Vec<usize>>) -> Situation {
    for c in &mut cores {
        c.sort_unstable();
    }
    cores.retain(|c| !c.is_empty());
    cores.sort();
    cores
}

/// What the timeline says runs on each core at `samples` moments of the window: one at a random
/// point of each of `samples` equal strata (evenly spaced moments could fall in step with a
/// periodic schedule and see only some of its groups).
fn sample_timeline(
    r: &Metrics,
    m: &MachineModel,
    names: &BTreeMap<String, usize>,
    samples: usize,
    seed: u64,
) -> Vec<Situation> {
    let (w0, w1) = r.window;
    let mut rng = SimRng::new(derive_seed(seed, "fedorova-samples"));
    let times: Vec<f64> = (0..samples)
        .map(|j| w0 + (j as f64 + rng.unit()) / samples as f64 * (w1 - w0))
        .collect();
    let ncpu = m.logical_cpus() as usize;
    let mut cur: Vec<Option<usize>> = vec![None; ncpu];
    let mut out = Vec::with_capacity(samples);
    let mut ev = r.timeline.iter().peekable();
    for t in times {
        while let Some(s) = ev.next_if(|s| s.cycle <= t) {
            cur[s.cpu] = s.to_name.as_ref().and_then(|n| names.get(n).copied());
        }
        let mut cores = vec![Vec::new(); m.cores() as usize];
        for (cpu, o) in cur.iter().enumerate() {
            if let Some(i) = o {
                let core = m.cpu_location(cpu as u32).expect("cpu exists").core as usize;
                cores[core].push(*i);
            }
        }
        out.push(canonical(cores));
    }
    out
}

/// One L2 size: the machine and the thread models on it.
struct SizeCtx {
    /// The L2 size set for this run (`None`: the machine as given).
    bytes: Option<u64>,
    m: MachineModel,
    models: Vec<ThreadModel>,
    geom: Geometry,
}

/// An OS-simulator run and what it cost.
struct OsRun {
    metrics: Metrics,
    distinct_situations: usize,
    oracle_queries: u64,
    samples: Vec<Situation>,
}

fn os_run(
    e: &Experiment,
    ctx: &SizeCtx,
    mix: &Mix,
    policy: PolicyName,
    inputs: &CacheInputs,
    seed: u64,
) -> Result<OsRun, CacheModelError> {
    let seconds = if e.cmt.os_seconds > 0.0 {
        e.cmt.os_seconds
    } else {
        40.0
    };
    let set = mix.task_set();
    let oracle = AnalyticOracle::new(
        ctx.m.clone(),
        Box::new(ReuseRateModel::new(&ctx.m, &ctx.models, Solver::Statcache)),
    );
    let mut cfg = SimConfig::new(e.baseline, seconds, seed);
    cfg.stagger_s = (seconds / 8.0).min(5.0);
    cfg.record_timeline = true;
    cfg.estimator = PrEstimator::Perfect;
    let inputs = PolicyInputs {
        cache: inputs.clone(),
        truth: None,
    };
    let policy = policy.build(&inputs).map_err(CacheModelError::Os)?;
    let sim = OsSim::new(&ctx.m, &oracle, &set, policy, cfg).map_err(CacheModelError::Os)?;
    let metrics = sim.run();
    let names: BTreeMap<String, usize> =
        (0..mix.threads.len()).map(|i| (mix.label(i), i)).collect();
    let samples = sample_timeline(&metrics, &ctx.m, &names, samples_of(e), seed);
    Ok(OsRun {
        distinct_situations: oracle.distinct_situations(),
        oracle_queries: oracle.queries(),
        metrics,
        samples,
    })
}

fn samples_of(e: &Experiment) -> usize {
    if e.cmt.samples > 0 {
        e.cmt.samples as usize
    } else {
        16
    }
}

/// Simulates every distinct situation in `wanted` (in parallel); returns them with the mean
/// wall-clock seconds one took.
fn simulate_all(
    ctx: &SizeCtx,
    mix: &Mix,
    wanted: &BTreeSet<Situation>,
    seed: u64,
    window: CycleWindow,
) -> Result<(BTreeMap<Situation, Measured>, f64), CacheModelError> {
    let list: Vec<&Situation> = wanted.iter().collect();
    let ws = mix.workloads();
    let done: Vec<(Measured, f64)> = list
        .par_iter()
        .map(|s| {
            let t0 = Instant::now();
            let placed: Vec<Placed> = s
                .iter()
                .enumerate()
                .flat_map(|(c, threads)| {
                    let ws = &ws;
                    let m = &ctx.m;
                    threads.iter().enumerate().map(move |(k, &i)| Placed {
                        workload: ws[i].0,
                        copy: ws[i].1,
                        cpu: m.cpu_at(c as u32, k as u32),
                    })
                })
                .collect();
            let r = run_group(&ctx.m, &placed, seed, window)?.for_miss_ratios(window)?;
            Ok((r, t0.elapsed().as_secs_f64()))
        })
        .collect::<Result<_, CacheModelError>>()?;
    let secs = done.iter().map(|d| d.1).sum::<f64>() / done.len().max(1) as f64;
    Ok((
        list.into_iter()
            .cloned()
            .zip(done.into_iter().map(|d| d.0))
            .collect(),
        secs,
    ))
}

/// IPC, L2 miss ratio (per access) and L2 misses per reference of a set of measured situations:
/// the mean IPC, and misses over accesses summed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Perf {
    pub ipc: f64,
    /// Standard error of the mean IPC over the samples or groups.
    pub ipc_se: f64,
    pub l2_miss_ratio: f64,
    pub l2_misses_per_reference: f64,
    /// Work done, counted fairly: the mean over the moments (or groups) of Σ IPC / solo IPC of
    /// the threads running (the weighted speedup, STP).
    pub stp: f64,
    /// Each thread's progress: its IPC / solo IPC averaged over the whole schedule (0 while not
    /// running) — the share of a machine of its own it effectively had. Emulation: over the
    /// groups; OS: its CPU share times its mean IPC / solo IPC while running.
    pub progress: Vec<f64>,
}

impl Perf {
    /// Slowest over fastest thread's progress.
    pub fn fairness(&self) -> f64 {
        let lo = self.progress.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = self.progress.iter().cloned().fold(0.0, f64::max);
        if hi > 0.0 {
            // Progress is never below none (a rounding error can make a thread's -1e-17).
            lo.max(0.0) / hi
        } else {
            0.0
        }
    }
}

fn aggregate(items: &[(&Situation, &Measured)], solo_ipc: &[f64], mean_of_ratios: bool) -> Perf {
    let ms: Vec<&Measured> = items.iter().map(|x| x.1).collect();
    let n = ms.len().max(1) as f64;
    let ipcs: Vec<f64> = ms.iter().map(|m| m.ipc()).collect();
    let ipc = ipcs.iter().sum::<f64>() / n;
    let sd = if ms.len() > 1 {
        (ipcs.iter().map(|x| (x - ipc).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let (l2, per_ref) = if mean_of_ratios {
        (
            ms.iter().map(|m| m.l2_miss_ratio()).sum::<f64>() / n,
            ms.iter().map(|m| m.l2_misses_per_reference()).sum::<f64>() / n,
        )
    } else {
        let tot = |f: &dyn Fn(&smtsched_uarch::ThreadCounters) -> u64| -> u64 {
            ms.iter().flat_map(|m| m.threads.iter()).map(f).sum()
        };
        let misses = tot(&|t| t.l2_misses);
        (
            smtsched_cachemodel::measure::ratio(misses, tot(&|t| t.l2_accesses)),
            smtsched_cachemodel::measure::ratio(misses, tot(&|t| t.loads + t.stores)),
        )
    };
    let mut progress = vec![0.0; solo_ipc.len()];
    let mut stp = 0.0;
    for (sit, m) in items {
        for (k, &i) in sit.iter().flatten().enumerate() {
            let pr = m.thread_ipc(k) / solo_ipc[i].max(1e-12);
            progress[i] += pr / n;
            stp += pr / n;
        }
    }
    Perf {
        ipc,
        ipc_se: sd / n.sqrt(),
        l2_miss_ratio: l2,
        l2_misses_per_reference: per_ref,
        stp,
        progress,
    }
}

/// One policy's outcome at one L2 size.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyResult {
    pub policy: String,
    /// How it was measured: `os` (the policy in the OS simulator, sampled) or `emulation` (the
    /// paper's method: each group of the schedule simulated, averaged).
    pub method: String,
    pub perf: Perf,
    /// Share of the run each thread spent on a context.
    pub cpu_share: Vec<f64>,
    /// Groups of the schedule (emulation).
    pub groups: Vec<Vec<String>>,
    /// Distinct situations the OS simulator asked the oracle about, and how often.
    pub distinct_situations: Option<usize>,
    pub oracle_queries: Option<u64>,
    /// System speedup and fairness (min PR / max PR) under the analytic oracle.
    pub system_speedup: Option<f64>,
    pub fairness: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct EstimatorError {
    pub estimator: Estimator,
    /// Mean |predicted − simulated| / simulated of L2 misses per reference.
    pub per_reference: f64,
    /// The same for the L2 miss ratio per access.
    pub local: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SizeResult {
    /// The L2 size of the run (`None`: the machine as given).
    pub l2_bytes: Option<u64>,
    /// A label for it: "48 KB", or the machine's last-level cache.
    pub label: String,
    pub policies: Vec<PolicyResult>,
    pub estimator_errors: Vec<EstimatorError>,
    pub groups_validated: usize,
    pub search: Option<GroupSearch>,
    pub seconds_per_simulated_situation: f64,
    /// Mean |analytic − simulated| / simulated machine IPC over the situations simulated.
    pub analytic_ipc_error: f64,
}

fn share_of(r: &Metrics, threads: usize) -> Vec<f64> {
    (0..threads)
        .map(|b| r.per_bench.get(b).map_or(0.0, |x| x.cpu_share))
        .collect()
}

fn sizes_of(e: &Experiment) -> Vec<Option<u64>> {
    if e.cmt.l2_sizes.is_empty() {
        vec![49152, 98304, 196608, 393216]
    } else {
        e.cmt.l2_sizes.clone()
    }
    .into_iter()
    .map(Some)
    .collect()
}

/// Thread models at every L2 size (histograms collected once).
fn size_contexts(
    e: &Experiment,
    mix: &Mix,
    seed: u64,
    sizes: &[Option<u64>],
    progress: Progress<'_>,
) -> Result<Vec<SizeCtx>, CacheModelError> {
    let window = window_of(e);
    let opts = ModelOptions {
        seed,
        collect: CollectOptions {
            window_instructions: if e.cmt.window_instructions > 0 {
                e.cmt.window_instructions
            } else {
                10_000_000
            },
            ..Default::default()
        },
        solo: window,
    };
    let ws = mix.workloads();
    let base = machine_with(e, &[])?;
    progress(&format!(
        "reuse-distance histograms of {} threads",
        ws.len()
    ));
    let profiles = collect_profiles(&ws, Geometry::of(&base).line_bytes, &opts);
    sizes
        .iter()
        .map(|&bytes| {
            let extra: Vec<String> = bytes
                .map(|b| format!("cache.L2.size_bytes={b}"))
                .into_iter()
                .collect();
            let m = machine_with(e, &extra)?;
            progress(&format!("solo runs on {}", size_label(bytes, &m)));
            let models = models_from(&m, &ws, &profiles, &opts)?;
            Ok(SizeCtx {
                bytes,
                geom: Geometry::of(&m),
                m,
                models,
            })
        })
        .collect()
}

/// "48 KB" for a swept L2, else the machine's last-level cache.
fn size_label(bytes: Option<u64>, m: &MachineModel) -> String {
    match bytes {
        Some(b) => format!("{} KB", b / 1024),
        None => {
            let g = Geometry::of(m);
            format!(
                "L{} {} KB",
                g.llc_level,
                g.llc_lines as u64 * g.line_bytes as u64 / 1024
            )
        }
    }
}

fn llc_misses(c: &smtsched_uarch::ThreadCounters, level: u8) -> u64 {
    match level {
        1 => c.l1d_misses,
        2 => c.l2_misses,
        _ => c.l3_misses,
    }
}

fn analytic_error(ctx: &SizeCtx, done: &BTreeMap<Situation, Measured>) -> f64 {
    let model = ReuseRateModel::new(&ctx.m, &ctx.models, Solver::Statcache);
    let errs: Vec<f64> = done
        .iter()
        .filter_map(|(s, meas)| {
            let mut sit = vec![None; ctx.m.logical_cpus() as usize];
            for (c, threads) in s.iter().enumerate() {
                for (k, &i) in threads.iter().enumerate() {
                    sit[ctx.m.cpu_at(c as u32, k as u32) as usize] =
                        Some(smtsched_os::oracle::Occupant {
                            workload: i as u32,
                            phase: 0,
                        });
                }
            }
            let ipc: f64 = model.predict(&sit).iter().flatten().map(|p| p.0).sum();
            relative_error(ipc, meas.ipc())
        })
        .collect();
    errs.iter().sum::<f64>() / errs.len().max(1) as f64
}

/// The default scheduler (and, with `balance`, PERF and FAIR) at one L2 size.
fn run_size(
    e: &Experiment,
    ctx: &SizeCtx,
    mix: &Mix,
    seed: u64,
    policies: &[PolicyName],
    balance: bool,
    progress: Progress<'_>,
) -> Result<SizeResult, CacheModelError> {
    let window = window_of(e);
    let n = mix.threads.len();
    let contexts = ctx.m.logical_cpus() as usize;
    let label = size_label(ctx.bytes, &ctx.m);
    // AVG's per-thread term: each thread's miss ratio in its share of the L2.
    let values: Vec<f64> = ctx
        .models
        .iter()
        .map(|t| t.miss_ratio(ctx.geom.llc_lines / contexts.min(n) as f64))
        .collect();
    let inputs = CacheInputs {
        partition_miss_ratio: (0..n).map(|i| (mix.label(i), values[i])).collect(),
        intensity: (0..n)
            .map(|i| {
                (
                    mix.label(i),
                    1000.0 * llc_misses(&ctx.models[i].solo, ctx.geom.llc_level) as f64
                        / ctx.models[i].solo.instructions.max(1) as f64,
                )
            })
            .collect(),
        domain_of_cpu: smtsched_cachemodel::analytic::llc_domains(&ctx.m),
    };
    progress(&format!("{label}: OS simulator runs"));
    let runs: Vec<OsRun> = policies
        .par_iter()
        .map(|&p| os_run(e, ctx, mix, p, &inputs, seed))
        .collect::<Result<_, _>>()?;
    // The paper's emulation: schedules from the candidates, each group simulated.
    let cands = candidates(&values, contexts);
    let schedules: Vec<(&str, Vec<usize>)> = if balance {
        vec![
            ("PERF", perf_schedule(&cands, n)),
            ("FAIR", fair_schedule(&cands, n)),
        ]
    } else {
        Vec::new()
    };
    let group_situation = |g: usize| -> Situation {
        let members = &cands.groups[g].members;
        let per = ctx.m.topology.threads_per_core as usize;
        canonical(members.chunks(per).map(|c| c.to_vec()).collect())
    };
    let mut wanted: BTreeSet<Situation> = BTreeSet::new();
    for r in &runs {
        wanted.extend(r.samples.iter().filter(|s| !s.is_empty()).cloned());
    }
    for (_, s) in &schedules {
        wanted.extend(s.iter().map(|&g| group_situation(g)));
    }
    progress(&format!(
        "{label}: simulating {} distinct situations",
        wanted.len()
    ));
    let (done, secs) = simulate_all(ctx, mix, &wanted, seed, window)?;
    let solo: Vec<f64> = ctx.models.iter().map(|t| t.solo_ipc()).collect();
    let mut results = Vec::new();
    for (p, r) in policies.iter().zip(&runs) {
        let items: Vec<(&Situation, &Measured)> = r
            .samples
            .iter()
            .filter_map(|s| done.get(s).map(|m| (s, m)))
            .collect();
        let summary = r.metrics.summary();
        let cpu_share = share_of(&r.metrics, n);
        let mut perf = aggregate(&items, &solo, false);
        // Progress from the exact CPU shares (scaled to the contexts that can be busy: all of
        // them, or one per thread where there are fewer threads) and each thread's mean PR
        // while running: in the sampled moments, else in any situation simulated.
        let busy: f64 = cpu_share.iter().sum();
        let scale = if busy > 0.0 {
            contexts.min(n) as f64 / busy
        } else {
            0.0
        };
        perf.progress = (0..n)
            .map(|i| {
                let prs = |pool: &mut dyn Iterator<Item = (&Situation, &Measured)>| -> Vec<f64> {
                    pool.filter_map(|(sit, m)| {
                        sit.iter()
                            .flatten()
                            .position(|&t| t == i)
                            .map(|k| m.thread_ipc(k) / solo[i].max(1e-12))
                    })
                    .collect()
                };
                let mut v = prs(&mut items.iter().copied());
                if v.is_empty() {
                    v = prs(&mut done.iter());
                }
                let pr = v.iter().sum::<f64>() / v.len().max(1) as f64;
                cpu_share[i] * scale * pr
            })
            .collect();
        perf.stp = perf.progress.iter().sum();
        results.push(PolicyResult {
            policy: if *p == PolicyName::Naive {
                "default".into()
            } else {
                p.to_string()
            },
            method: "os".into(),
            perf,
            cpu_share,
            groups: Vec::new(),
            distinct_situations: Some(r.distinct_situations),
            oracle_queries: Some(r.oracle_queries),
            system_speedup: summary.system_speedup,
            fairness: summary.fairness,
        });
    }
    let mut validated: BTreeMap<Situation, ()> = BTreeMap::new();
    let mut errs: BTreeMap<Estimator, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for (name, sched) in &schedules {
        let sits: Vec<Situation> = sched.iter().map(|&g| group_situation(g)).collect();
        let items: Vec<(&Situation, &Measured)> = sits.iter().map(|s| (s, &done[s])).collect();
        let mut share = vec![0.0; n];
        for &g in sched {
            for &mbr in &cands.groups[g].members {
                share[mbr] += 1.0 / sched.len() as f64;
            }
        }
        results.push(PolicyResult {
            policy: format!("balance-set-{}", name.to_lowercase()),
            method: "emulation".into(),
            perf: aggregate(&items, &solo, true),
            cpu_share: share,
            groups: sched
                .iter()
                .map(|&g| {
                    cands.groups[g]
                        .members
                        .iter()
                        .map(|&i| mix.label(i))
                        .collect()
                })
                .collect(),
            distinct_situations: None,
            oracle_queries: None,
            system_speedup: None,
            fairness: None,
        });
        // Estimates against the simulation, for every distinct group of the schedules.
        for &g in sched {
            let sit = group_situation(g);
            if validated.insert(sit.clone(), ()).is_some() {
                continue;
            }
            let placed: Vec<(&ThreadModel, usize)> = sit
                .iter()
                .enumerate()
                .flat_map(|(c, ts)| ts.iter().map(move |&i| (i, c)))
                .map(|(i, c)| (&ctx.models[i], c))
                .collect();
            let meas = &done[&sit];
            for &est in ALL_ESTIMATORS {
                let p = predict(Solver::Statcache, est, &placed, &ctx.geom);
                let entry = errs.entry(est).or_default();
                if let Some(x) = relative_error(p.per_reference, meas.l2_misses_per_reference()) {
                    entry.0.push(x);
                }
                if let Some(x) = relative_error(p.local, meas.l2_miss_ratio()) {
                    entry.1.push(x);
                }
            }
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    Ok(SizeResult {
        l2_bytes: ctx.bytes,
        label: size_label(ctx.bytes, &ctx.m),
        policies: results,
        estimator_errors: errs
            .iter()
            .map(|(&estimator, (a, b))| EstimatorError {
                estimator,
                per_reference: mean(a),
                local: mean(b),
            })
            .collect(),
        groups_validated: validated.len(),
        search: balance.then(|| search_groups(&ctx.models, contexts, ctx.geom.llc_lines)),
        seconds_per_simulated_situation: secs,
        analytic_ipc_error: analytic_error(ctx, &done),
    })
}

fn l2(e: &Experiment, seed: u64, progress: Progress<'_>) -> Result<FedorovaRun, CacheModelError> {
    let mix = Mix::of(e)?;
    let ctxs = size_contexts(e, &mix, seed, &sizes_of(e), progress)?;
    let sizes: Vec<SizeResult> = ctxs
        .iter()
        .map(|c| run_size(e, c, &mix, seed, &[PolicyName::Naive], false, progress))
        .collect::<Result<_, _>>()?;
    let json = json_of(e, &sizes);
    let m = &ctxs[0].m;
    let mut s = format!(
        "{} threads ({}) on {} ({} cores x {} contexts), {} scheduler seeing an {}-way multiprocessor; {} moments of each OS-simulated schedule simulated for {} cycles after {} of warm-up\n\n",
        mix.threads.len(),
        e.workloads.iter().map(|w| w.trim_end_matches("-like")).collect::<Vec<_>>().join(" "),
        m.name,
        m.cores(),
        m.topology.threads_per_core,
        scheduler_name(e.baseline),
        m.logical_cpus(),
        samples_of(e),
        window_of(e).measure_cycles,
        window_of(e).warmup_cycles
    );
    let mut t = Table::new([
        "L2",
        "IPC",
        "± se",
        "L2 miss ratio",
        "L2 misses/ref",
        "distinct situations",
    ]);
    for r in &sizes {
        let d = &r.policies[0];
        t.row([
            r.label.clone(),
            format!("{:.3}", d.perf.ipc),
            format!("{:.3}", d.perf.ipc_se),
            format!("{:.3}", d.perf.l2_miss_ratio),
            format!("{:.4}", d.perf.l2_misses_per_reference),
            d.distinct_situations.map_or("-".into(), |x| x.to_string()),
        ]);
    }
    s.push_str(&t.render());
    let ipcs: Vec<f64> = sizes.iter().map(|r| r.policies[0].perf.ipc).collect();
    let miss: Vec<f64> = sizes
        .iter()
        .map(|r| r.policies[0].perf.l2_miss_ratio)
        .collect();
    let falls = ipcs.windows(2).all(|w| w[0] <= w[1]);
    let drops = miss.windows(2).all(|w| w[0] >= w[1]);
    s.push_str(&format!(
        "\nIPC {} as the L2 shrinks ({:.3} at {}, {:.3} at {}: {}); the miss ratio {} as it grows\n",
        if falls { "falls" } else { "does not fall monotonically" },
        ipcs.last().copied().unwrap_or(0.0),
        sizes.last().map_or(String::new(), |r| r.label.clone()),
        ipcs[0],
        sizes[0].label,
        pct(ipcs[0] / ipcs.last().copied().unwrap_or(1.0) - 1.0),
        if drops { "falls" } else { "does not fall monotonically" },
    ));
    s.push_str(&paper_block(e));
    let values = [
        (
            FedorovaMetric::IpcLargestOverSmallestL2,
            ipcs.last().map(|x| x / ipcs[0]),
        ),
        (
            FedorovaMetric::MissRatioSmallestOverLargestL2,
            miss.last().map(|x| miss[0] / x),
        ),
    ];
    Ok(FedorovaRun {
        text: s,
        json,
        values: found(values),
        figures: l2_figures(e, &sizes, seed),
    })
}

/// IPC and the L2 miss ratio against the L2 size, as the paper's Figs. 4 and 5 (a chart that
/// cannot be drawn, such as of one size, is left out).
fn l2_figures(e: &Experiment, sizes: &[SizeResult], seed: u64) -> Vec<(String, String)> {
    use smtsched_report::lines::{xy_svg, Axes, SeriesLabelPosition};
    let names: Vec<String> = sizes.iter().map(|r| r.label.clone()).collect();
    let chart = |label: &str, of: fn(&PolicyResult) -> f64| {
        let points = sizes
            .iter()
            .enumerate()
            .map(|(i, r)| (i as f64, of(&r.policies[0])))
            .collect();
        let axes = Axes {
            title: &format!("{}: {label} by L2 size", e.name),
            x_label: "L2 size",
            y_label: label,
            x_names: Some(&names),
            legend: SeriesLabelPosition::UpperLeft,
        };
        xy_svg(&[(format!("{label}, seed {seed}"), points)], &axes)
    };
    let figures = [
        (
            format!("Processor IPC of the mix at each L2 size, seed {seed} (the paper's Fig. 4)"),
            chart("IPC", |p| p.perf.ipc),
        ),
        (
            format!("L2 miss ratio of the mix at each L2 size, seed {seed} (the paper's Fig. 5)"),
            chart("L2 miss ratio", |p| p.perf.l2_miss_ratio),
        ),
    ];
    figures
        .into_iter()
        .filter_map(|(caption, svg)| Some((caption, svg.ok()?)))
        .collect()
}

fn balance_set(
    e: &Experiment,
    seed: u64,
    progress: Progress<'_>,
) -> Result<FedorovaRun, CacheModelError> {
    let mix = Mix::of(e)?;
    let ctxs = size_contexts(e, &mix, seed, &sizes_of(e), progress)?;
    let policies = [
        PolicyName::Naive,
        PolicyName::BalanceSetPerf,
        PolicyName::BalanceSetFair,
    ];
    let sizes: Vec<SizeResult> = ctxs
        .iter()
        .map(|c| run_size(e, c, &mix, seed, &policies, true, progress))
        .collect::<Result<_, _>>()?;
    Ok(FedorovaRun {
        json: json_of(e, &sizes),
        text: balance_text(e, &mix, &ctxs, &sizes),
        values: found(balance_values(&sizes)),
        figures: Vec::new(),
    })
}

/// Per method ("PERF emulation", "FAIR OS", …), per L2 size: (IPC gain, L2 miss-ratio cut)
/// against the default scheduler.
fn gains(sizes: &[SizeResult]) -> BTreeMap<&'static str, Vec<(f64, f64)>> {
    let mut gains: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for r in sizes {
        let Some(d) = find(r, "default", "os") else {
            continue;
        };
        for (label, p, meth) in [
            ("PERF emulation", "balance-set-perf", "emulation"),
            ("FAIR emulation", "balance-set-fair", "emulation"),
            ("PERF OS", "balance-set-perf", "os"),
            ("FAIR OS", "balance-set-fair", "os"),
        ] {
            if let Some(x) = find(r, p, meth) {
                gains.entry(label).or_default().push((
                    x.perf.ipc / d.perf.ipc - 1.0,
                    1.0 - x.perf.l2_miss_ratio / d.perf.l2_miss_ratio,
                ));
            }
        }
    }
    gains
}

/// The balance-set metrics, by the paper's method (emulation).
fn balance_values(sizes: &[SizeResult]) -> Vec<(FedorovaMetric, Option<f64>)> {
    use FedorovaMetric::*;
    let g = gains(sizes);
    let extreme = |label: &str, i: usize, max: bool| {
        let v = g.get(label)?;
        let xs = v.iter().map(|p| if i == 0 { p.0 } else { p.1 });
        if max {
            xs.reduce(f64::max)
        } else {
            xs.reduce(f64::min)
        }
    };
    let avg: Vec<f64> = sizes
        .iter()
        .filter_map(|r| {
            r.estimator_errors
                .iter()
                .find(|x| x.estimator == Estimator::Avg)
        })
        .map(|x| x.per_reference)
        .collect();
    let doubled = sizes.windows(2).next().and_then(|w| {
        let p = find(&w[0], "balance-set-perf", "emulation")?;
        let d = find(&w[1], "default", "os")?;
        Some(p.perf.ipc / d.perf.ipc)
    });
    vec![
        (PerfIpcGainMin, extreme("PERF emulation", 0, false)),
        (PerfIpcGainMax, extreme("PERF emulation", 0, true)),
        (PerfMissCutMin, extreme("PERF emulation", 1, false)),
        (PerfMissCutMax, extreme("PERF emulation", 1, true)),
        (FairIpcGainMin, extreme("FAIR emulation", 0, false)),
        (FairIpcGainMax, extreme("FAIR emulation", 0, true)),
        (FairMissCutMin, extreme("FAIR emulation", 1, false)),
        (FairMissCutMax, extreme("FAIR emulation", 1, true)),
        (
            AvgEstimateError,
            (!avg.is_empty()).then(|| avg.iter().sum::<f64>() / avg.len() as f64),
        ),
        (PerfSmallestOverDefaultDoubled, doubled),
    ]
}

fn find<'a>(r: &'a SizeResult, policy: &str, method: &str) -> Option<&'a PolicyResult> {
    r.policies
        .iter()
        .find(|p| p.policy == policy && p.method == method)
}

fn sd(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt()
}

/// Longest OS run of `cachemodel schedule`, simulated seconds.
const MAX_SCHEDULE_SECONDS: f64 = 1e5;

/// The base scheduler as the texts name it (the paper's default scheduler is Linux 2.4's).
fn scheduler_name(b: Baseline) -> &'static str {
    match b {
        Baseline::Linux24 => "Linux 2.4",
        Baseline::Modern => "present-day Linux",
    }
}

fn balance_text(e: &Experiment, mix: &Mix, ctxs: &[SizeCtx], sizes: &[SizeResult]) -> String {
    let m = &ctxs[0].m;
    let n = mix.threads.len();
    let mut s = format!(
        "{n} threads on {} ({} cores x {} contexts); default = {} seeing an {}-way multiprocessor.\nEmulation = the paper's method (each group of the schedule simulated for {} cycles after {} of warm-up, averaged); OS = the policy in the OS simulator, {} moments of its schedule simulated the same way.\n",
        m.name,
        m.cores(),
        m.topology.threads_per_core,
        scheduler_name(e.baseline),
        m.logical_cpus(),
        window_of(e).measure_cycles,
        window_of(e).warmup_cycles,
        samples_of(e)
    );
    // IPC and L2 miss ratio, both methods.
    let mut t = Table::new([
        "L2",
        "default IPC",
        "PERF emul.",
        "FAIR emul.",
        "PERF OS",
        "FAIR OS",
        "default L2 miss",
        "PERF emul.",
        "FAIR emul.",
        "PERF OS",
        "FAIR OS",
    ]);
    let gains = gains(sizes);
    for r in sizes {
        let d = find(r, "default", "os").expect("a default run");
        let cell = |p: &str, meth: &str, key: &str| -> String {
            let Some(x) = find(r, p, meth) else {
                return "-".into();
            };
            match key {
                "ipc" => format!("{:.3} ({})", x.perf.ipc, pct(x.perf.ipc / d.perf.ipc - 1.0)),
                _ => format!(
                    "{:.3} ({})",
                    x.perf.l2_miss_ratio,
                    pct(x.perf.l2_miss_ratio / d.perf.l2_miss_ratio - 1.0)
                ),
            }
        };
        t.row([
            r.label.clone(),
            format!("{:.3}", d.perf.ipc),
            cell("balance-set-perf", "emulation", "ipc"),
            cell("balance-set-fair", "emulation", "ipc"),
            cell("balance-set-perf", "os", "ipc"),
            cell("balance-set-fair", "os", "ipc"),
            format!("{:.3}", d.perf.l2_miss_ratio),
            cell("balance-set-perf", "emulation", "miss"),
            cell("balance-set-fair", "emulation", "miss"),
            cell("balance-set-perf", "os", "miss"),
            cell("balance-set-fair", "os", "miss"),
        ]);
    }
    s.push_str("\nIPC (machine, both cores) and L2 miss ratio (misses per L2 access), change against the default:\n\n");
    s.push_str(&t.render());
    let mut t = Table::new([
        "L2",
        "default STP",
        "PERF emul.",
        "FAIR emul.",
        "PERF OS",
        "FAIR OS",
        "default fairness",
        "PERF emul.",
        "FAIR emul.",
        "PERF OS",
        "FAIR OS",
    ]);
    for r in sizes {
        let d = find(r, "default", "os").expect("a default run");
        let cell = |p: &str, meth: &str, key: &str| -> String {
            let Some(x) = find(r, p, meth) else {
                return "-".into();
            };
            match key {
                "stp" => format!("{:.2} ({})", x.perf.stp, pct(x.perf.stp / d.perf.stp - 1.0)),
                _ => format!("{:.2}", x.perf.fairness()),
            }
        };
        t.row([
            r.label.clone(),
            format!("{:.2}", d.perf.stp),
            cell("balance-set-perf", "emulation", "stp"),
            cell("balance-set-fair", "emulation", "stp"),
            cell("balance-set-perf", "os", "stp"),
            cell("balance-set-fair", "os", "stp"),
            format!("{:.2}", d.perf.fairness()),
            cell("balance-set-perf", "emulation", "f"),
            cell("balance-set-fair", "emulation", "f"),
            cell("balance-set-perf", "os", "f"),
            cell("balance-set-fair", "os", "f"),
        ]);
    }
    s.push_str("\nWork counted fairly — STP = Σ IPC / solo IPC of the running threads, averaged — and fairness = slowest / fastest thread's progress over the schedule (the paper reports neither):\n\n");
    s.push_str(&t.render());
    let range = |v: &[(f64, f64)], k: usize| -> (f64, f64) {
        let xs: Vec<f64> = v.iter().map(|p| if k == 0 { p.0 } else { p.1 }).collect();
        (
            xs.iter().cloned().fold(f64::INFINITY, f64::min),
            xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        )
    };
    s.push_str("\nAgainst the paper (IPC gain; L2 miss-ratio reduction):\n");
    for (label, paper_ipc, paper_miss) in [
        ("PERF emulation", "27% to 45%", "19% to 37%"),
        ("PERF OS", "27% to 45%", "19% to 37%"),
        ("FAIR emulation", "7% to 34%", "9% to 18%"),
        ("FAIR OS", "7% to 34%", "9% to 18%"),
    ] {
        if let Some(v) = gains.get(label) {
            let (i0, i1) = range(v, 0);
            let (m0, m1) = range(v, 1);
            let every = v.iter().all(|p| p.0 > 0.0 && p.1 > 0.0);
            s.push_str(&format!(
                "  {label:15} IPC {:+.1}% to {:+.1}% (paper {paper_ipc}); miss ratio -{:.1}% to -{:.1}% (paper {paper_miss}); {}\n",
                100.0 * i0,
                100.0 * i1,
                100.0 * m0,
                100.0 * m1,
                if every {
                    "better than the default at every size"
                } else {
                    "NOT better than the default at every size"
                }
            ));
        }
    }
    // The paper's "doubling the L2" comparison.
    for w in sizes.windows(2) {
        if let (Some(p), Some(d2)) = (
            find(&w[0], "balance-set-perf", "emulation"),
            find(&w[1], "default", "os"),
        ) {
            s.push_str(&format!(
                "  PERF (emulation) at {}: miss ratio {:.3}, IPC {:.3}; default at {}: {:.3}, {:.3}\n",
                w[0].label,
                p.perf.l2_miss_ratio,
                p.perf.ipc,
                w[1].label,
                d2.perf.l2_miss_ratio,
                d2.perf.ipc
            ));
        }
    }
    // Fairness: CPU share per thread at the smallest size.
    if let Some(r) = sizes.first() {
        let cols: Vec<(&str, &str, &str)> = vec![
            ("default", "default", "os"),
            ("PERF emul.", "balance-set-perf", "emulation"),
            ("FAIR emul.", "balance-set-fair", "emulation"),
            ("PERF OS", "balance-set-perf", "os"),
            ("FAIR OS", "balance-set-fair", "os"),
        ];
        let mut t = Table::new(
            std::iter::once("thread".to_string())
                .chain(std::iter::once("AVG term".to_string()))
                .chain(cols.iter().map(|c| c.0.to_string())),
        );
        let values: Vec<f64> = ctxs[0]
            .models
            .iter()
            .map(|x| x.miss_ratio(ctxs[0].geom.llc_lines / m.logical_cpus() as f64))
            .collect();
        for (i, v) in values.iter().enumerate() {
            t.row(
                [mix.label(i), format!("{v:.3}")]
                    .into_iter()
                    .chain(cols.iter().map(|c| {
                        find(r, c.1, c.2).map_or("-".into(), |x| format!("{:.2}", x.cpu_share[i]))
                    })),
            );
        }
        t.row(
            ["sd of share".to_string(), String::new()]
                .into_iter()
                .chain(cols.iter().map(|c| {
                    find(r, c.1, c.2).map_or("-".into(), |x| format!("{:.3}", sd(&x.cpu_share)))
                })),
        );
        s.push_str(&format!(
            "\nCPU share per thread at L2 {} (fraction of the run on a context; {} contexts for {} threads = {:.2} each if fair), and the AVG per-thread term (miss ratio in 1/{} of the L2):\n\n",
            r.label,
            m.logical_cpus(),
            n,
            m.logical_cpus() as f64 / n as f64,
            m.logical_cpus()
        ));
        s.push_str(&t.render());
        s.push_str("(paper Fig. 13: the sd of the share is high for both; FAIR somewhat lower)\n");
    }
    // Schedules at the smallest and largest sizes.
    for r in [sizes.first(), sizes.last()].into_iter().flatten() {
        for p in ["balance-set-perf", "balance-set-fair"] {
            if let Some(x) = find(r, p, "emulation") {
                s.push_str(&format!(
                    "\n{} schedule at {} ({} groups):\n",
                    p,
                    r.label,
                    x.groups.len()
                ));
                for g in &x.groups {
                    s.push_str(&format!(
                        "  {}\n",
                        g.iter()
                            .map(|l| l.replace("-like", ""))
                            .collect::<Vec<_>>()
                            .join(" ")
                    ));
                }
            }
        }
    }
    // Model accuracy (Fig. 10).
    let mut t = Table::new(
        std::iter::once("estimator".to_string())
            .chain(sizes.iter().map(|r| r.label.clone()))
            .chain(["mean".to_string(), "per L2 access, mean".to_string()]),
    );
    let mut avg_err = None;
    for &est in ALL_ESTIMATORS {
        let per: Vec<f64> = sizes
            .iter()
            .filter_map(|r| r.estimator_errors.iter().find(|x| x.estimator == est))
            .map(|x| x.per_reference)
            .collect();
        let local: Vec<f64> = sizes
            .iter()
            .filter_map(|r| r.estimator_errors.iter().find(|x| x.estimator == est))
            .map(|x| x.local)
            .collect();
        let mean = per.iter().sum::<f64>() / per.len().max(1) as f64;
        if est == Estimator::Avg {
            avg_err = Some(mean);
        }
        t.row(
            std::iter::once(est.as_str().to_string())
                .chain(per.iter().map(|x| format!("{:.1}%", 100.0 * x)))
                .chain([
                    format!("{:.1}%", 100.0 * mean),
                    format!(
                        "{:.1}%",
                        100.0 * local.iter().sum::<f64>() / local.len().max(1) as f64
                    ),
                ]),
        );
    }
    s.push_str(&format!(
        "\nGroup estimates against the simulator (Fig. 10): mean |predicted - simulated| / simulated L2 misses per reference over the distinct groups of the PERF and FAIR schedules ({} groups):\n\n",
        sizes.iter().map(|r| r.groups_validated).sum::<usize>()
    ));
    s.push_str(&t.render());
    if let Some(a) = avg_err {
        s.push_str(&format!(
            "AVG, the estimator the scheduler uses: {:.1}% on average (paper: 17%; target: within 20%)\n",
            100.0 * a
        ));
    }
    // Cost.
    s.push_str("\nCost:\n");
    for r in sizes {
        if let Some(g) = &r.search {
            s.push_str(&format!(
                "  {}: {} groups of {} enumerated, estimated, sorted and thresholded in {:.1} ms with AVG ({} candidates, threshold {:.4} from {}), {:.1} ms with COMB (N)\n",
                r.label,
                g.groups,
                g.contexts,
                1e3 * g.avg_seconds,
                g.candidates,
                g.threshold,
                g.greediest,
                1e3 * g.comb_seconds
            ));
        }
    }
    for r in sizes {
        let d = find(r, "default", "os").expect("default");
        let distinct = |p: &str| {
            find(r, p, "os")
                .and_then(|x| x.distinct_situations)
                .unwrap_or(0)
        };
        s.push_str(&format!(
            "  {}: the OS runs asked the analytic oracle about {} (default), {} (PERF), {} (FAIR) distinct situations ({} queries for the default); one simulated situation took {:.2} s, so a simulated oracle would have needed about {:.0} s for the default run alone; the analytic oracle's machine IPC was off by {:.1}% on average on the situations simulated\n",
            r.label,
            d.distinct_situations.unwrap_or(0),
            distinct("balance-set-perf"),
            distinct("balance-set-fair"),
            d.oracle_queries.unwrap_or(0),
            r.seconds_per_simulated_situation,
            d.distinct_situations.unwrap_or(0) as f64 * r.seconds_per_simulated_situation,
            100.0 * r.analytic_ipc_error
        ));
    }
    s.push_str(&paper_block(e));
    s
}

// ---------------------------------------------------------------------------------------------
// Any policies on any machine: `smtsched cachemodel schedule`.

/// What `smtsched cachemodel schedule` runs.
#[derive(Clone, Debug)]
pub struct ScheduleSpec {
    pub machine: String,
    pub set: Vec<String>,
    pub workloads: Vec<String>,
    pub copies: u32,
    pub policies: Vec<PolicyName>,
    pub os_seconds: f64,
    pub samples: u32,
    pub window: CycleWindow,
    pub window_instructions: u64,
}

/// Runs `spec.policies` (informed by the reuse-distance models: balance-set gets AVG's
/// per-thread terms, di the threads' solo last-level-cache misses per 1000 instructions and the
/// machine's cache domains) in the OS simulator on the Linux 2.4 baseline, and measures each
/// schedule on the microarchitectural simulator at sampled moments.
pub fn schedule(
    spec: &ScheduleSpec,
    seed: u64,
    json: bool,
    progress: Progress<'_>,
) -> Result<String, CacheModelError> {
    if spec.workloads.is_empty() || spec.copies == 0 {
        return Err(bad("--workloads: no threads to schedule"));
    }
    if spec.policies.is_empty() {
        return Err(bad("--policies names no policy"));
    }
    // The schedule's every switch is kept to draw its moments from: its memory grows with the
    // time simulated (about 2.5 MB per 1,000 s of six threads), so it is bounded.
    if !(spec.os_seconds > 0.0 && spec.os_seconds <= MAX_SCHEDULE_SECONDS) {
        return Err(bad(format!(
            "--duration {}: must be a number of simulated seconds above 0 and at most {MAX_SCHEDULE_SECONDS}",
            spec.os_seconds
        )));
    }
    let e: Experiment = serde_json::from_value(serde_json::json!({
        "name": "cachemodel-schedule",
        "title": "policies on the OS simulator, measured on the microarchitectural simulator",
        "kind": "fedorova-l2",
        "machine": spec.machine,
        "set": spec.set,
        "workloads": spec.workloads,
        "cmt": {
            "copies": spec.copies,
            "samples": spec.samples,
            "warmup_cycles": spec.window.warmup_cycles,
            "measure_cycles": spec.window.measure_cycles,
            "window_instructions": spec.window_instructions,
            "os_seconds": spec.os_seconds,
        },
    }))
    .map_err(|err| CacheModelError::Os(format!("schedule settings: {err}")))?;
    let mix = Mix::of(&e)?;
    let ctxs = size_contexts(&e, &mix, seed, &[None], progress)?;
    let r = run_size(&e, &ctxs[0], &mix, seed, &spec.policies, false, progress)?;
    if json {
        return serde_json::to_string_pretty(&r)
            .map(|s| s + "\n")
            .map_err(|err| CacheModelError::Os(err.to_string()));
    }
    let m = &ctxs[0].m;
    let mut s = format!(
        "{} threads on {} ({} logical CPUs, {}), Linux 2.4 baseline, {} s simulated; {} moments of each schedule simulated for {} cycles after {} of warm-up\n\n",
        mix.threads.len(),
        m.name,
        m.logical_cpus(),
        r.label,
        spec.os_seconds,
        samples_of(&e),
        spec.window.measure_cycles,
        spec.window.warmup_cycles
    );
    let mut t = Table::new([
        "policy",
        "IPC",
        "± se",
        "L2 miss ratio",
        "L2 misses/ref",
        "STP",
        "fairness",
        "CPU share sd",
        "distinct situations",
    ]);
    for p in &r.policies {
        t.row([
            p.policy.clone(),
            format!("{:.3}", p.perf.ipc),
            format!("{:.3}", p.perf.ipc_se),
            format!("{:.3}", p.perf.l2_miss_ratio),
            format!("{:.4}", p.perf.l2_misses_per_reference),
            format!("{:.2}", p.perf.stp),
            format!("{:.2}", p.perf.fairness()),
            format!("{:.3}", sd(&p.cpu_share)),
            p.distinct_situations.map_or("-".into(), |x| x.to_string()),
        ]);
    }
    s.push_str(&t.render());
    s.push_str(&format!(
        "\nSTP = mean Σ IPC / solo IPC of the running threads; fairness = slowest / fastest thread's progress. One simulated situation took {:.2} s; the analytic oracle's machine IPC was off by {:.1}% on the situations simulated.\n",
        r.seconds_per_simulated_situation,
        100.0 * r.analytic_ipc_error
    ));
    Ok(s)
}
