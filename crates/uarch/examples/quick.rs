use smtsched_model::*;
use smtsched_uarch::*;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let m = load_machine(&args[1], &[]).unwrap();
    let ws: Vec<WorkloadProfile> = args[2].split(',').map(|w| load_workload(w, &[]).unwrap()).collect();
    let cpus: Vec<u32> = args[3].split(',').map(|c| c.parse().unwrap()).collect();
    let n: u64 = args.get(4).map(|s| s.parse().unwrap()).unwrap_or(2_000_000);
    let plans = ws.iter().zip(&cpus).enumerate().map(|(i,(w,&c))| ThreadPlan{
        source: Box::new(SyntheticStream::new(w, 42+i as u64, 0)), cpu: c, data_space: i as u32, code_space: i as u32,
        warmup_instructions: n/2, measure_instructions: n }).collect();
    let t = std::time::Instant::now();
    let r = Simulation::new(&m, plans, RunOptions{window: Window::Instructions, quantum_cycles: 24_000_000}).unwrap().run();
    let el = t.elapsed().as_secs_f64();
    for (i, th) in r.threads.iter().enumerate() {
        let c = th.window;
        println!("t{i}: ipc {:.3} cycles {:.0} l1d {:.3} l2 {:.3} ({} miss) l1i {} / {} stall {} ", th.ipc(), th.elapsed_cycles(), c.l1d_miss_ratio(), c.l2_miss_ratio(), c.l2_misses, c.l1i_misses, c.l1i_accesses, c.stall_cycles);
    }
    let total = r.instructions_simulated;
    println!("{:.1} M instr/s", total as f64 / el / 1e6);
}
