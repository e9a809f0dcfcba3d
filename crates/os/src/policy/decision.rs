//! What a policy answers with: decisions as data, in the controls a present-day Linux kernel
//! offers — a CPU affinity mask, a load weight (a nice level or a cgroup weight), a core-scheduling
//! group — plus gang turns, which are lowered onto weights the same way everywhere. The OS
//! simulator's present-day baseline enforces these as Linux does; the agent applies them to live
//! processes.

use super::view::{PeriodView, TaskKey};
use serde::{Deserialize, Serialize};
use smtsched_model::CpuSet;
use std::collections::{BTreeMap, BTreeSet};

/// The kernel's load weight of each nice level, -20 to 19 (`sched_prio_to_weight` in
/// kernel/sched/core.c): 1024 at nice 0, about 1.25× per level.
pub const NICE_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// A CPU-time weight in the kernel's load-weight units (nice 0 = 1024).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Weight(pub u32);

impl Weight {
    /// `SCHED_IDLE`'s weight (`WEIGHT_IDLEPRIO`): what a task outside the current gang turn
    /// gets.
    pub const IDLE: Weight = Weight(3);
    /// Bounds of a weight a decision may give: cgroup v1 `cpu.shares` (2 to 262144), which
    /// contains the nice table and cgroup v2's `cpu.weight` range.
    pub const MIN: Weight = Weight(2);
    pub const MAX: Weight = Weight(262_144);

    /// The weight of a nice level (clamped to -20…19).
    pub fn of_nice(nice: i32) -> Weight {
        Weight(NICE_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize])
    }

    /// The nice level whose weight is nearest (by ratio) to this one.
    pub fn nearest_nice(self) -> i32 {
        let ratio = |w: u32| (w as f64 / self.0.max(1) as f64).ln().abs();
        (-20..=19)
            .min_by(|&a, &b| ratio(Weight::of_nice(a).0).total_cmp(&ratio(Weight::of_nice(b).0)))
            .expect("forty levels")
    }

    /// cgroup v2 `cpu.weight` (1–10000, 100 = 1024): the inverse of the kernel's
    /// `sched_weight_from_cgroup`.
    pub fn cgroup_v2(self) -> u32 {
        ((self.0 as u64 * 100 + 512) / 1024).clamp(1, 10_000) as u32
    }

    /// The weight of a cgroup v2 `cpu.weight`.
    pub fn of_cgroup_v2(w: u32) -> Weight {
        Weight(((w as u64 * 1024 + 50) / 100) as u32)
    }

    /// cgroup v1 `cpu.shares`: the load weight itself, within the kernel's bounds.
    pub fn cgroup_v1(self) -> u32 {
        self.0.clamp(Self::MIN.0, Self::MAX.0)
    }

    /// This weight multiplied by `f`, rounded, within [`Weight::MIN`]–[`Weight::MAX`].
    pub fn scaled(self, f: f64) -> Weight {
        Weight(((self.0 as f64 * f).round() as u32).clamp(Self::MIN.0, Self::MAX.0))
    }
}

/// A core-scheduling group: tasks of different groups never run on sibling threads at the same
/// time (Linux core scheduling's cookies). Tasks without a group form one group of their own.
pub type CoreGroup = u32;

/// What a policy wants for one task until the next period. `None` = the task's own setting.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskDecision {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<CpuSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<Weight>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_group: Option<CoreGroup>,
}

/// A policy's answer for one period: the whole desired state, not changes to it (a task left out
/// gets its own settings back).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Decisions {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tasks: BTreeMap<TaskKey, TaskDecision>,
    /// Tasks that should run together until the next period: every other task yields to them
    /// (it runs with [`Weight::IDLE`], so only on a CPU they leave idle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gang: Option<BTreeSet<TaskKey>>,
}

/// What a task gets once a period's decisions are lowered onto the kernel's controls.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// `None` = every CPU in use.
    pub affinity: Option<CpuSet>,
    pub weight: Weight,
    pub core_group: Option<CoreGroup>,
}

impl Decisions {
    /// No decision: every task keeps its own settings.
    pub fn none() -> Decisions {
        Decisions::default()
    }

    pub fn task_mut(&mut self, key: TaskKey) -> &mut TaskDecision {
        self.tasks.entry(key).or_default()
    }

    /// Whether any task is given a core group.
    pub fn uses_core_groups(&self) -> bool {
        self.tasks.values().any(|d| d.core_group.is_some())
    }

    /// The settings of the task `key` (whose own nice level is `nice`) under these decisions:
    /// the one lowering of gang turns that the simulator and the agent share.
    pub fn applied(&self, key: TaskKey, nice: i32) -> Applied {
        let d = self.tasks.get(&key);
        let in_gang = self.gang.as_ref().is_none_or(|g| g.contains(&key));
        Applied {
            affinity: d.and_then(|d| d.affinity.clone()),
            weight: if in_gang {
                d.and_then(|d| d.weight).unwrap_or(Weight::of_nice(nice))
            } else {
                Weight::IDLE
            },
            core_group: d.and_then(|d| d.core_group),
        }
    }

    /// Checks the decisions against the view they answer: known tasks, affinities within the
    /// CPUs in use, weights within bounds. A policy that breaks these has a bug; the message
    /// says which task and value.
    pub fn check(&self, view: &PeriodView) -> Result<(), String> {
        let online = &view.topology.online;
        for (key, d) in &self.tasks {
            if view.task(*key).is_none() {
                return Err(format!(
                    "decision for task {key}, which the view does not have"
                ));
            }
            if let Some(a) = &d.affinity {
                if a.is_empty() || !a.is_subset(online) {
                    return Err(format!(
                        "task {key}: affinity {a} is not a non-empty subset of the CPUs in use ({online})"
                    ));
                }
            }
            if let Some(w) = d.weight {
                if !(Weight::MIN..=Weight::MAX).contains(&w) {
                    return Err(format!(
                        "task {key}: weight {} outside {}-{}",
                        w.0,
                        Weight::MIN.0,
                        Weight::MAX.0
                    ));
                }
            }
        }
        if let Some(g) = &self.gang {
            if let Some(k) = g.iter().find(|k| view.task(**k).is_none()) {
                return Err(format!("gang member {k}, which the view does not have"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_the_kernel_table_and_its_cgroup_conversions() {
        assert_eq!(Weight::of_nice(0), Weight(1024));
        assert_eq!(Weight::of_nice(-20), Weight(88761));
        assert_eq!(Weight::of_nice(19), Weight(15));
        assert_eq!(Weight::of_nice(5), Weight(335));
        // Each level is about 1.25x the next (the table's design: 10% CPU per level; the
        // integer weights at the nice-19 end round to 18/15 = 1.2).
        for n in -20..19 {
            let r = Weight::of_nice(n).0 as f64 / Weight::of_nice(n + 1).0 as f64;
            assert!((r - 1.25).abs() < 0.06, "nice {n}: {r}");
        }
        for n in -20..=19 {
            assert_eq!(Weight::of_nice(n).nearest_nice(), n);
        }
        // cpu.weight 100 is nice 0; the extremes of cpu.weight map to 10 and 102400.
        assert_eq!(Weight(1024).cgroup_v2(), 100);
        assert_eq!(Weight::of_cgroup_v2(100), Weight(1024));
        assert_eq!(Weight::of_cgroup_v2(1), Weight(10));
        assert_eq!(Weight::of_cgroup_v2(10_000), Weight(102_400));
        assert_eq!(Weight(1).cgroup_v1(), 2);
    }

    #[test]
    fn a_gang_turn_lowers_to_idle_weight_for_everyone_else() {
        let k = |pid| TaskKey { pid, start_time: 0 };
        let mut d = Decisions::none();
        d.task_mut(k(1)).weight = Some(Weight(2048));
        d.gang = Some([k(1), k(2)].into_iter().collect());
        assert_eq!(d.applied(k(1), 0).weight, Weight(2048));
        assert_eq!(d.applied(k(2), 5).weight, Weight::of_nice(5));
        assert_eq!(d.applied(k(3), 0).weight, Weight::IDLE);
        // Without a gang, everyone keeps their own.
        d.gang = None;
        assert_eq!(d.applied(k(3), -3).weight, Weight::of_nice(-3));
    }
}
