//! Fedorova, Seltzer, Small & Nussbaum's balance-set candidate search (2005, §4.2.1–§4.2.2):
//! every group of as many threads as there are hardware contexts, estimated from per-thread
//! miss ratios (AVG), kept when no worse than the best group of the most cache-greedy thread;
//! and the PERF and FAIR rules that pick one candidate per time slice. The OS simulator's
//! `balance-set-perf` and `balance-set-fair` policies run these rules online; the Fedorova
//! experiments build their schedules offline ([`perf_schedule`], [`fair_schedule`]).

/// Largest number of groups enumerated exhaustively; beyond it candidates are built greedily
/// (each thread with the best partners it can have), as the paper's §5 proposes.
pub const MAX_ENUMERATED_GROUPS: u64 = 2_000_000;

/// A group of threads (indices into the thread list the candidates were built from) and its
/// estimated miss ratio.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub members: Vec<usize>,
    pub estimate: f64,
}

/// The outcome of steps 1 and 2.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidates {
    /// Candidate groups, lowest estimate first.
    pub groups: Vec<Group>,
    pub threshold: f64,
    /// The most cache-greedy thread.
    pub greediest: usize,
    /// Groups estimated to find them (C(n, k), or fewer when built greedily).
    pub examined: u64,
    pub exhaustive: bool,
}

/// C(n, k), saturating.
pub fn binomial(n: u64, k: u64) -> u64 {
    if k > n {
        return 0;
    }
    let k = k.min(n - k);
    let mut r: u128 = 1;
    for i in 0..k {
        r = r * (n - i) as u128 / (i + 1) as u128;
        if r > u64::MAX as u128 {
            return u64::MAX;
        }
    }
    r as u64
}

/// Calls `f` with every `k`-subset of `0..n` in lexicographic order.
pub fn for_each_group(n: usize, k: usize, mut f: impl FnMut(&[usize])) {
    if k > n {
        return;
    }
    let mut idx: Vec<usize> = (0..k).collect();
    loop {
        f(&idx);
        // The rightmost index that can still move right.
        let mut i = k;
        loop {
            if i == 0 {
                return;
            }
            i -= 1;
            if idx[i] < n - k + i {
                break;
            }
            if i == 0 {
                return;
            }
        }
        idx[i] += 1;
        for j in i + 1..k {
            idx[j] = idx[j - 1] + 1;
        }
    }
}

/// AVG over per-thread values: the mean of the members'.
pub fn avg_estimate(values: &[f64], members: &[usize]) -> f64 {
    members.iter().map(|&i| values[i]).sum::<f64>() / members.len().max(1) as f64
}

/// Steps 1 and 2 with AVG over `values` (each thread's miss ratio in its share of the cache):
/// the threshold and the candidate groups of `k`.
pub fn candidates(values: &[f64], k: usize) -> Candidates {
    candidates_with(values, k, &|m: &[usize]| avg_estimate(values, m))
}

/// Steps 1 and 2 with any group estimator (`estimate` of a sorted member list); `values` rank
/// the threads' greediness.
pub fn candidates_with(
    values: &[f64],
    k: usize,
    estimate: &(dyn Fn(&[usize]) -> f64 + Sync),
) -> Candidates {
    let n = values.len();
    let k = k.min(n).max(1);
    let greediest = (0..n)
        .max_by(|&a, &b| values[a].total_cmp(&values[b]).then(b.cmp(&a)))
        .unwrap_or(0);
    let total = binomial(n as u64, k as u64);
    if total <= MAX_ENUMERATED_GROUPS {
        let mut all: Vec<Group> = Vec::with_capacity(total as usize);
        for_each_group(n, k, |m| {
            all.push(Group {
                members: m.to_vec(),
                estimate: estimate(m),
            })
        });
        all.sort_by(|a, b| a.estimate.total_cmp(&b.estimate));
        let threshold = all
            .iter()
            .find(|g| g.members.contains(&greediest))
            .map_or(f64::INFINITY, |g| g.estimate);
        all.retain(|g| g.estimate <= threshold);
        return Candidates {
            groups: all,
            threshold,
            greediest,
            examined: total,
            exhaustive: true,
        };
    }
    // Too many groups: each thread with the k − 1 threads of lowest value.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]).then(a.cmp(&b)));
    let mut groups: Vec<Group> = (0..n)
        .map(|t| {
            let mut m: Vec<usize> = std::iter::once(t)
                .chain(order.iter().copied().filter(|&o| o != t).take(k - 1))
                .collect();
            m.sort_unstable();
            let estimate = estimate(&m);
            Group {
                members: m,
                estimate,
            }
        })
        .collect();
    groups.sort_by(|a, b| a.estimate.total_cmp(&b.estimate));
    groups.dedup_by(|a, b| a.members == b.members);
    let threshold = groups
        .iter()
        .find(|g| g.members.contains(&greediest))
        .map_or(f64::INFINITY, |g| g.estimate);
    groups.retain(|g| g.estimate <= threshold);
    Candidates {
        examined: n as u64,
        groups,
        threshold,
        greediest,
        exhaustive: false,
    }
}

/// PERF's next group: the lowest-estimate candidate with a member not yet `selected`.
pub fn next_perf(c: &Candidates, selected: &[bool]) -> Option<usize> {
    c.groups
        .iter()
        .position(|g| g.members.iter().any(|&m| !selected[m]))
}

/// FAIR's next group: the candidate with the most members at the lowest `level` (selections or
/// processor time received), the lowest estimate among ties.
pub fn next_fair(c: &Candidates, level: &[u64]) -> Option<usize> {
    let least = c
        .groups
        .iter()
        .flat_map(|g| g.members.iter().map(|&m| level[m]))
        .min()?;
    let mut best: Option<(usize, usize)> = None;
    for (i, g) in c.groups.iter().enumerate() {
        let k = g.members.iter().filter(|&&m| level[m] == least).count();
        if best.is_none_or(|b| k > b.1) {
            best = Some((i, k));
        }
    }
    best.map(|b| b.0)
}

/// The PERF schedule of §4.2.2: groups (indices into `c.groups`) until every thread of `0..n`
/// that appears in some candidate is represented.
pub fn perf_schedule(c: &Candidates, n: usize) -> Vec<usize> {
    let mut selected = vec![false; n];
    let mut out = Vec::new();
    while let Some(g) = next_perf(c, &selected) {
        for &m in &c.groups[g].members {
            selected[m] = true;
        }
        out.push(g);
    }
    out
}

/// The FAIR schedule of §4.2.2: picks by [`next_fair`] on selection counts until every thread
/// that appears in some candidate has been selected.
pub fn fair_schedule(c: &Candidates, n: usize) -> Vec<usize> {
    let mut count = vec![0u64; n];
    let present: Vec<bool> = (0..n)
        .map(|t| c.groups.iter().any(|g| g.members.contains(&t)))
        .collect();
    let mut out = Vec::new();
    while (0..n).any(|t| present[t] && count[t] == 0) {
        let Some(g) = next_fair(c, &count) else { break };
        for &m in &c.groups[g].members {
            count[m] += 1;
        }
        out.push(g);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enumerates_every_group_once() {
        let mut seen = Vec::new();
        for_each_group(5, 3, |m| seen.push(m.to_vec()));
        assert_eq!(seen.len(), 10);
        assert_eq!(seen[0], vec![0, 1, 2]);
        assert_eq!(seen[9], vec![2, 3, 4]);
        let mut n = 0u64;
        for_each_group(18, 8, |_| n += 1);
        assert_eq!(n, 43_758);
        assert_eq!(binomial(18, 8), 43_758);
        assert_eq!(binomial(100, 32), u64::MAX);
    }

    /// Six threads, groups of three, AVG. Values (per-thread miss ratios):
    /// t0 .10, t1 .20, t2 .30, t3 .40, t4 .50, t5 .90 (the greediest).
    /// The best group with t5 is {t0, t1, t5}: (.1 + .2 + .9) / 3 = .4 — the threshold.
    /// Candidates are the groups with mean ≤ .4 (sum ≤ 1.2).
    #[test]
    fn threshold_and_candidates_by_hand() {
        let v = [0.10, 0.20, 0.30, 0.40, 0.50, 0.90];
        let c = candidates(&v, 3);
        assert_eq!(c.greediest, 5);
        assert!((c.threshold - 0.4).abs() < 1e-12);
        assert_eq!(c.examined, 20);
        // Sums ≤ 1.2: {0,1,2}=.6 {0,1,3}=.7 {0,1,4}=.8 {0,2,3}=.8 {0,2,4}=.9 {1,2,3}=.9
        // {0,3,4}=1.0 {1,2,4}=1.0 {1,3,4}=1.1 {2,3,4}=1.2 {0,1,5}=1.2.
        assert_eq!(c.groups.len(), 11);
        assert_eq!(c.groups[0].members, vec![0, 1, 2]);
        assert!(c.groups.iter().all(|g| g.estimate <= 0.4 + 1e-12));
        assert!(c.groups.iter().any(|g| g.members == vec![0, 1, 5]));
    }

    #[test]
    fn perf_takes_the_best_group_with_someone_new_until_all_ran() {
        let v = [0.10, 0.20, 0.30, 0.40, 0.50, 0.90];
        let c = candidates(&v, 3);
        let s = perf_schedule(&c, 6);
        let groups: Vec<&Vec<usize>> = s.iter().map(|&g| &c.groups[g].members).collect();
        // {0,1,2} first; the next best with a new thread is {0,1,3}; then {0,1,4}; t5 only in
        // {0,1,5}.
        assert_eq!(
            groups,
            vec![
                &vec![0, 1, 2],
                &vec![0, 1, 3],
                &vec![0, 1, 4],
                &vec![0, 1, 5]
            ]
        );
    }

    #[test]
    fn fair_takes_the_group_with_most_least_selected_threads() {
        let v = [0.10, 0.20, 0.30, 0.40, 0.50, 0.90];
        let c = candidates(&v, 3);
        let s = fair_schedule(&c, 6);
        let groups: Vec<&Vec<usize>> = s.iter().map(|&g| &c.groups[g].members).collect();
        // {0,1,2}; then the lowest group made only of unselected threads 3, 4, 5 — none passes
        // the threshold, so two of them: {0,3,4} (1.0) beats {2,3,4} and {1,3,4}; then t5 with the
        // best available partners {0,1,5}.
        assert_eq!(groups, vec![&vec![0, 1, 2], &vec![0, 3, 4], &vec![0, 1, 5]]);
    }

    #[test]
    fn greedy_candidates_when_there_are_too_many_groups() {
        let v: Vec<f64> = (0..100).map(|i| i as f64 / 100.0).collect();
        let c = candidates(&v, 32);
        assert!(!c.exhaustive);
        assert_eq!(c.greediest, 99);
        // The greediest thread's group is the threshold: 99 with 0..31.
        let want = ((0..31).map(|i| i as f64).sum::<f64>() + 99.0) / 100.0 / 32.0;
        assert!((c.threshold - want).abs() < 1e-12);
        // Every thread has a candidate group.
        let s = perf_schedule(&c, 100);
        let mut seen = [false; 100];
        for g in s {
            for &m in &c.groups[g].members {
                seen[m] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
    }
}
