//! Timing behaviour with expected values derived by hand from the model's definition and the
//! machine descriptions.

use smtsched_model::{
    load_machine, workload_from_source, MachineModel, Origin, Override, Source, WorkloadProfile,
};
use smtsched_uarch::protocol::{run_together, solo, Protocol};
use smtsched_uarch::{Window, Workload};

fn workload(toml: &str) -> WorkloadProfile {
    let src = Source {
        origin: Origin::Inline("test workload".into()),
        text: toml.to_string(),
    };
    workload_from_source(&src, &[]).expect("valid test workload")
}

fn machine(name: &str, overrides: &[&str]) -> MachineModel {
    let o: Vec<Override> = overrides.iter().map(|s| s.parse().unwrap()).collect();
    load_machine(name, &o).unwrap()
}

/// `run_together` for profiles.
fn together(
    m: &MachineModel,
    threads: &[(&WorkloadProfile, u32)],
    p: &Protocol,
    w: Window,
) -> Result<smtsched_uarch::RunResult, smtsched_uarch::ProtocolError> {
    let v: Vec<(&dyn Workload, u32)> = threads
        .iter()
        .map(|&(w, c)| (w as &dyn Workload, c))
        .collect();
    run_together(m, &v, p, w)
}

fn proto(warmup: u64, measure: u64) -> Protocol {
    Protocol {
        seed: 7,
        warmup_instructions: warmup,
        measure_instructions: measure,
        quantum_cycles: 1 << 40,
        timeshare_rounds: 1,
        refill_only: false,
    }
}

/// Integer work only, in a tiny loop: never misses after warm-up, never mispredicts.
fn compute(ilp: f64, uops: f64) -> WorkloadProfile {
    workload(&format!(
        r#"name = "compute"
[[phase]]
instructions = 1_000_000_000
ilp = {ilp}
uops_per_instruction = {uops}
loads = 0.0
stores = 0.0
branches = 0.1
branch_mispredict_rate = 0.0
[[phase.code]]
size_bytes = 1024
weight = 1.0
"#
    ))
}

#[test]
fn lone_thread_on_an_smt_core_runs_as_fast_as_on_a_non_smt_core() {
    // With the sibling halted the partitioned structures recombine (thesis §2, Marr et al.), so
    // the lone thread sees exactly the non-SMT core.
    let smt = machine("northwood", &[]);
    let single = machine("northwood", &["topology.threads_per_core=1"]);
    for name in ["mcf-like", "gzip-like", "swim-like"] {
        let w = smtsched_model::load_workload(name, &[]).unwrap();
        let p = proto(200_000, 400_000);
        let a = solo(&smt, &w, 0, 0, &p).unwrap();
        let b = solo(&single, &w, 0, 0, &p).unwrap();
        assert_eq!(a.window, b.window, "{name}");
        assert_eq!(a.elapsed_cycles(), b.elapsed_cycles(), "{name}");
    }
}

#[test]
fn compute_bound_thread_runs_at_its_ilp_or_the_front_end_width() {
    let m = machine("northwood", &[]);
    // ilp 2.0 at the 128-uop reference window; northwood's lone thread holds all 126 ROB entries,
    // so the dependence limit is 2.0 * sqrt(126/128); the 3-uop front end allows 3/1.2 = 2.5.
    let r = solo(&m, &compute(2.0, 1.2), 0, 0, &proto(10_000, 1_000_000)).unwrap();
    let expected = 2.0 * (126.0f64 / 128.0).sqrt();
    assert!(
        (r.ipc() - expected).abs() / expected < 1e-3,
        "IPC {} vs {expected}",
        r.ipc()
    );
    // ilp 4: front-end bound at 3 uops / 1.5 uops per instruction = 2.0.
    let r = solo(&m, &compute(4.0, 1.5), 0, 0, &proto(10_000, 1_000_000)).unwrap();
    assert!((r.ipc() - 2.0).abs() < 2e-3, "IPC {}", r.ipc());
}

#[test]
fn two_front_end_bound_siblings_split_the_width_equally() {
    // Each wants 4 instr/cycle; together they get 3 uops/cycle: 1.5 uops = 1.5 instr each
    // (their ILP in a half window, 4 * sqrt(63/128) = 2.8, is no limit).
    let m = machine("northwood", &[]);
    let w = compute(4.0, 1.0);
    let r = together(
        &m,
        &[(&w, 2), (&w, 3)],
        &proto(10_000, 1_000_000),
        Window::Instructions,
    )
    .unwrap();
    for t in &r.threads {
        assert!((t.ipc() - 1.5).abs() < 2e-3, "IPC {}", t.ipc());
    }
    // On separate cores nothing is shared: each runs at its solo rate (front-end bound, 3.0).
    let r = together(
        &m,
        &[(&w, 0), (&w, 2)],
        &proto(10_000, 1_000_000),
        Window::Instructions,
    )
    .unwrap();
    for t in &r.threads {
        assert!((t.ipc() - 3.0).abs() < 3e-3, "IPC {}", t.ipc());
    }
}

#[test]
fn fedorova_cpi_microbenchmarks_have_their_cpi() {
    // cpi-N is built so that CPI = 1 + 139 f (workloads/cpi-N.toml); alone on cmt-fedorova it must
    // show CPI N within the sampling error of its random loads.
    let m = machine("cmt-fedorova", &[]);
    for n in [1.0, 6.0, 11.0, 16.0] {
        let w = smtsched_model::load_workload(&format!("cpi-{n}"), &[]).unwrap();
        let r = solo(&m, &w, 0, 0, &proto(50_000, 500_000)).unwrap();
        let cpi = 1.0 / r.ipc();
        assert!((cpi - n).abs() / n < 0.02, "cpi-{n}: measured CPI {cpi}");
    }
}

#[test]
fn fine_grained_core_interleaves_ready_contexts() {
    let m = machine("cmt-fedorova", &[]);
    let p = proto(50_000, 400_000);
    // Four CPI-1 threads saturate the single-issue core: 0.25 IPC each, 1.0 for the core.
    let w = smtsched_model::load_workload("cpi-1", &[]).unwrap();
    let r = together(
        &m,
        &[(&w, 0), (&w, 1), (&w, 2), (&w, 3)],
        &p,
        Window::Instructions,
    )
    .unwrap();
    for t in &r.threads {
        assert!((t.ipc() - 0.25).abs() < 1e-3, "IPC {}", t.ipc());
    }
    // Four CPI-16 threads hide each other's memory time: each still runs at ~1/16 (they rarely
    // want the issue slot at once), so the core reaches ~4/16.
    let w = smtsched_model::load_workload("cpi-16", &[]).unwrap();
    let r = together(
        &m,
        &[(&w, 0), (&w, 1), (&w, 2), (&w, 3)],
        &p,
        Window::Instructions,
    )
    .unwrap();
    let core_ipc: f64 = r.threads.iter().map(|t| t.ipc()).sum();
    assert!((core_ipc - 0.25).abs() / 0.25 < 0.05, "core IPC {core_ipc}");
}

#[test]
fn a_two_wide_fine_grained_core_shares_its_slots_equally_round_robin() {
    // Three CPI-1 threads on a core that issues two a cycle: six slots per three cycles, two for
    // each thread (2/3 IPC each, 2.0 for the core). The round-robin once skipped the context after
    // each issue: here the third never issued and the run never ended.
    let m = machine("cmt-fedorova", &["core.issue_per_cycle=2"]);
    let w = smtsched_model::load_workload("cpi-1", &[]).unwrap();
    let r = together(
        &m,
        &[(&w, 0), (&w, 1), (&w, 2)],
        &proto(50_000, 400_000),
        Window::Instructions,
    )
    .unwrap();
    for t in &r.threads {
        assert!((t.ipc() - 2.0 / 3.0).abs() < 1e-3, "IPC {}", t.ipc());
    }
}
#[test]
fn sequential_sweep_over_twice_the_l1d_misses_on_every_line() {
    // 16 KB swept in 64-byte steps through an 8 KB LRU L1D: every access is a new line that was
    // evicted a pass ago, so every access misses.
    let w = workload(
        r#"name = "sweep"
[[phase]]
instructions = 1_000_000_000
ilp = 2.0
loads = 0.25
stores = 0.0
branches = 0.05
branch_mispredict_rate = 0.0
[[phase.code]]
size_bytes = 1024
weight = 1.0
[[phase.data]]
size_bytes = 16384
weight = 1.0
pattern = "sequential"
stride_bytes = 64
"#,
    );
    let m = machine("northwood", &[]);
    let r = solo(&m, &w, 0, 0, &proto(100_000, 400_000)).unwrap();
    assert!(r.window.loads > 90_000);
    assert_eq!(r.window.l1d_misses, r.window.l1d_accesses);
    // It fits the L2: after warm-up no L2 misses at all.
    assert_eq!(r.window.l2_misses, 0);
}

#[test]
fn working_set_that_fits_misses_only_at_warm_up() {
    let w = workload(
        r#"name = "fits"
[[phase]]
instructions = 1_000_000_000
ilp = 2.0
loads = 0.3
stores = 0.1
branches = 0.05
branch_mispredict_rate = 0.0
[[phase.code]]
size_bytes = 128
weight = 1.0
[[phase.data]]
size_bytes = 4096
weight = 1.0
pattern = "random"
"#,
    );
    let m = machine("northwood", &[]);
    // Cold start: the window begins at instruction 0; 4 KB = 64 lines, spread evenly over the
    // 32 sets of the 4-way L1D (2 per set), so only the 64 compulsory misses occur.
    let r = solo(&m, &w, 0, 0, &proto(0, 500_000)).unwrap();
    assert_eq!(r.window.l1d_misses, 64);
    // The code is one 128-byte sector: 8 trace-cache lines of 16 bytes, all missing once.
    assert_eq!(r.window.l1i_misses, 8);
    // The L2 fills sector pairs: 64 data lines = 32 sectors, plus the code's one sector.
    assert_eq!(r.window.l2_misses, 32 + 1);
}

#[test]
fn same_seed_same_counters_other_seed_other_counters() {
    let m = machine("northwood", &[]);
    let a = smtsched_model::load_workload("vortex-like", &[]).unwrap();
    let b = smtsched_model::load_workload("art-like", &[]).unwrap();
    let run = |seed| {
        let p = Protocol {
            seed,
            ..proto(100_000, 300_000)
        };
        together(&m, &[(&a, 2), (&b, 3)], &p, Window::Instructions).unwrap()
    };
    let (x, y, z) = (run(5), run(5), run(6));
    for i in 0..2 {
        assert_eq!(x.threads[i], y.threads[i]);
        assert_ne!(x.threads[i].window, z.threads[i].window);
    }
}

#[test]
fn a_sibling_that_misses_in_the_l2_slows_a_cache_sensitive_thread() {
    // The thesis's central observation, in its simplest form: mgrid relies on L2 hits, and a
    // co-runner that streams through memory takes them away.
    let m = machine("northwood", &[]);
    let mgrid = smtsched_model::load_workload("mgrid-like", &[]).unwrap();
    let swim = smtsched_model::load_workload("swim-like", &[]).unwrap();
    let p = proto(300_000, 600_000);
    let alone = solo(&m, &mgrid, 0, 2, &p).unwrap();
    let r = together(&m, &[(&mgrid, 2), (&swim, 3)], &p, Window::Instructions).unwrap();
    assert!(r.threads[0].window.l2_misses > 2 * alone.window.l2_misses);
    assert!(r.threads[0].ipc() < 0.7 * alone.ipc());
}

#[test]
fn an_absurdly_slow_bus_gives_saturated_stall_counts_not_a_crash() {
    // 1e-300 bytes per cycle: a memory transfer takes ~1e302 cycles, a stall longer than a
    // 64-bit count holds. The run must finish with its time finite and its stall count
    // saturated at the type's limit (found by the property test over machine files).
    let m = machine("northwood", &["memory.bus_bytes_per_cycle=1e-300"]);
    let w = smtsched_model::load_workload("mcf-like", &[]).unwrap();
    let r = solo(&m, &w, 0, 0, &proto(0, 5_000)).expect("the run completes");
    assert_eq!(r.window.stall_cycles, u64::MAX);
    assert!(r.window.cycles.is_finite() && r.window.cycles > 1e300);
}
