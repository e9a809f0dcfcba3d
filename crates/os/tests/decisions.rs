//! The decision interface: the present-day baseline enforces affinity, weights, core groups and
//! gang turns as Linux would, and a policy's decisions depend on nothing but its views — the
//! same policy object gives the same decisions when its recorded views are played back to it.

use smtsched_model::{load_machine, CpuSet, MachineModel};
use smtsched_os::metrics::Metrics;
use smtsched_os::oracle::{NoInterference, SimulatedOracle};
use smtsched_os::policy::{
    Decisions, Needs, PeriodView, Policy, PolicyInputs, PolicyName, TaskKey, Weight, ALL_POLICIES,
};
use smtsched_os::runs::truth_for;
use smtsched_os::sim::{Baseline, Estimator, OsSim, SimConfig};
use smtsched_os::taskset::{TaskSetSpec, TaskSpec};

fn northwood() -> MachineModel {
    load_machine("northwood", &[]).unwrap()
}

fn set(names: &[&str]) -> TaskSetSpec {
    TaskSetSpec {
        name: "t".into(),
        tasks: names
            .iter()
            .map(|n| TaskSpec {
                name: n.to_string(),
                run_seconds: 2.0,
                ..TaskSpec::new("gzip-like")
            })
            .collect(),
        groups: Vec::new(),
        devices: Vec::new(),
        clients: Vec::new(),
        profiles: Vec::new(),
    }
}

fn config(seconds: f64, cpus: &str) -> SimConfig {
    let mut c = SimConfig::new(Baseline::Modern, seconds, 1);
    c.cpus = Some(CpuSet::parse(cpus).unwrap());
    c.stagger_s = 1.0;
    c.estimator = Estimator::Perfect;
    c.record_periods = true;
    c
}

/// Runs `policy` with every task at its solo speed (CPU-share questions).
fn run_flat(set: &TaskSetSpec, policy: Box<dyn Policy>, cfg: SimConfig) -> Metrics {
    let m = northwood();
    OsSim::new(&m, &NoInterference, set, policy, cfg)
        .unwrap()
        .run()
}

/// A policy that gives every view the same decisions, built from the task keys it sees.
struct Fixed<F: FnMut(&PeriodView) -> Decisions + Send> {
    decide: F,
    needs: Needs,
}

impl<F: FnMut(&PeriodView) -> Decisions + Send> Policy for Fixed<F> {
    fn name(&self) -> &str {
        "fixed"
    }
    fn needs(&self) -> Needs {
        self.needs
    }
    fn decide(&mut self, view: &PeriodView) -> Decisions {
        (self.decide)(view)
    }
}

fn fixed(
    needs: Needs,
    decide: impl FnMut(&PeriodView) -> Decisions + Send + 'static,
) -> Box<dyn Policy> {
    Box::new(Fixed { decide, needs })
}

/// The key of the task labelled `label` in a view.
fn key(view: &PeriodView, label: &str) -> TaskKey {
    view.tasks.iter().find(|t| t.label == label).unwrap().key
}

/// No task ever ran beside another on its core, after the first period (the one before any
/// decision).
fn assert_never_shared(m: &Metrics) {
    for p in &m.periods[1..] {
        for t in &p.view.tasks {
            assert!(
                t.corunners.is_empty(),
                "period {}: {:?}",
                p.view.index,
                t.corunners
            );
        }
    }
}

fn share(m: &Metrics, i: usize) -> f64 {
    m.per_bench[i].cpu_share
}

#[test]
fn weights_divide_one_cpu_in_their_ratio() {
    // Two CPU-bound tasks on one CPU with weights 2048 and 1024: EEVDF gives CPU time in the
    // ratio of the weights, 2/3 and 1/3.
    let policy = fixed(Needs::default(), |v| {
        let mut d = Decisions::none();
        d.task_mut(key(v, "a")).weight = Some(Weight(2048));
        d.task_mut(key(v, "b")).weight = Some(Weight(1024));
        d
    });
    let m = run_flat(&set(&["a", "b"]), policy, config(60.0, "2"));
    assert!((share(&m, 0) - 2.0 / 3.0).abs() < 0.01, "{}", share(&m, 0));
    assert!((share(&m, 1) - 1.0 / 3.0).abs() < 0.01, "{}", share(&m, 1));
}

#[test]
fn affinity_keeps_tasks_on_their_cpus() {
    // Four tasks on two packages (CPUs 0-3); the policy pins a and b to CPU 0 and c, d to CPUs
    // 2-3. No view ever shows a or b anywhere else, and CPU 1 stays unused by them.
    let policy = fixed(Needs::default(), |v| {
        let mut d = Decisions::none();
        for (label, cpus) in [("a", "0"), ("b", "0"), ("c", "2-3"), ("d", "2-3")] {
            d.task_mut(key(v, label)).affinity = Some(CpuSet::parse(cpus).unwrap());
        }
        d
    });
    let m = run_flat(&set(&["a", "b", "c", "d"]), policy, config(20.0, "0-3"));
    // From the second period on (the first ran before any decision).
    for p in &m.periods[1..] {
        for t in &p.view.tasks {
            let allowed = if t.label == "a" || t.label == "b" {
                "0"
            } else {
                "2-3"
            };
            assert!(
                t.cpus.is_subset(&CpuSet::parse(allowed).unwrap()),
                "period {}: {} ran on {}",
                p.view.index,
                t.label,
                t.cpus
            );
        }
    }
    // a and b share CPU 0; c and d have a CPU each.
    assert!((share(&m, 0) - 0.5).abs() < 0.02, "{}", share(&m, 0));
    assert!((share(&m, 2) - 1.0).abs() < 0.02, "{}", share(&m, 2));
}

#[test]
fn core_groups_keep_tasks_of_different_groups_off_sibling_threads() {
    // Two tasks in different core groups on one core of two siblings (CPUs 2-3): they never run
    // at the same time, so together they use one CPU, half each, and the other sibling stands
    // forced idle about as long as the window.
    let policy = fixed(
        Needs {
            core_groups: true,
            ..Needs::default()
        },
        |v| {
            let mut d = Decisions::none();
            d.task_mut(key(v, "a")).core_group = Some(1);
            d.task_mut(key(v, "b")).core_group = Some(2);
            d
        },
    );
    let m = run_flat(&set(&["a", "b"]), policy, config(30.0, "2-3"));
    assert_never_shared(&m);
    assert!((share(&m, 0) - 0.5).abs() < 0.02, "{}", share(&m, 0));
    assert!((share(&m, 1) - 0.5).abs() < 0.02, "{}", share(&m, 1));
    let forced = m.forced_idle_cycles / (m.window.1 - m.window.0);
    assert!(forced > 0.9, "forced idle {forced}");
}

#[test]
fn a_gang_turn_gives_its_members_the_cpu() {
    // Three tasks on one CPU; the gang is {a}: b and c run with SCHED_IDLE's weight 3, so a gets
    // 1024 / (1024 + 3 + 3) of the CPU.
    let policy = fixed(Needs::default(), |v| {
        let mut d = Decisions::none();
        d.gang = Some([key(v, "a")].into_iter().collect());
        d
    });
    let m = run_flat(&set(&["a", "b", "c"]), policy, config(60.0, "2"));
    let expected = 1024.0 / 1030.0;
    assert!((share(&m, 0) - expected).abs() < 0.01, "{}", share(&m, 0));
}

#[test]
fn group_weights_share_out_among_their_tasks() {
    // cgroup weights 200 and 100 on one CPU: group x's one task gets 2/3; group y's two tasks
    // 1/6 each.
    let mut s = set(&["x1", "y1", "y2"]);
    s.groups = vec![
        smtsched_os::taskset::GroupSpec {
            name: "x".into(),
            weight: 200,
        },
        smtsched_os::taskset::GroupSpec {
            name: "y".into(),
            weight: 100,
        },
    ];
    s.tasks[0].group = Some("x".into());
    s.tasks[1].group = Some("y".into());
    s.tasks[2].group = Some("y".into());
    let m = run_flat(&s, Box::new(smtsched_os::policy::Naive), config(60.0, "2"));
    for (i, want) in [(0, 2.0 / 3.0), (1, 1.0 / 6.0), (2, 1.0 / 6.0)] {
        assert!((share(&m, i) - want).abs() < 0.01, "{i}: {}", share(&m, i));
    }
}

/// Five SPEC stand-ins, one with a trust label, and a simulated oracle for them.
fn replay_set() -> (MachineModel, TaskSetSpec, SimulatedOracle) {
    let m = northwood();
    let names: Vec<String> = [
        "gzip-like",
        "mcf-like",
        "art-like",
        "swim-like",
        "mesa-like",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut s = TaskSetSpec::of_workloads(&names);
    for t in &mut s.tasks {
        t.run_seconds = 2.0;
    }
    s.tasks[4].trust = Some("tenant".into());
    let profiles = names
        .iter()
        .map(|n| smtsched_model::load_workload(n, &[]).unwrap())
        .collect();
    let oracle = SimulatedOracle::new(m.clone(), profiles, 1, 200_000, 400_000);
    (m, s, oracle)
}

/// Runs a policy in the simulator, then plays its recorded views (through JSON, as a file would
/// carry them) back to a fresh object of the same policy: the decisions must be the same.
fn replays_identically(
    name: PolicyName,
    cpus: &str,
    world: &(MachineModel, TaskSetSpec, SimulatedOracle),
) {
    let (m, s, oracle) = world;
    let cfg = config(8.0, cpus);
    let inputs = PolicyInputs {
        truth: Some(truth_for(m, oracle, s, &cfg)),
        ..PolicyInputs::default()
    };
    let metrics = OsSim::new(m, oracle, s, name.build(&inputs).unwrap(), cfg)
        .unwrap()
        .run();
    assert!(metrics.periods.len() >= 70, "{}", metrics.periods.len());
    let recorded =
        serde_json::to_string(&metrics.periods.iter().map(|p| &p.view).collect::<Vec<_>>())
            .unwrap();
    let views: Vec<PeriodView> = serde_json::from_str(&recorded).unwrap();
    let mut again = name.build(&inputs).unwrap();
    let mut changed = 0;
    for (p, v) in metrics.periods.iter().zip(&views) {
        let d = again.decide(v);
        assert_eq!(d, p.decisions, "{name}: period {}", v.index);
        changed += usize::from(d != Decisions::none());
    }
    if name != PolicyName::Naive {
        assert!(
            changed > 0,
            "{name} decided nothing in {} periods",
            views.len()
        );
    }
}

#[test]
fn every_decision_policy_decides_from_its_views_alone() {
    // On one core of two siblings; the policies that place tasks on cores or cache domains,
    // which decide nothing there, on two.
    let world = replay_set();
    for &name in ALL_POLICIES {
        let placing = [PolicyName::SmtDefault, PolicyName::Basic, PolicyName::Di].contains(&name);
        replays_identically(name, if placing { "0-3" } else { "2-3" }, &world);
    }
}

#[test]
fn smt_default_gives_each_task_a_core_of_its_own_while_they_fit() {
    // Two tasks on two cores of two siblings each (northwood, CPUs 0-3): after the first
    // decision they never share a core, and each has a CPU to itself.
    let policy = PolicyName::SmtDefault
        .build(&PolicyInputs::default())
        .unwrap();
    let m = run_flat(&set(&["a", "b"]), policy, config(10.0, "0-3"));
    assert_never_shared(&m);
    for p in &m.periods[1..] {
        if p.view.runnable().count() == 2 {
            let cores: Vec<_> = p
                .decisions
                .tasks
                .values()
                .map(|d| d.affinity.clone().unwrap())
                .collect();
            assert_eq!(cores.len(), 2);
            assert_ne!(cores[0], cores[1]);
        }
    }
    assert!((share(&m, 0) - 1.0).abs() < 0.02 && (share(&m, 1) - 1.0).abs() < 0.02);
}

#[test]
fn di_spreads_cache_intensity_over_the_cache_domains() {
    // Northwood's L2 is per core: two domains, CPUs 0-1 and 2-3. Intensities 9, 7, 2, 1: the
    // snake deals 9 -> domain 0, 7 -> 1, 2 -> 1, 1 -> 0, so each domain gets 10 and 9.
    let inputs = PolicyInputs {
        cache: smtsched_os::policy::balance_set::CacheInputs {
            intensity: [("w9", 9.0), ("w7", 7.0), ("w2", 2.0), ("w1", 1.0)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            ..Default::default()
        },
        ..PolicyInputs::default()
    };
    let policy = PolicyName::Di.build(&inputs).unwrap();
    let m = run_flat(&set(&["w9", "w7", "w2", "w1"]), policy, config(10.0, "0-3"));
    let last = m.periods.last().unwrap();
    let domain = |label: &str| {
        let k = key(&last.view, label);
        last.decisions.tasks[&k]
            .affinity
            .clone()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        [domain("w9"), domain("w7"), domain("w2"), domain("w1")],
        ["0-1", "2-3", "2-3", "0-1"]
    );
    for t in &last.view.tasks {
        assert!(t.cpus.is_subset(&CpuSet::parse(&domain(&t.label)).unwrap()));
    }
}

#[test]
fn a_task_woken_before_it_left_its_cpu_runs_in_one_place() {
    // Compute ~1 ms, wait 0 ms: it wakes in the same instant it blocks, still on its CPU. It must
    // stay one task on one CPU: its share of CPU time can never pass 1.
    let mut s = set(&["sleepless", "busy"]);
    s.tasks[0].block = Some(smtsched_os::taskset::BlockSpec {
        run_ms: 1.0,
        wait_ms: 0.0,
    });
    let m = run_flat(
        &s,
        Box::new(smtsched_os::policy::Naive),
        config(10.0, "0-3"),
    );
    for i in 0..2 {
        assert!(share(&m, i) <= 1.0 + 1e-9, "task {i}: {}", share(&m, i));
    }
}

#[test]
fn core_sched_never_lets_two_trust_groups_share_a_core() {
    // Five tasks on two cores of two siblings, two trust labels (and untrusted-free tasks form a
    // third group): no view ever shows a task beside one of another group, balancing included.
    let mut s = set(&["a1", "a2", "b1", "b2", "plain"]);
    for (i, label) in [(0, "a"), (1, "a"), (2, "b"), (3, "b")] {
        s.tasks[i].trust = Some(label.into());
    }
    let policy = PolicyName::CoreSched
        .build(&PolicyInputs::default())
        .unwrap();
    let m = run_flat(&s, policy, config(30.0, "0-3"));
    for p in &m.periods[1..] {
        for t in &p.view.tasks {
            for c in &t.corunners {
                let other = p.view.task(c.task).unwrap();
                assert_eq!(
                    t.trust, other.trust,
                    "period {}: {} beside {}",
                    p.view.index, t.label, other.label
                );
            }
        }
    }
}
