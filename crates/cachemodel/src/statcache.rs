//! The StatCache miss-ratio model (Berg & Hagersten, "StatCache: a probabilistic approach to
//! efficient and accurate data locality analysis", ISPASS 2004; the model Fedorova et al. cite as
//! [19]) and, for comparison, the exact miss ratio of a fully associative LRU cache from stack
//! distances.
//!
//! StatCache models a fully associative cache of `L` lines with random replacement. Every miss
//! evicts a line chosen at random, so a line survives one miss with probability `1 − 1/L`. If the
//! miss ratio is `R`, a reference whose reuse distance is `d` (intervening references) saw `R·d`
//! misses since its line was last touched, and misses with probability
//! `1 − (1 − 1/L)^(R·d)`. Summing over the histogram `h` of the `N` references gives the fixed
//! point
//!
//! ```text
//!     R · N = Σ_d h(d) · (1 − (1 − 1/L)^(R·d))  +  cold
//! ```
//!
//! where cold references (no earlier reference in the window) always miss. What was checked
//! against the original description (see the crate documentation for the sources): the
//! replacement model (fully associative, random), the per-reference miss probability in terms of
//! the expected number of misses inside the reuse window, the equation being solved for `R`
//! numerically (its "eq. 5", solved by bisection in the public reference solver), distance 0
//! always hitting, and cold misses optionally counted as certain misses. `R = 0` always solves the
//! equation when nothing is cold; the model's answer is the non-trivial root, found here by
//! bisection on `g(R) = (Σ h(d)(1 − q^(R d)) + cold) / R − N`, which decreases in `R`, so the
//! root is unique.

use crate::histogram::Histogram;

/// Bisection steps (the answer is good to 2^-50).
const STEPS: u32 = 50;

/// Σ_d h(d)·(1 − (1 − 1/L)^(R·d)) + cold: the expected misses at replacement rate `r`.
fn expected_misses(h: &Histogram, lines: f64, r: f64) -> f64 {
    let ln_keep = (1.0 - 1.0 / lines).ln();
    h.points
        .iter()
        .map(|&(d, c)| c * -(r * d * ln_keep).exp_m1())
        .sum::<f64>()
        + h.cold
}

/// The StatCache miss ratio (misses per reference) of `h` in a fully associative
/// random-replacement cache of `lines` lines.
pub fn miss_ratio(h: &Histogram, lines: f64) -> f64 {
    let n = h.references();
    if n <= 0.0 {
        return 0.0;
    }
    if lines <= 1.0 {
        // One line: only distance-0 references hit.
        return 1.0 - h.count_at(0.0) / n;
    }
    let g = |r: f64| expected_misses(h, lines, r) / r - n;
    if g(1.0) >= 0.0 {
        return 1.0;
    }
    // Near R = 0: g → cold/R + Σ h·d·(−ln(1 − 1/L)) − N.
    if h.cold == 0.0 {
        let ln_keep = (1.0 - 1.0 / lines).ln();
        let slope: f64 = h.points.iter().map(|&(d, c)| c * d * -ln_keep).sum();
        if slope <= n {
            return 0.0;
        }
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..STEPS {
        let mid = 0.5 * (lo + hi);
        if mid <= 0.0 || g(mid) >= 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Each part's miss ratio when the parts share a random-replacement cache whose overall miss
/// ratio is `shared`: part `i`'s reference at own distance `d` sees `shared·d·stretch_i` misses
/// of everybody (its distance in the merged stream is `d·stretch_i`).
pub fn part_miss_ratio(h: &Histogram, lines: f64, shared: f64, stretch: f64) -> f64 {
    let n = h.references();
    if n <= 0.0 {
        return 0.0;
    }
    if lines <= 1.0 {
        return 1.0 - h.count_at(0.0) / n;
    }
    (expected_misses(h, lines, shared * stretch) / n).clamp(0.0, 1.0)
}

/// StatStack (Eklöv & Hagersten, ISPASS 2010): an LRU cache from *reuse* distances. Inside a
/// reuse window of `r` intervening references, the reference `i` places before its end adds a
/// distinct line exactly when its own next use falls beyond the window, i.e. when its reuse
/// distance is at least `i`; so the expected stack distance is `Σ_{i<r} P(RD ≥ i)` (cold
/// references never come back). A reference misses when that reaches `lines`. The histogram's
/// points are treated as a step function, so scaled (COMB) distances work too.
pub fn statstack_miss_ratio(h: &Histogram, lines: f64) -> f64 {
    let n = h.references();
    if n <= 0.0 {
        return 0.0;
    }
    let misses = match statstack_critical_distance(h, lines) {
        Some(crit) => {
            h.points
                .iter()
                .filter(|p| p.0 >= crit)
                .map(|p| p.1)
                .sum::<f64>()
                + h.cold
        }
        None => h.cold,
    };
    (misses / n).clamp(0.0, 1.0)
}

/// The reuse distance from which StatStack predicts misses in an LRU cache of `lines` lines
/// (`None`: the expected stack distance never reaches it, only cold references miss).
/// `E[sd(r)] = Σ_{i=0}^{r-1} S(i) = 1 + ∫_0^{r-1} S`, with `S(x) = P(RD ≥ ceil(x))` constant
/// between points; a reference misses when that reaches `lines`, i.e. from `r = x* + 1` where
/// `∫_0^{x*} S = lines − 1`.
pub fn statstack_critical_distance(h: &Histogram, lines: f64) -> Option<f64> {
    let n = h.references();
    if n <= 0.0 {
        return None;
    }
    let target = (lines - 1.0).max(0.0);
    let mut tail = n; // references with RD at or beyond the current point, cold included
    let mut area = 0.0;
    let mut prev = 0.0;
    for &(d, c) in &h.points {
        let height = tail / n;
        let step = (d - prev).max(0.0) * height;
        if area + step >= target {
            let x = prev
                + if height > 0.0 {
                    (target - area) / height
                } else {
                    0.0
                };
            return Some(x + 1.0);
        }
        area += step;
        prev = d;
        tail -= c;
    }
    None
}

/// A part's miss ratio under StatStack when the merged stream's critical distance is `crit` and
/// the part's distances stretch by `stretch` in it.
pub fn statstack_part_miss_ratio(h: &Histogram, crit: Option<f64>, stretch: f64) -> f64 {
    let n = h.references();
    if n <= 0.0 {
        return 0.0;
    }
    let far: f64 = match crit {
        Some(c) => h
            .points
            .iter()
            .filter(|p| p.0 * stretch >= c)
            .map(|p| p.1)
            .sum(),
        None => 0.0,
    };
    ((far + h.cold) / n).clamp(0.0, 1.0)
}

/// Miss ratio of a fully associative LRU cache of `lines` lines from a *stack*-distance
/// histogram (distinct lines touched in between): exactly the references at stack distance
/// `lines` or more, and the cold ones.
pub fn lru_miss_ratio(stack: &Histogram, lines: f64) -> f64 {
    let n = stack.references();
    if n <= 0.0 {
        return 0.0;
    }
    let far: f64 = stack
        .points
        .iter()
        .filter(|p| p.0 >= lines)
        .map(|p| p.1)
        .sum();
    (far + stack.cold) / n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reuse distances of uniformly random references to `k` lines are geometric:
    /// P(d) = p (1 − p)^d with p = 1/k. A random-replacement cache of `l < k` lines holds each
    /// line with probability l/k by symmetry, so its miss ratio is exactly 1 − l/k; StatCache
    /// must give that (up to its large-cache approximation, under 1% here).
    #[test]
    fn uniform_random_references_miss_one_minus_l_over_k() {
        let k: f64 = 1000.0;
        let p: f64 = 1.0 / k;
        let h = Histogram::new(
            (0..200_000).map(|d| (d as f64, 1e9 * p * (1.0 - p).powi(d))),
            0.0,
        );
        for l in [100.0, 250.0, 500.0, 900.0] {
            let r = miss_ratio(&h, l);
            let want = 1.0 - l / k;
            assert!((r - want).abs() < 0.01, "L={l}: {r} vs {want}");
        }
        // A cache bigger than the data: the non-trivial root disappears.
        assert!(miss_ratio(&h, 2000.0) < 0.01);
    }

    #[test]
    fn a_single_distance_solves_the_equation_it_came_from() {
        // All references at distance 10 000, 10% cold, L = 1000: check R·N = Σ … + cold.
        let h = Histogram::new([(10_000.0, 900.0)], 100.0);
        let l = 1000.0;
        let r = miss_ratio(&h, l);
        let rhs = 900.0 * (1.0 - (1.0 - 1.0 / l).powf(r * 10_000.0)) + 100.0;
        assert!((r * 1000.0 - rhs).abs() < 1e-6, "{r}");
        assert!(r > 0.1 && r < 1.0);
    }

    #[test]
    fn distance_zero_always_hits_and_everything_cold_always_misses() {
        assert_eq!(miss_ratio(&Histogram::new([(0.0, 10.0)], 0.0), 64.0), 0.0);
        assert_eq!(miss_ratio(&Histogram::new([], 10.0), 64.0), 1.0);
        assert_eq!(miss_ratio(&Histogram::new([], 0.0), 64.0), 0.0);
    }

    #[test]
    fn miss_ratio_falls_as_the_cache_grows() {
        let h = Histogram::new(
            [(1.0, 500.0), (50.0, 300.0), (500.0, 200.0), (5000.0, 100.0)],
            20.0,
        );
        let mut last = 1.0;
        for l in [4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0] {
            let r = miss_ratio(&h, l);
            assert!(r <= last + 1e-12, "L={l}: {r} > {last}");
            last = r;
        }
    }

    #[test]
    fn statstack_on_a_cyclic_sweep_is_exact() {
        // A loop over K = 100 lines: every reuse distance is 99, every stack distance too. LRU
        // misses everything with fewer than 100 lines, nothing with 100.
        let h = Histogram::new([(99.0, 1000.0)], 0.0);
        assert_eq!(statstack_miss_ratio(&h, 99.0), 1.0);
        assert_eq!(statstack_miss_ratio(&h, 100.0), 0.0);
        // Random replacement keeps part of the loop even in the smaller cache.
        assert!(miss_ratio(&h, 99.0) < 1.0);
    }

    #[test]
    fn lru_counts_far_and_cold_references() {
        let s = Histogram::new([(0.0, 5.0), (3.0, 3.0), (8.0, 2.0)], 2.0);
        assert_eq!(lru_miss_ratio(&s, 4.0), 4.0 / 12.0);
        assert_eq!(lru_miss_ratio(&s, 9.0), 2.0 / 12.0);
        assert_eq!(lru_miss_ratio(&s, 1.0), 7.0 / 12.0);
    }
}
