//! Restoring from a state file, on real processes: what changed is put back as recorded, and a
//! record whose thread id now names another thread (a different start time) is never touched.

use smtsched_agent::control::{self, Outcome, Settings, Touched};
use smtsched_agent::state::{restore, StateFile, ThreadRecord, STATE_FORMAT};
use smtsched_model::CpuSet;
use std::process::{Child, Command};

struct Sleeper(Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sleeper() -> Sleeper {
    Sleeper(Command::new("sleep").arg("30").spawn().unwrap())
}

fn stat_fields(pid: i32) -> Vec<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    s[s.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// (affinity as the kernel lists it, nice, policy, start time).
fn kernel_view(pid: i32) -> (String, i32, i32, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let aff = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    let f = stat_fields(pid);
    (
        aff,
        f[19 - 3].parse().unwrap(),
        f[41 - 3].parse().unwrap(),
        f[22 - 3].parse().unwrap(),
    )
}

fn online() -> CpuSet {
    CpuSet::parse(
        std::fs::read_to_string("/sys/devices/system/cpu/online")
            .unwrap()
            .trim(),
    )
    .unwrap()
}

fn record(pid: i32, start_time: u64, original: Settings) -> StateFile {
    touched_record(pid, start_time, original, Touched::all())
}

fn touched_record(pid: i32, start_time: u64, original: Settings, touched: Touched) -> StateFile {
    StateFile {
        format: STATE_FORMAT.into(),
        agent_pid: i32::MAX,
        agent_start_time: 0,
        cgroup: None,
        socket: None,
        groups: Vec::new(),
        threads: vec![ThreadRecord {
            pid,
            tid: pid,
            start_time,
            label: "sleep".into(),
            original,
            touched,
        }],
    }
}

/// What the agent would record of `pid` now.
fn settings_now(pid: i32) -> Settings {
    let (aff, nice, policy, _) = kernel_view(pid);
    Settings {
        affinity: CpuSet::parse(&aff).unwrap(),
        nice,
        policy,
        cgroup: None,
        core_cookie: None,
    }
}

#[test]
fn changed_settings_are_put_back_as_recorded() {
    let s = sleeper();
    let pid = s.0.id() as i32;
    let (aff, nice, policy, start) = kernel_view(pid);
    let original = settings_now(pid);
    // Change everything the agent changes: one CPU, SCHED_IDLE, nice 7.
    let first = online().first().unwrap();
    let one = CpuSet::from_iter([first]);
    assert_eq!(control::set_affinity(pid, &one), Ok(Outcome::Done));
    control::set_policy(pid, control::SCHED_IDLE).unwrap();
    control::set_nice(pid, 7).unwrap();
    let changed = kernel_view(pid);
    assert_eq!(
        (changed.0.as_str(), changed.1, changed.2),
        (first.to_string().as_str(), 7, 5)
    );

    let report = restore(&record(pid, start, original), std::path::Path::new("test"));
    assert_eq!((report.restored, report.gone), (1, 0), "{report}");
    assert!(report.errors.is_empty(), "{report}");
    assert_eq!(kernel_view(pid), (aff, nice, policy, start));
}

/// The agent changed the affinity only; the user reniced the thread meanwhile: restoring puts
/// the affinity back and leaves the user's nice and policy.
#[test]
fn only_what_the_agent_changed_is_put_back() {
    let s = sleeper();
    let pid = s.0.id() as i32;
    let (aff, _, policy, start) = kernel_view(pid);
    let original = settings_now(pid);
    let first = online().first().unwrap();
    assert_eq!(
        control::set_affinity(pid, &CpuSet::from_iter([first])),
        Ok(Outcome::Done)
    );
    control::set_nice(pid, 7).unwrap();
    let touched = Touched {
        affinity: true,
        ..Touched::default()
    };
    let report = restore(
        &touched_record(pid, start, original.clone(), touched),
        std::path::Path::new("test"),
    );
    assert_eq!((report.restored, report.gone), (1, 0), "{report}");
    assert_eq!(kernel_view(pid), (aff.clone(), 7, policy, start));
    // A thread the agent changed nothing of is not counted as restored, and keeps nice 7.
    let report = restore(
        &touched_record(pid, start, original, Touched::default()),
        std::path::Path::new("test"),
    );
    assert_eq!((report.restored, report.gone), (0, 0), "{report}");
    assert_eq!(kernel_view(pid), (aff, 7, policy, start));
}

#[test]
fn a_reused_id_is_never_touched() {
    let s = sleeper();
    let pid = s.0.id() as i32;
    let before = kernel_view(pid);
    // A record of an earlier thread with this id: same pid, another start time.
    let stale = Settings {
        affinity: CpuSet::from_iter([online().first().unwrap()]),
        nice: 19,
        policy: control::SCHED_IDLE,
        cgroup: None,
        core_cookie: None,
    };
    let report = restore(
        &record(pid, before.3 - 1, stale),
        std::path::Path::new("test"),
    );
    assert_eq!((report.restored, report.gone), (0, 1));
    assert_eq!(kernel_view(pid), before);
}

#[test]
fn a_thread_that_exited_is_gone_not_an_error() {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id() as i32;
    c.wait().unwrap();
    assert_eq!(
        control::set_affinity(pid, &online()),
        Ok(Outcome::Gone),
        "ESRCH is an outcome"
    );
}

/// A launched command's process group outlives a killed agent only until the restore: every
/// member started no earlier than its leader is killed, the leader's children included; a record
/// whose leader started later than the group's processes (a reused group id) touches nothing.
#[test]
fn what_is_left_of_a_launched_commands_group_is_killed() {
    use std::os::unix::process::CommandExt;
    let mut leader = Command::new("sh")
        .args(["-c", "sleep 30 & sleep 30 & wait"])
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = leader.id() as i32;
    let members = || smtsched_host::procgroup::group_members(pgid);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while members().len() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the group did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let started: u64 = stat_fields(pgid)[22 - 3].parse().unwrap();
    let mut state = touched_record(i32::MAX, 0, settings_now(pgid), Touched::default());
    state.groups = vec![smtsched_host::leftovers::GroupRecord {
        what: "launched command".into(),
        pgid,
        leader_start_time: started + 1_000_000,
    }];
    let report = restore(&state, std::path::Path::new("state.json"));
    assert_eq!(
        (report.killed, members().len()),
        (0, 3),
        "a later leader's record"
    );
    state.groups[0].leader_start_time = started;
    let report = restore(&state, std::path::Path::new("state.json"));
    assert_eq!(report.killed, 3);
    leader.wait().unwrap();
    assert!(
        smtsched_host::procgroup::wait_until_gone(pgid, std::time::Duration::from_secs(5)),
        "left running: {:?}",
        members()
    );
}
