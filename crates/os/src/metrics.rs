//! What an OS simulation measures: completed runs and their performance ratios, system speedup
//! (STP), ANTT, fairness, priority adherence, context switches, migrations, the schedule timeline.

use serde::Serialize;

/// One completed run of a benchmark (cycles).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RunRecord {
    pub bench: usize,
    pub start: f64,
    pub end: f64,
}

/// One context switch.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Switch {
    pub cycle: f64,
    pub cpu: usize,
    pub from: Option<u32>,
    pub to: Option<u32>,
    pub to_name: Option<String>,
}

/// One period of a decision policy: the view it was given and the decisions it made.
#[derive(Clone, Debug, Serialize)]
pub struct PeriodRecord {
    pub cycle: f64,
    pub view: crate::policy::PeriodView,
    pub decisions: crate::policy::Decisions,
}

/// A PR estimate a policy was given (for the timeline's counter tracks).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct EstimateSample {
    pub cycle: f64,
    pub pid: u32,
    pub pr: f64,
}

/// Per benchmark of the task set.
#[derive(Clone, Debug, Serialize)]
pub struct BenchStats {
    pub name: String,
    pub nice: i32,
    /// Runs entirely inside the measurement window.
    pub runs: usize,
    /// Mean performance ratio of those runs (solo time / run time).
    pub pr: Option<f64>,
    pub prs: Vec<f64>,
    /// CPU time it received in the measurement window, as a fraction of one logical CPU.
    pub cpu_share: f64,
    pub context_switches: u64,
    pub migrations: u64,
}

/// Everything a run of the OS simulator reports.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Metrics {
    /// Measurement window in cycles.
    pub window: (f64, f64),
    pub tick_cycles: f64,
    pub clock_hz: f64,
    pub benches: Vec<String>,
    pub solo_seconds: Vec<f64>,
    pub nice: Vec<i32>,
    /// Benchmarks that serve or issue requests: they complete no runs by design, and the
    /// figures over the set's runs are over the others.
    #[serde(default)]
    pub request_driven: Vec<bool>,
    #[serde(skip)]
    pub runs: Vec<RunRecord>,
    pub context_switches: u64,
    pub migrations: u64,
    pub forks: u64,
    pub epochs: u64,
    pub estimates: u64,
    /// Cycles logical CPUs stood idle in the measurement window while tasks waited, because core
    /// scheduling kept those tasks off the core (summed over CPUs).
    pub forced_idle_cycles: f64,
    #[serde(skip)]
    pub timeline: Vec<Switch>,
    #[serde(skip)]
    pub periods: Vec<PeriodRecord>,
    #[serde(skip)]
    pub estimate_samples: Vec<EstimateSample>,
    pub per_bench: Vec<BenchStats>,
    /// Per `[[clients]]` group of a server set: throughput and response times in the window.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerStats>,
    /// Busy time and its kernel and interrupt shares, for a set with devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<crate::sim::KernelTotals>,
    /// What all CPUs retired and missed in the measurement window (tasks and interrupts).
    pub window_counts: WindowCounts,
    /// Those counts per response byte of every client group, as Ruan et al. report them: the
    /// bytes that left the wire in the window (a window shorter than a response holds part of
    /// one, and the counts per byte are those of that part).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_byte: Option<WindowCounts>,
}

/// Events of all CPUs over the measurement window (from the oracle's rates).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct WindowCounts {
    pub instructions: f64,
    pub l1i_misses: f64,
    pub l1d_misses: f64,
    pub llc_misses: f64,
    pub branch_mispredicts: f64,
}

impl WindowCounts {
    pub fn scaled(&self, k: f64) -> WindowCounts {
        WindowCounts {
            instructions: self.instructions * k,
            l1i_misses: self.l1i_misses * k,
            l1d_misses: self.l1d_misses * k,
            llc_misses: self.llc_misses * k,
            branch_mispredicts: self.branch_mispredicts * k,
        }
    }
}

/// What the clients of a server saw in the measurement window.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ServerStats {
    pub name: String,
    /// Responses completed in the window (requests per second count them all).
    pub completed: usize,
    pub requests_per_s: f64,
    pub megabits_per_s: f64,
    /// Response time percentiles (send to last byte leaving the server) of the requests sent in
    /// the window, ms; `None` without responses.
    pub response_ms: Option<ResponseTimes>,
    /// The same to the first byte leaving the server (httperf's "response time"; the other is
    /// its "transfer time").
    pub first_byte_ms: Option<ResponseTimes>,
    /// Response bytes that left the wire in the window, whole responses or not (megabits per
    /// second count them).
    pub bytes: f64,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct ResponseTimes {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
}

impl ServerStats {
    pub(crate) fn of(
        name: &str,
        completed: usize,
        ms: Vec<f64>,
        first_byte_ms: Vec<f64>,
        seconds: f64,
        bytes: f64,
    ) -> ServerStats {
        ServerStats {
            name: name.to_string(),
            completed,
            requests_per_s: completed as f64 / seconds,
            megabits_per_s: bytes * 8.0 / seconds / 1e6,
            response_ms: ResponseTimes::of(ms),
            first_byte_ms: ResponseTimes::of(first_byte_ms),
            bytes,
        }
    }
}

impl ResponseTimes {
    /// Mean and percentiles of `ms`; `None` when empty.
    fn of(mut ms: Vec<f64>) -> Option<ResponseTimes> {
        ms.sort_by(f64::total_cmp);
        let n = ms.len();
        let q = |p: f64| smtsched_report::stats::quantile_sorted(&ms, p);
        (n > 0).then(|| ResponseTimes {
            mean: ms.iter().sum::<f64>() / n as f64,
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
        })
    }
}

/// The summary numbers of one simulation. Each is over every benchmark of the set, so none is
/// given (`None`) when some benchmark completed no run in the window (`missing`): a figure over
/// some of the tasks is not the set's.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    /// Σ PR (weighted speedup, STP).
    pub system_speedup: Option<f64>,
    /// Mean of 1/PR (average normalised turnaround time; lower is better).
    pub antt: Option<f64>,
    /// min PR / max PR.
    pub fairness: Option<f64>,
    pub pr_sd: Option<f64>,
    pub pr_iqr: Option<f64>,
    /// Benchmarks without a completed run in the window.
    pub missing: Vec<String>,
}

impl Metrics {
    /// Per-benchmark statistics from each task's (bench, switches in, migrations, CPU cycles)
    /// and each benchmark's CPU cycles when the window opened.
    pub(crate) fn finish(&mut self, tasks: Vec<(usize, u64, u64, f64)>, at_window: &[f64]) {
        let (start, end) = self.window;
        self.per_bench = self
            .benches
            .iter()
            .enumerate()
            .map(|(b, name)| {
                let prs: Vec<f64> = self
                    .runs
                    .iter()
                    .filter(|r| r.bench == b && r.start >= start && r.end <= end)
                    .map(|r| self.solo_seconds[b] / ((r.end - r.start) / self.clock_hz))
                    .collect();
                let mine = tasks.iter().filter(|t| t.0 == b);
                let (mut cs, mut mig, mut cycles) = (0, 0, 0.0);
                for t in mine {
                    cs += t.1;
                    mig += t.2;
                    cycles += t.3;
                }
                BenchStats {
                    name: name.clone(),
                    nice: self.nice[b],
                    runs: prs.len(),
                    pr: (!prs.is_empty()).then(|| prs.iter().sum::<f64>() / prs.len() as f64),
                    prs,
                    cpu_share: (cycles - at_window[b]) / (end - start),
                    context_switches: cs,
                    migrations: mig,
                }
            })
            .collect();
    }

    pub fn summary(&self) -> Summary {
        let run_based = self
            .per_bench
            .iter()
            .enumerate()
            .filter(|(b, _)| !self.request_driven.get(*b).copied().unwrap_or(false))
            .map(|(_, s)| s);
        let prs: Vec<f64> = run_based.clone().filter_map(|b| b.pr).collect();
        let missing: Vec<String> = run_based
            .filter(|b| b.pr.is_none())
            .map(|b| b.name.clone())
            .collect();
        if prs.is_empty() || !missing.is_empty() {
            return Summary {
                system_speedup: None,
                antt: None,
                fairness: None,
                pr_sd: None,
                pr_iqr: None,
                missing,
            };
        }
        let n = prs.len() as f64;
        let (_, sd) = smtsched_report::stats::mean_sd(&prs);
        let mut sorted = prs.clone();
        sorted.sort_by(f64::total_cmp);
        let q = |p: f64| smtsched_report::stats::quantile_sorted(&sorted, p);
        Summary {
            system_speedup: Some(prs.iter().sum()),
            antt: Some(prs.iter().map(|p| 1.0 / p).sum::<f64>() / n),
            fairness: Some(sorted[0] / sorted[sorted.len() - 1]),
            pr_sd: Some(sd),
            pr_iqr: Some(q(0.75) - q(0.25)),
            missing,
        }
    }

    /// Priority adherence: for each benchmark, its PR relative to the highest-priority one's,
    /// beside the ratio of their time slices (NICE_TO_TICKS) — what the thesis compares.
    pub fn priority_ratios(&self) -> Vec<(String, Option<f64>, f64)> {
        let Some(top) = (0..self.per_bench.len()).min_by_key(|&b| self.per_bench[b].nice) else {
            return Vec::new();
        };
        let top_pr = self.per_bench[top].pr;
        let top_ticks = crate::sim::nice_to_ticks(self.per_bench[top].nice) as f64;
        self.per_bench
            .iter()
            .map(|b| {
                let achieved = match (b.pr, top_pr) {
                    (Some(p), Some(t)) if t > 0.0 => Some(p / t),
                    _ => None,
                };
                (
                    b.name.clone(),
                    achieved,
                    crate::sim::nice_to_ticks(b.nice) as f64 / top_ticks,
                )
            })
            .collect()
    }
}
