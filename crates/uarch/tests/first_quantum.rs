//! A time-shared pair's first quantum is run by its first thread alone, so a matrix runs it once
//! per first workload and continues a copy of it for each partner. These tests check that this
//! counts exactly what running each pair from the start counts.

use smtsched_model::matrix::counter_map;
use smtsched_model::{load_machine, load_workload, MachineModel, Placement, WorkloadProfile};
use smtsched_uarch::protocol::{matrix, pair, placement_cpus, solo_for, Protocol};
use smtsched_uarch::refill::Rates;
use smtsched_uarch::{RunOptions, Simulation, ThreadPlan, Window, Workload};

fn proto(m: &MachineModel) -> Protocol {
    Protocol {
        seed: 3,
        warmup_instructions: 1_000_000,
        measure_instructions: 2_000_000,
        quantum_cycles: (10e-3 * m.clock_ghz * 1e9) as u64,
        timeshare_rounds: 1,
        refill_only: true,
    }
}

/// A time-shared pair's options: one round of warm-up, one measured.
fn pair_options(p: &Protocol) -> RunOptions {
    let q = p.quantum_cycles as f64;
    let window = Window::Cycles {
        start: 2.0 * q,
        end: 4.0 * q,
    };
    RunOptions::new(window, p.quantum_cycles)
}

fn profiles(names: &[&str]) -> Vec<WorkloadProfile> {
    names
        .iter()
        .map(|n| load_workload(n, &[]).unwrap())
        .collect()
}

/// Copy `copy` of `w` on `cpu`, as a pair's plan numbers it (data space `slot + 1`).
fn plan(w: &WorkloadProfile, copy: u32, cpu: u32, slot: u32, code_space: u32) -> ThreadPlan {
    ThreadPlan {
        source: w.stream(3, copy),
        cpu,
        data_space: slot + 1,
        code_space,
        warmup_instructions: 0,
        measure_instructions: 0,
    }
}

#[test]
fn a_pair_continued_from_a_shared_first_quantum_counts_what_the_whole_run_counts() {
    let m = load_machine("northwood", &[]).unwrap();
    let p = proto(&m);
    let w = profiles(&["mcf-like", "vortex-like", "swim-like"]);
    let cpu = placement_cpus(&m, Placement::Timeshare).unwrap()[0];
    let options = pair_options(&p);
    let solo_rates: Vec<Option<Rates>> = w
        .iter()
        .map(|x| Rates::of_solo(&solo_for(&m, x, 0, cpu, &p, Placement::Timeshare).unwrap()))
        .collect();
    // Refill-only quanta, and every cycle simulated.
    for refill in [true, false] {
        let rates = |i: usize| if refill { solo_rates[i] } else { None };
        let build = |b: usize| {
            let plans = vec![plan(&w[0], 0, cpu, 0, 1), plan(&w[b], 0, cpu, 1, 2)];
            Simulation::new(&m, plans, options)
                .unwrap()
                .with_solo_rates(vec![rates(0), rates(b)])
        };
        // mcf-like's first quantum, its partner's place held by swim-like, which never runs in it.
        let mut first = build(2);
        assert!(first.run_first_quantum());
        for b in [1, 2] {
            let mut continued = first.try_clone().expect("synthetic streams can be copied");
            continued.replace_unstarted(1, plan(&w[b], 0, cpu, 1, 2), rates(b));
            let (whole, continued) = (build(b).run(), continued.run());
            let names = format!("mcf-like with {}, refill-only {refill}", w[b].name);
            assert_eq!(whole.threads, continued.threads, "{names}");
            // The run goes on past the windows exactly as far (each thread's footprint at its
            // end included).
            assert_eq!(
                whole.instructions_simulated, continued.instructions_simulated,
                "{names}"
            );
            assert!(whole.threads[1].window.instructions > 0);
        }
    }
}

#[test]
#[should_panic(expected = "thread 0 has run")]
fn a_thread_that_has_run_cannot_be_replaced() {
    let m = load_machine("northwood", &[]).unwrap();
    let p = proto(&m);
    let w = profiles(&["mcf-like"]);
    let options = pair_options(&p);
    let plans = vec![plan(&w[0], 0, 1, 0, 1), plan(&w[0], 1, 1, 1, 1)];
    let mut sim = Simulation::new(&m, plans, options).unwrap();
    assert!(sim.run_first_quantum());
    sim.replace_unstarted(0, plan(&w[0], 0, 1, 0, 1), None);
}

#[test]
fn no_first_quantum_is_shared_without_time_sharing_on_one_busy_out_of_order_core() {
    let run = |machine: &str, cpus: &[u32]| {
        let m = load_machine(machine, &[]).unwrap();
        let p = proto(&m);
        let w = profiles(&["mcf-like"]);
        let plans = (0..cpus.len() as u32)
            .map(|i| plan(&w[0], i, cpus[i as usize], i, 1))
            .collect();
        let mut sim = Simulation::new(&m, plans, pair_options(&p)).unwrap();
        sim.run_first_quantum()
    };
    assert!(run("northwood", &[1, 1]));
    // Separate cores; in-order; a thread on another core running beside the first quantum.
    assert!(!run("northwood", &[1, 3]));
    assert!(!run("cmt-fedorova", &[0, 0]));
    assert!(!run("northwood", &[1, 1, 3]));
}

#[test]
fn a_time_shared_matrix_gives_the_ratios_and_counters_of_each_pair_run_whole() {
    let m = load_machine("prescott", &[]).unwrap();
    let p = proto(&m);
    let w = profiles(&["mcf-like", "vortex-like"]);
    let refs: Vec<&dyn Workload> = w.iter().map(|x| x as &dyn Workload).collect();
    let t = matrix(&m, &refs, Placement::Timeshare, &p, &|| {}).unwrap();
    let cpu = placement_cpus(&m, Placement::Timeshare).unwrap()[0];
    assert_eq!(t.pairs.len(), 3);
    for rec in &t.pairs {
        let copy_b = u32::from(rec.a == rec.b);
        let solo_a = solo_for(&m, &w[rec.a], 0, cpu, &p, Placement::Timeshare).unwrap();
        let solo_b = solo_for(&m, &w[rec.b], copy_b, cpu, &p, Placement::Timeshare).unwrap();
        let whole = pair(
            &m,
            refs[rec.a],
            refs[rec.b],
            Placement::Timeshare,
            &p,
            [&solo_a, &solo_b],
        )
        .unwrap();
        let names = format!("{} with {}", w[rec.a].name, w[rec.b].name);
        assert_eq!([rec.pr_a, rec.pr_b], whole.pr, "{names}");
        assert_eq!(
            rec.counters_a,
            counter_map(whole.window[0].named()),
            "{names}"
        );
        assert_eq!(
            rec.counters_b,
            counter_map(whole.window[1].named()),
            "{names}"
        );
    }
}
