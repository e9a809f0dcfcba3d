//! Thread models on a machine: each thread's reuse-distance profile and its solo behaviour on the
//! simulated machine, and the group estimators applied to the machine's caches.

use crate::collect::{collect, CollectOptions, ThreadProfile};
use crate::group::{group_miss_ratio_with, Estimator, Solver};
use crate::histogram::Histogram;
use crate::measure::{run_group, CycleWindow, Placed};
use rayon::prelude::*;
use serde::Serialize;
use smtsched_model::{CacheContents, MachineModel};
use smtsched_uarch::{PlanError, ThreadCounters, Workload};

/// The data caches a model predicts: the first level (per core) and the last (shared).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Geometry {
    pub l1_lines: f64,
    pub llc_lines: f64,
    pub line_bytes: u32,
    pub llc_level: u8,
}

impl Geometry {
    pub fn of(machine: &MachineModel) -> Geometry {
        let path = machine.cache_path(CacheContents::Data);
        let (_, first) = path[0];
        let (_, last) = *path.last().expect("a data path");
        Geometry {
            l1_lines: (first.size_bytes / first.line_bytes as u64) as f64,
            llc_lines: (last.size_bytes / last.line_bytes as u64) as f64,
            line_bytes: last.line_bytes,
            llc_level: last.level,
        }
    }
}

/// One thread: copy `copy` of a workload.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadModel {
    /// `workload#copy`.
    pub label: String,
    pub workload: String,
    pub copy: u32,
    pub profile: ThreadProfile,
    /// The compressed histogram the estimators use.
    pub hist: Histogram,
    /// Alone on the machine (logical CPU 0, everything else idle), over the solo window.
    pub solo: ThreadCounters,
}

impl ThreadModel {
    pub fn solo_ipc(&self) -> f64 {
        self.solo.ipc()
    }

    /// Misses per reference in a fully associative random-replacement cache of `lines` lines.
    pub fn miss_ratio(&self, lines: f64) -> f64 {
        crate::statcache::miss_ratio(&self.hist, lines)
    }

    /// Misses per reference in a cache of `lines` lines under `solver`.
    pub fn miss_ratio_with(&self, solver: Solver, lines: f64) -> f64 {
        solver.miss_ratio(&self.hist, lines)
    }
}

/// How thread models are built.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ModelOptions {
    pub seed: u64,
    pub collect: CollectOptions,
    /// The solo run that gives each thread's IPC.
    pub solo: CycleWindow,
}

impl Default for ModelOptions {
    fn default() -> Self {
        ModelOptions {
            seed: 1,
            collect: CollectOptions::default(),
            solo: CycleWindow {
                warmup_cycles: 2_000_000,
                measure_cycles: 4_000_000,
            },
        }
    }
}

/// Reuse-distance profiles of `threads` (workload, copy), collected in parallel; they do not
/// depend on the machine beyond its line size.
pub fn collect_profiles(
    threads: &[(&dyn Workload, u32)],
    line_bytes: u32,
    opts: &ModelOptions,
) -> Vec<ThreadProfile> {
    let collect_opts = CollectOptions {
        line_bytes,
        ..opts.collect
    };
    threads
        .par_iter()
        .map(|&(w, copy)| {
            let mut stream = w.stream(opts.seed, copy);
            collect(
                &format!("{}#{copy}", w.name()),
                stream.as_mut(),
                &collect_opts,
            )
        })
        .collect()
}

/// Models of `threads` on `machine` from their `profiles`: each thread's solo run there.
pub fn models_from(
    machine: &MachineModel,
    threads: &[(&dyn Workload, u32)],
    profiles: &[ThreadProfile],
    opts: &ModelOptions,
) -> Result<Vec<ThreadModel>, PlanError> {
    threads
        .par_iter()
        .zip(profiles)
        .map(|(&(w, copy), profile)| {
            let solo = run_group(
                machine,
                &[Placed {
                    workload: w,
                    copy,
                    cpu: 0,
                }],
                opts.seed,
                opts.solo,
            )?;
            Ok(ThreadModel {
                label: profile.name.clone(),
                workload: w.name().to_string(),
                copy,
                hist: profile.compressed(),
                profile: profile.clone(),
                solo: solo.threads[0],
            })
        })
        .collect()
}

/// Models of `threads` (workload, copy) on `machine`, built in parallel.
pub fn build_models(
    machine: &MachineModel,
    threads: &[(&dyn Workload, u32)],
    opts: &ModelOptions,
) -> Result<Vec<ThreadModel>, PlanError> {
    let profiles = collect_profiles(threads, Geometry::of(machine).line_bytes, opts);
    models_from(machine, threads, &profiles, opts)
}

/// A group estimate: misses per reference at the shared cache, and per access to it (through the
/// estimate of the first level in front of it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Prediction {
    pub solver: Solver,
    pub estimator: Estimator,
    /// Shared-cache misses per data reference.
    pub per_reference: f64,
    /// First-level misses per data reference.
    pub l1_per_reference: f64,
    /// Shared-cache misses per shared-cache access.
    pub local: f64,
}

/// Estimates the group `threads` (with the core each one runs on) with `est`.
pub fn predict(
    solver: Solver,
    est: Estimator,
    threads: &[(&ThreadModel, usize)],
    geom: &Geometry,
) -> Prediction {
    let hists: Vec<&Histogram> = threads.iter().map(|(m, _)| &m.hist).collect();
    let ipcs: Vec<f64> = threads.iter().map(|(m, _)| m.solo_ipc()).collect();
    let llc = group_miss_ratio_with(solver, est, &hists, &ipcs, geom.llc_lines);
    // First level: each core's threads share its L1; weight cores by their references.
    let mut cores: Vec<usize> = threads.iter().map(|t| t.1).collect();
    cores.sort_unstable();
    cores.dedup();
    let (mut l1_misses, mut refs) = (0.0, 0.0);
    for c in cores {
        let mine: Vec<usize> = (0..threads.len()).filter(|&i| threads[i].1 == c).collect();
        let h: Vec<&Histogram> = mine.iter().map(|&i| hists[i]).collect();
        let ip: Vec<f64> = mine.iter().map(|&i| ipcs[i]).collect();
        let r: f64 = mine
            .iter()
            .map(|&i| threads[i].0.profile.refs_per_instruction())
            .sum();
        l1_misses += group_miss_ratio_with(solver, est, &h, &ip, geom.l1_lines) * r;
        refs += r;
    }
    let l1 = if refs > 0.0 { l1_misses / refs } else { 0.0 };
    Prediction {
        solver,
        estimator: est,
        per_reference: llc,
        l1_per_reference: l1,
        local: if l1 > 0.0 { (llc / l1).min(1.0) } else { 0.0 },
    }
}
