//! Reuse-distance cache models for chip multithreading, after Fedorova, Seltzer, Small and
//! Nussbaum, "Performance of Multithreaded Chip Multiprocessors and Implications for Operating
//! System Design" (Harvard TR-09-05, 2005), DESIGN §8:
//!
//! - [`collect`]: per-thread reuse-distance histograms from any workload's reference stream, over
//!   a configurable instruction window, compressed to fewer than 20 buckets ([`histogram`]);
//! - [`statcache`]: the StatCache miss-ratio model of Berg & Hagersten for a cache of `L` lines;
//! - [`group`]: the paper's group estimators COMB (N and N − 1), COMB+IPC and AVG;
//!
//! The StatCache equation was checked against what could be retrieved of the original: the
//! Uppsala group's description of StatCache (fully associative caches, random replacement, reuse
//! distances from sparse samples), a public reference solver of the ISPASS 2004 paper's "eq. 5"
//! (it solves `Σ_d h(d)·(1 − ((L−1)/L)^(R·d)) = R·N` by bisection, distance 0 always hits, cold
//! misses optionally added as certain misses), and Zhou's restatement of the same expectation
//! (`E[miss] ≈ 1 − (1 − 1/M)^E[misses in the reuse window]`). The paper itself was not readable
//! here; the digest's statement of the equation agrees with all three.
//!
//! ```
//! use smtsched_cachemodel::{group::{group_miss_ratio, Estimator}, histogram::Histogram};
//! // Fedorova et al. Fig. 7's histograms sharing a 64-line cache.
//! let a = Histogram::new([(1.0, 90.0), (10.0, 50.0), (20.0, 78.0), (100.0, 14.0)], 0.0);
//! let b = Histogram::new([(1.0, 30.0), (10.0, 46.0), (20.0, 27.0), (100.0, 18.0)], 0.0);
//! let r = group_miss_ratio(Estimator::CombN, &[&a, &b], &[], 64.0);
//! assert!(r >= 0.0 && r < 1.0);
//! ```

pub mod analytic;
pub mod balance;
pub mod collect;
pub mod error;
pub mod group;
pub mod histogram;
pub mod measure;
pub mod model;
pub mod report;
pub mod statcache;
