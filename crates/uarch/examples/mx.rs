use smtsched_model::*;
use smtsched_uarch::*;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let m = load_machine(&args[1], &[]).unwrap();
    let names = expand_workload_list(&args[2]);
    let ps: Vec<WorkloadProfile> = names.iter().map(|n| load_workload(n, &[]).unwrap()).collect();
    let n: u64 = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(2_000_000);
    let placement: Placement = args.get(4).map(|s| s.parse().unwrap()).unwrap_or(Placement::Siblings);
    let proto = Protocol{seed: 42, warmup_instructions: n/2, measure_instructions: n, quantum_cycles: 24_000_000, timeshare_rounds: 2};
    let t = std::time::Instant::now();
    let mx = protocol::matrix(&m, &ps, placement, &proto, &|| {}).unwrap();
    eprintln!("{:.1}s", t.elapsed().as_secs_f64());
    let k = ps.len();
    print!("{:>9}", "");
    for w in &mx.workloads { print!("{:>6}", &w[..w.len().min(5)]); }
    println!();
    for i in 0..k { print!("{:>9}", &mx.workloads[i][..mx.workloads[i].len().min(8)]); for j in 0..k { print!("{:>6.2}", mx.pr(i,j).unwrap()); } println!(); }
    let sp: Vec<f64> = mx.pairs.iter().map(|p| p.pr_a + p.pr_b).collect();
    let selfm: Vec<f64> = mx.pairs.iter().filter(|p| p.a==p.b).map(|p| p.pr_a + p.pr_b).collect();
    let mean = sp.iter().sum::<f64>()/sp.len() as f64;
    let (mut mi, mut ma) = (f64::MAX, 0.0f64); let (mut imi, mut ima) = (0,0);
    for (i,&s) in sp.iter().enumerate() { if s<mi {mi=s; imi=i;} if s>ma {ma=s; ima=i;} }
    let p = |i: usize| format!("{}+{}", mx.workloads[mx.pairs[i].a], mx.workloads[mx.pairs[i].b]);
    println!("mean {:.3} min {:.3} ({}) max {:.3} ({}) self {:.3}", mean, mi, p(imi), ma, p(ima), selfm.iter().sum::<f64>()/selfm.len() as f64);
    let mut rowmean: Vec<(f64,String)> = (0..k).map(|i| ((0..k).map(|j| mx.pr(i,j).unwrap()).sum::<f64>()/k as f64, mx.workloads[i].clone())).collect();
    rowmean.sort_by(|a,b| a.0.partial_cmp(&b.0).unwrap());
    println!("row means (as subject): {}", rowmean.iter().map(|(v,n)| format!("{} {:.2}", n, v)).collect::<Vec<_>>().join(", "));
    let mut colmean: Vec<(f64,String)> = (0..k).map(|j| ((0..k).map(|i| mx.pr(i,j).unwrap()).sum::<f64>()/k as f64, mx.workloads[j].clone())).collect();
    colmean.sort_by(|a,b| a.0.partial_cmp(&b.0).unwrap());
    println!("col means (as background): {}", colmean.iter().map(|(v,n)| format!("{} {:.2}", n, v)).collect::<Vec<_>>().join(", "));
}
