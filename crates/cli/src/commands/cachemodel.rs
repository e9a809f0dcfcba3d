//! `cachemodel`: Fedorova et al.'s reuse-distance cache models — a thread's histogram, a group's
//! predicted against simulated miss ratios on any machine, and the balance-set group search.

use super::plan::Plan;
use super::workloads;
use super::{machine, note_named_file, out, refs, spinner, thread_cpus, workload, workload_names};
use crate::errors::bad_input;
use anyhow::Result;
use clap::{Args, Subcommand};
use smtsched_cachemodel::collect::CollectOptions;
use smtsched_cachemodel::group::Solver;
use smtsched_cachemodel::measure::CycleWindow;
use smtsched_cachemodel::model::{build_models, Geometry, ModelOptions, ThreadModel};
use smtsched_cachemodel::report::{
    group_text, histogram_table, number_copies, predict_group, search_groups, GroupSearch,
};
use smtsched_experiments::fedorova::ScheduleSpec;
use smtsched_model::{expand_workload_list, load_workload, CpuSequence, MachineModel, Override};
use smtsched_os::PolicyName;
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
    pub set: Vec<Override>,
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
    pub model: Solver,
    /// Simulated cycles before the measured window of every simulation [default: 2000000] (not
    /// for `groups`, which simulates nothing it reports).
    #[arg(long)]
    pub warmup_cycles: Option<u64>,
    /// Simulated cycles measured [default: 4000000] (not for `groups`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub measure_cycles: Option<u64>,
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
        let default = ModelOptions::default().solo;
        CycleWindow {
            warmup_cycles: self.warmup_cycles.unwrap_or(default.warmup_cycles),
            measure_cycles: self.measure_cycles.unwrap_or(default.measure_cycles),
        }
    }

    /// The machine and the models' options, checked.
    fn load(self) -> Result<Models> {
        Ok(Models {
            machine: machine(&self.machine, &self.set)?,
            options: self.options(),
            opts: self,
        })
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
        placement: Option<CpuSequence>,
        #[command(flatten)]
        opts: ModelArgs,
    },
    /// The balance-set candidate search (Fedorova §4.2): every group of as many threads as the
    /// machine has contexts (beyond 2 million, groups built greedily, as the output says),
    /// estimated with AVG (and, for comparison, COMB), the threshold from the most cache-greedy
    /// thread, and the PERF and FAIR schedules; timed.
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
            value_delimiter = ',',
            default_value = "naive,balance-set-perf,balance-set-fair,di",
            value_parser = crate::args::policy_name()
        )]
        policies: Vec<PolicyName>,
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

/// The machine and what the thread models are built with.
pub struct Models {
    machine: MachineModel,
    options: ModelOptions,
    /// The options as given (seed, windows, single-cache model, --json).
    opts: ModelArgs,
}

impl Models {
    fn build(&self, threads: &[(&dyn Workload, u32)]) -> Result<Vec<ThreadModel>> {
        Ok(build_models(&self.machine, threads, &self.options)?)
    }
}

pub enum CachemodelPlan {
    Histogram {
        models: Models,
        workload: Box<dyn Workload>,
    },
    Predict {
        models: Models,
        workloads: Vec<Box<dyn Workload>>,
        /// The logical CPU of each workload's thread.
        cpus: Vec<u32>,
    },
    Groups {
        models: Models,
        /// Every thread, copies included.
        workloads: Vec<Box<dyn Workload>>,
        /// Threads per group.
        contexts: usize,
    },
    Schedule {
        spec: ScheduleSpec,
        seed: u64,
        json: bool,
    },
}

impl Plan for CachemodelPlan {
    type Args = CachemodelArgs;

    fn from_args(a: CachemodelArgs) -> Result<Self> {
        Ok(match a.action {
            Action::Histogram { workload: w, opts } => CachemodelPlan::Histogram {
                models: opts.load()?,
                workload: workload(&w)?,
            },
            Action::Predict {
                workloads: names,
                placement,
                opts,
            } => {
                let models = opts.load()?;
                // By default the threads take CPUs 0, 1, 2, … (which must exist).
                let list = placement.unwrap_or_else(|| (0..names.len() as u32).collect());
                let cpus = thread_cpus(&models.machine, &list, names.len())?;
                CachemodelPlan::Predict {
                    models,
                    workloads: workloads(&names)?,
                    cpus,
                }
            }
            Action::Groups {
                workloads: list,
                copies,
                contexts,
                opts,
            } => groups(&list, copies, contexts, opts.load()?)?,
            Action::Schedule {
                workloads: list,
                copies,
                policies,
                seconds,
                samples,
                opts,
            } => schedule(&list, copies, policies, seconds, samples, opts)?,
        })
    }

    fn execute(self) -> Result<()> {
        // What runs is reported on a spinner; it is cleared before anything is printed.
        let bar = spinner("reuse-distance models (a window of each thread, then its solo run)")?;
        let text = self.output(&|msg: &str| bar.set_message(msg.to_string()));
        bar.finish_and_clear();
        out(&text?)
    }
}

fn groups(
    list: &str,
    copies: u32,
    contexts: Option<usize>,
    models: Models,
) -> Result<CachemodelPlan> {
    let all: Vec<String> = workload_names(list)?
        .iter()
        .flat_map(|n| std::iter::repeat_n(n.clone(), copies as usize))
        .collect();
    if all.len() > 64 {
        return Err(bad_input(format!(
            "{} threads: the group search takes at most 64",
            all.len()
        )));
    }
    // The group search works from the histograms alone: a simulated window would change nothing.
    for (flag, given) in [
        ("--warmup-cycles", models.opts.warmup_cycles.is_some()),
        ("--measure-cycles", models.opts.measure_cycles.is_some()),
    ] {
        if given {
            return Err(bad_input(format!(
                "{flag}: cachemodel groups ranks groups from the reuse-distance histograms alone \
                 and simulates no window"
            )));
        }
    }
    let contexts = contexts.unwrap_or(models.machine.logical_cpus() as usize);
    if contexts == 0 {
        return Err(bad_input("--contexts 0: a group needs a thread"));
    }
    Ok(CachemodelPlan::Groups {
        workloads: workloads(&all)?,
        contexts,
        models,
    })
}

fn schedule(
    list: &str,
    copies: u32,
    policies: Vec<PolicyName>,
    seconds: f64,
    samples: u32,
    opts: ModelArgs,
) -> Result<CachemodelPlan> {
    let spec = ScheduleSpec {
        machine: opts.machine.clone(),
        set: opts.set.iter().map(|o| o.text.clone()).collect(),
        workloads: expand_workload_list(list),
        copies,
        policies,
        os_seconds: seconds,
        samples,
        window: opts.cycles(),
        window_instructions: opts.window,
    };
    // The machine and the workloads load here, before the models are built.
    machine(&opts.machine, &opts.set)?;
    for w in &spec.workloads {
        load_workload(w, &[])?;
        note_named_file(w, smtsched_model::WORKLOAD_PRESETS)?;
    }
    Ok(CachemodelPlan::Schedule {
        spec,
        seed: opts.seed,
        json: opts.json,
    })
}

/// JSON as `--json` prints it (the fields in their declared order).
fn json_text<T: serde::Serialize>(value: &T) -> Result<String> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

impl CachemodelPlan {
    /// What the command prints.
    fn output(&self, progress: &(dyn Fn(&str) + Sync)) -> Result<String> {
        match self {
            CachemodelPlan::Histogram { models, workload } => histogram(models, workload.as_ref()),
            CachemodelPlan::Predict {
                models,
                workloads,
                cpus,
            } => {
                let numbered = number_copies(&refs(workloads));
                let threads = models.build(&numbered)?;
                let (m, o) = (&models.machine, &models.opts);
                let r = predict_group(
                    m,
                    &threads,
                    &numbered,
                    cpus,
                    models.opts.model,
                    o.seed,
                    o.cycles(),
                )?;
                if models.opts.json {
                    return json_text(&r);
                }
                Ok(group_text(&r, &threads, &Geometry::of(m)))
            }
            CachemodelPlan::Groups {
                models,
                workloads,
                contexts,
            } => {
                let threads = models.build(&number_copies(&refs(workloads)))?;
                let g = search_groups(&threads, *contexts, Geometry::of(&models.machine).llc_lines);
                if models.opts.json {
                    return json_text(&g);
                }
                Ok(groups_text(&g, &models.machine))
            }
            CachemodelPlan::Schedule { spec, seed, json } => Ok(
                smtsched_experiments::fedorova::schedule(spec, *seed, *json, progress)?,
            ),
        }
    }
}

fn histogram(models: &Models, w: &dyn Workload) -> Result<String> {
    let threads = models.build(&number_copies(&[w]))?;
    let (t, m, solver) = (&threads[0], &models.machine, models.opts.model);
    let geom = Geometry::of(m);
    if models.opts.json {
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
        models.opts.warmup
    );
    s.push_str(&histogram_table(&t.hist));
    s.push_str(&format!(
        "\n{} entries ({} bytes stored); {} model on {}: L1D ({:.0} lines) {:.4}, L{} ({:.0} lines) {:.4} misses per reference; simulated alone: L1D {:.4}, L2 {:.4}\n",
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

fn groups_text(g: &GroupSearch, m: &MachineModel) -> String {
    let mut s = format!(
        "{} threads, groups of {} on {}: {} groups{}; threshold {:.4} (best group with the greediest thread, {}); {} candidates\n",
        g.threads.len(),
        g.contexts,
        m.name,
        g.groups,
        if g.exhaustive {
            String::new()
        } else {
            format!(
                " built greedily (every group: C({}, {}), too many to enumerate)",
                g.threads.len(),
                g.contexts
            )
        },
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
    s
}
