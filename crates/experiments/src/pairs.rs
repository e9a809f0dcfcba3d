//! Pairwise experiments (thesis §3.3): every pair of a workload list, self-pairs included, run
//! together under each placement (sibling threads, separate packages, one time-shared CPU), with
//! claims on the matrix's summary — the thesis's desktop Table 3.7 and the SPEC matrices.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use smtsched_model::{load_workload, MachineModel, Placement, PrMatrix, WorkloadProfile};
use smtsched_report::matrix::{render_grid, render_speedup_grid, summarize, MatrixSummary};
use smtsched_uarch::{protocol::matrix, Protocol, Workload};

/// What a claim reads from a placement's matrix.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PairsMetric {
    /// Mean system speedup (PR + PR) over the pairs.
    MeanSystemSpeedup,
    /// Mean performance ratio over every subject and background.
    MeanPr,
    /// Standard deviation of the performance ratios.
    PrSd,
    /// The lowest performance ratio of any subject with any background.
    MinPr,
    /// The best and the worst pair's system speedup.
    BestPair,
    WorstPair,
    /// Mean system speedup of the self-pairs.
    SelfPairMean,
}

/// A claim: `metric` of the matrix under `placement` (or, with `over`, its ratio to the same
/// metric under `over`) lies within `within`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PairsClaim {
    pub says: String,
    pub metric: PairsMetric,
    pub placement: Placement,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<Placement>,
    #[serde(deserialize_with = "crate::experiment::claim_range")]
    pub within: [f64; 2],
}

/// The `[pairs]` table of a pairs experiment.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PairsSpec {
    pub placements: Vec<Placement>,
    /// Instructions per thread before and in the measured window.
    #[serde(default = "default_warmup")]
    pub warmup_instructions: u64,
    #[serde(default = "default_measure")]
    pub measure_instructions: u64,
    /// Workload pairs to leave out (the thesis could not run glx against itself).
    #[serde(default)]
    pub skip: Vec<[String; 2]>,
    #[serde(default, rename = "claim")]
    pub claims: Vec<PairsClaim>,
}

fn default_warmup() -> u64 {
    1_000_000
}
fn default_measure() -> u64 {
    2_000_000
}

/// One placement's matrix and its summary.
#[derive(Clone, Debug, Serialize)]
pub struct PlacementResult {
    pub placement: Placement,
    pub matrix: PrMatrix,
    pub summary: MatrixSummary,
}

impl PlacementResult {
    pub fn metric(&self, m: PairsMetric) -> Option<f64> {
        let s = &self.summary;
        Some(match m {
            PairsMetric::MeanSystemSpeedup => s.system_speedup.mean,
            PairsMetric::MeanPr => s.pr.mean,
            PairsMetric::PrSd => s.pr.sd,
            PairsMetric::MinPr => s.pr.min,
            PairsMetric::BestPair => s.best.speedup,
            PairsMetric::WorstPair => s.worst.speedup,
            PairsMetric::SelfPairMean => s.self_pair_mean?,
        })
    }
}

/// The value a claim compares (`None` if a placement or value is missing).
pub fn claim_value(results: &[PlacementResult], c: &PairsClaim) -> Option<f64> {
    let of = |p: Placement| {
        results
            .iter()
            .find(|r| r.placement == p)
            .and_then(|r| r.metric(c.metric))
    };
    let v = of(c.placement)?;
    match c.over {
        None => Some(v),
        Some(o) => of(o).filter(|&b| b != 0.0).map(|b| v / b),
    }
}

/// Checks the spec against the workloads; errors name the field.
pub fn validate(spec: &PairsSpec, workloads: &[String]) -> Result<(), String> {
    if spec.placements.is_empty() {
        return Err("pairs.placements: name at least one placement".into());
    }
    if workloads.len() < 2 {
        return Err("workloads: a pairs experiment needs at least two workloads".into());
    }
    if spec.measure_instructions == 0 {
        return Err("pairs.measure_instructions = 0: must be positive".into());
    }
    for (i, pair) in spec.skip.iter().enumerate() {
        for w in pair {
            if !workloads.contains(w) {
                return Err(format!("pairs.skip[{i}]: {w:?} is not among the workloads"));
            }
        }
    }
    for (i, c) in spec.claims.iter().enumerate() {
        for p in std::iter::once(c.placement).chain(c.over) {
            if !spec.placements.contains(&p) {
                return Err(format!(
                    "pairs.claim[{i}].placement = \"{p}\": not among pairs.placements"
                ));
            }
        }
        if c.within[0].is_nan() || c.within[1].is_nan() || c.within[0] > c.within[1] {
            return Err(format!(
                "pairs.claim[{i}].within = {:?}: must be [low, high] with low <= high",
                c.within
            ));
        }
    }
    Ok(())
}

/// Runs every placement's matrix (pairs in parallel) and summarises it without the skipped
/// pairs.
pub fn run(
    m: &MachineModel,
    workloads: &[String],
    spec: &PairsSpec,
    seed: u64,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<PlacementResult>, String> {
    let profiles: Vec<WorkloadProfile> = workloads
        .iter()
        .map(|w| load_workload(w, &[]))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let refs: Vec<&dyn Workload> = profiles.iter().map(|p| p as &dyn Workload).collect();
    let proto = Protocol {
        seed,
        warmup_instructions: spec.warmup_instructions,
        measure_instructions: spec.measure_instructions,
        quantum_cycles: (10e-3 * m.clock_ghz * 1e9) as u64,
        timeshare_rounds: 1,
        refill_only: true,
    };
    spec.placements
        .par_iter()
        .map(|&placement| {
            let mut mx =
                matrix(m, &refs, placement, &proto, progress).map_err(|e| e.to_string())?;
            mx.pairs.retain(|p| {
                !spec.skip.iter().any(|[a, b]| {
                    (&mx.workloads[p.a] == a && &mx.workloads[p.b] == b)
                        || (&mx.workloads[p.a] == b && &mx.workloads[p.b] == a)
                })
            });
            let summary = summarize(&mx).ok_or("no pairs left to summarise")?;
            Ok(PlacementResult {
                placement,
                matrix: mx,
                summary,
            })
        })
        .collect()
}

/// The result as text: per placement the PR and speedup grids and the summary, then the claims.
pub fn render(results: &[PlacementResult]) -> String {
    let mut out = String::new();
    for r in results {
        let s = &r.summary;
        out.push_str(&format!("placement {}:\n", r.placement));
        out.push_str(&render_grid(&r.matrix));
        out.push('\n');
        out.push_str(&render_speedup_grid(&r.matrix));
        out.push_str(&format!(
            "mean system speedup {:.3} (sd {:.3}); mean PR {:.3} (sd {:.3}); best {} + {} = {:.3}; worst {} + {} = {:.3}\n\n",
            s.system_speedup.mean,
            s.system_speedup.sd,
            s.pr.mean,
            s.pr.sd,
            s.best.a,
            s.best.b,
            s.best.speedup,
            s.worst.a,
            s.worst.b,
            s.worst.speedup
        ));
    }
    out
}
