//! `machines` and `workloads`: list the presets or show one. No plan: each reads one description
//! and prints it, so a bad name or override fails before anything else has happened.

use super::{json_out, out};
use crate::args::{ListShow, ShowAction};
use anyhow::Result;
use smtsched_model::{
    loader, machine_from_source, workload_from_source, CoreSpec, MACHINE_PRESETS, WORKLOAD_PRESETS,
};
use smtsched_report::Table;

pub fn machines(a: ListShow) -> Result<()> {
    match a.action {
        None => {
            let mut rows = Vec::new();
            for p in MACHINE_PRESETS {
                let src = loader::resolve("machine", p.name, MACHINE_PRESETS)?;
                let m = machine_from_source(&src, &[])?;
                let kind = match m.core {
                    CoreSpec::SmtOoo(_) => "smt-ooo",
                    CoreSpec::FgmtInorder(_) => "fgmt-inorder",
                };
                let shape = format!(
                    "{}x{}x{}",
                    m.topology.packages, m.topology.cores_per_package, m.topology.threads_per_core
                );
                rows.push((
                    m.name.clone(),
                    shape,
                    kind,
                    m.clock_ghz,
                    m.description.clone(),
                ));
            }
            if a.json {
                let v: Vec<_> = rows
                    .iter()
                    .map(|r| serde_json::json!({"name": r.0, "shape": r.1, "core": r.2, "clock_ghz": r.3, "description": r.4}))
                    .collect();
                return json_out(&v);
            }
            let mut t = Table::new([
                "name",
                "packages x cores x threads",
                "core",
                "GHz",
                "description",
            ]);
            for r in rows {
                t.row([r.0, r.1, r.2.to_string(), format!("{}", r.3), r.4]);
            }
            out(&t.render())
        }
        Some(ShowAction::Show { name, set }) => {
            let src = loader::resolve("machine", &name, MACHINE_PRESETS)?;
            let m = machine_from_source(&src, &set)?;
            if a.json {
                json_out(&m)
            } else if set.is_empty() {
                // The description as written, with its source comments.
                out(&src.text)
            } else {
                out(&toml::to_string(&m)?)
            }
        }
    }
}

pub fn workloads(a: ListShow) -> Result<()> {
    match a.action {
        None => {
            let mut rows = Vec::new();
            for p in WORKLOAD_PRESETS {
                let src = loader::resolve("workload", p.name, WORKLOAD_PRESETS)?;
                let w = workload_from_source(&src, &[])?;
                rows.push((
                    w.name.clone(),
                    w.program.clone(),
                    w.phase.len(),
                    w.description.clone(),
                ));
            }
            if a.json {
                let v: Vec<_> = rows
                    .iter()
                    .map(|r| serde_json::json!({"name": r.0, "program": r.1, "phases": r.2, "description": r.3}))
                    .collect();
                return json_out(&v);
            }
            let mut t = Table::new(["name", "program", "phases", "description"]);
            for r in rows {
                t.row([r.0, r.1, r.2.to_string(), r.3]);
            }
            out(&t.render())
        }
        Some(ShowAction::Show { name, set }) => {
            let src = loader::resolve("workload", &name, WORKLOAD_PRESETS)?;
            let w = workload_from_source(&src, &set)?;
            if a.json {
                json_out(&w)
            } else if set.is_empty() {
                out(&src.text)
            } else {
                out(&toml::to_string(&w)?)
            }
        }
    }
}
