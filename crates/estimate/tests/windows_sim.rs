//! Windows from the real simulator: properties of the protocol, the fixed-point evaluation over
//! real window data, and independence from the number of host threads.

use smtsched_estimate::fit::{parse_features, predict, train};
use smtsched_estimate::ols::SelectionRule;
use smtsched_estimate::simulate::{simulate_windows, WindowProtocol};
use smtsched_estimate::windows::{parse_csv, to_csv};
use smtsched_estimate::WindowSet;
use smtsched_model::{load_machine, load_workload, WorkloadProfile};
use smtsched_os::LinearModel;
use smtsched_uarch::protocol::{pair, solo, Protocol};
use smtsched_uarch::Workload;

fn proto() -> WindowProtocol {
    WindowProtocol {
        seed: 7,
        warmup_instructions: 20_000,
        measure_instructions: 200_000,
        windows: 20,
        runs: 2,
        sample_cycles: 1000.0,
    }
}

fn profiles(names: &[&str]) -> Vec<WorkloadProfile> {
    names
        .iter()
        .map(|n| load_workload(n, &[]).unwrap())
        .collect()
}

fn windows_on(threads: usize, names: &[&str]) -> WindowSet {
    let m = load_machine("northwood", &[]).unwrap();
    let ws = profiles(names);
    let refs: Vec<&dyn Workload> = ws.iter().map(|w| w as &dyn Workload).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let rows = pool
        .install(|| simulate_windows(&m, &refs, &proto(), &|| {}))
        .unwrap();
    WindowSet {
        meta: vec![("machine".into(), "northwood".into())],
        rows,
    }
}

#[test]
fn windows_follow_the_protocol_and_agree_with_the_whole_run() {
    let names = ["gzip-like", "mcf-like", "vortex-like"];
    let set = windows_on(2, &names);
    // 3 subjects × 2 backgrounds × 2 runs × 20 windows, in (subject, background, run) order.
    assert_eq!(set.rows.len(), 3 * 2 * 2 * 20);
    assert_eq!(
        (
            set.rows[0].subject.as_str(),
            set.rows[0].background.as_str()
        ),
        ("gzip-like", "mcf-like")
    );
    for w in &set.rows {
        assert!((w.instructions - 10_000.0).abs() < 1e-6);
        assert!((w.pr - w.solo_cycles / w.corun_cycles).abs() < 1e-12);
        assert!(w.pr > 0.1 && w.pr < 1.2, "{w:?}");
        // The subject's instructions per co-run cycle are its window's instructions over time.
        assert!((w.subj[0] - w.instructions / w.corun_cycles).abs() < 1e-9 * w.subj[0]);
    }
    // The windows of one run add up to the run as the thesis's pairwise protocol measures it:
    // the PR of all 200,000 instructions is total solo cycles over total co-run cycles. Compare
    // with the pair protocol's PR of the same subject stream beside another stream of the same
    // background profile (single-phase, so statistically the same).
    let m = load_machine("northwood", &[]).unwrap();
    let ws = profiles(&names);
    let p = Protocol {
        seed: 7,
        warmup_instructions: 20_000,
        measure_instructions: 200_000,
        quantum_cycles: u64::MAX / 4,
        timeshare_rounds: 1,
        refill_only: false,
    };
    let cpus =
        smtsched_uarch::protocol::placement_cpus(&m, smtsched_model::Placement::Siblings).unwrap();
    let s0 = solo(&m, &ws[0], 0, cpus[0], &p).unwrap();
    let s1 = solo(&m, &ws[1], 0, cpus[0], &p).unwrap();
    let whole = pair(
        &m,
        &ws[0],
        &ws[1],
        smtsched_model::Placement::Siblings,
        &p,
        [&s0, &s1],
    )
    .unwrap();
    let run0: Vec<_> = set
        .rows
        .iter()
        .filter(|w| w.subject == "gzip-like" && w.background == "mcf-like" && w.run == 0)
        .collect();
    let solo_total: f64 = run0.iter().map(|w| w.solo_cycles).sum();
    let corun_total: f64 = run0.iter().map(|w| w.corun_cycles).sum();
    // Interpolating samples every 1000 cycles costs a little at the two ends.
    assert!((solo_total - s0.elapsed_cycles()).abs() < 1e-3 * solo_total);
    // The pair protocol runs the background from its own warm-up; the windows' run starts both
    // together, so the two agree closely but not to the cycle.
    let pr_windows = solo_total / corun_total;
    assert!(
        (pr_windows - whole.pr[0]).abs() < 0.02,
        "{pr_windows} vs {}",
        whole.pr[0]
    );
}

#[test]
fn results_do_not_depend_on_the_number_of_threads() {
    let names = ["gzip-like", "swim-like", "crafty-like"];
    let a = windows_on(1, &names);
    let b = windows_on(3, &names);
    assert_eq!(to_csv(&a), to_csv(&b));
    // And the CSV reads back to the same windows.
    assert_eq!(parse_csv(&to_csv(&a), "x").unwrap(), a);
}

#[test]
fn fixed_point_matches_floating_point_on_real_windows() {
    let set = windows_on(
        2,
        &[
            "gzip-like",
            "mcf-like",
            "vortex-like",
            "swim-like",
            "art-like",
        ],
    );
    let trained = train(
        &set,
        "sim",
        &parse_features("all").unwrap(),
        SelectionRule::PValue { alpha: 0.05 },
        "t",
    )
    .unwrap();
    assert!(trained.selection.last.r_squared > 0.5);
    for model in [LinearModel::thesis_northwood(), trained.model] {
        let (float, fixed) = predict(&model, &set, "sim").unwrap();
        let worst = float
            .iter()
            .zip(&fixed)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(worst <= 0.002, "{}: {worst}", model.name);
        // The result is in steps of 1/1024.
        assert!(fixed.iter().all(|f| (f * 1024.0).fract() == 0.0));
    }
}
