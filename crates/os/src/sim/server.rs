//! The kernel's own work in the OS simulator (DESIGN §4, §7): devices whose interrupts run as
//! kernel work on the CPU their IRQ affinity names, preempting the task there or waking the CPU
//! from its idle halt; and request-driven servers, whose tasks wait for requests that clients
//! send through a device (Ruan et al.; Redstone et al.; thesis chapter 5).
//!
//! A CPU with interrupt work queued runs it before its task: the situation the oracle rates shows
//! the device's handler workload there, so a handler on one sibling slows the task on the other
//! (and shares its kernel lines) as any co-runner does. Requests travel: arrival, receive-side
//! interrupt work on the device's CPU, the server's queue, a server task's pass over its
//! workload's phases, transmit-side interrupt work, and (closed loop) the connection's think
//! time before its next request.

use super::{OsSim, State};
use crate::metrics::ServerStats;
use crate::oracle::Occupant;
use crate::policy::TaskId;
use crate::taskset::{Arrivals, ClientsSpec, DeviceSpec, Steering, TaskSetSpec};
use smtsched_model::CpuSet;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// One request in flight.
#[derive(Clone, Copy, Debug)]
pub(super) struct Request {
    clients: usize,
    /// When the client sent it (cycles).
    sent: f64,
    /// The closed-loop connection that sent it.
    connection: Option<u32>,
    /// Passes of the server still to run for it.
    passes_left: u32,
    /// When its first part, and its latest, leave the wire (cycles).
    first_byte: f64,
    last_left: f64,
    /// The load generator's pass that issues it is still to run or running.
    issuing: bool,
}

/// Interrupt work queued on a CPU: `cycles_left` of the device handler's solo time, then the
/// request it carries (if any) reaches its server.
#[derive(Clone, Copy, Debug)]
pub(super) struct IrqWork {
    device: usize,
    cycles_left: f64,
    deliver: Option<Request>,
}

/// A device as the simulation routes it.
#[derive(Clone, Debug)]
struct Device {
    /// The CPUs its interrupts go to: the first of its IRQ affinity in use, or (flow steering)
    /// all of them in use.
    cpus: Vec<usize>,
    /// Solo cycles of one interrupt (handler and softirq).
    interrupt_cycles: f64,
    /// Mean cycles between stream interrupts (infinite: none).
    stream_gap: f64,
    next_stream: f64,
    /// The wire: bits it carries per cycle, and when it is next free.
    link_bits_per_cycle: Option<f64>,
    link_free_at: f64,
}

/// Per `[[clients]]`: the spec, requests waiting for a server task, and the tasks waiting for a
/// request.
#[derive(Clone, Debug)]
struct Clients {
    spec: ClientsSpec,
    device: usize,
    queue: VecDeque<Request>,
    idle_servers: VecDeque<TaskId>,
    /// Solo cycles of one request's pass over the server workload's phases.
    request_cycles: f64,
    /// Requests waiting for a load-generator task to issue them, the tasks waiting for one,
    /// and the solo cycles of its pass (`None`: no task drives these clients; requests go out
    /// when due).
    to_issue: VecDeque<Request>,
    idle_drivers: VecDeque<TaskId>,
    issue_cycles: Option<f64>,
    /// Response times (to the last byte, and to the first) of requests sent in the window, and
    /// every response completed in it.
    latencies_cycles: Vec<f64>,
    first_byte_cycles: Vec<f64>,
    completed: usize,
    /// Response bytes that left the wire in the window (a part on the wire across an end of
    /// the window counts for its share inside).
    window_bytes: f64,
}

/// Everything of the kernel's own work a simulation tracks; empty for a set without devices.
#[derive(Clone, Debug, Default)]
pub(super) struct KernelWork {
    devices: Vec<Device>,
    clients: Vec<Clients>,
    /// Client sends still to happen, by time (the bits of a non-negative `f64` order as it does).
    sends: BinaryHeap<Reverse<(u64, usize, u32)>>,
    /// Per CPU, interrupt work queued.
    pub(super) irq: Vec<VecDeque<IrqWork>>,
    /// In the measurement window: cycles CPUs ran anything, of which in the kernel, and cycles
    /// of interrupt work.
    busy_cycles: f64,
    kernel_cycles: f64,
    irq_cycles: f64,
}

/// Where the device's interrupts go: the CPUs of its IRQ affinity that are in use, only the
/// first of them unless its steering spreads flows.
fn irq_cpus(d: &DeviceSpec, i: usize, online: &[bool]) -> Result<Vec<usize>, String> {
    let set = CpuSet::parse(&d.irq_cpus)
        .map_err(|e| format!("device[{i}].irq_cpus = {:?}: {e}", d.irq_cpus))?;
    let mut cpus: Vec<usize> = set
        .iter()
        .map(|c| c as usize)
        .filter(|&c| online.get(c).copied().unwrap_or(false))
        .collect();
    if cpus.is_empty() {
        return Err(format!(
            "device[{i}].irq_cpus = {:?}: none of these CPUs is in use, so its interrupts \
             would go nowhere",
            d.irq_cpus
        ));
    }
    if d.steering == Steering::First {
        cpus.truncate(1);
    }
    Ok(cpus)
}

impl KernelWork {
    /// Routes `set`'s devices and clients onto the CPUs in use. `solo_ipc(w)` is the solo IPC
    /// of oracle workload `w`; `pass_cycles(bench)` the solo cycles of one pass over a task's
    /// workload.
    pub(super) fn new(
        set: &TaskSetSpec,
        online: &[bool],
        clock_hz: f64,
        solo_ipc: impl Fn(u32) -> f64,
        pass_cycles: impl Fn(usize) -> Option<f64>,
    ) -> Result<KernelWork, String> {
        let n_tasks = set.tasks.len() as u32;
        let mut devices = Vec::new();
        for (i, d) in set.devices.iter().enumerate() {
            let ipc = solo_ipc(n_tasks + i as u32);
            devices.push(Device {
                cpus: irq_cpus(d, i, online)?,
                interrupt_cycles: d.instructions_per_interrupt as f64 / ipc,
                stream_gap: if d.rate_per_s > 0.0 {
                    clock_hz / d.rate_per_s
                } else {
                    f64::INFINITY
                },
                next_stream: f64::INFINITY,
                link_bits_per_cycle: d.link_mbit_per_s.map(|r| r * 1e6 / clock_hz),
                link_free_at: 0.0,
            });
        }
        let mut clients = Vec::new();
        for c in &set.clients {
            let server = set
                .tasks
                .iter()
                .position(|t| t.serves.as_deref() == Some(c.name.as_str()))
                .expect("validated: a task serves every client group");
            let request_cycles = pass_cycles(server).ok_or_else(|| {
                format!(
                    "clients {:?}: server tasks need an oracle that knows the workload's \
                     instructions (--oracle simulated)",
                    c.name
                )
            })?;
            let driver = set
                .tasks
                .iter()
                .position(|t| t.drives.as_deref() == Some(c.name.as_str()));
            let issue_cycles = match driver {
                Some(t) => Some(pass_cycles(t).ok_or_else(|| {
                    format!(
                        "clients {:?}: load-generator tasks need an oracle that knows the \
                         workload's instructions (--oracle simulated)",
                        c.name
                    )
                })?),
                None => None,
            };
            clients.push(Clients {
                spec: c.clone(),
                device: set
                    .devices
                    .iter()
                    .position(|d| d.name == c.device)
                    .expect("validated: the device exists"),
                queue: VecDeque::new(),
                idle_servers: VecDeque::new(),
                request_cycles,
                to_issue: VecDeque::new(),
                idle_drivers: VecDeque::new(),
                issue_cycles,
                latencies_cycles: Vec::new(),
                first_byte_cycles: Vec::new(),
                completed: 0,
                window_bytes: 0.0,
            });
        }
        Ok(KernelWork {
            devices,
            clients,
            sends: BinaryHeap::new(),
            irq: vec![VecDeque::new(); online.len()],
            busy_cycles: 0.0,
            kernel_cycles: 0.0,
            irq_cycles: 0.0,
        })
    }

    pub(super) fn active(&self) -> bool {
        !self.devices.is_empty()
    }

    /// Oracle workloads of device handlers (after the tasks').
    pub(super) fn irq_workloads(&self) -> usize {
        self.devices.len()
    }

    /// The oracle workload running on `cpu` when interrupt work is queued there.
    pub(super) fn irq_occupant(&self, cpu: usize, tasks: usize) -> Option<Occupant> {
        self.irq[cpu].front().map(|w| Occupant {
            workload: (tasks + w.device) as u32,
            phase: 0,
        })
    }

    fn next_send(&self) -> f64 {
        self.sends
            .peek()
            .map_or(f64::INFINITY, |Reverse((t, _, _))| f64::from_bits(*t))
    }

    /// The time of the next event of the kernel's work after `now`: a send, a stream
    /// interrupt, or the end of the interrupt work at the head of a CPU's queue (`rate[c]`: the
    /// progress rate of the handler there).
    pub(super) fn next_event(&self, now: f64, rate: impl Fn(usize) -> f64) -> f64 {
        let mut t = self.next_send();
        for d in &self.devices {
            t = t.min(d.next_stream);
        }
        for (c, q) in self.irq.iter().enumerate() {
            if let Some(w) = q.front() {
                let pr = rate(c);
                if pr > 0.0 {
                    t = t.min(now + w.cycles_left / pr);
                }
            }
        }
        t
    }

    fn push_send(&mut self, at: f64, clients: usize, connection: u32) {
        self.sends
            .push(Reverse((at.max(0.0).to_bits(), clients, connection)));
    }
}

impl OsSim<'_> {
    /// Starts the kernel's work: stream interrupts, the first sends of every client, server
    /// tasks waiting for requests. `start_within` spreads the first sends over that many cycles.
    pub(super) fn start_kernel_work(&mut self, start_within: f64) {
        for d in 0..self.kernel.devices.len() {
            let gap = self.kernel.devices[d].stream_gap;
            if gap.is_finite() {
                self.kernel.devices[d].next_stream = self.exponential(gap);
            }
        }
        for c in 0..self.kernel.clients.len() {
            let spec = &self.kernel.clients[c].spec;
            match (spec.connections, spec.rate_per_s) {
                (Some(n), _) => {
                    for conn in 0..n {
                        let at = self.rng.unit() * start_within;
                        self.kernel.push_send(at, c, conn);
                    }
                }
                (None, Some(_)) => {
                    let gap = self.open_loop_gap(c);
                    self.kernel.push_send(gap, c, u32::MAX);
                }
                (None, None) => unreachable!("validated"),
            }
        }
        for t in 0..self.tasks.len() {
            let bench = self.tasks[t].bench;
            let idle = if let Some(c) = self.server_clients(bench) {
                &mut self.kernel.clients[c].idle_servers
            } else if let Some(c) = self.driver_clients(bench) {
                &mut self.kernel.clients[c].idle_drivers
            } else {
                continue;
            };
            idle.push_back(t);
            self.tasks[t].state = State::Blocked {
                until: f64::INFINITY,
            };
        }
    }

    fn clock_hz(&self) -> f64 {
        self.machine.clock_ghz * 1e9
    }

    /// Cycles to an open loop's next request.
    fn open_loop_gap(&mut self, c: usize) -> f64 {
        let spec = &self.kernel.clients[c].spec;
        let mean = self.clock_hz() / spec.rate_per_s.expect("an open loop");
        match spec.arrivals {
            Arrivals::Poisson => self.exponential(mean),
            Arrivals::Fixed => mean,
        }
    }

    /// The client group a benchmark's tasks serve.
    pub(super) fn server_clients(&self, bench: usize) -> Option<usize> {
        let name = self.specs[bench].serves.as_deref()?;
        self.kernel.clients.iter().position(|c| c.spec.name == name)
    }

    /// The client group a benchmark's tasks issue requests for (a load generator).
    fn driver_clients(&self, bench: usize) -> Option<usize> {
        let name = self.specs[bench].drives.as_deref()?;
        self.kernel.clients.iter().position(|c| c.spec.name == name)
    }

    /// Sends, stream interrupts and finished interrupt work due by now.
    pub(super) fn kernel_events(&mut self) {
        const EPS: f64 = 1e-3;
        while self.kernel.next_send() <= self.now + 1e-6 {
            let Reverse((_, c, conn)) = self.kernel.sends.pop().expect("peeked");
            self.request_due(c, conn);
        }
        for d in 0..self.kernel.devices.len() {
            while self.kernel.devices[d].next_stream <= self.now + 1e-6 {
                let gap = self.exponential(self.kernel.devices[d].stream_gap);
                self.kernel.devices[d].next_stream += gap;
                let cycles = self.kernel.devices[d].interrupt_cycles;
                self.raise(d, cycles, None, None);
            }
        }
        for c in 0..self.cpus.len() {
            while self.kernel.irq[c]
                .front()
                .is_some_and(|w| w.cycles_left <= EPS)
            {
                let w = self.kernel.irq[c].pop_front().expect("non-empty");
                self.rates_valid = false;
                if let Some(r) = w.deliver {
                    self.hand_over(r);
                }
            }
        }
    }

    /// Queues `cycles` of device `d`'s interrupt work on its CPU for `connection`, carrying
    /// `deliver`.
    fn raise(&mut self, d: usize, cycles: f64, connection: Option<u32>, deliver: Option<Request>) {
        if cycles <= 0.0 {
            if let Some(r) = deliver {
                self.hand_over(r);
            }
            return;
        }
        let cpus = &self.kernel.devices[d].cpus;
        let cpu = cpus[connection.map_or(0, |c| c as usize % cpus.len())];
        self.kernel.irq[cpu].push_back(IrqWork {
            device: d,
            cycles_left: cycles,
            deliver,
        });
        self.rates_valid = false;
    }

    /// A client's request is due (a connection's next, or an open loop's arrival): a
    /// load-generator task issues it, or it is sent at once.
    fn request_due(&mut self, c: usize, connection: u32) {
        let cl = &self.kernel.clients[c];
        let request = Request {
            clients: c,
            sent: self.now,
            connection: (connection != u32::MAX).then_some(connection),
            passes_left: cl.spec.passes_per_request,
            first_byte: f64::NAN,
            last_left: 0.0,
            issuing: cl.issue_cycles.is_some(),
        };
        if connection == u32::MAX {
            let gap = self.open_loop_gap(c);
            self.kernel.push_send(self.now + gap, c, u32::MAX);
        }
        if request.issuing {
            self.hand_over(request);
        } else {
            self.send(request);
        }
    }

    /// The request goes out: it reaches the server after the receive-side interrupt work.
    fn send(&mut self, r: Request) {
        let cl = &self.kernel.clients[r.clients];
        let d = cl.device;
        let rx = cl.spec.rx_interrupts_per_request * self.kernel.devices[d].interrupt_cycles;
        self.raise(d, rx, r.connection, Some(r));
    }

    /// `r` goes to the next task it needs (its load generator while `issuing`, else its
    /// server): an idle one takes it, or it waits in that task kind's queue.
    fn hand_over(&mut self, r: Request) {
        let cl = &mut self.kernel.clients[r.clients];
        let (idle, queue) = if r.issuing {
            (&mut cl.idle_drivers, &mut cl.to_issue)
        } else {
            (&mut cl.idle_servers, &mut cl.queue)
        };
        match idle.pop_front() {
            Some(t) => {
                self.begin_request(t, r);
                self.become_runnable(t);
            }
            None => queue.push_back(r),
        }
    }

    /// Task `t` starts on request `r`: one pass over its workload's phases.
    fn begin_request(&mut self, t: TaskId, r: Request) {
        self.tasks[t].serving = Some(r);
        self.tasks[t].run_started = self.now;
        self.restart_pass(t, &r);
    }

    /// Load-generator task `t` on `cpu` has issued request `r`: it is sent, and the task takes
    /// the next request to issue or waits.
    fn end_of_issue(&mut self, t: TaskId, cpu: usize, mut r: Request) {
        r.issuing = false;
        self.send(r);
        let c = r.clients;
        let next = self.kernel.clients[c].to_issue.pop_front();
        self.next_or_wait(t, cpu, next, true);
    }

    /// Task `t` on `cpu` takes `next`, or waits among its client group's idle servers
    /// (`driver`: load generators).
    fn next_or_wait(&mut self, t: TaskId, cpu: usize, next: Option<Request>, driver: bool) {
        if let Some(next) = next {
            return self.begin_request(t, next);
        }
        let c = self.tasks[t].bench;
        let c = if driver {
            self.driver_clients(c)
        } else {
            self.server_clients(c)
        }
        .expect("a server or load-generator task");
        self.tasks[t].run_left = f64::INFINITY;
        self.leave_runnable(
            t,
            State::Blocked {
                until: f64::INFINITY,
            },
        );
        let cl = &mut self.kernel.clients[c];
        if driver {
            cl.idle_drivers.push_back(t);
        } else {
            cl.idle_servers.push_back(t);
        }
        self.cpus[cpu].need_resched = true;
    }

    /// Server task `t` on `cpu` has finished a pass over its request: that part of the response
    /// goes out (transmit-side interrupt work, then the wire); after the last part the
    /// connection thinks, and the task takes the next request or waits.
    pub(super) fn end_of_request(&mut self, t: TaskId, cpu: usize) {
        let mut r = self.tasks[t]
            .serving
            .take()
            .expect("a server task serves a request");
        if r.issuing {
            return self.end_of_issue(t, cpu, r);
        }
        let c = r.clients;
        let spec = &self.kernel.clients[c].spec;
        let (d, passes) = (self.kernel.clients[c].device, spec.passes_per_request);
        let part_bytes = spec.response_bytes as f64 / passes as f64;
        let tx = spec.tx_interrupts_per_request / passes as f64
            * self.kernel.devices[d].interrupt_cycles;
        let think_ms = spec.think_ms;
        self.raise(d, tx, r.connection, None);
        let (on_wire, left_wire) = self.transmit(d, part_bytes);
        self.count_wire_bytes(c, part_bytes, on_wire, left_wire);
        let previous_left = r.last_left;
        r.last_left = left_wire;
        r.passes_left -= 1;
        if r.passes_left + 1 == passes {
            r.first_byte = left_wire;
        }
        if r.passes_left > 0 {
            self.tasks[t].serving = Some(r);
            self.restart_pass(t, &r);
            // The socket's send buffer holds two parts: the next write waits until the part
            // before this one has left the wire.
            if previous_left > self.now {
                self.leave_runnable(
                    t,
                    State::Blocked {
                        until: previous_left,
                    },
                );
                self.cpus[cpu].need_resched = true;
            }
            return;
        }
        self.response_done(&r, left_wire);
        if let Some(conn) = r.connection {
            let think = if think_ms > 0.0 {
                self.exponential(think_ms * 1e-3 * self.clock_hz())
            } else {
                0.0
            };
            self.kernel.push_send(left_wire + think, c, conn);
        }
        let next = self.kernel.clients[c].queue.pop_front();
        self.next_or_wait(t, cpu, next, false);
    }

    /// `bytes` leave on device `d`'s wire after what is queued there: when the first and the
    /// last leave (both now without a link rate).
    fn transmit(&mut self, d: usize, bytes: f64) -> (f64, f64) {
        let dev = &mut self.kernel.devices[d];
        match dev.link_bits_per_cycle {
            Some(rate) => {
                let first = dev.link_free_at.max(self.now);
                dev.link_free_at = first + bytes * 8.0 / rate;
                (first, dev.link_free_at)
            }
            None => (self.now, self.now),
        }
    }

    /// Counts the share of `bytes`, on the wire evenly from `first` to `last`, that left it in
    /// the window: so the window's throughput never exceeds the link's rate, however short.
    fn count_wire_bytes(&mut self, clients: usize, bytes: f64, first: f64, last: f64) {
        let (w0, w1) = self.metrics.window;
        let inside = if last > first {
            ((last.min(w1) - first.max(w0)) / (last - first)).max(0.0)
        } else if (w0..=w1).contains(&first) {
            1.0
        } else {
            0.0
        };
        self.kernel.clients[clients].window_bytes += bytes * inside;
    }

    /// Task `t` goes on to the next pass over `r` (issuing it, or serving it).
    fn restart_pass(&mut self, t: TaskId, r: &Request) {
        let bench = self.tasks[t].bench;
        let cl = &self.kernel.clients[r.clients];
        let cycles = match (r.issuing, cl.issue_cycles) {
            (true, Some(issue)) => issue,
            _ => cl.request_cycles,
        };
        let task = &mut self.tasks[t];
        task.run_left = cycles;
        task.phase = 0;
        task.phase_left = self.phase_cycles[bench][0];
        self.rates_valid = false;
    }

    /// Counts a response whose last byte left at `done`: requests per second count every
    /// response completed in the window, response times those of requests sent in it.
    fn response_done(&mut self, r: &Request, done: f64) {
        let (w0, w1) = self.metrics.window;
        let cl = &mut self.kernel.clients[r.clients];
        if done >= w0 && done <= w1 {
            cl.completed += 1;
            if r.sent >= w0 {
                cl.latencies_cycles.push(done - r.sent);
                cl.first_byte_cycles.push(r.first_byte - r.sent);
            }
        }
    }

    /// Runs `dt` cycles of the interrupt work queued on `cpu` (its rate is the handler's).
    /// Returns whether the CPU ran interrupt work (and so not its task).
    pub(super) fn advance_irq(&mut self, cpu: usize, dt: f64, in_window: bool) -> bool {
        let Some(w) = self.kernel.irq[cpu].front_mut() else {
            return false;
        };
        let r = self.rates[cpu].expect("interrupt work has a rate");
        w.cycles_left -= dt * r.pr;
        if in_window {
            self.kernel.irq_cycles += dt;
            self.kernel.busy_cycles += dt;
            self.kernel.kernel_cycles += dt * r.kernel_share;
        }
        true
    }

    /// Accounts `dt` cycles of a task's running on `cpu` to the window's totals.
    pub(super) fn account_task_kernel(&mut self, cpu: usize, dt: f64) {
        let r = self.rates[cpu].expect("a running task has a rate");
        self.kernel.busy_cycles += dt;
        self.kernel.kernel_cycles += dt * r.kernel_share;
    }

    /// The servers' statistics over the measurement window.
    pub(super) fn server_stats(&self) -> (Vec<ServerStats>, Option<KernelTotals>) {
        if !self.kernel.active() {
            return (Vec::new(), None);
        }
        let (w0, w1) = self.metrics.window;
        let seconds = (w1 - w0) / self.clock_hz();
        let stats = self
            .kernel
            .clients
            .iter()
            .map(|c| {
                let ms = |cycles: &[f64]| -> Vec<f64> {
                    cycles.iter().map(|l| l / self.clock_hz() * 1e3).collect()
                };
                ServerStats::of(
                    &c.spec.name,
                    c.completed,
                    ms(&c.latencies_cycles),
                    ms(&c.first_byte_cycles),
                    seconds,
                    c.window_bytes,
                )
            })
            .collect();
        let totals = KernelTotals {
            busy_cycles: self.kernel.busy_cycles,
            kernel_share: if self.kernel.busy_cycles > 0.0 {
                self.kernel.kernel_cycles / self.kernel.busy_cycles
            } else {
                0.0
            },
            interrupt_share: if self.kernel.busy_cycles > 0.0 {
                self.kernel.irq_cycles / self.kernel.busy_cycles
            } else {
                0.0
            },
        };
        (stats, Some(totals))
    }
}

/// The machine's busy time and how much of it the kernel had, over the measurement window.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct KernelTotals {
    pub busy_cycles: f64,
    /// Share of busy cycles in the kernel (system calls and interrupts).
    pub kernel_share: f64,
    /// Share of busy cycles running interrupt work.
    pub interrupt_share: f64,
}
