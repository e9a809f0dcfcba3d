//! `host topology`: logical CPUs, cores, packages, caches and NUMA nodes as sysfs describes
//! them, and this machine as a machine file to start from.

use super::super::plan::Plan;
use super::super::{check_outputs, json_out, machine, out, write_file};
use super::size_text;
use anyhow::Result;
use clap::Args;
use smtsched_host::{SysfsTopology, Topology};
use smtsched_model::MachineModel;
use smtsched_report::Table;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct TopologyArgs {
    /// Directory standing in for `/` (a sysfs snapshot); the live machine by default.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub sysfs_root: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write this machine as a machine file to start from (named after the file): its
    /// topology and caches, and the `--template` preset's pipeline, latencies, memory and OS
    /// costs, each marked.
    #[arg(long, value_name = "FILE")]
    pub machine_toml: Option<PathBuf>,
    /// The machine preset whose values stand in for what sysfs does not describe.
    #[arg(long, default_value = "smt2-modern", requires = "machine_toml")]
    pub template: String,
}
pub struct TopologyPlan {
    topology: Topology,
    /// `--machine-toml`: where this machine's file goes, and the preset that fills what sysfs
    /// does not describe.
    machine_file: Option<(PathBuf, MachineModel)>,
    json: bool,
}

impl Plan for TopologyPlan {
    type Args = TopologyArgs;

    fn from_args(a: TopologyArgs) -> Result<Self> {
        let topology = Topology::from_sysfs(&a.sysfs_root)?;
        let machine_file = match a.machine_toml {
            Some(path) => {
                let template = machine(&a.template, &[])?;
                check_outputs([Some(path.as_path())])?;
                Some((path, template))
            }
            None => None,
        };
        Ok(TopologyPlan {
            topology,
            machine_file,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let t = &self.topology;
        if let Some((path, template)) = &self.machine_file {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "this-machine".into());
            let text = smtsched_host::machine_file::machine_toml(t, &name, template)?;
            write_file(path, text.as_bytes())?;
        }
        if self.json {
            return json_out(t);
        }
        print_topology(t)
    }
}

fn print_topology(t: &Topology) -> Result<()> {
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    out(&format!(
        "{}: {} online ({}), {} offline{}; {}, {}, {} thread(s) per core{}; {}\n",
        t.cpu_model.as_deref().unwrap_or("unknown CPU"),
        plural(t.online.len(), "logical CPU"),
        t.online,
        t.offline.len(),
        if t.offline.is_empty() {
            String::new()
        } else {
            format!(" ({})", t.offline)
        },
        if t.packages.is_empty() {
            "packages unknown".to_string()
        } else {
            plural(t.packages.len(), "package")
        },
        plural(t.cores.len(), "core"),
        t.threads_per_core(),
        if t.has_smt() { " (SMT)" } else { " (no SMT)" },
        plural(t.numa_nodes.len(), "NUMA node"),
    ))?;
    let opt = |v: Option<u32>| v.map_or("-".to_string(), |x| x.to_string());
    let mut cores = Table::new([
        "core",
        "core_id",
        "package",
        "package_id",
        "threads",
        "cpus",
    ]);
    for (i, c) in t.cores.iter().enumerate() {
        cores.row([
            i.to_string(),
            opt(c.id),
            c.package.map_or("-".into(), |p| p.to_string()),
            c.package
                .and_then(|p| t.packages[p].id)
                .map_or("-".into(), |x| x.to_string()),
            c.cpus.len().to_string(),
            c.cpus.to_string(),
        ]);
    }
    out("\nCores (cpus = sibling threads):\n")?;
    out(&cores.render())?;
    let mut caches = Table::new(["cache", "size", "ways", "line", "instances", "shared by"]);
    let mut by_label: BTreeMap<(u8, smtsched_host::CacheKind), Vec<&smtsched_host::Cache>> =
        BTreeMap::new();
    for c in &t.caches {
        by_label.entry((c.level, c.kind)).or_default().push(c);
    }
    for list in by_label.values() {
        let c = list[0];
        let groups: Vec<String> = list.iter().map(|c| c.cpus.to_string()).collect();
        let shown = if groups.len() > 8 {
            format!("{} … ({} more)", groups[..8].join(" | "), groups.len() - 8)
        } else {
            groups.join(" | ")
        };
        caches.row([
            c.label(),
            size_text(c.size_bytes),
            opt(c.ways),
            c.line_bytes.map_or("-".into(), |l| format!("{l} B")),
            list.len().to_string(),
            shown,
        ]);
    }
    if !t.caches.is_empty() {
        out("\nCaches:\n")?;
        out(&caches.render())?;
    }
    let mut nodes = Table::new(["node", "memory", "cpus"]);
    for n in &t.numa_nodes {
        nodes.row([
            n.id.to_string(),
            size_text(n.memory_bytes),
            n.cpus.to_string(),
        ]);
    }
    out("\nNUMA nodes:\n")?;
    out(&nodes.render())?;
    for n in &t.notes {
        out(&format!("note: {n}\n"))?;
    }
    Ok(())
}
