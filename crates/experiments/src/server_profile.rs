//! `measure server -o FILE`: the measurement as a configurations experiment the simulator runs
//! (`smtsched reproduce FILE`) — the server, the load generator and the receive softirq as
//! workload profiles of the file's own, the measured placements as configurations on a machine
//! model, and the measured throughput ratios between placements as claims.
//!
//! What each role costs comes from the per-CPU time of a placement that keeps server and load
//! generator apart ([`RoleTimes`]). Instructions per response: the server's as counted where a
//! PMU counts them; otherwise (and always for the load generator and the softirq) the CPU time
//! at the model's clock and the profile's own solo IPC on the model — the time a response
//! takes on this machine, not its instruction count, is what carries over. The instruction mix
//! is the stated characterisation of a kernel-heavy network server (`apache-mp-like`, Ruan et
//! al.) and of the network softirq (`nic-irq-like`); the kernel shares and system calls are
//! measured.

use smtsched_host::perf::Event;
use smtsched_host::webserver::roles::{separable, RoleTimes};
use smtsched_host::webserver::{CpuUse, Placement, ServerMeasurement};
use smtsched_model::{load_machine, load_workload, MachineModel, WorkloadProfile};
use smtsched_os::oracle::{Occupant, Oracle, SimulatedOracle};
use toml::{Table, Value};

/// Why the measurement cannot be written as an experiment.
#[derive(Debug, thiserror::Error)]
pub enum ServerProfileError {
    /// The measurement lacks what the profile is made from.
    #[error("{0}")]
    Measurement(String),
    #[error("{0}")]
    Model(#[from] smtsched_model::ModelError),
    #[error("cannot write the experiment as TOML: {0}")]
    Toml(#[from] toml::ser::Error),
}

type Result<T> = std::result::Result<T, ServerProfileError>;

/// The template profiles: a network server's instruction mix and the network softirq's.
const SERVER_TEMPLATE: &str = "apache-mp-like";
const SOFTIRQ_WORKLOAD: &str = "nic-irq-like";
/// Claims allow this much relative error of a predicted throughput ratio.
const RATIO_TOLERANCE: f64 = 0.15;

/// The placement the profile's role times come from: the first whose CPUs each have one role.
pub fn base_placement(placements: &[Placement]) -> Option<&Placement> {
    placements.iter().find(|p| separable(p))
}

/// The experiment file's text.
pub fn experiment_toml(
    m: &ServerMeasurement,
    machine: &str,
    sibling_of_first: Option<u32>,
    connections: u32,
) -> Result<String> {
    let placements: Vec<&Placement> = distinct_placements(m);
    let base = base_placement(&placements.iter().map(|p| (*p).clone()).collect::<Vec<_>>())
        .cloned()
        .ok_or_else(|| {
            ServerProfileError::Measurement(
                "no placement keeps the server and the load generator apart".into(),
            )
        })?;
    let roles = RoleTimes::mean_of(&m.runs, &base.name).ok_or_else(|| {
        ServerProfileError::Measurement(format!("placement {}: no complete load run", base.name))
    })?;
    let model = load_machine(machine, &[])?;
    let server_name = format!("{}-measured", m.server.binary());
    let syscalls = mean_first_point(m, &base.name, |p| p.per_request.syscalls);
    let server_instr = mean_first_point(m, &base.name, |p| {
        p.per_request.hardware.get(&Event::Instructions).copied()
    });
    let mut server = role_profile(&server_name, &roles.server, "the server's worker processes")?;
    let mut client = role_profile("oha-measured", &roles.client, "the load generator (oha)")?;
    let softirq = load_workload(SOFTIRQ_WORKLOAD, &[])?;
    let at_model = |us: f64, ipc: f64| (us * 1e-6 * model.clock_ghz * 1e9 * ipc).round();
    let server_us = roles.server.user_us + roles.server.system_us + roles.server.softirq_us;
    let client_us = roles.client.user_us + roles.client.system_us + roles.client.softirq_us;
    // The IPC depends on the length of a kernel entry, which depends on the instructions: size
    // the profiles at IPC 1 first, then at the IPC that sizing gives.
    let mut ipc = [1.0; 3];
    for _ in 0..2 {
        let server_instructions = server_instr.unwrap_or(at_model(server_us, ipc[0]));
        set_instructions(&mut server, server_instructions, syscalls);
        set_instructions(&mut client, at_model(client_us, ipc[1]), None);
        ipc = solo_ipcs(&model, [&server, &client, &softirq]);
    }
    let softirq_instructions = at_model(roles.softirq_us, ipc[2]).max(1.0);

    let cpu_map = CpuMap::new(&placements, sibling_of_first, &model);
    let mut doc = Table::new();
    let name = format!("measured-{}", m.server.binary());
    doc.insert("name".into(), name.into());
    doc.insert(
        "title".into(),
        format!(
            "{} serving a {}-byte file over loopback, measured by smtsched measure server, \
             simulated on {machine}",
            m.server.binary(),
            m.file_bytes
        )
        .into(),
    );
    doc.insert(
        "source".into(),
        format!(
            "smtsched measure server on this machine; CPU time per response from placement {}: \
             server {:.1} µs, softirq {:.1} µs, load generator {:.1} µs; instructions per \
             response: {}CPU time x solo IPC on {machine} (IPC {:.2}, {:.2}, {:.2})",
            base.name,
            server_us,
            roles.softirq_us,
            client_us,
            if server_instr.is_some() {
                "the server's counted, the others' "
            } else {
                ""
            },
            ipc[0],
            ipc[1],
            ipc[2]
        )
        .into(),
    );
    doc.insert("kind".into(), "configurations".into());
    doc.insert("machine".into(), machine.into());
    doc.insert("baseline".into(), "modern".into());
    doc.insert("duration_s".into(), Value::Float(2.0));
    doc.insert("repetitions".into(), Value::Integer(3));
    let workers = m.runs.iter().map(|r| r.workers).max().unwrap_or(1);
    let client_threads = placements.iter().map(|p| p.client.len()).max().unwrap_or(1);
    doc.insert(
        "task".into(),
        Value::Array(vec![
            table(&[
                ("name", m.server.binary().into()),
                ("workload", server_name.clone().into()),
                ("serves", "load".into()),
                ("copies", Value::Integer(workers as i64)),
            ]),
            table(&[
                ("name", "oha".into()),
                ("workload", "oha-measured".into()),
                ("drives", "load".into()),
                ("copies", Value::Integer(client_threads as i64)),
            ]),
        ]),
    );
    doc.insert(
        "device".into(),
        Value::Array(vec![table(&[
            ("name", "lo".into()),
            ("workload", SOFTIRQ_WORKLOAD.into()),
            (
                "instructions_per_interrupt",
                Value::Integer(softirq_instructions as i64),
            ),
            ("irq_cpus", cpu_map.list(&base.softirq).into()),
            ("steering", "flow".into()),
        ])]),
    );
    // The softirq work of a response: half for the request's packets, half for the response's.
    doc.insert(
        "clients".into(),
        Value::Array(vec![table(&[
            ("name", "load".into()),
            ("connections", Value::Integer(connections as i64)),
            ("response_bytes", Value::Integer(m.file_bytes as i64)),
            ("device", "lo".into()),
            ("rx_interrupts_per_request", Value::Float(0.5)),
            ("tx_interrupts_per_request", Value::Float(0.5)),
        ])]),
    );
    doc.insert(
        "profile".into(),
        Value::Array(vec![Value::try_from(&server)?, Value::try_from(&client)?]),
    );
    doc.insert(
        "configurations".into(),
        configurations(m, &placements, &base, &cpu_map),
    );
    doc.insert("paper".into(), paper(m, &placements));
    let header = "# Written by `smtsched measure server -o`; run it with `smtsched reproduce \
                  FILE`.\n# Change `machine` to simulate this server on another machine model.\n";
    Ok(header.to_string() + &toml::to_string(&doc)?)
}

fn table(entries: &[(&str, Value)]) -> Value {
    Value::Table(
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

fn distinct_placements(m: &ServerMeasurement) -> Vec<&Placement> {
    let mut out: Vec<&Placement> = Vec::new();
    for r in &m.runs {
        if !out.iter().any(|p| p.name == r.placement.name) {
            out.push(&r.placement);
        }
    }
    out
}

/// The mean over a placement's repetitions of `f` of each run's first load run.
fn mean_first_point(
    m: &ServerMeasurement,
    placement: &str,
    f: impl Fn(&smtsched_host::webserver::Point) -> Option<f64>,
) -> Option<f64> {
    let v: Vec<f64> = m
        .runs
        .iter()
        .filter(|r| r.placement.name == placement)
        .map(|r| f(r.points.first()?))
        .collect::<Option<_>>()?;
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// A role's profile: the template's mix, one phase a response, the measured kernel share.
fn role_profile(name: &str, time: &CpuUse, who: &str) -> Result<WorkloadProfile> {
    let mut p = load_workload(SERVER_TEMPLATE, &[])?;
    p.name = name.into();
    p.description = format!("{who}, measured by smtsched measure server");
    p.program = who.into();
    let total = time.user_us + time.system_us + time.softirq_us;
    let share = ((time.system_us + time.softirq_us) / total.max(1e-9)).clamp(0.0, 1.0);
    p.phase.truncate(1);
    let kernel = p.phase[0].kernel.as_mut().ok_or_else(|| {
        ServerProfileError::Measurement(format!("{SERVER_TEMPLATE} has no kernel work"))
    })?;
    kernel.share = share;
    Ok(p)
}

/// Sets a response's instructions, and the instructions of one kernel entry from the system
/// calls per response where they were counted.
fn set_instructions(p: &mut WorkloadProfile, instructions: f64, syscalls: Option<f64>) {
    let phase = &mut p.phase[0];
    phase.instructions = (instructions as u64).max(1000);
    if let (Some(k), Some(n)) = (phase.kernel.as_mut(), syscalls.filter(|&n| n >= 1.0)) {
        k.instructions_per_entry = ((phase.instructions as f64 * k.share / n) as u64).max(100);
    }
}

/// The solo IPC of each profile's first phase on `model`.
fn solo_ipcs(model: &MachineModel, profiles: [&WorkloadProfile; 3]) -> [f64; 3] {
    let o = SimulatedOracle::new(
        model.clone(),
        profiles.iter().map(|p| (*p).clone()).collect(),
        1,
        // Sampled as the experiment's own oracle samples them.
        smtsched_os::oracle::SAMPLE_WARMUP_INSTRUCTIONS,
        smtsched_os::oracle::SAMPLE_MEASURE_INSTRUCTIONS,
    );
    std::array::from_fn(|w| {
        o.solo_ipc(Occupant {
            workload: w as u32,
            phase: 0,
        })
    })
}

/// This machine's CPUs on the model's: the first CPU on the model's first core, its SMT sibling
/// (if this machine has one) on that core's second thread, every other CPU on a core of its own.
struct CpuMap {
    to_model: Vec<(u32, u32)>,
}

impl CpuMap {
    fn new(placements: &[&Placement], sibling_of_first: Option<u32>, model: &MachineModel) -> Self {
        let mut host: Vec<u32> = placements
            .iter()
            .flat_map(|p| p.all_cpus().iter().collect::<Vec<_>>())
            .collect();
        host.sort_unstable();
        host.dedup();
        let first = host.first().copied().unwrap_or(0);
        let mut next_core = 1;
        let to_model = host
            .iter()
            .map(|&c| {
                let m = if c == first {
                    model.cpu_at(0, 0)
                } else if Some(c) == sibling_of_first && model.topology.threads_per_core > 1 {
                    model.cpu_at(0, 1)
                } else {
                    next_core += 1;
                    model.cpu_at(next_core - 1, 0)
                };
                (c, m)
            })
            .collect();
        CpuMap { to_model }
    }

    fn list(&self, set: &smtsched_model::CpuSet) -> String {
        let mut v: Vec<u32> = set
            .iter()
            .filter_map(|c| self.to_model.iter().find(|(h, _)| *h == c).map(|(_, m)| *m))
            .collect();
        v.sort_unstable();
        v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    }
}

/// One configuration per measured placement, and a claim per placement against the base.
fn configurations(
    m: &ServerMeasurement,
    placements: &[&Placement],
    base: &Placement,
    map: &CpuMap,
) -> Value {
    let server = m.server.binary();
    let configs = placements
        .iter()
        .map(|p| {
            let workers = m
                .runs
                .iter()
                .find(|r| r.placement.name == p.name)
                .map_or(1, |r| r.workers);
            let task_cpus = table(&[
                (server, map.list(&p.server).into()),
                ("oha", map.list(&p.client).into()),
            ]);
            table(&[
                ("name", p.name.clone().into()),
                ("cpus", map.list(&p.all_cpus()).into()),
                ("irq_cpus", map.list(&p.softirq).into()),
                ("copies", Value::Integer(workers as i64)),
                ("task_cpus", task_cpus),
            ])
        })
        .collect();
    let claims = placements
        .iter()
        .filter(|p| p.name != base.name)
        .filter_map(|p| {
            let ratio = saturation(m, &p.name)? / saturation(m, &base.name)?;
            Some(table(&[
                (
                    "says",
                    format!(
                        "{} serves {ratio:.3}x the requests per second of {} (measured; \
                         ±{:.0}%)",
                        p.name,
                        base.name,
                        RATIO_TOLERANCE * 100.0
                    )
                    .into(),
                ),
                ("metric", "requests_per_s".into()),
                (
                    "ratio",
                    Value::Array(vec![p.name.clone().into(), base.name.clone().into()]),
                ),
                (
                    "within",
                    Value::Array(vec![
                        Value::Float(ratio * (1.0 - RATIO_TOLERANCE)),
                        Value::Float(ratio * (1.0 + RATIO_TOLERANCE)),
                    ]),
                ),
            ]))
        })
        .collect();
    table(&[
        (
            "metrics",
            Value::Array(vec![
                "requests_per_s".into(),
                "kernel_share".into(),
                "interrupt_share".into(),
            ]),
        ),
        ("config", Value::Array(configs)),
        ("claim", Value::Array(claims)),
    ])
}

/// The measured saturation throughput of a placement (mean over repetitions), requests/s.
fn saturation(m: &ServerMeasurement, placement: &str) -> Option<f64> {
    mean_first_point(m, placement, |p| Some(p.result.requests_per_s))
}

fn paper(m: &ServerMeasurement, placements: &[&Placement]) -> Value {
    let measured = placements
        .iter()
        .filter_map(|p| Some(format!("{} {:.0}", p.name, saturation(m, &p.name)?)))
        .collect::<Vec<_>>()
        .join(", ");
    table(&[
        ("figure", "smtsched measure server".into()),
        (
            "findings",
            Value::Array(vec![format!(
                "Saturation throughput (requests/s, mean of the repetitions): {measured}"
            )
            .into()]),
        ),
    ])
}
