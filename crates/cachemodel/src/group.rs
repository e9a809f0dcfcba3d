//! Miss ratios of groups of threads sharing a cache (Fedorova et al. 2005 §4.1.1–4.1.3):
//!
//! - **COMB**: add the threads' histograms distance by distance, then multiply every distance by
//!   `N` (or `N − 1`), `N` the number of threads — other threads' references now fall between a
//!   thread's re-references (Fig. 7). The paper found `N − 1` better for larger caches and `N` for
//!   smaller ones.
//! - **COMB+IPC**: histograms collected over the same instruction window; thread `i`'s distances
//!   are multiplied by `DIST_COEFF_i = (Σ_j IPC_j) / IPC_i` and its counts by
//!   `REFS_COEFF_i = IPC_i / MAX_IPC`, then merged (Fig. 9).
//! - **AVG**: each thread's miss ratio alone in a cache of `TOTAL_CACHE / NUMBER_OF_THREADS`,
//!   averaged over the group.
//!
//! The merged histograms go through StatCache ([`crate::statcache::miss_ratio`]).

use crate::histogram::Histogram;
use crate::statcache;
use serde::{Deserialize, Serialize};

/// A group estimator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Estimator {
    /// COMB with distances × N.
    CombN,
    /// COMB with distances × (N − 1).
    CombN1,
    /// COMB+IPC.
    CombIpc,
    /// AVG.
    Avg,
}

pub const ALL_ESTIMATORS: &[Estimator] = &[
    Estimator::CombN,
    Estimator::CombN1,
    Estimator::CombIpc,
    Estimator::Avg,
];

impl Estimator {
    pub fn as_str(&self) -> &'static str {
        match self {
            Estimator::CombN => "COMB (N)",
            Estimator::CombN1 => "COMB (N-1)",
            Estimator::CombIpc => "COMB+IPC",
            Estimator::Avg => "AVG",
        }
    }
}

/// The single-cache model the estimators apply to a histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Solver {
    /// StatCache: fully associative, random replacement (the model Fedorova et al. used).
    Statcache,
    /// StatStack: fully associative LRU (the replacement the simulator's caches use).
    Statstack,
}

impl Solver {
    pub fn as_str(&self) -> &'static str {
        match self {
            Solver::Statcache => "statcache",
            Solver::Statstack => "statstack",
        }
    }

    /// Misses per reference of `h` in a cache of `lines` lines.
    pub fn miss_ratio(&self, h: &Histogram, lines: f64) -> f64 {
        match self {
            Solver::Statcache => statcache::miss_ratio(h, lines),
            Solver::Statstack => statcache::statstack_miss_ratio(h, lines),
        }
    }
}

impl std::str::FromStr for Solver {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "statcache" => Ok(Solver::Statcache),
            "statstack" => Ok(Solver::Statstack),
            _ => Err(format!(
                "unknown model {s:?} (expected statcache or statstack)"
            )),
        }
    }
}

/// COMB: step 1 adds the histograms distance by distance, step 2 multiplies every distance by
/// `coeff` (N or N − 1).
pub fn comb(hists: &[&Histogram], coeff: f64) -> Histogram {
    Histogram::merge(hists.iter().copied()).scaled(coeff, 1.0)
}

/// The COMB+IPC coefficients of each thread: `(DIST_COEFF, REFS_COEFF)`.
pub fn ipc_coefficients(ipcs: &[f64]) -> Vec<(f64, f64)> {
    let sum: f64 = ipcs.iter().sum();
    let max = ipcs.iter().cloned().fold(0.0, f64::max);
    ipcs.iter()
        .map(|&i| {
            if i <= 0.0 || max <= 0.0 {
                (f64::INFINITY, 0.0)
            } else {
                (sum / i, i / max)
            }
        })
        .collect()
}

/// COMB+IPC: each histogram adjusted by its thread's coefficients, then merged.
pub fn comb_ipc(hists: &[&Histogram], ipcs: &[f64]) -> Histogram {
    let adjusted: Vec<Histogram> = hists
        .iter()
        .zip(ipc_coefficients(ipcs))
        .filter(|(_, (_, r))| *r > 0.0)
        .map(|(h, (d, r))| h.scaled(d, r))
        .collect();
    Histogram::merge(adjusted.iter())
}

/// Estimated miss ratio (misses per reference) of the group `hists` sharing a cache of `lines`
/// lines, with StatCache as the paper. `ipcs` (same order) is only read by COMB+IPC.
pub fn group_miss_ratio(est: Estimator, hists: &[&Histogram], ipcs: &[f64], lines: f64) -> f64 {
    group_miss_ratio_with(Solver::Statcache, est, hists, ipcs, lines)
}

/// [`group_miss_ratio`] with either single-cache model.
pub fn group_miss_ratio_with(
    solver: Solver,
    est: Estimator,
    hists: &[&Histogram],
    ipcs: &[f64],
    lines: f64,
) -> f64 {
    let n = hists.len();
    if n == 0 {
        return 0.0;
    }
    match est {
        Estimator::CombN => solver.miss_ratio(&comb(hists, n as f64), lines),
        Estimator::CombN1 => solver.miss_ratio(&comb(hists, (n as f64 - 1.0).max(1.0)), lines),
        Estimator::CombIpc => solver.miss_ratio(&comb_ipc(hists, ipcs), lines),
        Estimator::Avg => {
            let share = lines / n as f64;
            hists
                .iter()
                .map(|h| solver.miss_ratio(h, share))
                .sum::<f64>()
                / n as f64
        }
    }
}

/// Each thread's own miss ratio inside the group under COMB+IPC's view of the shared cache: the
/// merged stream's miss ratio `R` sets the replacement rate, and thread `i`'s distances stretch
/// by its `DIST_COEFF`. (The group's ratio is the reference-weighted mean of these.)
pub fn thread_miss_ratios(hists: &[&Histogram], ipcs: &[f64], lines: f64) -> Vec<f64> {
    thread_miss_ratios_with(Solver::Statcache, hists, ipcs, lines)
}

/// [`thread_miss_ratios`] with either single-cache model (StatStack: the merged stream's critical
/// reuse distance, each thread's distances stretched into it).
pub fn thread_miss_ratios_with(
    solver: Solver,
    hists: &[&Histogram],
    ipcs: &[f64],
    lines: f64,
) -> Vec<f64> {
    let merged = comb_ipc(hists, ipcs);
    let coeffs = ipc_coefficients(ipcs);
    match solver {
        Solver::Statcache => {
            let shared = statcache::miss_ratio(&merged, lines);
            hists
                .iter()
                .zip(coeffs)
                .map(|(h, (d, _))| {
                    if d.is_finite() {
                        statcache::part_miss_ratio(h, lines, shared, d)
                    } else {
                        statcache::miss_ratio(h, lines)
                    }
                })
                .collect()
        }
        Solver::Statstack => {
            let crit = statcache::statstack_critical_distance(&merged, lines);
            hists
                .iter()
                .zip(coeffs)
                .map(|(h, (d, _))| {
                    if d.is_finite() {
                        statcache::statstack_part_miss_ratio(h, crit, d)
                    } else {
                        statcache::statstack_miss_ratio(h, lines)
                    }
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig_a() -> Histogram {
        Histogram::new(
            [(1.0, 90.0), (10.0, 50.0), (20.0, 78.0), (100.0, 14.0)],
            0.0,
        )
    }
    fn fig_b() -> Histogram {
        Histogram::new(
            [(1.0, 30.0), (10.0, 46.0), (20.0, 27.0), (100.0, 18.0)],
            0.0,
        )
    }

    /// Fedorova et al. Fig. 7: A + B with N = 2.
    #[test]
    fn figure_7_comb() {
        let ab = comb(&[&fig_a(), &fig_b()], 2.0);
        assert_eq!(
            ab.points,
            vec![(2.0, 120.0), (20.0, 96.0), (40.0, 105.0), (200.0, 32.0)]
        );
    }

    /// Fedorova et al. Fig. 9: A runs at IPC 1, B at IPC 0.5. DIST_COEFF: A 1.5/1 = 1.5,
    /// B 1.5/0.5 = 3; REFS_COEFF: A 1, B 0.5.
    #[test]
    fn figure_9_comb_ipc() {
        let c = ipc_coefficients(&[1.0, 0.5]);
        assert_eq!(c, vec![(1.5, 1.0), (3.0, 0.5)]);
        let a = fig_a().scaled(c[0].0, c[0].1);
        assert_eq!(
            a.points,
            vec![(1.5, 90.0), (15.0, 50.0), (30.0, 78.0), (150.0, 14.0)]
        );
        let b = fig_b().scaled(c[1].0, c[1].1);
        // The paper prints 27 × 0.5 = 13.5 as 14.
        assert_eq!(
            b.points,
            vec![(3.0, 15.0), (30.0, 23.0), (60.0, 13.5), (300.0, 9.0)]
        );
        let ab = comb_ipc(&[&fig_a(), &fig_b()], &[1.0, 0.5]);
        // The rows the paper's merged column shows (1.5:90, 3:15, 15:50, …, 300:9), and at 30
        // both threads' references meet: 78 + 23.
        assert_eq!(
            ab.points,
            vec![
                (1.5, 90.0),
                (3.0, 15.0),
                (15.0, 50.0),
                (30.0, 101.0),
                (60.0, 13.5),
                (150.0, 14.0),
                (300.0, 9.0)
            ]
        );
    }

    #[test]
    fn avg_is_the_mean_of_each_thread_in_its_share() {
        let (a, b) = (fig_a(), fig_b());
        let want = (statcache::miss_ratio(&a, 8.0) + statcache::miss_ratio(&b, 8.0)) / 2.0;
        let got = group_miss_ratio(Estimator::Avg, &[&a, &b], &[1.0, 1.0], 16.0);
        assert!((got - want).abs() < 1e-15);
    }

    #[test]
    fn n_scaling_misses_more_than_n_minus_1() {
        let (a, b) = (fig_a(), fig_b());
        let three = [&a, &b, &a];
        let n = group_miss_ratio(Estimator::CombN, &three, &[], 40.0);
        let n1 = group_miss_ratio(Estimator::CombN1, &three, &[], 40.0);
        assert!(n > n1, "{n} vs {n1}");
    }

    #[test]
    fn thread_ratios_weighted_by_references_give_the_group_ratio() {
        let (a, b) = (fig_a(), fig_b());
        let ipcs = [1.0, 0.5];
        let per = thread_miss_ratios(&[&a, &b], &ipcs, 30.0);
        let c = ipc_coefficients(&ipcs);
        let w = [a.references() * c[0].1, b.references() * c[1].1];
        let mixed = (per[0] * w[0] + per[1] * w[1]) / (w[0] + w[1]);
        let group = group_miss_ratio(Estimator::CombIpc, &[&a, &b], &ipcs, 30.0);
        assert!((mixed - group).abs() < 1e-9, "{mixed} vs {group}");
        // The slow thread's references are stretched more, so it misses more.
        assert!(per[1] > per[0]);
    }
}
