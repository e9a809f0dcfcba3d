//! The decision log: one JSON line per period with what the view showed of each task and what the
//! policy decided for it. The simulator (`run --decisions FILE`) and the agent (`--log FILE`)
//! write the same records, so the two can be compared line by line.

use super::decision::{Decisions, TaskDecision};
use super::view::{PeriodView, TaskKey};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub key: TaskKey,
    pub label: String,
    pub runnable: bool,
    pub cpu_ns: u64,
    pub wait_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_cpu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_estimate: Option<f64>,
    /// The decision for the task (empty = its own settings).
    #[serde(flatten)]
    pub decision: TaskDecision,
    /// In the period's gang turn (always, when there is none).
    pub in_gang: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    pub period: u64,
    pub now_ns: u64,
    pub tasks: Vec<TaskRecord>,
    /// Whether the period had a gang turn.
    pub gang: bool,
}

impl DecisionRecord {
    pub fn new(view: &PeriodView, decisions: &Decisions) -> DecisionRecord {
        DecisionRecord {
            period: view.index,
            now_ns: view.now_ns,
            tasks: view
                .tasks
                .iter()
                .map(|t| TaskRecord {
                    key: t.key,
                    label: t.label.clone(),
                    runnable: t.runnable,
                    cpu_ns: t.cpu_ns,
                    wait_ns: t.wait_ns,
                    last_cpu: t.last_cpu,
                    pr_estimate: t.pr_estimate,
                    decision: decisions.tasks.get(&t.key).cloned().unwrap_or_default(),
                    in_gang: decisions.gang.as_ref().is_none_or(|g| g.contains(&t.key)),
                })
                .collect(),
            gang: decisions.gang.is_some(),
        }
    }
}
