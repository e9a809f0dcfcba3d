//! What `smtsched cachemodel` reports: a thread's histogram, predicted against simulated miss
//! ratios for a group on a machine, and the balance-set candidate search for a set of threads.

use crate::balance::{candidates, candidates_with, fair_schedule, perf_schedule, Candidates};
use crate::error::{bad, CacheModelError};
use crate::group::{Estimator, Solver, ALL_ESTIMATORS};
use crate::histogram::Histogram;
use crate::measure::{run_group, CycleWindow, Measured, Placed};
use crate::model::{predict, Geometry, Prediction, ThreadModel};
use serde::Serialize;
use smtsched_model::MachineModel;
use smtsched_report::Table;
use smtsched_uarch::Workload;
use std::time::Instant;

/// Copies are numbered in order of appearance, as `smtsched corun` does.
pub fn number_copies<'a>(workloads: &[&'a dyn Workload]) -> Vec<(&'a dyn Workload, u32)> {
    let mut seen: std::collections::BTreeMap<String, u32> = Default::default();
    workloads
        .iter()
        .map(|&w| {
            let c = seen.entry(w.name().to_string()).or_insert(0);
            let copy = *c;
            *c += 1;
            (w, copy)
        })
        .collect()
}

/// One histogram as a table: bucket, distance range, mean distance, count, share.
pub fn histogram_table(h: &Histogram) -> String {
    let n = h.references().max(1.0);
    let mut t = Table::new([
        "bucket",
        "distances",
        "mean distance",
        "references",
        "share %",
    ]);
    for &(d, c) in &h.points {
        let b = crate::histogram::bucket_of(d);
        let lo = if b == 0 { 0u64 } else { (1u64 << (b + 1)) - 1 };
        let hi = (1u64 << (b + 2)) - 2;
        let range = if b + 1 == crate::histogram::COMPRESSED_BUCKETS {
            format!("{lo}-")
        } else {
            format!("{lo}-{hi}")
        };
        t.row([
            b.to_string(),
            range,
            format!("{d:.1}"),
            format!("{c:.0}"),
            format!("{:.2}", 100.0 * c / n),
        ]);
    }
    t.row([
        "cold".to_string(),
        "-".into(),
        "-".into(),
        format!("{:.0}", h.cold),
        format!("{:.2}", 100.0 * h.cold / n),
    ]);
    t.render()
}

/// A group predicted and simulated.
#[derive(Clone, Debug, Serialize)]
pub struct GroupReport {
    pub machine: String,
    pub threads: Vec<String>,
    pub cpus: Vec<u32>,
    pub solver: Solver,
    pub predictions: Vec<Prediction>,
    pub simulated_per_reference: f64,
    pub simulated_local: f64,
    pub simulated_l1: f64,
    pub simulated_ipc: f64,
    pub window: CycleWindow,
}

impl GroupReport {
    /// |predicted − simulated| / simulated of an estimator, per reference.
    pub fn error(&self, est: Estimator) -> Option<f64> {
        let p = self.predictions.iter().find(|p| p.estimator == est)?;
        relative_error(p.per_reference, self.simulated_per_reference)
    }
}

pub fn relative_error(predicted: f64, actual: f64) -> Option<f64> {
    (actual > 0.0).then(|| (predicted - actual).abs() / actual)
}

/// The estimators' predictions for `models` placed on `cpus`, beside a simulation of the group.
pub fn predict_group(
    machine: &MachineModel,
    models: &[ThreadModel],
    workloads: &[(&dyn Workload, u32)],
    cpus: &[u32],
    solver: Solver,
    seed: u64,
    window: CycleWindow,
) -> Result<GroupReport, CacheModelError> {
    // The models predict threads on contexts of their own that share one last-level cache:
    // a group placed otherwise would be compared with a run they do not describe.
    if let Some((_, c)) = smtsched_model::first_repeat(cpus) {
        return Err(bad(format!(
            "--cpus: CPU {c} is named twice: its threads would time-share it, which the cache \
             models do not describe (give each thread a CPU of its own)"
        )));
    }
    if let Some(&c) = cpus.iter().find(|&&c| c >= machine.logical_cpus()) {
        return Err(bad(format!("CPU {c} does not exist on {}", machine.name)));
    }
    let domain = crate::analytic::llc_domains(machine);
    if cpus
        .iter()
        .any(|&c| domain[c as usize] != domain[cpus[0] as usize])
    {
        return Err(bad(format!(
            "--cpus {}: the threads do not share one last-level cache on {} (the predictions \
             are of threads sharing one)",
            cpus.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
            machine.name
        )));
    }
    let geom = Geometry::of(machine);
    let core_of = |c: u32| machine.cpu_location(c).map(|l| l.core as usize);
    let placed: Vec<(&ThreadModel, usize)> = models
        .iter()
        .zip(cpus)
        .map(|(m, &c)| {
            core_of(c)
                .map(|core| (m, core))
                .ok_or_else(|| bad(format!("CPU {c} does not exist on {}", machine.name)))
        })
        .collect::<Result<_, _>>()?;
    let predictions = ALL_ESTIMATORS
        .iter()
        .map(|&e| predict(solver, e, &placed, &geom))
        .collect();
    let run: Vec<Placed> = workloads
        .iter()
        .zip(cpus)
        .map(|(&(w, copy), &cpu)| Placed {
            workload: w,
            copy,
            cpu,
        })
        .collect();
    let m: Measured = run_group(machine, &run, seed, window)?;
    Ok(GroupReport {
        machine: machine.name.clone(),
        threads: models.iter().map(|m| m.label.clone()).collect(),
        cpus: cpus.to_vec(),
        solver,
        predictions,
        simulated_per_reference: m.l2_misses_per_reference(),
        simulated_local: m.l2_miss_ratio(),
        simulated_l1: m.l1d_miss_ratio(),
        simulated_ipc: m.ipc(),
        window,
    })
}

/// The text report of [`predict_group`] and of the threads' own models.
pub fn group_text(r: &GroupReport, models: &[ThreadModel], geom: &Geometry) -> String {
    let mut out = String::new();
    let mut t = Table::new([
        "thread",
        "cpu",
        "solo IPC",
        "refs/instr",
        "model L1 miss",
        "model LLC miss",
        "model LLC miss in 1/N",
        "buckets",
    ]);
    let n = models.len() as f64;
    for (m, cpu) in models.iter().zip(&r.cpus) {
        t.row([
            m.label.clone(),
            cpu.to_string(),
            format!("{:.3}", m.solo_ipc()),
            format!("{:.3}", m.profile.refs_per_instruction()),
            format!("{:.4}", m.miss_ratio_with(r.solver, geom.l1_lines)),
            format!("{:.4}", m.miss_ratio_with(r.solver, geom.llc_lines)),
            format!("{:.4}", m.miss_ratio_with(r.solver, geom.llc_lines / n)),
            (m.hist.points.len() + 1).to_string(),
        ]);
    }
    out.push_str(&format!(
        "{} threads on {} (L1D {:.0} lines, shared L{} {:.0} lines; {} model; misses per data reference)\n\n",
        models.len(),
        r.machine,
        geom.l1_lines,
        geom.llc_level,
        geom.llc_lines,
        r.solver.as_str()
    ));
    out.push_str(&t.render());
    let mut t = Table::new([
        "estimator",
        "LLC misses/ref",
        "simulated",
        "error %",
        "LLC miss ratio",
        "simulated",
        "error %",
    ]);
    for p in &r.predictions {
        let e1 = relative_error(p.per_reference, r.simulated_per_reference);
        let e2 = relative_error(p.local, r.simulated_local);
        t.row([
            p.estimator.as_str().to_string(),
            format!("{:.4}", p.per_reference),
            format!("{:.4}", r.simulated_per_reference),
            e1.map_or("-".into(), |e| format!("{:.1}", 100.0 * e)),
            format!("{:.3}", p.local),
            format!("{:.3}", r.simulated_local),
            e2.map_or("-".into(), |e| format!("{:.1}", 100.0 * e)),
        ]);
    }
    out.push_str(&format!(
        "\ngroup predicted vs simulated ({} warm-up + {} measured cycles; machine IPC {:.3}, L1D miss ratio {:.3}):\n\n",
        r.window.warmup_cycles, r.window.measure_cycles, r.simulated_ipc, r.simulated_l1
    ));
    out.push_str(&t.render());
    out.push_str(
        "\nLLC misses/ref is what the reuse-distance model predicts; the LLC miss ratio (per LLC access, as a counter reports it) divides it by the model's L1 estimate.\n",
    );
    out
}

/// The balance-set search over a thread set: what the candidate step costs and finds.
#[derive(Clone, Debug, Serialize)]
pub struct GroupSearch {
    pub threads: Vec<String>,
    pub contexts: usize,
    /// Groups estimated: every one (`exhaustive`), or, where there are too many to enumerate,
    /// those built greedily.
    pub groups: u64,
    pub exhaustive: bool,
    pub candidates: usize,
    pub threshold: f64,
    pub greediest: String,
    /// Seconds to enumerate and estimate every group with AVG, sort and threshold them.
    pub avg_seconds: f64,
    /// The same with COMB (N) (merging and solving a histogram per group).
    pub comb_seconds: f64,
    /// Candidates when COMB (N) estimates the groups instead.
    pub comb_candidates: usize,
    pub perf: Vec<Vec<String>>,
    pub fair: Vec<Vec<String>>,
}

/// Enumerates and thresholds every group of `contexts` of `models` on a cache of `lines`.
pub fn search_groups(models: &[ThreadModel], contexts: usize, lines: f64) -> GroupSearch {
    let k = contexts.min(models.len()).max(1);
    let values: Vec<f64> = models
        .iter()
        .map(|m| m.miss_ratio(lines / k as f64))
        .collect();
    let t0 = Instant::now();
    let c: Candidates = candidates(&values, k);
    let avg_seconds = t0.elapsed().as_secs_f64();
    let hists: Vec<&Histogram> = models.iter().map(|m| &m.hist).collect();
    let t0 = Instant::now();
    let comb = candidates_with(&values, k, &|members: &[usize]| {
        let h: Vec<&Histogram> = members.iter().map(|&i| hists[i]).collect();
        crate::group::group_miss_ratio(Estimator::CombN, &h, &[], lines)
    });
    let comb_seconds = t0.elapsed().as_secs_f64();
    let names = |g: usize, c: &Candidates| -> Vec<String> {
        c.groups[g]
            .members
            .iter()
            .map(|&m| models[m].label.clone())
            .collect()
    };
    GroupSearch {
        comb_candidates: comb.groups.len(),
        threads: models.iter().map(|m| m.label.clone()).collect(),
        contexts: k,
        groups: c.examined,
        exhaustive: c.exhaustive,
        candidates: c.groups.len(),
        threshold: c.threshold,
        greediest: models[c.greediest].label.clone(),
        avg_seconds,
        comb_seconds,
        perf: perf_schedule(&c, models.len())
            .into_iter()
            .map(|g| names(g, &c))
            .collect(),
        fair: fair_schedule(&c, models.len())
            .into_iter()
            .map(|g| names(g, &c))
            .collect(),
    }
}
