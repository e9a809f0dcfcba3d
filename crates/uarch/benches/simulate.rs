//! Simulator speed in simulated instructions per second (criterion reports the throughput).
//! Run with `cargo bench -p smtsched-uarch`; `smtsched bench` gives the same figure without
//! criterion.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use smtsched_model::{load_machine, load_workload};
use smtsched_uarch::protocol::{placement_cpus, run_together, Protocol};
use smtsched_uarch::{Window, Workload};

fn simulate(c: &mut Criterion) {
    let m = load_machine("northwood", &[]).unwrap();
    let cpus = placement_cpus(&m, smtsched_model::Placement::Siblings).unwrap();
    let proto = Protocol {
        seed: 1,
        warmup_instructions: 100_000,
        measure_instructions: 400_000,
        quantum_cycles: 1 << 40,
        timeshare_rounds: 1,
        refill_only: false,
    };
    let mut group = c.benchmark_group("northwood-siblings");
    for pair in [["swim-like", "mcf-like"], ["gzip-like", "mesa-like"]] {
        let a = load_workload(pair[0], &[]).unwrap();
        let b = load_workload(pair[1], &[]).unwrap();
        let threads: [(&dyn Workload, u32); 2] = [(&a, cpus[0]), (&b, cpus[1])];
        // The work is deterministic, so one run tells how many instructions every run simulates.
        let n = run_together(&m, &threads, &proto, Window::Instructions)
            .unwrap()
            .instructions_simulated;
        group.throughput(Throughput::Elements(n));
        group.bench_function(format!("{}+{}", pair[0], pair[1]), |bench| {
            bench.iter(|| run_together(&m, &threads, &proto, Window::Instructions).unwrap())
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = simulate
}
criterion_main!(benches);
