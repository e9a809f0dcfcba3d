//! Running one experiment file: the simulation its kind calls for, repetitions added while a
//! claim is inconclusive (up to a cap), each claim judged, and what a report needs — the text
//! printed, the JSON, the verdicts and the figures. `smtsched reproduce` prints an [`Outcome`];
//! `smtsched reproduce all` gathers them into one report.

pub mod ablation;
mod matrices;
mod policies;
mod seeds;
mod settings;
mod windowed;

use crate::experiment::{Experiment, ExperimentKind, Paper};
use seeds::{metric_name, over_seeds, range_claims, SeedRun};
use smtsched_model::{load_machine, MachineModel, ModelError, Override};
use smtsched_os::oracle::{NoInterference, Occupant, Oracle, ThreadRate};
use smtsched_os::sim::Baseline;
use smtsched_os::PolicyName;
use smtsched_report::verdict::{MeanInterval, Verdict};

/// What a run may change from the experiment file (the command line's overrides).
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub seed: u64,
    pub duration_s: Option<f64>,
    /// Repetitions to start with; the file's when `None`.
    pub repetitions: Option<u32>,
    /// Most repetitions while a claim is inconclusive (never fewer than the start); the
    /// experiment's `max_repetitions` when `None`, else [`DEFAULT_MAX_REPETITIONS`].
    pub max_repetitions: Option<u32>,
    pub baseline: Option<Baseline>,
    pub policies: Option<Vec<PolicyName>>,
    /// The PR estimator spec (`smtsched_os::sim::Estimator::from_spec`); the file's when `None`.
    pub estimator: Option<smtsched_os::EstimatorSpec>,
    /// Keep every run's full metrics in the JSON (large).
    pub full_json: bool,
}

impl RunOptions {
    /// The options given, as the command line spells them: each flag with its value (empty for
    /// a switch). A run's identity in words: two runs' differences are told as these.
    pub fn flags(&self) -> Vec<(&'static str, String)> {
        let list = |p: &[PolicyName]| p.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(",");
        let mut f = vec![("--seed", self.seed.to_string())];
        f.extend(self.duration_s.map(|d| ("--duration", d.to_string())));
        f.extend(self.repetitions.map(|r| ("--repetitions", r.to_string())));
        f.extend(
            self.max_repetitions
                .map(|r| ("--max-repetitions", r.to_string())),
        );
        f.extend(self.baseline.map(|b| ("--baseline", b.to_string())));
        f.extend(self.policies.as_deref().map(|p| ("--policies", list(p))));
        f.extend(
            self.estimator
                .as_ref()
                .map(|e| ("--estimator", e.to_string())),
        );
        f.extend(self.full_json.then(|| ("--json", String::new())));
        f
    }

    /// The overrides given that would change nothing in an experiment of `kind`, as their
    /// flags: only kinds that run the OS simulator have a duration and a base scheduler, and
    /// only a policies experiment has policies to choose and estimates to make.
    pub fn not_applying(&self, kind: ExperimentKind) -> Vec<&'static str> {
        use ExperimentKind as K;
        let os_runs = matches!(kind, K::Policies | K::Configurations);
        let baseline = os_runs || matches!(kind, K::FedorovaL2 | K::FedorovaBalanceSet);
        [
            ("--duration", self.duration_s.is_some(), os_runs),
            ("--baseline", self.baseline.is_some(), baseline),
            ("--policies", self.policies.is_some(), kind == K::Policies),
            ("--estimator", self.estimator.is_some(), kind == K::Policies),
        ]
        .into_iter()
        .filter(|&(_, given, applies)| given && !applies)
        .map(|(flag, ..)| flag)
        .collect()
    }
}

/// How a run tells a person what it is doing: the CLI draws bars; tests and sweeps stay silent.
pub trait Progress: Sync {
    /// A stage of `total` steps (counted in `unit`) begins; `label` says what runs.
    fn begin(&self, label: &str, total: u64, unit: &str);
    /// One step of the current stage is done.
    fn step(&self);
    /// The current stage is over.
    fn end(&self);
    /// A line worth keeping (repetitions added because a claim is inconclusive).
    fn note(&self, line: &str);
    /// A passing line for someone watching (what a long stage is doing now).
    fn status(&self, line: &str);
}

/// Progress nobody watches.
pub struct Silent;

impl Progress for Silent {
    fn begin(&self, _: &str, _: u64, _: &str) {}
    fn step(&self) {}
    fn end(&self) {}
    fn note(&self, _: &str) {}
    fn status(&self, _: &str) {}
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The experiment or an override asks for something that cannot run (exit 2).
    #[error("{0}")]
    Bad(String),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    CacheModel(#[from] smtsched_cachemodel::error::CacheModelError),
}

impl RunError {
    /// Whether the user's input is at fault (the CLI exits 2), not the program.
    pub fn is_bad_input(&self) -> bool {
        match self {
            RunError::Bad(_) | RunError::Model(_) => true,
            RunError::CacheModel(e) => e.is_bad_input(),
        }
    }
}

/// One experiment's result: the report printed, its JSON, each claim's verdict, figures.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    pub name: String,
    pub machine: String,
    pub title: String,
    pub source: String,
    pub text: String,
    pub json: serde_json::Value,
    pub claims: Vec<ClaimOutcome>,
    /// (caption, SVG).
    pub figures: Vec<(String, String)>,
    /// What the paper shows, found and where this simulation departs from it, for a reader to
    /// see beside the claims.
    #[serde(default)]
    pub paper: PaperNotes,
    /// Wall-clock time from start to end (beside whatever else ran then).
    pub seconds: f64,
    /// CPU time its own threads used ([`run_on_own_threads`]); `None` when it ran on a shared
    /// pool, where its threads also ran other work.
    #[serde(default)]
    pub cpu_seconds: Option<f64>,
}

/// The paper's figure or table, its findings and this simulation's departures from them, as
/// the experiment file states them.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PaperNotes {
    pub figure: String,
    pub findings: Vec<String>,
    pub departures: Vec<String>,
}

impl From<&Paper> for PaperNotes {
    fn from(p: &Paper) -> Self {
        PaperNotes {
            figure: p.figure.clone(),
            findings: p.findings.clone(),
            departures: p.departures.clone(),
        }
    }
}

/// A claim as a report shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClaimOutcome {
    pub says: String,
    pub verdict: Verdict,
    /// The interval or value it rests on, as text.
    pub evidence: String,
    /// The same as numbers: each quantity the verdict rests on, with its 95% interval over the
    /// seeds (the same fields whatever the experiment's kind).
    #[serde(default)]
    pub quantities: Vec<ClaimQuantity>,
}

/// A quantity a claim's verdict rests on.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClaimQuantity {
    /// What it is: a metric, a difference of two policies' figures (`plan - naive`), a
    /// configuration's ratio in one row.
    pub of: String,
    /// Its mean and 95% interval over the seeds; `None` if it was not measured.
    pub interval: Option<MeanInterval>,
}

/// What one kind's run adds to the report's heading.
struct KindOutcome {
    text: String,
    json: serde_json::Value,
    claims: Vec<ClaimOutcome>,
    figures: Vec<(String, String)>,
}

/// Runs experiment `e` with `o`'s overrides.
pub fn run(mut e: Experiment, o: &RunOptions, p: &dyn Progress) -> Result<Outcome, RunError> {
    let started = std::time::Instant::now();
    if let Some(b) = o.baseline {
        e.baseline = b;
    }
    if let Some(list) = &o.policies {
        e.policies = list.clone();
    }
    let m = machine_of(&e)?;
    let k = match e.kind {
        ExperimentKind::Policies => policies::run(&e, &m, o, p)?,
        ExperimentKind::Asymmetry => matrices::asymmetry(&e, &m, o, p)?,
        ExperimentKind::Pairs => matrices::pairs(&e, &m, o, p)?,
        ExperimentKind::Configurations => settings::run(&e, o, p)?,
        ExperimentKind::FedorovaCpi
        | ExperimentKind::FedorovaL1
        | ExperimentKind::FedorovaL2
        | ExperimentKind::FedorovaBalanceSet => fedorova(&e, o, p)?,
        ExperimentKind::Phases | ExperimentKind::Estimator => windowed::run(&e, &m, o, p)?,
    };
    Ok(Outcome {
        name: e.name.clone(),
        machine: e.machine.clone(),
        title: e.title.clone(),
        source: e.source.clone(),
        text: format!(
            "{}\n{}\nsource: {}\n\n{}",
            e.name, e.title, e.source, k.text
        ),
        json: k.json,
        claims: k.claims,
        figures: k.figures,
        paper: PaperNotes::from(&e.paper),
        seconds: started.elapsed().as_secs_f64(),
        cpu_seconds: None,
    })
}

/// Checks, before anything is simulated, what a run of `e` under `o` would otherwise find
/// wrong only when it reached it (after the experiments before it in a suite had run): the
/// machine and its overrides, every workload named, and for kinds that run the OS simulator
/// the estimator, the claims' policies (among those run: `--policies` must keep every policy a
/// claim names) and a simulator built (not run) for each configuration.
/// The errors are the run's own.
pub fn check(e: &Experiment, o: &RunOptions) -> Result<(), RunError> {
    let m = machine_of(e)?;
    let set = e.task_set();
    let scheduled = e
        .cmt
        .schedules
        .iter()
        .flat_map(|s| s.cores.iter().flatten());
    for w in e.workloads.iter().chain(&e.cmt.spec_mix).chain(scheduled) {
        set.workload_profile(w)?;
    }
    match e.kind {
        ExperimentKind::Policies => policies::check(e, &m, o),
        ExperimentKind::Configurations => settings::check(e, o),
        _ => Ok(()),
    }
}

/// The oracle of a simulator built only to check its inputs, never run: it answers as
/// [`NoInterference`] does, and knows a pass over a server's request (a cycle), which building a
/// set with clients asks for. Nothing it answers reaches a result.
pub(crate) struct InputsOnly;

impl Oracle for InputsOnly {
    fn rates(&self, situation: &[Option<Occupant>]) -> Vec<Option<ThreadRate>> {
        NoInterference.rates(situation)
    }
    fn phase_solo_cycles(&self, w: u32) -> Vec<f64> {
        NoInterference.phase_solo_cycles(w)
    }
    fn refill_cycles(&self, w: u32) -> f64 {
        NoInterference.refill_cycles(w)
    }
    fn solo_ipc(&self, o: Occupant) -> f64 {
        NoInterference.solo_ipc(o)
    }
    fn pass_solo_cycles(&self, _: u32) -> Option<f64> {
        Some(1.0)
    }
    fn describe(&self) -> String {
        "inputs only (never run)".into()
    }
}

/// [`run`] on a thread pool of `threads` threads of its own, so that the CPU time those threads
/// use is the experiment's, whatever runs beside it; the outcome gives it.
pub fn run_on_own_threads(
    e: Experiment,
    o: &RunOptions,
    p: &dyn Progress,
    threads: usize,
) -> Result<Outcome, RunError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("experiment-{i}"))
        .build()
        .map_err(|e| RunError::Bad(format!("cannot start {threads} threads: {e}")))?;
    let mut outcome = pool.install(|| run(e, o, p))?;
    // Each pool thread's CPU time since it started: only this experiment ran on them.
    let per_thread: Vec<Option<f64>> = pool.broadcast(|_| thread_cpu_seconds());
    outcome.cpu_seconds = per_thread.into_iter().sum();
    Ok(outcome)
}

/// CPU time the calling thread has used, if the clock can be read.
fn thread_cpu_seconds() -> Option<f64> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    ok.then_some(t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9)
}

/// The experiment's machine with its `set` overrides.
fn machine_of(e: &Experiment) -> Result<MachineModel, RunError> {
    let overrides: Vec<Override> = e.set.iter().map(|s| s.parse()).collect::<Result<_, _>>()?;
    Ok(load_machine(&e.machine, &overrides)?)
}

/// Repetitions to start with, checked.
pub(crate) fn repetitions(e: &Experiment, o: &RunOptions) -> Result<u32, RunError> {
    match o.repetitions.unwrap_or(e.repetitions) {
        0 => Err(RunError::Bad(
            "--repetitions 0: at least one is needed".into(),
        )),
        n => Ok(n),
    }
}

/// Most repetitions (seeds) an experiment may run.
pub const MAX_REPETITIONS: u32 = 1000;

/// Most repetitions (seeds) of an experiment that names none.
pub const DEFAULT_MAX_REPETITIONS: u32 = 10;

/// Most repetitions while a claim is inconclusive.
pub(crate) fn cap(e: &Experiment, o: &RunOptions) -> u32 {
    o.max_repetitions
        .or(e.max_repetitions)
        .unwrap_or(DEFAULT_MAX_REPETITIONS)
}

/// The note that more repetitions run because a claim is still undecided.
fn more_repetitions(experiment: &str, done: u32, more: u32) -> String {
    let s = if done == 1 { "" } else { "s" };
    format!("{experiment}: a claim is inconclusive after {done} repetition{s}; running {more} more")
}

/// "The paper (figure):" and its findings, as every report ends.
fn paper_text(paper: &Paper) -> String {
    let mut text = format!("\nThe paper ({}):\n", paper.figure);
    for f in &paper.findings {
        text.push_str(&format!("  - {f}\n"));
    }
    if !paper.departures.is_empty() {
        text.push_str("Where this simulation departs from what was measured:\n");
        for d in &paper.departures {
            text.push_str(&format!("  - {d}\n"));
        }
    }
    text
}

fn fedorova(e: &Experiment, o: &RunOptions, p: &dyn Progress) -> Result<KindOutcome, RunError> {
    let claims = range_claims(&e.cmt.claims, |c| {
        (c.says.as_str(), c.within, metric_name(&c.metric))
    });
    let one = |seed: u64| -> Result<SeedRun, RunError> {
        let r = crate::fedorova::reproduce(e, seed, &|line: &str| p.status(line))?;
        Ok(SeedRun {
            claim_values: e
                .cmt
                .claims
                .iter()
                .map(|c| r.values.get(&c.metric).copied())
                .collect(),
            text: r.text,
            json: r.json,
            figures: r.figures,
        })
    };
    over_seeds(e, o, p, &claims, &one)
}
