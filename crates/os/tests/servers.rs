//! Interrupts and request-driven servers in the OS simulator. Expected values come from queueing
//! laws (Little's law, an open loop's throughput equal to its offered rate) and from the
//! handler's and the request's solo lengths, which the oracle's solo runs give independently of
//! the OS simulation.

use smtsched_model::{load_machine, load_workload, CpuSet, MachineModel};
use smtsched_os::metrics::Metrics;
use smtsched_os::oracle::{Occupant, Oracle, SimulatedOracle};
use smtsched_os::policy::Naive;
use smtsched_os::sim::{Baseline, OsSim, SimConfig};
use smtsched_os::taskset::{ClientsSpec, DeviceSpec, Steering, TaskSetSpec, TaskSpec};

const CLOCK_HZ: f64 = 3.06e9;

fn xeon() -> MachineModel {
    load_machine("xeon-ruan", &[]).unwrap()
}

fn nic(irq_cpus: &str, instructions: u64, rate_per_s: f64) -> DeviceSpec {
    DeviceSpec {
        name: "nic".into(),
        workload: "nic-irq-like".into(),
        instructions_per_interrupt: instructions,
        irq_cpus: irq_cpus.into(),
        rate_per_s,
        link_mbit_per_s: None,
        steering: Steering::First,
    }
}

fn clients(connections: Option<u32>, rate: Option<f64>) -> ClientsSpec {
    ClientsSpec {
        name: "web".into(),
        connections,
        rate_per_s: rate,
        arrivals: Default::default(),
        think_ms: 0.0,
        response_bytes: 15_027,
        device: "nic".into(),
        rx_interrupts_per_request: 1.2,
        tx_interrupts_per_request: 1.2,
        passes_per_request: 1,
    }
}

fn server_set(server: &str, copies: u32, c: ClientsSpec, irq_cpus: &str) -> TaskSetSpec {
    TaskSetSpec {
        name: "server".into(),
        tasks: vec![TaskSpec {
            serves: Some("web".into()),
            copies,
            ..TaskSpec::new(server)
        }],
        groups: Vec::new(),
        devices: vec![nic(irq_cpus, 4000, 0.0)],
        clients: vec![c],
        profiles: Vec::new(),
    }
}

fn oracle(m: &MachineModel, set: &TaskSetSpec) -> SimulatedOracle {
    let profiles = set
        .oracle_workloads()
        .iter()
        .map(|w| load_workload(w, &[]).unwrap())
        .collect();
    SimulatedOracle::new(m.clone(), profiles, 1, 200_000, 400_000)
}

fn run(m: &MachineModel, o: &dyn Oracle, set: &TaskSetSpec, cpus: &str, seconds: f64) -> Metrics {
    let mut cfg = SimConfig::new(Baseline::Modern, seconds, 3);
    cfg.cpus = Some(CpuSet::parse(cpus).unwrap());
    cfg.stagger_s = 1.0;
    OsSim::new(m, o, set, Box::new(Naive), cfg).unwrap().run()
}

/// Solo cycles of `instructions` of oracle workload `w` (its first phase).
fn solo_cycles(o: &dyn Oracle, w: u32, instructions: f64) -> f64 {
    instructions
        / o.solo_ipc(Occupant {
            workload: w,
            phase: 0,
        })
}

#[test]
fn a_stream_of_interrupts_takes_its_handlers_time_from_the_task_on_that_cpu() {
    let m = xeon();
    let set = TaskSetSpec {
        name: "spec+ttcp".into(),
        tasks: vec![TaskSpec {
            run_seconds: 0.5,
            ..TaskSpec::new("gzip-like")
        }],
        groups: Vec::new(),
        devices: vec![nic("0", 20_000, 5000.0)],
        clients: Vec::new(),
        profiles: Vec::new(),
    };
    let o = oracle(&m, &set);
    let r = run(&m, &o, &set, "0", 8.0);
    // The handler alone on CPU 0 takes h cycles per interrupt; 5000 of them a second leave the
    // task 1 - 5000 h / clock of the CPU, and it runs at its solo speed the rest of the time.
    let h = solo_cycles(&o, 1, 20_000.0);
    let expected = 1.0 - 5000.0 * h / CLOCK_HZ;
    let pr = r.per_bench[0].pr.unwrap();
    assert!(expected < 0.9, "the test needs a visible loss: {expected}");
    assert!((pr - expected).abs() < 0.02, "PR {pr}, expected {expected}");
    let k = r.kernel.unwrap();
    assert!(
        (k.interrupt_share - 5000.0 * h / CLOCK_HZ).abs() < 0.02,
        "interrupt share {}",
        k.interrupt_share
    );
}

#[test]
fn a_closed_loop_obeys_littles_law() {
    let m = xeon();
    let set = server_set("flash-like", 2, clients(Some(64), None), "0-3");
    let o = oracle(&m, &set);
    let r = run(&m, &o, &set, "0-1", 5.0);
    let s = &r.servers[0];
    // N = X R: 64 connections, each always waiting for its one request.
    let x = s.requests_per_s;
    let resp = s.response_ms.unwrap().mean / 1e3;
    assert!(
        (x * resp - 64.0).abs() < 64.0 * 0.03,
        "X {x}/s x R {resp} s"
    );
    assert!(
        (s.megabits_per_s - x * 15_027.0 * 8.0 / 1e6).abs() < 1e-6 * s.megabits_per_s,
        "Mb/s from requests"
    );
}

#[test]
fn an_open_loop_below_capacity_serves_its_rate_at_about_its_service_time() {
    let m = xeon();
    let set = server_set("flash-like", 1, clients(None, Some(1000.0)), "0");
    let o = oracle(&m, &set);
    let r = run(&m, &o, &set, "0", 9.0);
    let s = &r.servers[0];
    // 8 s of Poisson arrivals at 1000/s: 8000 requests, standard deviation 1.1%.
    assert!(
        (s.requests_per_s - 1000.0).abs() < 40.0,
        "{} req/s",
        s.requests_per_s
    );
    // A response takes the receive interrupts (1.2 of 4000 instructions) and one pass of the
    // request alone; at ~10% utilisation queueing adds a few per cent (M/G/1).
    let request = o.pass_solo_cycles(0).unwrap();
    let rx = 1.2 * solo_cycles(&o, 1, 4000.0);
    let service_ms = (request + rx) / CLOCK_HZ * 1e3;
    let mean = s.response_ms.unwrap().mean;
    assert!(
        mean >= service_ms * 0.99 && mean < service_ms * 1.3,
        "mean response {mean} ms, service {service_ms} ms"
    );
    // Every instruction of the machine per response byte: one pass of flash-like (38,500) and
    // 2.4 interrupts of 4000, over 15,027 bytes = 3.20 (Ruan Table 4: 3.2 for Flash).
    let ipb = r.per_byte.unwrap().instructions;
    let expected = (38_500.0 + 2.4 * 4000.0) / 15_027.0;
    assert!(
        (ipb - expected).abs() < 0.03 * expected,
        "IPB {ipb}, expected {expected}"
    );
    // Flash spends most of its time in the kernel, and the interrupts add to it.
    let k = r.kernel.unwrap();
    assert!(k.kernel_share > 0.8 && k.interrupt_share > 0.1, "{k:?}");
}

/// Flash on CPU 0 sending 1 MB responses in 4 passes, at `rate` fixed-spaced requests a
/// second, over a 100 Mb/s wire.
fn megabyte_responses(rate: f64) -> TaskSetSpec {
    let mut c = clients(None, Some(rate));
    c.arrivals = smtsched_os::taskset::Arrivals::Fixed;
    c.response_bytes = 1_000_000;
    c.passes_per_request = 4;
    c.tx_interrupts_per_request = 0.0;
    let mut set = server_set("flash-like", 1, c, "0");
    set.devices[0].link_mbit_per_s = Some(100.0);
    set
}

#[test]
fn a_large_response_leaves_a_part_per_pass_and_waits_for_the_wire() {
    let m = xeon();
    let set = megabyte_responses(5.0);
    let o = oracle(&m, &set);
    let r = run(&m, &o, &set, "0", 9.0);
    let s = &r.servers[0];
    // One request every 200 ms, alone on the machine: 8 s of window holds 40 of them.
    assert!(
        (39..=41).contains(&s.completed),
        "{} responses",
        s.completed
    );
    // The first quarter leaves after the receive interrupts and one pass, plus its 2 ms on a
    // 100 Mb/s wire; the wire (80 ms for 1 MB) is slower than the passes (~0.05 ms each), so
    // the last byte leaves 80 ms after the first pass.
    let pass_ms = o.pass_solo_cycles(0).unwrap() / CLOCK_HZ * 1e3;
    let rx_ms = 1.2 * solo_cycles(&o, 1, 4000.0) / CLOCK_HZ * 1e3;
    let first = s.first_byte_ms.unwrap().mean;
    let last = s.response_ms.unwrap().mean;
    let expect_first = rx_ms + pass_ms + 20.0;
    let expect_last = rx_ms + pass_ms + 80.0;
    assert!(
        (first - expect_first).abs() < 0.01 * expect_first,
        "first byte {first} ms, expected {expect_first}"
    );
    assert!(
        (last - expect_last).abs() < 0.01 * expect_last,
        "last byte {last} ms, expected {expect_last}"
    );
    // Fixed spacing and no queueing: every response takes the same time.
    let t = s.response_ms.unwrap();
    assert!(t.p999 - t.p50 < 0.01 * t.p50, "{t:?}");
}

/// Megabits per second count the bytes that left the wire in the window, not whole responses
/// completed in it: a saturated 100 Mb/s link carries 100 Mb/s in any window, however short.
/// (Counting a 1 MB response at its last byte gave 0 or 800 Mb/s over a 10 ms window.)
#[test]
fn a_saturated_link_carries_its_rate_in_any_window() {
    let m = xeon();
    // 20 responses of 1 MB a second offer 160 Mb/s to a 100 Mb/s link: the wire never idles
    // once the server has started (within the first 0.5 s); each 250 kB part takes 20 ms.
    let set = megabyte_responses(20.0);
    let o = oracle(&m, &set);
    for window_ms in [10.0, 30.0, 55.0, 200.0] {
        let r = run(&m, &o, &set, "0", 1.0 + window_ms / 1e3);
        let mbps = r.servers[0].megabits_per_s;
        assert!(
            (mbps - 100.0).abs() < 0.01,
            "{mbps} Mb/s over {window_ms} ms"
        );
    }
}

/// Flash serving 16 connections that a load generator (a task running a pass of TUX's request
/// work per request) drives, the server on `server_cpus` and the generator on `client_cpus`.
fn driven_set(server_cpus: &str, client_cpus: &str) -> TaskSetSpec {
    let mut set = server_set("flash-like", 1, clients(Some(16), None), "0");
    set.tasks[0].cpus = Some(server_cpus.into());
    set.tasks.push(TaskSpec {
        drives: Some("web".into()),
        cpus: Some(client_cpus.into()),
        ..TaskSpec::new("tux-like")
    });
    set
}

#[test]
fn a_load_generator_competes_for_the_cpus_it_shares_with_the_server() {
    let m = xeon();
    let set = driven_set("0", "0");
    let o = oracle(&m, &set);
    // Oracle workloads: flash (server), tux (load generator), the handler.
    let server = o.pass_solo_cycles(0).unwrap();
    let client = o.pass_solo_cycles(1).unwrap();
    let irq = 2.4 * solo_cycles(&o, 2, 4000.0);
    // One CPU does everything a request costs, one request after another.
    let shared = run(&m, &o, &set, "0", 4.0).servers[0].requests_per_s;
    let expected = CLOCK_HZ / (server + client + irq);
    assert!(
        (shared - expected).abs() < 0.03 * expected,
        "{shared} req/s on one CPU, expected {expected}"
    );
    // On two packages (CPUs 0 and 2 of the Xeon) the slower side sets the pace.
    let set = driven_set("0", "2");
    let apart = run(&m, &o, &set, "0,2", 4.0).servers[0].requests_per_s;
    let expected = CLOCK_HZ / (server + irq).max(client);
    assert!(
        (apart - expected).abs() < 0.03 * expected,
        "{apart} req/s on two CPUs, expected {expected}"
    );
}

#[test]
fn flow_steering_spreads_connections_interrupts_over_the_cpus() {
    let m = xeon();
    // Interrupt work (2.4 of 40,000 instructions) outweighs the request's pass (38,500).
    let mut set = server_set("flash-like", 2, clients(Some(32), None), "0,2");
    set.devices[0].instructions_per_interrupt = 40_000;
    let o = oracle(&m, &set);
    let server = o.pass_solo_cycles(0).unwrap();
    let irq = 2.4 * solo_cycles(&o, 1, 40_000.0);
    assert!(irq > server);
    // All interrupts on CPU 0: it is the bottleneck, the servers use CPU 2's spare time. (The
    // two packages share the memory bus, so work runs a little slower than alone: below the
    // solo bound, by less than 10%.)
    let first = run(&m, &o, &set, "0,2", 4.0).servers[0].requests_per_s;
    let expected = CLOCK_HZ / irq;
    assert!(
        first < expected && first > 0.9 * expected,
        "{first} req/s, expected {expected}"
    );
    // Spread by connection, both CPUs share all the work.
    set.devices[0].steering = Steering::Flow;
    let flow = run(&m, &o, &set, "0,2", 4.0).servers[0].requests_per_s;
    let expected = 2.0 * CLOCK_HZ / (irq + server);
    assert!(
        flow < expected && flow > 0.9 * expected,
        "{flow} req/s, expected {expected}"
    );
}

#[test]
fn interrupts_go_where_their_affinity_says_and_nowhere_offline() {
    let m = xeon();
    let set = server_set("tux-like", 1, clients(Some(16), None), "1");
    let o = oracle(&m, &set);
    // CPU 1 is the sibling of CPU 0: the server on 0, its interrupts on 1 (thesis 1xHTP).
    let r = run(&m, &o, &set, "0-1", 3.0);
    assert!(r.servers[0].completed > 1000);
    // TUX and the handler are kernel code only.
    assert!(r.kernel.unwrap().kernel_share > 0.999);
    let mut cfg = SimConfig::new(Baseline::Modern, 3.0, 1);
    cfg.cpus = Some(CpuSet::parse("0").unwrap());
    let err = OsSim::new(&m, &o, &set, Box::new(Naive), cfg)
        .err()
        .unwrap();
    assert!(err.contains("device[0].irq_cpus = \"1\""), "{err}");
}

#[test]
fn bad_server_sets_are_rejected_naming_the_field() {
    let mut set = server_set("flash-like", 1, clients(Some(8), None), "0");
    set.clients[0].rate_per_s = Some(-5.0);
    set.clients[0].connections = None;
    assert!(set
        .validate()
        .unwrap_err()
        .starts_with("clients[0].rate_per_s = -5"));
    let mut set = server_set("flash-like", 1, clients(Some(8), None), "0");
    set.tasks[0].serves = None;
    assert!(set
        .validate()
        .unwrap_err()
        .contains("no task serves these clients"));
    let mut set = server_set("flash-like", 1, clients(Some(8), None), "0");
    set.devices[0].instructions_per_interrupt = 0;
    assert!(set
        .validate()
        .unwrap_err()
        .starts_with("device[0].instructions_per_interrupt = 0"));
    let mut set = driven_set("0", "0");
    set.tasks[1].drives = Some("nobody".into());
    assert_eq!(
        set.validate().unwrap_err(),
        "task[1].drives = \"nobody\": no [[clients]] has that name"
    );
    let mut set = driven_set("0", "0");
    set.tasks[0].drives = Some("web".into());
    assert!(set
        .validate()
        .unwrap_err()
        .starts_with("task[0].drives: a task either serves"));
    let mut set = server_set("flash-like", 1, clients(Some(8), None), "0");
    set.clients[0].passes_per_request = 0;
    assert!(set
        .validate()
        .unwrap_err()
        .starts_with("clients[0].passes_per_request = 0"));
    let mut set = server_set("flash-like", 1, clients(Some(8), None), "0");
    set.devices[0].link_mbit_per_s = Some(-1.0);
    assert!(set
        .validate()
        .unwrap_err()
        .starts_with("device[0].link_mbit_per_s = -1"));
}
