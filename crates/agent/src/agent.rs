//! The agent's loop: every period it finds the managed threads (new children and threads at most
//! once a second), samples them into a [`PeriodView`], asks the policy for [`Decisions`],
//! applies them through the kernel's controls, and logs and publishes what it did. On a stop
//! (the launched commands exit, `--duration`, SIGINT, SIGTERM) it puts every thread back.

use crate::control::{CgroupWeights, CoreScheduling, Outcome, Settings, Touched, WeightControl};
use crate::error::{AgentError, Result};
use crate::observe::{self, SharedStatus, Status, StatusServer, TaskStatus};
use crate::sample::{self, Sampled};
use crate::state::{self, CgroupRecord, RestoreReport, StateStore, ThreadRecord};
use crate::targets::{self, Root, Targets};
use smtsched_host::cgroup::{CgroupVersion, CpuController};
use smtsched_host::leftovers::GroupRecord;
use smtsched_host::perf::Event;
use smtsched_host::{affinity, Shutdown};
use smtsched_model::topology::Topology;
use smtsched_model::CpuSet;
use smtsched_os::policy::{DecisionRecord, Decisions, PeriodView, Policy, TaskKey, Weight};
use smtsched_os::{LinearModel, MatrixEstimates};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// New threads and children are looked for at most this often (reading every process's task
/// and children lists each period would cost more than sampling).
pub const DISCOVERY_INTERVAL: Duration = Duration::from_secs(1);
/// After forwarding SIGINT or SIGTERM to launched commands, how long to wait for them.
pub const CHILD_GRACE: Duration = Duration::from_secs(5);

/// How long built-in kernels may take to prepare their data before the first period.
pub const BUILTIN_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Where PR estimates come from.
#[derive(Clone, Debug)]
pub enum EstimateSource {
    None,
    /// A measured PR matrix, tasks labelled by workload.
    Matrix(Arc<MatrixEstimates>),
    /// A counter model (`train fit`), which needs hardware counters.
    Model(LinearModel),
}

/// How weights are applied.
#[derive(Clone, Debug, PartialEq)]
pub enum WeightsVia {
    Nice,
    /// Per-thread cgroups under this directory (`None`: the agent's own cgroup in the detected
    /// `cpu` hierarchy).
    Cgroup(Option<PathBuf>),
}

pub struct AgentConfig {
    pub period: Duration,
    pub targets: Targets,
    pub estimates: EstimateSource,
    pub weights: WeightsVia,
    pub topology: Topology,
    pub dry_run: bool,
    pub allow_others: bool,
    pub state_dir: PathBuf,
    pub socket: Option<PathBuf>,
    pub log: Option<PathBuf>,
    pub metrics: Option<std::net::SocketAddr>,
    pub duration: Option<Duration>,
}

/// Why the agent stopped.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// Every launched command exited; the first one's exit code.
    CommandsExited {
        code: i32,
    },
    /// Every managed process exited.
    TargetsExited,
    Duration,
    Signal {
        signal: String,
    },
}

/// One thread over the whole run (up to its last sample).
#[derive(Clone, Debug, serde::Serialize)]
pub struct TaskSummary {
    pub pid: i32,
    pub tid: i32,
    pub label: String,
    pub cpu_s: f64,
    pub wait_s: f64,
    /// Its CPU time as a share of one CPU over the time the agent managed it.
    pub cpu_share: f64,
}

/// What a run of the agent did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AgentReport {
    pub stop: StopReason,
    pub tasks: Vec<TaskSummary>,
    pub periods: u64,
    pub wall_s: f64,
    pub agent_cpu_s: f64,
    /// Of which in user mode and in the kernel (reading `/proc`, setting affinity…).
    pub agent_user_s: f64,
    pub agent_system_s: f64,
    pub changes: u64,
    pub errors: u64,
    pub restore: RestoreReport,
}

/// What the agent knows of one thread it manages.
struct Managed {
    sampled: Sampled,
    adopted: Instant,
    original: Settings,
    /// What it has now: affinity, weight, core group.
    affinity: CpuSet,
    weight: Weight,
    core_group: Option<u32>,
    in_gang: bool,
}

pub struct Agent {
    cfg: AgentConfig,
    policy: Box<dyn Policy>,
    topology: Arc<Topology>,
    events: Vec<Event>,
    weights: WeightControl,
    core: std::result::Result<CoreScheduling, String>,
    /// The `cpu` hierarchy threads' original cgroups are read in (weights by cgroup).
    cgroup_hierarchy: Option<CpuController>,
    state: StateStore,
    children: Vec<Child>,
    roots: Vec<Root>,
    threads: BTreeMap<TaskKey, Managed>,
    /// The ids of `threads`.
    tids: BTreeSet<u32>,
    /// Processes (pid, start time) found controllable.
    controlled: BTreeSet<(i32, u64)>,
    /// Why counters are not used, or how many events are.
    counters_note: String,
    /// Threads no longer managed, summarised.
    done: Vec<TaskSummary>,
    refused: BTreeSet<i32>,
    /// Threads another running agent manages (said once each, then left alone).
    foreign: BTreeSet<TaskKey>,
    status: SharedStatus,
    log: Option<std::io::BufWriter<std::fs::File>>,
    changes: u64,
    errors: u64,
    started: Instant,
    periods: u64,
    pub stale: Vec<std::result::Result<RestoreReport, String>>,
    pub metrics_addr: Option<std::net::SocketAddr>,
    pub socket_path: PathBuf,
    _status_server: StatusServer,
}

/// The caller's CPU time (user + system, all threads), seconds.
pub fn own_cpu_s() -> f64 {
    let (user, system) = own_user_system_s();
    user + system
}

/// The caller's user and system CPU time (all threads), seconds.
pub fn own_user_system_s() -> (f64, f64) {
    // SAFETY: `ru` is a valid rusage to write into.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    (t(ru.ru_utime), t(ru.ru_stime))
}

impl Agent {
    /// Checks everything, restores what killed agents left in the state directory, starts the
    /// servers and launches the commands. Nothing is changed before this returns `Ok`.
    pub fn start(cfg: AgentConfig, policy: Box<dyn Policy>) -> Result<Agent> {
        if cfg.period.is_zero() {
            return Err(AgentError::bad("--period 0: the period must be positive"));
        }
        targets::check(&cfg.targets, cfg.allow_others)?;
        let needs = policy.needs();
        let pmu = counters_available();
        let core = CoreScheduling::probe();
        if needs.estimates && matches!(cfg.estimates, EstimateSource::None) {
            return Err(AgentError::bad(format!(
                "policy {} needs PR estimates: give --matrix FILE (a measured PR matrix, each task labelled by its workload) or --estimator FILE (needs hardware counters)",
                policy.name()
            )));
        }
        if let EstimateSource::Model(_) = &cfg.estimates {
            pmu.as_ref().map_err(|why| {
                AgentError::Unsupported(format!(
                    "--estimator needs hardware counters: {why}; use --matrix instead"
                ))
            })?;
        }
        if needs.counters {
            pmu.as_ref().map_err(|why| {
                AgentError::Unsupported(format!(
                    "policy {} needs hardware counters: {why}",
                    policy.name()
                ))
            })?;
        }
        if needs.core_groups && !cfg.dry_run {
            if let Err(why) = &core {
                return Err(AgentError::Unsupported(format!(
                    "policy {} needs core scheduling: {why}",
                    policy.name()
                )));
            }
        }
        if let EstimateSource::Matrix(m) = &cfg.estimates {
            let labels = cfg
                .targets
                .launch
                .iter()
                .map(|l| l.label.clone())
                .chain(
                    cfg.targets
                        .pids
                        .iter()
                        .map(|p| p.label.clone().unwrap_or_else(|| crate::proc::comm(p.pid))),
                )
                .collect::<Vec<_>>();
            if let Some(why) = m.missing(labels.iter().map(String::as_str)) {
                return Err(AgentError::bad(format!("--matrix: {why}")));
            }
        }
        for l in &cfg.targets.launch {
            smtsched_host::looper::resolve_command(&l.argv)?;
        }
        let stale = state::restore_stale(&cfg.state_dir);
        let events = if pmu.is_ok()
            && (needs.counters || matches!(cfg.estimates, EstimateSource::Model(_)))
        {
            sample::counter_events()
        } else {
            Vec::new()
        };
        let events_len = events.len();
        // What can fail without changing anything comes first: the metrics port, the log file.
        let status: SharedStatus = Arc::new(Mutex::new(Status::default()));
        let metrics_addr = cfg
            .metrics
            .map(|a| observe::start_metrics(a, status.clone()))
            .transpose()
            .map_err(|e| AgentError::bad(format!("--metrics: cannot listen: {e}")))?;
        let log = cfg
            .log
            .as_ref()
            .map(|p| {
                std::fs::File::create(p)
                    .map(std::io::BufWriter::new)
                    .map_err(|e| AgentError::bad(format!("--log {}: {e}", p.display())))
            })
            .transpose()?;
        let mut state = StateStore::new(&cfg.state_dir, None).map_err(|e| {
            AgentError::os(
                format!("creating the state directory {}", cfg.state_dir.display()),
                e,
            )
        })?;
        // Absolute: whoever restores after a SIGKILL removes it, from wherever it runs.
        let socket_path = cfg
            .socket
            .clone()
            .unwrap_or_else(|| state.path.with_extension("sock"));
        let socket_path = std::path::absolute(&socket_path).unwrap_or(socket_path);
        state.state.socket = Some(socket_path.clone());
        // The agent's cgroup is recorded as soon as it exists; anything failing after this
        // point undoes it.
        let (weights, cgroup_hierarchy, cgroup_record) = weight_control(&cfg)?;
        state.state.cgroup = cgroup_record;
        let undo = |state: &StateStore| {
            state::restore(&state.state, &state.path);
            state.remove();
        };
        if let Err(e) = state.save() {
            undo(&state);
            return Err(AgentError::os(
                format!("writing {}", state.path.display()),
                e,
            ));
        }
        let server = match StatusServer::start(&socket_path, status.clone()) {
            Ok(s) => s,
            Err(e) => {
                undo(&state);
                return Err(AgentError::os(
                    format!("listening on {}", socket_path.display()),
                    e,
                ));
            }
        };
        let mut agent = Agent {
            topology: Arc::new(cfg.topology.clone()),
            cfg,
            policy,
            events,
            weights,
            core,
            cgroup_hierarchy,
            state,
            children: Vec::new(),
            roots: Vec::new(),
            threads: BTreeMap::new(),
            tids: BTreeSet::new(),
            controlled: BTreeSet::new(),
            counters_note: match (&pmu, events_len) {
                (Err(why), _) => why.clone(),
                (Ok(()), 0) => "not used by this policy".into(),
                (Ok(()), n) => format!("{n} hardware events per thread"),
            },
            done: Vec::new(),
            refused: BTreeSet::new(),
            foreign: BTreeSet::new(),
            status,
            log,
            changes: 0,
            errors: 0,
            started: Instant::now(),
            periods: 0,
            stale,
            metrics_addr,
            socket_path,
            _status_server: server,
        };
        for p in &agent.cfg.targets.pids {
            if let Some(r) = targets::root_of_pid(p) {
                agent.roots.push(r);
            }
        }
        for l in agent.cfg.targets.launch.clone() {
            match targets::launch(&l) {
                Ok((child, root)) => {
                    agent.state.state.groups.push(GroupRecord {
                        what: format!("launched command {}", l.argv.join(" ")),
                        pgid: root.pid,
                        leader_start_time: root.start_time,
                    });
                    agent.children.push(child);
                    agent.roots.push(root);
                    // Saved before anything else is done: a SIGKILL from now on leaves the group
                    // for `restore` to stop.
                    if let Err(e) = agent.state.save() {
                        agent.stop_children(libc::SIGTERM);
                        agent.finish();
                        return Err(AgentError::os("writing the state file", e));
                    }
                }
                Err(e) => {
                    agent.stop_children(libc::SIGTERM);
                    agent.finish();
                    return Err(e);
                }
            }
        }
        if let Err(e) = targets::await_ready(&mut agent.children, BUILTIN_READY_TIMEOUT) {
            agent.stop_children(libc::SIGTERM);
            agent.finish();
            return Err(e);
        }
        agent.started = Instant::now();
        agent.discover();
        agent.describe();
        agent.publish(&[], 0);
        observe::sd_notify("READY=1");
        Ok(agent)
    }

    /// Runs until a stop, then restores every thread.
    pub fn run(mut self, stop: &Shutdown) -> AgentReport {
        let mut next = Instant::now() + self.cfg.period;
        let mut last_discovery = Instant::now();
        let mut last_sample = Instant::now();
        let mut buf = vec![0u8; 4096];
        let reason = loop {
            if let Some(r) = self.wait_until(next, stop) {
                break r;
            }
            let now = Instant::now();
            next += self.cfg.period;
            if next < now {
                next = now + self.cfg.period;
            }
            if now.duration_since(last_discovery) >= DISCOVERY_INTERVAL {
                self.discover();
                last_discovery = now;
            }
            let length = now.duration_since(last_sample);
            last_sample = now;
            let view = self.sample(&mut buf, length);
            let decisions = self.policy.decide(&view);
            if let Err(e) = decisions.check(&view) {
                self.error(format!(
                    "policy {}: {e}; decisions ignored",
                    self.policy.name()
                ));
                continue;
            }
            if self.cfg.dry_run {
                self.print_dry_run(&view, &decisions);
            } else {
                self.apply(&view, &decisions);
            }
            self.publish(&view.tasks, view.length_ns);
            if let Some(log) = &mut self.log {
                let line = serde_json::to_string(&DecisionRecord::new(&view, &decisions))
                    .expect("records serialise");
                let _ = writeln!(log, "{line}").and_then(|_| log.flush());
            }
            if let Some(r) = self.exited() {
                break r;
            }
        };
        // The shares are over the time the threads were managed, not the wait below.
        let wall_s = self.started.elapsed().as_secs_f64();
        let mut tasks = std::mem::take(&mut self.done);
        tasks.extend(self.threads.iter().map(|(k, m)| summary(*k, m)));
        // Launched commands end with the agent (as under `timeout`); so does what they left
        // running when they ended it.
        self.stop_children(libc::SIGTERM);
        tasks.sort_by_key(|t| t.tid);
        let restore = self.finish();
        observe::sd_notify("STOPPING=1");
        AgentReport {
            stop: reason,
            tasks,
            periods: self.periods,
            wall_s,
            agent_cpu_s: own_cpu_s(),
            agent_user_s: own_user_system_s().0,
            agent_system_s: own_user_system_s().1,
            changes: self.changes,
            errors: self.errors,
            restore,
        }
    }

    /// Sleeps until `t`, watching for signals and the duration.
    fn wait_until(&mut self, t: Instant, stop: &Shutdown) -> Option<StopReason> {
        loop {
            if let Some(signal) = stop.requested() {
                return Some(StopReason::Signal {
                    signal: signal.into(),
                });
            }
            if self
                .cfg
                .duration
                .is_some_and(|d| self.started.elapsed() >= d)
            {
                return Some(StopReason::Duration);
            }
            let now = Instant::now();
            if now >= t {
                return None;
            }
            // Signals set a flag, looked at after each sleep: a stop waits at most this long.
            std::thread::sleep((t - now).min(Duration::from_millis(250)));
        }
    }

    /// Whether a root process is still the one it was: cheap when its main thread was sampled
    /// in the last period.
    fn alive(&self, r: &Root) -> bool {
        let main = TaskKey {
            pid: r.pid as u32,
            start_time: r.start_time,
        };
        self.threads.contains_key(&main) || r.alive()
    }

    /// Whether everything the agent was started for has exited.
    fn exited(&mut self) -> Option<StopReason> {
        if !self.children.is_empty() {
            let mut first = None;
            let mut all = true;
            for c in &mut self.children {
                match c.try_wait() {
                    Ok(Some(status)) => {
                        first.get_or_insert(status.code().unwrap_or(128 + status_signal(&status)));
                    }
                    _ => all = false,
                }
            }
            return all.then(|| StopReason::CommandsExited {
                code: first.unwrap_or(0),
            });
        }
        let watching_cgroup = !self.cfg.targets.cgroups.is_empty();
        (!watching_cgroup && self.threads.is_empty() && !self.roots.iter().any(|r| self.alive(r)))
            .then_some(StopReason::TargetsExited)
    }

    /// Finds processes and threads; adopts new ones (recording their settings first).
    fn discover(&mut self) {
        let mut queue: Vec<Root> = self
            .roots
            .iter()
            .filter(|r| self.alive(r))
            .cloned()
            .collect();
        for dir in &self.cfg.targets.cgroups {
            queue.extend(targets::cgroup_members(dir));
        }
        // The agent itself may be in a managed cgroup; it never manages itself.
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        let mut seen = BTreeSet::new();
        let mut adopted = false;
        let others = state::managed_by_others(&self.cfg.state_dir, &self.state.path);
        while let Some(p) = queue.pop() {
            if p.pid == me || !seen.insert(p.pid) || self.refused.contains(&p.pid) {
                continue;
            }
            if !self.controlled.contains(&(p.pid, p.start_time)) {
                if let Err(why) = targets::may_control(p.pid, self.cfg.allow_others) {
                    self.refused.insert(p.pid);
                    self.error(format!("not managing {} ({}): {why}", p.pid, p.label));
                    continue;
                }
                self.controlled.insert((p.pid, p.start_time));
            }
            let tids = crate::proc::threads(p.pid);
            for &tid in &tids {
                adopted |= self.adopt(&p, tid, &others);
            }
            // Children, labelled as their parent.
            for child in crate::proc::children_of_threads(p.pid, &tids) {
                if let Some(stat) = crate::proc::process_stat(child) {
                    queue.push(Root {
                        pid: child,
                        start_time: stat.start_time,
                        label: p.label.clone(),
                        trust: p.trust.clone(),
                    });
                }
            }
        }
        let live: BTreeSet<TaskKey> = self.threads.keys().copied().collect();
        let before = self.state.state.threads.len();
        self.state.state.threads.retain(|t| {
            live.contains(&TaskKey {
                pid: t.tid as u32,
                start_time: t.start_time,
            })
        });
        if adopted || before != self.state.state.threads.len() {
            if let Err(e) = self.state.save() {
                self.error(format!("writing {}: {e}", self.state.path.display()));
            }
        }
    }

    /// Starts managing thread `tid` of `p` if it is new and no other running agent manages it
    /// (`others`). Returns whether it did.
    fn adopt(&mut self, p: &Root, tid: i32, others: &BTreeMap<(i32, u64), i32>) -> bool {
        // A managed id names the thread it did when adopted: sampling forgets it once that
        // thread is gone.
        if self.tids.contains(&(tid as u32)) {
            return false;
        }
        let Some(stat) = crate::proc::thread_stat(p.pid, tid) else {
            return false;
        };
        let key = TaskKey {
            pid: tid as u32,
            start_time: stat.start_time,
        };
        if self.threads.contains_key(&key) {
            return false;
        }
        if let Some(agent) = others.get(&(tid, stat.start_time)) {
            if self.foreign.insert(key) {
                self.error(format!(
                    "not managing thread {tid} of {} ({}): agent {agent} manages it",
                    p.pid, p.label
                ));
            }
            return false;
        }
        let Ok(aff) = affinity::get_affinity(tid) else {
            return false;
        };
        let v2 = self
            .cgroup_hierarchy
            .as_ref()
            .is_some_and(|c| c.version == CgroupVersion::V2);
        let original = Settings {
            affinity: aff.clone(),
            nice: stat.nice,
            policy: stat.policy,
            cgroup: self
                .cgroup_hierarchy
                .as_ref()
                .and_then(|_| crate::proc::thread_cgroup(p.pid, tid, v2))
                .map(|g| self.outside_own_groups(p.pid, g)),
            core_cookie: self
                .core
                .as_ref()
                .ok()
                .and_then(|_| CoreScheduling::cookie(tid).ok()),
        };
        let Some(sampled) = Sampled::open(
            key,
            p.pid,
            p.label.clone(),
            p.trust.clone(),
            stat.nice,
            &self.events,
        ) else {
            return false;
        };
        self.state.state.threads.push(ThreadRecord {
            pid: p.pid,
            tid,
            start_time: stat.start_time,
            label: p.label.clone(),
            original: original.clone(),
            touched: Touched::default(),
        });
        let weight = if stat.policy == crate::control::SCHED_IDLE {
            Weight::IDLE
        } else {
            Weight::of_nice(stat.nice)
        };
        self.tids.insert(key.pid);
        self.threads.insert(
            key,
            Managed {
                sampled,
                adopted: Instant::now(),
                original,
                affinity: aff,
                weight,
                core_group: None,
                in_gang: true,
            },
        );
        true
    }

    /// A thread created inside one of the agent's groups (it inherits its creator's) belongs,
    /// for restoring, where its process's first managed thread was.
    fn outside_own_groups(&self, pid: i32, cgroup: String) -> String {
        let WeightControl::Cgroup(c) = &self.weights else {
            return cgroup;
        };
        let own = c.own.path.to_string_lossy().into_owned();
        let inside = c
            .controller
            .path_of(&cgroup)
            .to_string_lossy()
            .starts_with(&own);
        if !inside {
            return cgroup;
        }
        self.state
            .state
            .threads
            .iter()
            .find(|t| t.pid == pid)
            .and_then(|t| t.original.cgroup.clone())
            .unwrap_or(cgroup)
    }

    /// The view of the period that ends now; threads that exited are forgotten.
    fn sample(&mut self, buf: &mut [u8], length: Duration) -> PeriodView {
        let mut tasks = Vec::with_capacity(self.threads.len());
        let mut gone = Vec::new();
        for (key, m) in &mut self.threads {
            match m.sampled.sample(buf) {
                Some((_, s)) => tasks.push(s),
                None => gone.push(*key),
            }
        }
        for key in gone {
            self.forget(key);
        }
        let length_ns = length.as_nanos() as u64;
        smtsched_os::policy::corunners::infer_corunners(&mut tasks, &self.topology, length_ns);
        match &self.cfg.estimates {
            EstimateSource::None => {}
            EstimateSource::Matrix(m) => m.fill(&mut tasks),
            EstimateSource::Model(model) => {
                let counters: BTreeMap<TaskKey, _> = tasks
                    .iter()
                    .filter_map(|t| Some((t.key, t.counters?)))
                    .collect();
                for t in &mut tasks {
                    let back = t
                        .main_corunner()
                        .and_then(|k| counters.get(&k).copied())
                        .unwrap_or_default();
                    t.pr_estimate = t.counters.map(|c| model.estimate(&c, &back));
                }
            }
        }
        self.periods += 1;
        PeriodView {
            index: self.periods,
            now_ns: self.started.elapsed().as_nanos() as u64,
            length_ns,
            topology: self.topology.clone(),
            tasks,
        }
    }

    fn forget(&mut self, key: TaskKey) {
        self.tids.remove(&key.pid);
        if let Some(m) = self.threads.remove(&key) {
            self.done.push(summary(key, &m));
        }
        if let WeightControl::Cgroup(c) = &mut self.weights {
            c.forget(key.pid as i32);
        }
    }

    /// Notes in the state file, before anything is changed, which settings of which threads
    /// the decisions change (what [`Agent::apply`] will change): only those are put back.
    fn note_touched(&mut self, view: &PeriodView, decisions: &Decisions) {
        let core = self.core.is_ok();
        let mut noted = false;
        for t in &view.tasks {
            let Some(m) = self.threads.get(&t.key) else {
                continue;
            };
            let applied = decisions.applied(t.key, m.original.nice);
            let own_cookie = m.original.core_cookie.is_some_and(|c| c != 0);
            let now = Touched {
                affinity: within_own(applied.affinity.as_ref(), &m.original.affinity) != m.affinity,
                weight: !crate::control::realtime_policy(m.original.policy)
                    && applied.weight != m.weight,
                // A thread put in a core group gets a cookie (one without is left with none).
                core_cookie: core && !own_cookie && applied.core_group.is_some(),
            };
            let key = t.key;
            let Some(r) = self
                .state
                .state
                .threads
                .iter_mut()
                .find(|r| r.tid as u32 == key.pid && r.start_time == key.start_time)
            else {
                continue;
            };
            let was = r.touched;
            r.touched.affinity |= now.affinity;
            r.touched.weight |= now.weight;
            r.touched.core_cookie |= now.core_cookie;
            noted |= r.touched != was;
        }
        if noted {
            if let Err(e) = self.state.save() {
                self.error(format!("writing {}: {e}", self.state.path.display()));
            }
        }
    }

    /// Applies the decisions: only what differs from what each thread has now.
    fn apply(&mut self, view: &PeriodView, decisions: &Decisions) {
        self.note_touched(view, decisions);
        let mut errors = Vec::new();
        let mut gone = Vec::new();
        let mut regroup = false;
        for t in &view.tasks {
            let Some(m) = self.threads.get_mut(&t.key) else {
                continue;
            };
            let tid = t.key.pid as i32;
            let applied = decisions.applied(t.key, m.original.nice);
            m.in_gang = decisions.gang.as_ref().is_none_or(|g| g.contains(&t.key));
            let want = within_own(applied.affinity.as_ref(), &m.original.affinity);
            if want != m.affinity {
                self.changes += 1;
                match crate::control::set_affinity(tid, &want) {
                    Ok(Outcome::Done) => m.affinity = want,
                    Ok(Outcome::Gone) => gone.push(t.key),
                    Err(e) => errors.push(e),
                }
            }
            let realtime = crate::control::realtime_policy(m.original.policy);
            if !realtime && applied.weight != m.weight {
                self.changes += 1;
                match self
                    .weights
                    .set(m.sampled.pid, tid, applied.weight, &m.original)
                {
                    Ok(Outcome::Done) => m.weight = applied.weight,
                    Ok(Outcome::Gone) => gone.push(t.key),
                    Err(e) => errors.push(e),
                }
            }
            // A thread with a cookie of its own (set by someone else) keeps it.
            let own_cookie = m.original.core_cookie.is_some_and(|c| c != 0);
            if !own_cookie && applied.core_group != m.core_group {
                m.core_group = applied.core_group;
                regroup = true;
            }
        }
        if regroup && self.core.is_ok() {
            let mut groups: BTreeMap<u32, Vec<i32>> = BTreeMap::new();
            let mut untagged = Vec::new();
            for (k, m) in &self.threads {
                if m.original.core_cookie.is_some_and(|c| c != 0) {
                    continue;
                }
                match m.core_group {
                    Some(g) => groups.entry(g).or_default().push(k.pid as i32),
                    None => untagged.push(k.pid as i32),
                }
            }
            self.changes += 1;
            let groups: Vec<Vec<i32>> = groups.into_values().collect();
            errors.extend(CoreScheduling::apply(&groups, &untagged));
        }
        for k in gone {
            self.forget(k);
        }
        for e in errors {
            self.error(e);
        }
    }

    fn print_dry_run(&mut self, view: &PeriodView, decisions: &Decisions) {
        let mut parts = Vec::new();
        for t in &view.tasks {
            let Some(m) = self.threads.get_mut(&t.key) else {
                continue;
            };
            let a = decisions.applied(t.key, m.original.nice);
            let aff = within_own(a.affinity.as_ref(), &m.original.affinity);
            m.affinity = aff.clone();
            m.weight = a.weight;
            m.core_group = a.core_group;
            m.in_gang = decisions.gang.as_ref().is_none_or(|g| g.contains(&t.key));
            parts.push(format!(
                "{} {}: cpus {aff} weight {}{}",
                t.key.pid,
                t.label,
                a.weight.0,
                a.core_group
                    .map(|g| format!(" core-group {g}"))
                    .unwrap_or_default()
            ));
        }
        println!(
            "period {} (dry run, nothing applied): {}",
            view.index,
            parts.join("; ")
        );
    }

    /// What the status says of the agent that does not change while it runs.
    fn describe(&self) {
        let mut s = self.status.lock().expect("status lock");
        s.agent_pid = std::process::id() as i32;
        s.policy = self.policy.name().to_string();
        s.period_ms = self.cfg.period.as_secs_f64() * 1e3;
        s.dry_run = self.cfg.dry_run;
        s.estimator = match &self.cfg.estimates {
            EstimateSource::None => "none".into(),
            EstimateSource::Matrix(m) => format!("measured matrix ({})", m.workloads().join(", ")),
            EstimateSource::Model(m) => format!("counter model {}", m.name),
        };
        s.weights = self.weights.describe();
        s.core_scheduling = match &self.core {
            Ok(_) => "available".into(),
            Err(why) => why.clone(),
        };
        s.counters = self.counters_note.clone();
    }

    /// Updates the status snapshot after a period.
    fn publish(&self, tasks: &[smtsched_os::policy::TaskSample], length_ns: u64) {
        let len = length_ns.max(1) as f64;
        let uptime = self.started.elapsed().as_secs_f64();
        let cpu = own_cpu_s();
        let mut s = self.status.lock().expect("status lock");
        s.periods = self.periods;
        s.uptime_s = uptime;
        s.agent_cpu_s = cpu;
        s.agent_cpu_fraction = cpu / uptime.max(1e-9);
        s.changes = self.changes;
        s.errors = self.errors;
        s.tasks = tasks
            .iter()
            .filter_map(|t| {
                let m = self.threads.get(&t.key)?;
                Some(TaskStatus {
                    pid: m.sampled.pid,
                    tid: t.key.pid as i32,
                    start_time: t.key.start_time,
                    label: t.label.clone(),
                    runnable: t.runnable,
                    cpu_share: t.cpu_ns as f64 / len,
                    wait_share: t.wait_ns as f64 / len,
                    last_cpu: t.last_cpu,
                    pr_estimate: t.pr_estimate,
                    affinity: (m.affinity != m.original.affinity).then(|| m.affinity.to_string()),
                    weight: m.weight.0,
                    core_group: m.core_group,
                    in_gang: m.in_gang,
                })
            })
            .collect();
    }

    fn error(&mut self, message: String) {
        self.errors += 1;
        eprintln!("smtsched agent: {message}");
        let mut s = self.status.lock().expect("status lock");
        s.recent_errors.push(message);
        let n = s.recent_errors.len();
        if n > 10 {
            s.recent_errors.drain(..n - 10);
        }
    }

    /// Sends `signal` to every process of the launched commands' groups (what a command started
    /// goes with it, whether or not the command itself is still running) and waits for them; what
    /// is left after [`CHILD_GRACE`] is killed.
    fn stop_children(&mut self, signal: i32) {
        use smtsched_host::procgroup::{group_members, wait_until_gone};
        let groups: Vec<i32> = self.children.iter().map(|c| c.id() as i32).collect();
        let signal_all = |signal: i32| {
            for &g in &groups {
                // SAFETY: killpg has no memory preconditions; a group whose members are all gone
                // answers ESRCH.
                unsafe { libc::killpg(g, signal) };
            }
        };
        signal_all(signal);
        let end = Instant::now() + CHILD_GRACE;
        loop {
            for c in &mut self.children {
                let _ = c.try_wait();
            }
            if groups.iter().all(|&g| group_members(g).is_empty()) {
                return;
            }
            if Instant::now() >= end {
                signal_all(libc::SIGKILL);
                for c in &mut self.children {
                    let _ = c.wait();
                }
                for &g in &groups {
                    wait_until_gone(g, Duration::from_secs(5));
                }
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Puts every managed thread back as it was and removes the state file (kept if something
    /// could not be restored, for the next start to retry).
    fn finish(&mut self) -> RestoreReport {
        let report = state::restore(&self.state.state, &self.state.path);
        if report.errors.is_empty() {
            self.state.remove();
        } else {
            let _ = self.state.save();
        }
        self.threads.clear();
        report
    }
}

/// The affinity a decision gives a thread whose own mask is `own`: the decided CPUs within its
/// own (a user's pinning is a limit the agent keeps, as the simulator does); its own mask if the
/// decision leaves none of them or there is no decision.
fn within_own(decided: Option<&CpuSet>, own: &CpuSet) -> CpuSet {
    match decided.map(|d| d.intersection(own)) {
        Some(d) if !d.is_empty() => d,
        _ => own.clone(),
    }
}

fn summary(key: TaskKey, m: &Managed) -> TaskSummary {
    let s = m.sampled.since_adopted();
    let managed_s = m.adopted.elapsed().as_secs_f64().max(1e-9);
    TaskSummary {
        pid: m.sampled.pid,
        tid: key.pid as i32,
        label: m.sampled.label.clone(),
        cpu_s: s.cpu_ns as f64 * 1e-9,
        wait_s: s.wait_ns as f64 * 1e-9,
        cpu_share: s.cpu_ns as f64 * 1e-9 / managed_s,
    }
}

fn status_signal(s: &std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.signal().unwrap_or(0)
}

/// Whether hardware counters can be read here; the reason if not.
pub fn counters_available() -> std::result::Result<(), String> {
    let probe = smtsched_host::perf::probe(&[Event::Cycles, Event::Instructions]);
    match probe.iter().find(|(_, s)| !s.is_supported()) {
        None => Ok(()),
        Some((e, s)) => Err(format!("hardware counters unavailable ({e}: {s})")),
    }
}

/// The weight control the configuration asks for, the hierarchy original cgroups are read in,
/// and what the state file records of it.
fn weight_control(
    cfg: &AgentConfig,
) -> Result<(WeightControl, Option<CpuController>, Option<CgroupRecord>)> {
    match &cfg.weights {
        WeightsVia::Nice => Ok((WeightControl::Nice, None, None)),
        WeightsVia::Cgroup(_) if cfg.dry_run => Ok((WeightControl::Nice, None, None)),
        WeightsVia::Cgroup(parent) => {
            let controller = match parent {
                Some(dir) => CpuController::at(dir)?,
                None => CpuController::detect()?,
            };
            let c = CgroupWeights::new(controller.clone()).map_err(AgentError::Unsupported)?;
            let record = CgroupRecord {
                version: controller.version,
                mount: controller.mount.clone(),
                base: controller.base.clone(),
                own: c.own.path.clone(),
            };
            Ok((WeightControl::Cgroup(c), Some(controller), Some(record)))
        }
    }
}
