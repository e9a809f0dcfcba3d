use smtsched_model::*;
use smtsched_uarch::*;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let m = load_machine(&args[1], &[]).unwrap();
    let n: u64 = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(4_000_000);
    println!("{:<12} {:>6} {:>7} {:>8} {:>8} {:>7} {:>6}", "workload", "IPC", "L1D%", "L2MPKI", "TCMPKI", "brMPKI", "stall%");
    for w in args[2].split(',') {
        let p = load_workload(w, &[]).unwrap();
        let plans = vec![ThreadPlan{ source: Box::new(SyntheticStream::new(&p, 42, 0)), cpu: 0, data_space: 0, code_space: 0, warmup_instructions: n/2, measure_instructions: n }];
        let r = Simulation::new(&m, plans, RunOptions{window: Window::Instructions, quantum_cycles: 24_000_000}).unwrap().run();
        let c = r.threads[0].window; let k = c.instructions as f64 / 1000.0;
        println!("{:<12} {:>6.3} {:>7.2} {:>8.2} {:>8.2} {:>7.2} {:>6.1}", p.name.trim_end_matches("-like"), r.threads[0].ipc(), 100.0*c.l1d_miss_ratio(), c.l2_misses as f64/k, c.l1i_misses as f64/k, c.branch_mispredicts as f64/k, 100.0*c.stall_cycles as f64/c.cycles);
    }
}
