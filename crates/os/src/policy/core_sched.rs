//! `core-sched`: Linux core scheduling from task trust labels. Tasks with the same trust label form
//! one core-scheduling group; tasks without a label are trusted and share freely among
//! themselves. An untrusted task therefore never runs beside a task of another group on its core's
//! siblings — the sibling idles instead (forced idle), which is the price of the isolation.

use super::decision::Decisions;
use super::view::PeriodView;
use super::{Needs, Policy};
use std::collections::BTreeSet;

pub struct CoreSched;

impl Policy for CoreSched {
    fn name(&self) -> &str {
        "core-sched"
    }

    fn needs(&self) -> Needs {
        Needs::CORE_GROUPS
    }

    fn decide(&mut self, view: &PeriodView) -> Decisions {
        // Group numbers by label order, so they do not depend on which task came first.
        let labels: BTreeSet<&str> = view
            .tasks
            .iter()
            .filter_map(|t| t.trust.as_deref())
            .collect();
        let mut d = Decisions::none();
        for t in &view.tasks {
            if let Some(label) = t.trust.as_deref() {
                let group = labels.iter().position(|l| *l == label).expect("collected") as u32 + 1;
                d.task_mut(t.key).core_group = Some(group);
            }
        }
        d
    }
}
