//! The CPU time a response costs each role — the server, the receive softirq, the load
//! generator — from the per-CPU accounting of a placement that keeps the server and the load
//! generator on different CPUs. Per-CPU `/proc/stat` time is used rather than the processes'
//! own: a task's system time also holds softirq work the kernel ran in its context, so process
//! times of server and softirq overlap.

use super::{CpuUse, Placement, PlacementRun};
use serde::Serialize;
use std::collections::BTreeMap;

/// CPU time per response, µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RoleTimes {
    /// On the server's CPUs (its softirq field: softirq work there outside the steered mask).
    pub server: CpuUse,
    /// Softirq work on the CPUs of the steering mask.
    pub softirq_us: f64,
    /// On the load generator's CPUs (softirq there outside the mask counts as its own).
    pub client: CpuUse,
}

impl RoleTimes {
    /// The roles of one load run in placement `p`; `None` when the server and the load
    /// generator share a CPU or the softirq runs elsewhere (the time could not be divided).
    pub fn of(p: &Placement, cpus: &BTreeMap<u32, CpuUse>) -> Option<RoleTimes> {
        if !separable(p) {
            return None;
        }
        let mut r = RoleTimes::default();
        for (&c, u) in cpus {
            let steered = p.softirq.contains(c);
            let role = if p.server.contains(c) {
                &mut r.server
            } else if p.client.contains(c) {
                &mut r.client
            } else {
                continue;
            };
            role.user_us += u.user_us;
            role.system_us += u.system_us;
            if steered {
                r.softirq_us += u.softirq_us;
            } else {
                role.softirq_us += u.softirq_us;
            }
        }
        Some(r)
    }

    /// The mean over `runs` of the first load run of each (the closed loop that finds
    /// saturation), for the runs of `placement`.
    pub fn mean_of(runs: &[PlacementRun], placement: &str) -> Option<RoleTimes> {
        let all: Vec<RoleTimes> = runs
            .iter()
            .filter(|r| r.placement.name == placement)
            .map(|r| RoleTimes::of(&r.placement, &r.points.first()?.per_request.cpus))
            .collect::<Option<_>>()?;
        let n = all.len() as f64;
        let mean = |f: &dyn Fn(&RoleTimes) -> f64| all.iter().map(f).sum::<f64>() / n;
        let use_of = |g: &dyn Fn(&RoleTimes) -> CpuUse| CpuUse {
            user_us: mean(&|r| g(r).user_us),
            system_us: mean(&|r| g(r).system_us),
            softirq_us: mean(&|r| g(r).softirq_us),
        };
        (!all.is_empty()).then(|| RoleTimes {
            server: use_of(&|r| r.server),
            softirq_us: mean(&|r| r.softirq_us),
            client: use_of(&|r| r.client),
        })
    }
}

/// Whether each CPU of `p` has one role: the server and the load generator apart, the softirq
/// mask within their CPUs.
pub fn separable(p: &Placement) -> bool {
    p.server.intersection(&p.client).is_empty()
        && p.softirq
            .iter()
            .all(|c| p.server.contains(c) || p.client.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtsched_model::CpuSet;

    fn placement(server: &str, softirq: &str, client: &str) -> Placement {
        Placement {
            name: "x".into(),
            server: CpuSet::parse(server).unwrap(),
            softirq: CpuSet::parse(softirq).unwrap(),
            client: CpuSet::parse(client).unwrap(),
        }
    }

    fn cpu(user_us: f64, system_us: f64, softirq_us: f64) -> CpuUse {
        CpuUse {
            user_us,
            system_us,
            softirq_us,
        }
    }

    #[test]
    fn up_gives_the_servers_cpu_softirq_to_the_softirq_and_the_rest_to_the_client() {
        // The UP placement measured on this VM: CPU 0 server + softirq, CPU 1 oha.
        let cpus = BTreeMap::from([(0, cpu(2.3, 10.4, 13.2)), (1, cpu(6.0, 8.3, 4.1))]);
        let r = RoleTimes::of(&placement("0", "0", "1"), &cpus).unwrap();
        assert_eq!(r.server, cpu(2.3, 10.4, 0.0));
        assert_eq!(r.softirq_us, 13.2);
        assert_eq!(r.client, cpu(6.0, 8.3, 4.1));
        // 1xHTP: the softirq on the client's CPU is the steered softirq's.
        let r = RoleTimes::of(&placement("0", "1", "1"), &cpus).unwrap();
        assert_eq!(r.server, cpu(2.3, 10.4, 13.2));
        assert_eq!(r.softirq_us, 4.1);
        assert_eq!(r.client, cpu(6.0, 8.3, 0.0));
    }

    #[test]
    fn shared_cpus_cannot_be_divided() {
        let cpus = BTreeMap::from([(0, cpu(1.0, 1.0, 1.0)), (1, cpu(1.0, 1.0, 1.0))]);
        assert!(RoleTimes::of(&placement("0-1", "0-1", "0-1"), &cpus).is_none());
        assert!(RoleTimes::of(&placement("0", "2", "1"), &cpus).is_none());
    }
}
