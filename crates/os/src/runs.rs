//! Running a task set under policies over repetitions, and what such runs report: the policy,
//! task and server tables, the timeline and the Perfetto trace. `smtsched run`, sweeps and the
//! experiments (crate `smtsched-experiments`) all run task sets through [`simulate`], one
//! oracle for every repetition, or [`simulate_replicated`], an oracle per repetition.

use crate::metrics::{Metrics, Switch};
use crate::oracle::{Oracle, SimulatedOracle};
use crate::policy::{PolicyInputs, PolicyName};
use crate::sim::{OsSim, SimConfig};
use crate::taskset::TaskSetSpec;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use smtsched_model::{KernelBuild, MachineModel};
use smtsched_report::perfetto::{trace_json, CounterSample};
use smtsched_report::stats::mean_sd;
use smtsched_report::timeline::{timeline_svg, Segment};
use smtsched_report::Table;

/// Results of one policy over its repetitions.
#[derive(serde::Serialize)]
pub struct PolicyRuns {
    pub policy: String,
    pub runs: Vec<Metrics>,
    /// Wall-clock seconds all the simulations took once the oracle was warm ([`simulate`]), or
    /// with each repetition's oracle samples ([`simulate_replicated`]).
    pub wall_seconds: f64,
}

/// Runs `set` under every policy `repeat` times (seeds seed, seed+1, …), in parallel.
pub fn simulate(
    m: &MachineModel,
    oracle: &dyn Oracle,
    set: &TaskSetSpec,
    policies: &[PolicyName],
    repeat: u32,
    base: &SimConfig,
) -> Result<Vec<PolicyRuns>, String> {
    simulate_reporting(m, oracle, set, policies, repeat, base, &|| {})
}

/// Runs `set` under every policy `repeat` times, each repetition a whole replication: repetition
/// r has seed `base.seed + r` for the scheduler and for its own simulated oracle (the set's
/// workloads built for `build`), so the spread over repetitions includes the oracle's sampling
/// noise as well as the scheduler's.
/// Repetitions run in parallel; each is what [`simulate`] gives for that seed alone. `step` is
/// called [`replicated_steps`] times: as each repetition's oracle is warm and after each run.
pub fn simulate_replicated(
    m: &MachineModel,
    set: &TaskSetSpec,
    build: KernelBuild,
    policies: &[PolicyName],
    repeat: u32,
    base: &SimConfig,
    step: &(dyn Fn() + Sync),
) -> Result<Vec<PolicyRuns>, String> {
    let started = std::time::Instant::now();
    let each: Vec<Vec<PolicyRuns>> = (0..repeat as u64)
        .into_par_iter()
        .map(|r| {
            let cfg = SimConfig {
                seed: base.seed + r,
                record_timeline: base.record_timeline && r == 0,
                record_periods: base.record_periods && r == 0,
                ..base.clone()
            };
            let oracle =
                SimulatedOracle::for_set(m, set, cfg.seed, build).map_err(|e| e.to_string())?;
            simulate_reporting(m, &oracle, set, policies, 1, &cfg, step)
        })
        .collect::<Result<_, String>>()?;
    let seconds = started.elapsed().as_secs_f64();
    let mut out = no_runs(policies, seconds);
    for rep in each {
        for (o, r) in out.iter_mut().zip(rep) {
            o.runs.extend(r.runs);
        }
    }
    Ok(out)
}

/// Each task's mean share of CPU time over `repeat` runs of `set` under the naive policy, with
/// no interference between threads (seeds `base.seed`, `base.seed + 1`, …; `base` sets the
/// rest): what the base scheduler alone gives each task.
pub fn mean_cpu_shares(
    m: &MachineModel,
    set: &TaskSetSpec,
    base: &SimConfig,
    repeat: u32,
) -> Result<Vec<f64>, String> {
    let mut shares = vec![Vec::new(); set.tasks.len()];
    for r in 0..repeat {
        let mut cfg = base.clone();
        cfg.seed = base.seed + r as u64;
        let naive = Box::new(crate::policy::Naive);
        let metrics = OsSim::new(m, &crate::oracle::NoInterference, set, naive, cfg)?.run();
        for (i, b) in metrics.per_bench.iter().enumerate() {
            shares[i].push(b.cpu_share);
        }
    }
    Ok(shares.iter().map(|v| mean_sd(v).0).collect())
}

/// The steps [`simulate_reporting`] reports: the oracle warmed, then each run.
pub fn simulation_steps(policies: usize, repeat: u32) -> u64 {
    1 + policies as u64 * repeat as u64
}

/// Every policy with no runs yet, timed at `seconds`.
fn no_runs(policies: &[PolicyName], seconds: f64) -> Vec<PolicyRuns> {
    policies
        .iter()
        .map(|p| PolicyRuns {
            policy: p.to_string(),
            runs: Vec::new(),
            wall_seconds: seconds,
        })
        .collect()
}

/// The steps [`simulate_replicated`] reports: each repetition's oracle warmed, then its runs.
pub fn replicated_steps(policies: usize, repeat: u32) -> u64 {
    repeat as u64 * simulation_steps(policies, 1)
}

/// [`simulate`], calling `step` once the oracle is warm and after each run (for progress).
pub fn simulate_reporting(
    m: &MachineModel,
    oracle: &dyn Oracle,
    set: &TaskSetSpec,
    policies: &[PolicyName],
    repeat: u32,
    base: &SimConfig,
    step: &(dyn Fn() + Sync),
) -> Result<Vec<PolicyRuns>, String> {
    // Building one simulation validates the set and warms the oracle.
    OsSim::new(m, oracle, set, Box::new(crate::policy::Naive), base.clone())?;
    step();
    let inputs = PolicyInputs {
        truth: policies
            .contains(&PolicyName::Optimal)
            .then(|| truth_for(m, oracle, set, base)),
        ..PolicyInputs::default()
    };
    let started = std::time::Instant::now();
    let jobs: Vec<(usize, u32)> = (0..policies.len())
        .flat_map(|p| (0..repeat).map(move |r| (p, r)))
        .collect();
    let results: Vec<Metrics> = jobs
        .par_iter()
        .map(|&(p, r)| {
            let mut cfg = base.clone();
            cfg.seed = base.seed + r as u64;
            cfg.record_timeline = base.record_timeline && p == 0 && r == 0;
            cfg.record_periods = base.record_periods && p == 0 && r == 0;
            let policy = policies[p].build(&inputs)?;
            let metrics = OsSim::new(m, oracle, set, policy, cfg).map(|s| s.run());
            step();
            metrics
        })
        .collect::<Result<_, String>>()?;
    let seconds = started.elapsed().as_secs_f64();
    let mut out = no_runs(policies, seconds);
    for ((p, _), r) in jobs.iter().zip(results) {
        out[*p].runs.push(r);
    }
    Ok(out)
}

/// The true PRs of the set's tasks on the first core in use, for the `optimal` ceiling.
pub fn truth_for(
    m: &MachineModel,
    oracle: &dyn Oracle,
    set: &TaskSetSpec,
    cfg: &SimConfig,
) -> crate::policy::PairTruth {
    let topo = smtsched_model::topology::Topology::of_machine(m, cfg.cpus.as_ref());
    let core = topo.cores[0]
        .cpus
        .iter()
        .map(|c| c as usize)
        .collect::<Vec<_>>();
    let names: Vec<String> = set.tasks.iter().map(|t| t.display_name()).collect();
    crate::oracle::pair_truth(
        oracle,
        &names,
        m.logical_cpus() as usize,
        core[0],
        core.get(1).copied(),
    )
}

/// The comparison table: one row per policy. A column computed from PRs needs every task's: where
/// a task completed no run in the window (in any repetition) it shows `-`, and a note under the
/// table names the tasks and how long one run of each takes alone.
pub fn policy_table(results: &[PolicyRuns]) -> String {
    let mut t = Table::new([
        "policy",
        "system speedup",
        "sd",
        "ANTT",
        "fairness",
        "PR sd",
        "switches/s",
        "migrations/s",
        "forced idle (CPUs)",
        "estimates",
    ]);
    let mut notes = Vec::new();
    for p in results {
        let s: Vec<_> = p.runs.iter().map(|r| r.summary()).collect();
        // Mean and sd over the repetitions, if every repetition has the figure.
        let mean = |f: &dyn Fn(&crate::metrics::Summary) -> Option<f64>| {
            s.iter()
                .map(f)
                .collect::<Option<Vec<f64>>>()
                .map(|v| mean_sd(&v))
        };
        let shown = |v: Option<(f64, f64)>| v.map_or("-".to_string(), |(m, _)| format!("{m:.3}"));
        let per_s = |f: &dyn Fn(&Metrics) -> f64| {
            mean_sd(
                &p.runs
                    .iter()
                    .map(|r| f(r) / (r.window.1 / r.clock_hz))
                    .collect::<Vec<_>>(),
            )
            .0
        };
        if let Some(note) = missing_note(p) {
            notes.push(note);
        }
        let speedup = mean(&|x| x.system_speedup);
        t.row([
            p.policy.clone(),
            shown(speedup),
            // One repetition has no spread to show.
            speedup
                .filter(|_| s.len() > 1)
                .map_or("-".to_string(), |(_, sd)| format!("{sd:.3}")),
            shown(mean(&|x| x.antt)),
            shown(mean(&|x| x.fairness)),
            shown(mean(&|x| x.pr_sd)),
            format!("{:.1}", per_s(&|r| r.context_switches as f64)),
            format!("{:.2}", per_s(&|r| r.migrations as f64)),
            format!(
                "{:.2}",
                mean_sd(
                    &p.runs
                        .iter()
                        .map(|r| r.forced_idle_cycles / (r.window.1 - r.window.0))
                        .collect::<Vec<_>>()
                )
                .0
            ),
            format!(
                "{}",
                p.runs.iter().map(|r| r.estimates).sum::<u64>() / p.runs.len().max(1) as u64
            ),
        ]);
    }
    let mut out = t.render();
    for n in notes {
        out.push('\n');
        out.push_str(&n);
    }
    out
}

/// `policy: TASK (one run N s alone), … completed no run in the measurement window (W s)`, if
/// any task of any repetition did not.
fn missing_note(p: &PolicyRuns) -> Option<String> {
    let first = p.runs.first()?;
    let mut names: Vec<String> = Vec::new();
    for r in &p.runs {
        for m in r.summary().missing {
            if !names.contains(&m) {
                names.push(m);
            }
        }
    }
    if names.is_empty() {
        return None;
    }
    let runs: Vec<String> = names
        .iter()
        .map(|n| {
            let b = first.per_bench.iter().position(|x| &x.name == n);
            match b.map(|b| first.solo_seconds[b]) {
                Some(s) => format!("{n} (one run {s:.0} s alone)"),
                None => n.to_string(),
            }
        })
        .collect();
    let window_s = (first.window.1 - first.window.0) / first.clock_hz;
    let start_s = first.window.0 / first.clock_hz;
    // A counted run starts and ends in the window: after the one under way when it opens. A
    // task given a share of a CPU takes its time alone over that share for a run.
    let longest = first
        .per_bench
        .iter()
        .zip(&first.solo_seconds)
        .filter(|(b, _)| names.contains(&b.name))
        .map(|(b, &solo)| solo / b.cpu_share.clamp(0.01, 1.0))
        .fold(0.0, f64::max);
    Some(format!(
        "{}: {} completed no run in the {window_s:.0} s measurement window (in at least one repetition), so no figure over every task is given; at the CPU time they got, runs fit from a duration of about {:.0} s (more where co-runners slow them)",
        p.policy,
        runs.join(", "),
        start_s + 2.0 * longest
    ))
}

/// Per-task PRs: one row per task, one column per policy (mean over repetitions).
pub fn task_table(results: &[PolicyRuns]) -> String {
    let names: Vec<String> = results[0].runs[0]
        .per_bench
        .iter()
        .map(|b| format!("{} (nice {})", b.name, b.nice))
        .collect();
    let mut t = Table::new(
        std::iter::once("task PR".to_string()).chain(results.iter().map(|p| p.policy.clone())),
    );
    for (i, name) in names.iter().enumerate() {
        // A mean over every repetition, or none: a mean of the repetitions in which the task
        // completed a run would pass for the whole (the policy table notes what is missing).
        t.row(std::iter::once(name.clone()).chain(results.iter().map(|p| {
            let v: Option<Vec<f64>> = p.runs.iter().map(|r| r.per_bench[i].pr).collect();
            v.filter(|v| !v.is_empty())
                .map_or("-".to_string(), |v| format!("{:.3}", mean_sd(&v).0))
        })));
    }
    t.render()
}

/// Servers: one row per policy and client group (means over repetitions; response times of
/// the first repetition, `-` where no response completed in the window).
pub fn server_table(results: &[PolicyRuns]) -> String {
    let mut t = Table::new([
        "policy", "clients", "req/s", "Mb/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "kernel",
        "irq", "instr/B",
    ]);
    for p in results {
        for (i, s) in p.runs[0].servers.iter().enumerate() {
            let mean =
                |f: &dyn Fn(&Metrics) -> f64| mean_sd(&p.runs.iter().map(f).collect::<Vec<_>>()).0;
            let resp = |q: fn(&crate::metrics::ResponseTimes) -> f64| {
                s.response_ms
                    .as_ref()
                    .map_or("-".into(), |r| format!("{:.3}", q(r)))
            };
            let k = |f: fn(&crate::sim::KernelTotals) -> f64| {
                format!("{:.3}", mean(&|r| r.kernel.as_ref().map_or(0.0, f)))
            };
            t.row([
                p.policy.clone(),
                s.name.clone(),
                format!("{:.0}", mean(&|r| r.servers[i].requests_per_s)),
                format!("{:.1}", mean(&|r| r.servers[i].megabits_per_s)),
                resp(|r| r.p50),
                resp(|r| r.p90),
                resp(|r| r.p99),
                resp(|r| r.p999),
                k(|k| k.kernel_share),
                k(|k| k.interrupt_share),
                format!(
                    "{:.2}",
                    mean(&|r| r.per_byte.map_or(0.0, |p| p.instructions))
                ),
            ]);
        }
    }
    t.render()
}

/// The stretches each task held a CPU between `t0_s` and `t1_s` (seconds since the start),
/// labelled "name (pid)", from the context switches of a run that ended at `end_cycle`.
pub fn segments(
    switches: &[Switch],
    clock_hz: f64,
    end_cycle: f64,
    t0_s: f64,
    t1_s: f64,
) -> Vec<Segment> {
    let mut open: std::collections::BTreeMap<usize, (f64, String)> = Default::default();
    let mut segs = Vec::new();
    let mut close = |lane: usize, start_s: f64, end_s: f64, label: String| {
        let (start_s, end_s) = (start_s.max(t0_s), end_s.min(t1_s));
        if end_s > start_s {
            segs.push(Segment {
                lane,
                start_s,
                end_s,
                label,
            });
        }
    };
    for s in switches {
        let t = s.cycle / clock_hz;
        if let Some((start, label)) = open.remove(&s.cpu) {
            close(s.cpu, start, t, label);
        }
        if let (Some(name), Some(pid)) = (&s.to_name, s.to) {
            open.insert(s.cpu, (t, format!("{name} ({pid})")));
        }
    }
    for (cpu, (start, label)) in open {
        close(cpu, start, end_cycle / clock_hz, label);
    }
    segs
}

/// The `format` of a timeline file.
pub const TIMELINE_FORMAT: &str = "smtsched-timeline/1";
/// Seconds of a timeline its SVG draws unless told otherwise: a few 100 ms decision periods and
/// hundreds of 10 ms ticks, still readable at a glance.
pub const TIMELINE_SVG_SECONDS: f64 = 2.0;

/// A run's schedule as `run --timeline` writes it and `plot` draws it again: every context
/// switch, with what is needed to draw them (the CPUs, the clock, the window measured).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TimelineFile {
    pub format: String,
    pub title: String,
    pub logical_cpus: usize,
    pub clock_hz: f64,
    /// The measured window, in cycles since the start.
    pub window_cycles: (f64, f64),
    pub switches: Vec<Switch>,
}

impl TimelineFile {
    pub fn of(r: &Metrics, m: &MachineModel, title: &str) -> TimelineFile {
        TimelineFile {
            format: TIMELINE_FORMAT.into(),
            title: title.into(),
            logical_cpus: m.logical_cpus() as usize,
            clock_hz: r.clock_hz,
            window_cycles: r.window,
            switches: r.timeline.clone(),
        }
    }

    /// Checks a timeline read from a file (a hand-edited one may not describe a run): CPUs of a
    /// machine the simulator could have (1 to 4096), a clock of 1 MHz to 100 GHz, a window
    /// that begins at or after the start and ends after it begins, and switches in time order
    /// on those CPUs. The error names the field and value.
    pub fn check(&self) -> Result<(), String> {
        let cpus = self.logical_cpus as u64;
        if !(1..=smtsched_model::machine::MAX_LOGICAL_CPUS).contains(&cpus) {
            return Err(format!(
                "logical_cpus = {cpus}: must be 1 to {}",
                smtsched_model::machine::MAX_LOGICAL_CPUS
            ));
        }
        if !(1e6..=1e11).contains(&self.clock_hz) {
            return Err(format!(
                "clock_hz = {}: must be 1e6 to 1e11 (1 MHz to 100 GHz)",
                self.clock_hz
            ));
        }
        let (start, end) = self.window_cycles;
        if !(start >= 0.0 && end > start && end.is_finite()) {
            return Err(format!(
                "window_cycles = [{start}, {end}]: must begin at or after 0 and end after it begins"
            ));
        }
        let mut last = 0.0;
        for (i, s) in self.switches.iter().enumerate() {
            if !(s.cycle >= last && s.cycle.is_finite()) {
                return Err(format!(
                    "switches[{i}].cycle = {}: must be finite, at or after 0 and the switch before",
                    s.cycle
                ));
            }
            if s.cpu >= self.logical_cpus {
                return Err(format!(
                    "switches[{i}].cpu = {}: the timeline has CPUs 0-{}",
                    s.cpu,
                    self.logical_cpus - 1
                ));
            }
            last = s.cycle;
        }
        Ok(())
    }

    /// The first `seconds` seconds of the measured window as SVG.
    pub fn svg(&self, seconds: f64) -> Result<String, String> {
        let t0 = self.window_cycles.0 / self.clock_hz;
        let t1 = t0 + seconds;
        let segs = segments(&self.switches, self.clock_hz, self.window_cycles.1, t0, t1);
        let names: Vec<String> = (0..self.logical_cpus).map(|c| format!("cpu {c}")).collect();
        timeline_svg(&segs, self.logical_cpus, &names, t0, t1, &self.title)
    }
}

/// The whole schedule as a Perfetto trace: a track per CPU, a slice per stretch a task ran, a
/// counter track per task's PR estimates.
pub fn perfetto_of(r: &Metrics, m: &MachineModel, title: &str) -> serde_json::Value {
    let end_s = r.window.1 / r.clock_hz;
    let segs = segments(&r.timeline, r.clock_hz, r.window.1, 0.0, end_s);
    let names: Vec<String> = (0..m.logical_cpus()).map(|c| format!("cpu {c}")).collect();
    let label: std::collections::BTreeMap<u32, String> = r
        .timeline
        .iter()
        .filter_map(|s| Some((s.to?, s.to_name.clone()?)))
        .collect();
    let counters: Vec<CounterSample> = r
        .estimate_samples
        .iter()
        .map(|e| CounterSample {
            series: format!(
                "PR {} ({})",
                label.get(&e.pid).map_or("task", |s| s.as_str()),
                e.pid
            ),
            t_s: e.cycle / r.clock_hz,
            value: e.pr,
        })
        .collect();
    trace_json(title, &names, &segs, &counters)
}
