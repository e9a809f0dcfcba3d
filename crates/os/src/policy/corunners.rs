//! What a live machine can know of co-runners. The kernel does not say who ran beside whom, so
//! the agent estimates it from each task's CPU time and the CPU it last ran on: two tasks whose
//! last CPUs are siblings of one core are taken to have overlapped for `cpu_a × cpu_b / period`
//! (as if each ran at independent times), never more than either ran. Tasks pinned to one CPU
//! each, as pairing policies pin them, are placed exactly; tasks that migrate within a period are
//! placed where they ended it. The simulator can build its views the same way
//! ([`crate::sim::Corunners::Inferred`]) to evaluate a policy with only what a live machine
//! knows.

use super::view::{Corunner, TaskKey, TaskSample};
use smtsched_model::topology::Topology;

/// Estimates who ran beside whom (see the module comment) and fills each sample's co-runners,
/// longest overlap first.
pub fn infer_corunners(samples: &mut [TaskSample], topology: &Topology, period_ns: u64) {
    let period = period_ns.max(1) as f64;
    let placed: Vec<(TaskKey, u32, u64)> = samples
        .iter()
        .filter(|s| s.cpu_ns > 0)
        .filter_map(|s| Some((s.key, s.last_cpu?, s.cpu_ns)))
        .collect();
    for s in samples.iter_mut() {
        let Some(cpu) = s.last_cpu.filter(|_| s.cpu_ns > 0) else {
            continue;
        };
        let siblings = topology.siblings_of(cpu);
        let mut corunners: Vec<Corunner> = placed
            .iter()
            .filter(|(k, c, _)| *k != s.key && *c != cpu && siblings.contains(*c))
            .map(|&(task, _, other_ns)| {
                let overlap =
                    (s.cpu_ns as f64 * other_ns as f64 / period).min(s.cpu_ns.min(other_ns) as f64);
                Corunner {
                    task,
                    overlap_ns: overlap.round() as u64,
                }
            })
            .filter(|c| c.overlap_ns > 0)
            .collect();
        corunners.sort_by(|a, b| b.overlap_ns.cmp(&a.overlap_ns).then(a.task.cmp(&b.task)));
        s.corunners = corunners;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtsched_model::CpuSet;

    fn sample(pid: u32, cpu: u32, cpu_ns: u64) -> TaskSample {
        TaskSample {
            cpus: CpuSet::from_iter([cpu]),
            last_cpu: Some(cpu),
            ..TaskSample::ran(TaskKey { pid, start_time: 1 }, &format!("t{pid}"), cpu_ns)
        }
    }

    #[test]
    fn threads_on_siblings_overlap_in_proportion_to_their_cpu_time() {
        // One core of two threads (CPUs 0 and 1) and a second core (2, 3).
        let core = |cpus: &str| smtsched_model::topology::Core {
            id: None,
            package: None,
            cpus: CpuSet::parse(cpus).unwrap(),
        };
        let topo = Topology {
            root: "test".into(),
            cpu_model: None,
            possible: None,
            online: CpuSet::parse("0-3").unwrap(),
            offline: CpuSet::default(),
            packages: vec![],
            cores: vec![core("0-1"), core("2-3")],
            caches: vec![],
            numa_nodes: vec![],
            notes: vec![],
        };
        let mut s = vec![
            sample(1, 0, 100),
            sample(2, 1, 50),
            sample(3, 1, 100),
            sample(4, 2, 100),
        ];
        infer_corunners(&mut s, &topo, 100);
        // 1 on CPU 0 beside 3 (100 × 100 / 100 = 100) and 2 (100 × 50 / 100 = 50).
        let got: Vec<(u32, u64)> = s[0]
            .corunners
            .iter()
            .map(|c| (c.task.pid, c.overlap_ns))
            .collect();
        assert_eq!(got, vec![(3, 100), (2, 50)]);
        // 2 and 3 share CPU 1 (never at once); 4 is alone on its core.
        assert_eq!(s[1].corunners.len(), 1);
        assert_eq!(s[1].corunners[0].overlap_ns, 50);
        assert!(s[3].corunners.is_empty());
        assert_eq!(s[0].main_corunner().map(|k| k.pid), Some(3));
    }
}
