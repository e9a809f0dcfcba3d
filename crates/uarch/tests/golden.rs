//! Speed work must not change results: every preset machine runs every preset workload (solo, in
//! pairs, a full core and time-shared with periodic samples), and every counter of every run must
//! equal, bit for bit, the values recorded in `tests/golden/counters.json` by the simulator as it
//! was before the speed work began. A difference that a bug fix explains is recorded by
//! regenerating the file in the fix's commit:
//! `cargo test --release -p smtsched-uarch --test golden -- --ignored regenerate`.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use smtsched_model::{load_machine, load_workload, MachineModel, WorkloadProfile};
use smtsched_model::{MACHINE_PRESETS, WORKLOAD_PRESETS};
use smtsched_uarch::engine::{RunOptions, Simulation, ThreadPlan, Window};
use smtsched_uarch::{Sample, ThreadCounters, Workload};
use std::path::PathBuf;

const GOLDEN_FORMAT: &str = "smtsched-golden-counters-1";
const SEED: u64 = 7;
const WARMUP_INSTRUCTIONS: u64 = 20_000;
const MEASURE_INSTRUCTIONS: u64 = 80_000;
/// Short quanta so that a time-shared run switches threads many times.
const TIMESHARE_QUANTUM_CYCLES: u64 = 40_000;
const TIMESHARE_END_CYCLES: f64 = 400_000.0;
const SAMPLE_CYCLES: f64 = 50_000.0;

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Golden {
    format: String,
    runs: Vec<RunRecord>,
}

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct RunRecord {
    name: String,
    instructions_simulated: u64,
    threads: Vec<ThreadRecord>,
}

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct ThreadRecord {
    window: ThreadCounters,
    start_cycle: f64,
    end_cycle: f64,
    llc_lines: usize,
    samples: Vec<(f64, ThreadCounters)>,
}

/// One run: a name, the workloads with their logical CPUs, and how it is measured.
struct Case {
    name: String,
    machine: usize,
    threads: Vec<(usize, u32)>,
    window: Window,
    quantum_cycles: u64,
    sample_cycles: Option<f64>,
}

fn cases(machines: &[MachineModel], workloads: &[WorkloadProfile]) -> Vec<Case> {
    let n = workloads.len();
    let instructions = |machine, name: String, threads| Case {
        name,
        machine,
        threads,
        window: Window::Instructions,
        quantum_cycles: 1 << 40,
        sample_cycles: None,
    };
    let mut out = Vec::new();
    for (mi, m) in machines.iter().enumerate() {
        let last_core = m.cores() - 1;
        // A pair's second CPU: the sibling if the core has one, else another core, else the
        // same CPU (time-shared).
        let partner = if m.topology.threads_per_core > 1 {
            m.cpu_at(last_core, 1)
        } else {
            m.cpu_at(last_core, 0)
        };
        let first = if m.topology.threads_per_core > 1 {
            m.cpu_at(last_core, 0)
        } else {
            m.cpu_at(0, 0)
        };
        for (wi, w) in workloads.iter().enumerate() {
            out.push(instructions(
                mi,
                format!("{}/solo/{}", m.name, w.name),
                vec![(wi, 0)],
            ));
            // Pairs far apart in the list, so that unlike workloads meet.
            let other = (wi + 7) % n;
            let threads = vec![(wi, first), (other, partner)];
            let mut case = instructions(
                mi,
                format!("{}/pair/{}+{}", m.name, w.name, workloads[other].name),
                threads,
            );
            if first == partner {
                case.window = Window::Cycles {
                    start: 0.0,
                    end: TIMESHARE_END_CYCLES,
                };
                case.quantum_cycles = TIMESHARE_QUANTUM_CYCLES;
            }
            out.push(case);
        }
        // Every context of the first core busy.
        let full: Vec<(usize, u32)> = (0..m.topology.threads_per_core)
            .map(|t| ((t as usize * 5) % n, m.cpu_at(0, t)))
            .collect();
        out.push(instructions(mi, format!("{}/full-core", m.name), full));
        // Two workloads time-sharing one CPU, sampled, over a window of simulated time.
        out.push(Case {
            name: format!("{}/timeshare-sampled", m.name),
            machine: mi,
            threads: vec![(3, 0), (13, 0), (29, 0)],
            window: Window::Cycles {
                start: TIMESHARE_QUANTUM_CYCLES as f64,
                end: TIMESHARE_END_CYCLES,
            },
            quantum_cycles: TIMESHARE_QUANTUM_CYCLES,
            sample_cycles: Some(SAMPLE_CYCLES),
        });
    }
    out
}

fn run(case: &Case, machines: &[MachineModel], workloads: &[WorkloadProfile]) -> RunRecord {
    let plans = case
        .threads
        .iter()
        .enumerate()
        .map(|(slot, &(wi, cpu))| ThreadPlan {
            source: workloads[wi].stream(SEED, slot as u32),
            cpu,
            data_space: slot as u32 + 1,
            code_space: wi as u32 + 1,
            warmup_instructions: WARMUP_INSTRUCTIONS,
            measure_instructions: MEASURE_INSTRUCTIONS,
        })
        .collect();
    let options = RunOptions {
        window: case.window,
        quantum_cycles: case.quantum_cycles,
        sample_cycles: case.sample_cycles,
    };
    let r = Simulation::new(&machines[case.machine], plans, options)
        .expect("valid plan")
        .run();
    RunRecord {
        name: case.name.clone(),
        instructions_simulated: r.instructions_simulated,
        threads: r
            .threads
            .into_iter()
            .map(|t| ThreadRecord {
                window: t.window,
                start_cycle: t.start_cycle,
                end_cycle: t.end_cycle,
                llc_lines: t.llc_lines,
                samples: t
                    .samples
                    .iter()
                    .map(|&Sample { cycle, counters }| (cycle, counters))
                    .collect(),
            })
            .collect(),
    }
}

fn simulate_all() -> Golden {
    let machines: Vec<MachineModel> = MACHINE_PRESETS
        .iter()
        .map(|p| load_machine(p.name, &[]).expect("preset machine"))
        .collect();
    let workloads: Vec<WorkloadProfile> = WORKLOAD_PRESETS
        .iter()
        .map(|p| load_workload(p.name, &[]).expect("preset workload"))
        .collect();
    let runs = cases(&machines, &workloads)
        .par_iter()
        .map(|c| run(c, &machines, &workloads))
        .collect();
    Golden {
        format: GOLDEN_FORMAT.into(),
        runs,
    }
}

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/counters.json")
}

#[test]
fn every_counter_equals_the_recorded_one() {
    let text = std::fs::read_to_string(golden_path()).expect("golden file");
    let golden: Golden = serde_json::from_str(&text).expect("golden file parses");
    assert_eq!(golden.format, GOLDEN_FORMAT);
    let now = simulate_all();
    assert_eq!(now.runs.len(), golden.runs.len(), "number of runs");
    let mut differ = Vec::new();
    for (a, b) in now.runs.iter().zip(&golden.runs) {
        assert_eq!(a.name, b.name, "runs in the same order");
        if a != b {
            differ.push(&a.name);
        }
    }
    if let Some(first) = differ.first() {
        let i = now.runs.iter().position(|r| &&r.name == first).unwrap();
        panic!(
            "{} of {} runs differ from the recorded results; first: {}\nnow:      {:?}\nrecorded: {:?}",
            differ.len(),
            now.runs.len(),
            first,
            now.runs[i],
            golden.runs[i]
        );
    }
}

/// Rewrites the golden file (run by hand, with the commit that explains the change).
#[test]
#[ignore]
fn regenerate() {
    let g = simulate_all();
    // One run per line, so that a regenerated file's diff names the runs that changed.
    let runs: Vec<String> = g
        .runs
        .iter()
        .map(|r| serde_json::to_string(r).expect("serializable"))
        .collect();
    let text = format!(
        "{{\"format\":{:?},\"runs\":[\n{}\n]}}\n",
        g.format,
        runs.join(",\n")
    );
    std::fs::create_dir_all(golden_path().parent().unwrap()).unwrap();
    std::fs::write(golden_path(), text).unwrap();
}
