//! Simulated samples are shared between the oracles of a process: an oracle built for another
//! task set that puts the same programs on the same CPUs gets the rates the first one simulated,
//! equal to what simulating the threads directly gives, and simulates nothing again.

use smtsched_model::{load_machine, load_workload, MachineModel, Override};
use smtsched_os::oracle::{Occupant, Oracle, SimulatedOracle};
use smtsched_os::samples::shared;
use smtsched_uarch::protocol::{run_together, solo, Protocol};
use smtsched_uarch::{Window, Workload};

const WARMUP: u64 = 100_000;
const MEASURE: u64 = 200_000;
/// A seed no other test of this process uses, so that every sample here starts unshared.
const SEED: u64 = 4242;
/// The tests read the process's sample counts, so they run one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn oracle(m: &MachineModel, names: &[&str]) -> SimulatedOracle {
    let profiles = names
        .iter()
        .map(|n| load_workload(n, &[]).unwrap())
        .collect();
    SimulatedOracle::new(m.clone(), profiles, SEED, WARMUP, MEASURE)
}

fn at(cpus: usize, placed: &[(usize, u32)]) -> Vec<Option<Occupant>> {
    let mut s = vec![None; cpus];
    for &(cpu, workload) in placed {
        s[cpu] = Some(Occupant { workload, phase: 0 });
    }
    s
}

#[test]
fn another_task_sets_oracle_reuses_the_samples_and_they_equal_a_direct_simulation() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let m = load_machine("northwood", &[]).unwrap();
    let cpus = m.logical_cpus() as usize;
    // gzip on CPU 2 and art on its sibling, CPU 3, in two task sets that number them apart.
    let first = oracle(&m, &["gzip-like", "art-like"]);
    let a = first.rates(&at(cpus, &[(2, 0), (3, 1)]));
    let before = shared().simulated();
    let second = oracle(&m, &["mcf-like", "gzip-like", "art-like"]);
    let b = second.rates(&at(cpus, &[(2, 1), (3, 2)]));
    assert_eq!(a, b);
    assert_eq!(
        shared().simulated(),
        before,
        "the second oracle simulated again"
    );

    // The definition: the two threads run together, each PR against its solo run.
    let proto = Protocol {
        seed: SEED,
        warmup_instructions: WARMUP,
        measure_instructions: MEASURE,
        quantum_cycles: u64::MAX / 4,
        timeshare_rounds: 1,
        refill_only: false,
    };
    let gzip = load_workload("gzip-like", &[]).unwrap();
    let art = load_workload("art-like", &[]).unwrap();
    let threads: [(&dyn Workload, u32); 2] = [(&gzip, 2), (&art, 3)];
    let together = run_together(&m, &threads, &proto, Window::Instructions).unwrap();
    for (i, w) in [&gzip, &art].into_iter().enumerate() {
        let alone = solo(&m, w, 0, 0, &proto).unwrap();
        let rate = a[2 + i].expect("a rate for the occupied CPU");
        assert_eq!(rate.ipc, together.threads[i].ipc());
        assert_eq!(rate.pr, together.threads[i].ipc() / alone.ipc());
    }
}

#[test]
fn a_machine_that_differs_in_one_field_is_simulated_anew() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let m = load_machine("northwood", &[]).unwrap();
    let slower = load_machine(
        "northwood",
        &["memory.latency_cycles=540".parse::<Override>().unwrap()],
    )
    .unwrap();
    let cpus = m.logical_cpus() as usize;
    let situation = at(cpus, &[(0, 0)]);
    let fast = oracle(&m, &["swim-like"]).rates(&situation);
    let before = shared().simulated();
    let slow = oracle(&slower, &["swim-like"]).rates(&situation);
    let after = shared().simulated();
    assert!(
        after.0 > before.0 && after.1 > before.1,
        "{before:?} -> {after:?}"
    );
    // swim streams from memory: twice the latency, a lower IPC.
    assert!(slow[0].unwrap().ipc < fast[0].unwrap().ipc);
}
