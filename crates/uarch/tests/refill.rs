//! Refill-only quanta against the full simulation: a time-shared matrix of workloads of three
//! kinds — one whose working set refills within a few hundred thousand cycles (gzip), one that
//! streams and stays faster than alone for millions of cycles after each switch-in (applu), and
//! one with two phases of different rates (vortex) — gives every performance ratio within 0.005
//! of the matrix that simulates every cycle of every quantum, at the protocol's defaults (10 ms
//! quanta on `northwood`, two measured rounds). All 22 SPEC stand-ins were checked the same way
//! by hand (README: "Time-shared pairs").

use smtsched_model::{load_machine, load_workload, Placement, PrMatrix};
use smtsched_uarch::protocol::{matrix, Protocol};
use smtsched_uarch::Workload;

fn timeshare_matrix(refill_only: bool) -> PrMatrix {
    let m = load_machine("northwood", &[]).unwrap();
    let profiles: Vec<_> = ["gzip-like", "applu-like", "vortex-like"]
        .iter()
        .map(|n| load_workload(n, &[]).unwrap())
        .collect();
    let refs: Vec<&dyn Workload> = profiles.iter().map(|p| p as &dyn Workload).collect();
    let proto = Protocol {
        seed: 1,
        warmup_instructions: 1_000_000,
        measure_instructions: 2_000_000,
        quantum_cycles: (10e-3 * m.clock_ghz * 1e9) as u64,
        timeshare_rounds: 2,
        refill_only,
    };
    matrix(&m, &refs, Placement::Timeshare, &proto, &|| {}).unwrap()
}

#[test]
fn refill_only_quanta_give_the_ratios_of_the_full_simulation_within_half_a_hundredth() {
    let (fast, full) = rayon::join(|| timeshare_matrix(true), || timeshare_matrix(false));
    assert_eq!(fast.settings["refill_only"], "true");
    assert_eq!(full.settings["refill_only"], "false");
    // The solo baselines are simulated whole either way.
    assert_eq!(fast.solo, full.solo);
    let mut differ = false;
    for (a, b) in fast.pairs.iter().zip(&full.pairs) {
        assert_eq!((a.a, a.b), (b.a, b.b));
        for (x, y) in [(a.pr_a, b.pr_a), (a.pr_b, b.pr_b)] {
            let name = |i: usize| &fast.workloads[i];
            assert!(
                (x - y).abs() <= 0.005,
                "{} with {}: refill-only {x:.4}, full {y:.4}",
                name(a.a),
                name(a.b)
            );
            differ |= x != y;
        }
    }
    // The two are different computations, not one twice.
    assert!(differ);
}
