//! `cachemodel`: Fedorova et al.'s reuse-distance cache models — a thread's histogram, a group's
//! predicted against simulated miss ratios on any machine, and the balance-set group search.

use super::{machine, out, workload};
use crate::errors::bad_input;
use anyhow::Result;
use clap::{Args, Subcommand};
use smtsched_cachemodel::collect::CollectOptions;
use smtsched_cachemodel::group::Solver;
use smtsched_cachemodel::measure::CycleWindow;
use smtsched_cachemodel::model::{build_models, Geometry, ModelOptions};
use smtsched_cachemodel::report::{
    group_text, histogram_table, number_copies, predict_group, search_groups,
};
use smtsched_model::expand_workload_list;
use smtsched_uarch::Workload;

#[derive(Args, Debug)]
pub struct CachemodelArgs {
    #[command(subcommand)]
    pub action: Action,
}

/// Options of the thread models.
#[derive(Args, Debug, Clone)]
pub struct ModelArgs {
    /// Machine preset or TOML file.
    #[arg(long, short = 'm', default_value = "cmt-fedorova")]
    pub machine: String,
    /// Override a machine field: KEY=VALUE (repeatable), e.g. --set cache.L2.size_bytes=49152.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Instructions of each thread's reuse-distance window.
    #[arg(long = "instructions", alias = "window", value_name = "INSTRUCTIONS", default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub window: u64,
    /// Instructions before the window (they prime the last-touch table).
    #[arg(long, default_value_t = 2_000_000)]
    pub warmup: u64,
    /// Single-cache model: statcache (random replacement, the paper's) or statstack (LRU).
    #[arg(long = "cache-model", alias = "model", default_value = "statcache")]
    pub model: String,
    /// Simulated cycles before the measured window of every simulation.
    #[arg(long, default_value_t = 2_000_000)]
    pub warmup_cycles: u64,
    /// Simulated cycles measured.
    #[arg(long, default_value_t = 4_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub measure_cycles: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl ModelArgs {
    fn options(&self) -> ModelOptions {
        ModelOptions {
            seed: self.seed,
            collect: CollectOptions {
                warmup_instructions: self.warmup,
                window_instructions: self.window,
                ..Default::default()
            },
            solo: self.cycles(),
        }
    }

    fn cycles(&self) -> CycleWindow {
        CycleWindow {
            warmup_cycles: self.warmup_cycles,
            measure_cycles: self.measure_cycles,
        }
    }

    fn solver(&self) -> Result<Solver> {
        self.model
            .parse()
            .map_err(|e: String| bad_input(format!("--cache-model: {e}")))
    }
}

#[derive(Subcommand, Debug)]
pub enum Action {
    /// One thread's reuse-distance histogram, compressed to fewer than 20 buckets, and the miss
    /// ratios it predicts for the machine's caches.
    ///
    /// Example: smtsched cachemodel histogram ammp-like --instructions 5000000
    Histogram {
        /// Workload preset, TOML file or trace.
        workload: String,
        #[command(flatten)]
        opts: ModelArgs,
    },
    /// Predicted (COMB N, COMB N-1, COMB+IPC, AVG) against simulated miss ratios of a group of
    /// threads sharing the machine's last-level cache.
    ///
    /// Example: smtsched cachemodel predict gzip-like art-like parser-like ammp-like --set topology.cores_per_package=1 --set cache.L2.size_bytes=49152
    Predict {
        /// Workloads (presets, TOML files or traces), one thread each; copies are numbered in order.
        #[arg(required = true, num_args = 1..)]
        workloads: Vec<String>,
        /// Logical CPU of each thread, kernel list syntax (default: 0, 1, 2, …).
        #[arg(long = "cpus", alias = "placement", value_name = "LIST")]
        placement: Option<String>,
        #[command(flatten)]
        opts: ModelArgs,
    },
    /// The balance-set candidate search (Fedorova §4.2): every group of as many threads as the
    /// machine has contexts, estimated with AVG (and, for comparison, COMB), the threshold from
    /// the most cache-greedy thread, and the PERF and FAIR schedules; timed.
    ///
    /// Example: smtsched cachemodel groups -w gzip-like,vpr-like,vpr-like,gcc-like,art-like,crafty-like,ammp-like,parser-like,vortex-like --copies 2 --set topology.cores_per_package=2
    Groups {
        /// Workloads, comma-separated.
        #[arg(long, short = 'w')]
        workloads: String,
        /// Copies of each.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        copies: u32,
        /// Threads per group (default: the machine's logical CPUs).
        #[arg(long)]
        contexts: Option<usize>,
        #[command(flatten)]
        opts: ModelArgs,
    },
    /// Policies in the OS simulator (Linux 2.4 baseline, analytic oracle from the models), each
    /// schedule measured on the microarchitectural simulator at sampled moments; balance-set
    /// and di get what they need from the reuse-distance models.
    ///
    /// Example: smtsched cachemodel schedule -w mcf-like,art-like,gzip-like,parser-like --copies 2 --policies naive,di --set topology.packages=2 --set topology.cores_per_package=1 --set cache.L2.shared_by=package
    Schedule {
        /// Workloads, comma-separated (profiles).
        #[arg(long, short = 'w')]
        workloads: String,
        /// Copies of each.
        #[arg(long, default_value_t = 1)]
        copies: u32,
        /// Policies to compare, comma-separated.
        #[arg(
            long,
            short = 'p',
            default_value = "naive,balance-set-perf,balance-set-fair,di"
        )]
        policies: String,
        /// Simulated seconds of each OS run.
        #[arg(
            long = "duration",
            alias = "seconds",
            value_name = "DURATION",
            default_value_t = 40.0
        )]
        seconds: f64,
        /// Moments of each schedule simulated.
        #[arg(long = "moments", alias = "samples", value_name = "MOMENTS", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
        samples: u32,
        #[command(flatten)]
        opts: ModelArgs,
    },
}

fn load_all(names: &[String]) -> Result<Vec<Box<dyn Workload>>> {
    names.iter().map(|n| workload(n)).collect()
}

pub fn run(a: CachemodelArgs) -> Result<()> {
    // What runs is reported on a spinner; it is cleared before anything is printed.
    let bar = super::spinner("reuse-distance models (a window of each thread, then its solo run)")?;
    let text = output(a, &|msg: &str| bar.set_message(msg.to_string()));
    bar.finish_and_clear();
    out(&text?)
}

/// JSON as `--json` prints it (the fields in their declared order).
fn json_text<T: serde::Serialize>(value: &T) -> Result<String> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

/// What the command prints.
fn output(a: CachemodelArgs, progress: &(dyn Fn(&str) + Sync)) -> Result<String> {
    match a.action {
        Action::Histogram { workload: w, opts } => {
            let m = machine(&opts.machine, &opts.set)?;
            let solver = opts.solver()?;
            let ws = load_all(&[w])?;
            let refs: Vec<&dyn Workload> = ws.iter().map(|b| b.as_ref()).collect();
            let models = build_models(&m, &number_copies(&refs), &opts.options())?;
            let t = &models[0];
            let geom = Geometry::of(&m);
            if opts.json {
                return json_text(&serde_json::json!({
                    "thread": t.label,
                    "machine": m.name,
                    "instructions": t.profile.instructions,
                    "references": t.profile.references,
                    "compressed": t.hist,
                    "stored_bytes": t.hist.stored_bytes(),
                    "model": solver,
                    "miss_ratio_l1": t.miss_ratio_with(solver, geom.l1_lines),
                    "miss_ratio_llc": t.miss_ratio_with(solver, geom.llc_lines),
                    "solo_ipc": t.solo_ipc(),
                }));
            }
            let mut s = format!(
                "{}: {} instructions, {} data references ({:.3} per instruction) after {} warm-up instructions\n\n",
                t.label,
                t.profile.instructions,
                t.profile.references,
                t.profile.refs_per_instruction(),
                opts.warmup
            );
            s.push_str(&histogram_table(&t.hist));
            s.push_str(&format!(
                "\n{} numbers ({} bytes stored); {} model on {}: L1D ({:.0} lines) {:.4}, L{} ({:.0} lines) {:.4} misses per reference; simulated alone: L1D {:.4}, L2 {:.4}\n",
                t.hist.points.len() + 1,
                t.hist.stored_bytes(),
                solver.as_str(),
                m.name,
                geom.l1_lines,
                t.miss_ratio_with(solver, geom.l1_lines),
                geom.llc_level,
                geom.llc_lines,
                t.miss_ratio_with(solver, geom.llc_lines),
                t.solo.l1d_misses as f64 / (t.solo.loads + t.solo.stores).max(1) as f64,
                t.solo.l2_misses as f64 / (t.solo.loads + t.solo.stores).max(1) as f64,
            ));
            Ok(s)
        }
        Action::Predict {
            workloads,
            placement,
            opts,
        } => {
            let m = machine(&opts.machine, &opts.set)?;
            let solver = opts.solver()?;
            let cpus: Vec<u32> = match &placement {
                Some(p) => super::corun::parse_placement(p, &m)?,
                None => (0..workloads.len() as u32).collect(),
            };
            if cpus.len() != workloads.len() {
                return Err(bad_input(format!(
                    "--cpus names {} CPUs for {} workloads",
                    cpus.len(),
                    workloads.len()
                )));
            }
            if let Some(bad) = cpus.iter().find(|&&c| c >= m.logical_cpus()) {
                return Err(bad_input(format!(
                    "--cpus: CPU {bad} does not exist on {} (CPUs 0-{})",
                    m.name,
                    m.logical_cpus() - 1
                )));
            }
            let ws = load_all(&workloads)?;
            let refs: Vec<&dyn Workload> = ws.iter().map(|b| b.as_ref()).collect();
            let numbered = number_copies(&refs);
            let models = build_models(&m, &numbered, &opts.options())?;
            let r = predict_group(
                &m,
                &models,
                &numbered,
                &cpus,
                solver,
                opts.seed,
                opts.cycles(),
            )?;
            if opts.json {
                return json_text(&r);
            }
            Ok(group_text(&r, &models, &Geometry::of(&m)))
        }
        Action::Groups {
            workloads,
            copies,
            contexts,
            opts,
        } => {
            let m = machine(&opts.machine, &opts.set)?;
            let names = expand_workload_list(&workloads);
            if names.is_empty() {
                return Err(bad_input(format!(
                    "--workloads {workloads:?}: names nothing"
                )));
            }
            let all: Vec<String> = names
                .iter()
                .flat_map(|n| std::iter::repeat_n(n.clone(), copies as usize))
                .collect();
            if all.len() > 64 {
                return Err(bad_input(format!(
                    "{} threads: the group search takes at most 64",
                    all.len()
                )));
            }
            let ws = load_all(&all)?;
            let refs: Vec<&dyn Workload> = ws.iter().map(|b| b.as_ref()).collect();
            let models = build_models(&m, &number_copies(&refs), &opts.options())?;
            let k = contexts.unwrap_or(m.logical_cpus() as usize);
            if k == 0 {
                return Err(bad_input("--contexts 0: a group needs a thread"));
            }
            let g = search_groups(&models, k, Geometry::of(&m).llc_lines);
            if opts.json {
                return json_text(&g);
            }
            let mut s = format!(
                "{} threads, groups of {} on {}: {} groups; threshold {:.4} (best group with the greediest thread, {}); {} candidates\n",
                g.threads.len(),
                g.contexts,
                m.name,
                g.groups,
                g.threshold,
                g.greediest,
                g.candidates
            );
            s.push_str(&format!(
                "enumerate + estimate + sort + threshold: AVG {:.1} ms, COMB (N) {:.1} ms ({} candidates)\n",
                1e3 * g.avg_seconds,
                1e3 * g.comb_seconds,
                g.comb_candidates
            ));
            for (name, sched) in [("PERF", &g.perf), ("FAIR", &g.fair)] {
                s.push_str(&format!("\n{name} schedule ({} groups):\n", sched.len()));
                for (i, grp) in sched.iter().enumerate() {
                    s.push_str(&format!("  {}: {}\n", i + 1, grp.join(" ")));
                }
            }
            Ok(s)
        }
        Action::Schedule {
            workloads,
            copies,
            policies,
            seconds,
            samples,
            opts,
        } => {
            let policies = super::parse_policies(&policies)?;
            let spec = smtsched_experiments::fedorova::ScheduleSpec {
                machine: opts.machine.clone(),
                set: opts.set.clone(),
                workloads: expand_workload_list(&workloads),
                copies,
                policies,
                os_seconds: seconds,
                samples,
                window: opts.cycles(),
                window_instructions: opts.window,
            };
            let text =
                smtsched_experiments::fedorova::schedule(&spec, opts.seed, opts.json, progress)?;
            Ok(text)
        }
    }
}
