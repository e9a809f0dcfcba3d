//! Policies and baselines, driven by a measured-matrix oracle whose PRs are chosen by hand, so
//! that the expected behaviour follows from the scheduler's definition alone.

use smtsched_model::{
    load_machine, CpuSet, MachineModel, PairRecord, Placement, PrMatrix, SoloRecord,
    PR_MATRIX_FORMAT,
};
use smtsched_os::oracle::MeasuredOracle;
use smtsched_os::policy::PolicyInputs;
use smtsched_os::runs::truth_for;
use smtsched_os::sim::{nice_to_ticks, Baseline, Estimator, OsSim, SimConfig};
use smtsched_os::taskset::{BlockSpec, TaskSetSpec, TaskSpec};
use smtsched_os::{Metrics, PolicyName};

/// A matrix where `pr(i, j)` is given for every ordered pair.
fn matrix(names: &[&str], pr: &dyn Fn(usize, usize) -> f64) -> PrMatrix {
    let n = names.len();
    let mut pairs = Vec::new();
    for a in 0..n {
        for b in a..n {
            pairs.push(PairRecord {
                a,
                b,
                pr_a: pr(a, b),
                pr_b: pr(b, a),
                counters_a: Default::default(),
                counters_b: Default::default(),
            });
        }
    }
    PrMatrix {
        format: PR_MATRIX_FORMAT.into(),
        source: "hand-made".into(),
        machine: "northwood".into(),
        placement: Placement::Siblings,
        settings: Default::default(),
        workloads: names.iter().map(|s| s.to_string()).collect(),
        solo: names
            .iter()
            .map(|s| SoloRecord {
                workload: s.to_string(),
                rate: 1.0,
                counters: Default::default(),
            })
            .collect(),
        pairs,
    }
}

fn task(w: &str, nice: i32) -> TaskSpec {
    TaskSpec {
        nice,
        run_seconds: 5.0,
        ..TaskSpec::new(w)
    }
}

/// A task set of `tasks` and nothing else.
fn set_of(tasks: Vec<TaskSpec>) -> TaskSetSpec {
    TaskSetSpec {
        name: "t".into(),
        tasks,
        groups: Vec::new(),
        devices: Vec::new(),
        clients: Vec::new(),
        profiles: Vec::new(),
    }
}

fn northwood() -> MachineModel {
    load_machine("northwood", &[]).unwrap()
}

fn run(
    m: &MachineModel,
    mx: &PrMatrix,
    set: &TaskSetSpec,
    policy: PolicyName,
    cfg: SimConfig,
) -> Metrics {
    let names: Vec<String> = set.tasks.iter().map(|t| t.workload.clone()).collect();
    let oracle = MeasuredOracle::new(m.clone(), mx.clone(), &names).unwrap();
    let inputs = PolicyInputs {
        truth: Some(truth_for(m, &oracle, set, &cfg)),
        ..PolicyInputs::default()
    };
    OsSim::new(m, &oracle, set, policy.build(&inputs).unwrap(), cfg)
        .unwrap()
        .run()
}

fn config(baseline: Baseline, seconds: f64, cpus: &str, seed: u64) -> SimConfig {
    let mut c = SimConfig::new(baseline, seconds, seed);
    c.cpus = Some(CpuSet::parse(cpus).unwrap());
    c.estimator = Estimator::Perfect;
    c.stagger_s = 1.0;
    c
}

#[test]
fn time_slices_follow_nice_to_ticks() {
    // Two CPU-bound tasks on one logical CPU: each epoch gives them NICE_TO_TICKS(nice) ticks,
    // 6 at nice 0 and 2 at nice 15, so CPU time splits 6:2.
    assert_eq!(
        (
            nice_to_ticks(0),
            nice_to_ticks(3),
            nice_to_ticks(7),
            nice_to_ticks(11),
            nice_to_ticks(15)
        ),
        (6, 5, 4, 3, 2)
    );
    let m = northwood();
    let mx = matrix(&["a", "b"], &|_, _| 0.5);
    let set = set_of(vec![task("a", 0), task("b", 15)]);
    let r = run(
        &m,
        &mx,
        &set,
        PolicyName::Naive,
        config(Baseline::Linux24, 200.0, "2", 1),
    );
    let (a, b) = (r.per_bench[0].cpu_share, r.per_bench[1].cpu_share);
    assert!((a / b - 3.0).abs() < 0.05, "shares {a} / {b}");
    // Alone on a core each runs at full speed: PR = solo time / run time = its CPU share.
    assert!(
        (r.per_bench[0].pr.unwrap() - 0.75).abs() < 0.03,
        "{:?}",
        r.per_bench[0].pr
    );
}

/// For every moment of the timeline, the CPUs running something.
fn occupancy(m: &Metrics) -> Vec<Vec<bool>> {
    let mut cur = vec![false; 4];
    let mut out = Vec::new();
    for s in &m.timeline {
        cur[s.cpu] = s.to.is_some();
        out.push(cur.clone());
    }
    out
}

#[test]
fn basic_never_leaves_a_package_idle_while_two_tasks_share_the_other() {
    // Two tasks that keep blocking and waking on 2 packages x 2 threads (CPUs 0,1 | 2,3).
    let m = northwood();
    let mx = matrix(&["a", "b"], &|_, _| 0.6);
    let mut set = set_of(vec![task("a", 0), task("b", 0)]);
    for t in &mut set.tasks {
        t.block = Some(BlockSpec {
            run_ms: 7.0,
            wait_ms: 3.0,
        });
    }
    let shared_while_idle = |policy, baseline| {
        let mut c = config(baseline, 60.0, "0-3", 3);
        c.record_timeline = true;
        let r = run(&m, &mx, &set, policy, c);
        assert!(r.timeline.len() > 1000, "the tasks block and wake often");
        occupancy(&r)
            .iter()
            .filter(|o| (o[0] && o[1] && !o[2] && !o[3]) || (o[2] && o[3] && !o[0] && !o[1]))
            .count()
    };
    assert_eq!(shared_while_idle(PolicyName::Basic, Baseline::Linux24), 0);
    // The present-day baseline wakes tasks onto fully idle cores first, too.
    assert_eq!(shared_while_idle(PolicyName::Naive, Baseline::Modern), 0);
}

#[test]
fn fair_gives_a_task_that_suffers_more_cpu_time() {
    // x runs at PR 0.3 beside anything, y at 0.9. Four tasks on one package (two CPUs):
    // fair charges x 0.3/0.6 = 0.5 of a tick per tick and y 0.9/0.6 = 1.5, so x gets more time.
    let m = northwood();
    let mx = matrix(&["x", "y"], &|i, _| if i == 0 { 0.3 } else { 0.9 });
    let set = set_of(vec![task("x", 0), task("x", 0), task("y", 0), task("y", 0)]);
    let share = |policy| {
        let r = run(
            &m,
            &mx,
            &set,
            policy,
            config(Baseline::Linux24, 300.0, "2-3", 1),
        );
        (
            r.per_bench[0].cpu_share + r.per_bench[1].cpu_share,
            r.per_bench[2].cpu_share + r.per_bench[3].cpu_share,
        )
    };
    let (x, y) = share(PolicyName::Naive);
    assert!((x / y - 1.0).abs() < 0.05, "naive shares equally: {x} {y}");
    let (x, y) = share(PolicyName::Fair);
    assert!(x > 1.3 * y, "fair: {x} vs {y}");
}

#[test]
fn optimal_is_never_beaten_on_small_sets() {
    // Pairings matter a lot: a and c help each other, b and d too, every other pair is poor.
    // Whenever a better co-schedule exists, optimal must find it; when every equal-share schedule
    // is the same (three tasks on two CPUs), others may tie with it.
    let m = northwood();
    let good =
        |i: usize, j: usize| (i.min(j), i.max(j)) == (0, 2) || (i.min(j), i.max(j)) == (1, 3);
    let mx = matrix(&["a", "b", "c", "d"], &|i, j| {
        if good(i, j) {
            0.8
        } else {
            0.45
        }
    });
    for set in [
        vec!["a", "b", "c", "d"],
        vec!["a", "b", "c"],
        vec!["a", "b", "c", "d", "a"],
    ] {
        let set = set_of(set.iter().map(|w| task(w, 0)).collect());
        let best = run(
            &m,
            &mx,
            &set,
            PolicyName::Optimal,
            config(Baseline::Linux24, 600.0, "2-3", 2),
        )
        .summary()
        .system_speedup
        .expect("every task completes runs");
        for p in [
            PolicyName::Naive,
            PolicyName::Basic,
            PolicyName::Tryhard,
            PolicyName::Plan,
            PolicyName::Ipc,
            PolicyName::Sos,
        ] {
            let s = run(&m, &mx, &set, p, config(Baseline::Linux24, 600.0, "2-3", 2))
                .summary()
                .system_speedup
                .expect("every task completes runs");
            // Realising the schedule through goodness costs a few extra context switches, so a
            // policy that happens on the same co-schedule may edge ahead by a little.
            assert!(
                s <= best * 1.02,
                "{p} {s} beats optimal {best} on {} tasks",
                set.tasks.len()
            );
        }
    }
}

#[test]
fn identical_seeds_give_identical_timelines() {
    let m = northwood();
    let mx = matrix(&["a", "b", "c"], &|i, j| {
        0.5 + 0.1 * ((i + 2 * j) % 3) as f64
    });
    let mut set = set_of(vec![task("a", 0), task("b", 5), task("c", 0)]);
    set.tasks[1].block = Some(BlockSpec {
        run_ms: 30.0,
        wait_ms: 5.0,
    });
    let timeline = |seed| {
        let mut c = config(Baseline::Linux24, 30.0, "0-3", seed);
        c.record_timeline = true;
        let r = run(&m, &mx, &set, PolicyName::Tryhard, c);
        serde_json::to_string(&r.timeline).unwrap()
    };
    assert_eq!(timeline(7), timeline(7));
    assert_ne!(timeline(7), timeline(8));
}

#[test]
fn estimating_every_tick_costs_what_it_is_told() {
    // Two tasks, each alone on a CPU of its own package: nothing else can change their speed,
    // so an estimate costing 2% of a tick on every tick costs 2% of their PR.
    let m = northwood();
    let mx = matrix(&["a", "b"], &|_, _| 0.6);
    let set = set_of(vec![task("a", 0), task("b", 0)]);
    let speedup = |cost| {
        let mut c = config(Baseline::Linux24, 300.0, "0,2", 1);
        c.estimate_cost_ticks = cost;
        run(&m, &mx, &set, PolicyName::Fair, c)
            .summary()
            .system_speedup
            .expect("every task completes runs")
    };
    let (free, paid) = (speedup(0.0), speedup(0.02));
    assert!((free - 2.0).abs() < 0.01, "{free}");
    assert!(
        ((free - paid) / free - 0.02).abs() < 0.003,
        "{free} vs {paid}"
    );
}

#[test]
fn a_forking_family_alone_runs_at_full_speed_and_counts_its_runs() {
    // A `make` forking 20 children of 0.1 s one after another: one run = 2 s of work alone. On a
    // CPU of its own it finishes a run every ~2 s (plus fork and switch costs), so its PR is ~1.
    // Through three fork levels (make → sh → gcc → cc1) the processes between take no time, so
    // the runs are the same and each worker costs three forks.
    for depth in [1, 3] {
        let m = northwood();
        let mx = matrix(&["cc"], &|_, _| 0.5);
        let mut t = task("cc", 0);
        t.fork = Some(smtsched_os::taskset::ForkSpec {
            children: 20,
            child_seconds: 0.1,
            depth,
        });
        let set = set_of(vec![t]);
        let r = run(
            &m,
            &mx,
            &set,
            PolicyName::Naive,
            config(Baseline::Linux24, 60.0, "2", 1),
        );
        let b = &r.per_bench[0];
        assert!(
            b.runs >= 25 && b.runs <= 30,
            "depth {depth}: {} runs in 59 s",
            b.runs
        );
        let pr = b.pr.unwrap();
        assert!(pr > 0.97 && pr <= 1.0, "depth {depth}: PR {pr}");
        assert!(
            r.forks / u64::from(depth) >= 20 * b.runs as u64,
            "depth {depth}: {} forks, {} runs",
            r.forks,
            b.runs
        );
    }
}

/// A `make` ("cc") forking 1000 children of `child_seconds` one after another, beside `hogs`
/// CPU-bound tasks ("hog").
fn make_beside_hogs(child_seconds: f64, hogs: usize) -> TaskSetSpec {
    let mut make = task("cc", 0);
    make.fork = Some(smtsched_os::taskset::ForkSpec {
        children: 1000,
        child_seconds,
        depth: 1,
    });
    let mut tasks = vec![make];
    tasks.extend((0..hogs).map(|_| task("hog", 0)));
    set_of(tasks)
}

/// Every pair at PR 0.5: what is tested is CPU time, not interference.
fn make_and_hog_matrix() -> PrMatrix {
    matrix(&["cc", "hog"], &|_, _| 0.5)
}

#[test]
fn a_family_of_short_children_keeps_its_share_because_exiting_children_give_back_their_slice() {
    // Linux 2.4 splits the parent's slice with each child at fork (do_fork) and gives the child's
    // remainder back to the parent when it reaps it (release_task, capped at MAX_COUNTER = 20
    // ticks). A `make` forking 5 ms children one after another against a CPU hog on one logical
    // CPU: the hog gets its 6 ticks an epoch; the family at least as many (forks and exits move
    // slice between its members without losing any below the cap, and each recalculation gives
    // the parent, asleep in wait(), 6 more on top of half what it kept), at most the parent's
    // cap of 20 plus the 6 its child is given: a share from 1/2 to 26/32. Without the give-back
    // each fork halves what the family has left and the hog gets most of the CPU.
    let set = make_beside_hogs(0.005, 1);
    let cfg = config(Baseline::Linux24, 120.0, "2", 1);
    let r = run(
        &northwood(),
        &make_and_hog_matrix(),
        &set,
        PolicyName::Naive,
        cfg,
    );
    let family = r.per_bench[0].cpu_share;
    let hog = r.per_bench[1].cpu_share;
    assert!(
        family > 0.5 && family < 26.0 / 32.0 && (family + hog - 1.0).abs() < 0.01,
        "family {family}, hog {hog}"
    );
}

#[test]
fn a_make_runs_to_fork_each_child_and_the_child_starts_on_its_cpu() {
    // Linux 2.4: the parent forks while it runs, and the child inherits its CPU
    // (`p->processor = current->processor`) and with it goodness's same-CPU bonus. A `make` of
    // short children beside two hogs on two sibling CPUs: the make is switched in once before
    // every child (to reap the last and fork the next), and the child's first run is on the
    // CPU the make just ran on (unless the other CPU rescheduled at that very moment).
    let set = make_beside_hogs(0.02, 2);
    let mut cfg = config(Baseline::Linux24, 30.0, "2-3", 1);
    cfg.record_timeline = true;
    let r = run(
        &northwood(),
        &make_and_hog_matrix(),
        &set,
        PolicyName::Naive,
        cfg,
    );
    // The make and its children carry its name; the make has the lowest pid.
    let make_pid = r
        .timeline
        .iter()
        .filter(|s| s.to_name.as_deref() == Some("cc"))
        .filter_map(|s| s.to)
        .min()
        .expect("the family runs");
    let hogs: Vec<u32> = r
        .timeline
        .iter()
        .filter(|s| s.to_name.as_deref() == Some("hog"))
        .filter_map(|s| s.to)
        .collect();
    let mut make_cpu = None;
    let mut seen = std::collections::BTreeSet::new();
    let (mut children, mut on_make_cpu) = (0, 0);
    for s in &r.timeline {
        let Some(to) = s.to else { continue };
        if to == make_pid {
            make_cpu = Some(s.cpu);
        } else if !hogs.contains(&to) && seen.insert(to) {
            children += 1;
            on_make_cpu += (Some(s.cpu) == make_cpu) as u32;
        }
    }
    let make_runs = r.timeline.iter().filter(|s| s.to == Some(make_pid)).count();
    assert!(children > 100, "{children} children");
    assert!(
        make_runs >= children,
        "make ran {make_runs} times for {children} children"
    );
    assert!(
        on_make_cpu as f64 >= 0.95 * children as f64,
        "{on_make_cpu} of {children} children started on the make's CPU"
    );
}
