//! CPU affinity of processes: set it, read it back two ways (the system call and
//! `/proc/PID/status`), and check that they agree with what was asked.

use crate::error::{HostError, Result};
use crate::leftovers::{FileSetting, StateFile};
use smtsched_model::CpuSet;
use std::path::Path;

/// The affinity mask naming `cpus`.
pub fn cpu_mask(cpus: &CpuSet) -> Result<libc::cpu_set_t> {
    let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let limit = 8 * std::mem::size_of::<libc::cpu_set_t>() as u32;
    for c in cpus.iter() {
        if c >= limit {
            return Err(HostError::bad(format!(
                "CPU {c} is beyond the {limit} CPUs an affinity mask can name"
            )));
        }
        unsafe { libc::CPU_SET(c as usize, &mut mask) };
    }
    Ok(mask)
}

/// Pins process (or thread) `pid` (0 = the caller) to `cpus`.
pub fn set_affinity(pid: i32, cpus: &CpuSet) -> Result<()> {
    let mask = cpu_mask(cpus)?;
    // SAFETY: `mask` is a valid, initialised cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &mask) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EINVAL) {
            return Err(HostError::bad(format!(
                "cannot pin to CPUs {cpus}: none of them is online or allowed for this process (EINVAL)"
            )));
        }
        return Err(HostError::os(
            format!("sched_setaffinity({pid}, {cpus})"),
            err,
        ));
    }
    Ok(())
}

/// Sets the nice level of thread `tid` (Linux nice values belong to threads; a process's main
/// thread has its pid as tid). Lowering it below the current value needs `CAP_SYS_NICE`.
pub fn set_nice(tid: i32, nice: i32) -> Result<()> {
    // SAFETY: setpriority has no memory preconditions.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if rc != 0 {
        return Err(HostError::os(
            format!("setpriority(thread {tid}, nice {nice})"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// The nice level of thread `tid` (field 19 of `/proc/TID/stat`).
pub fn get_nice(tid: i32) -> Result<i32> {
    let path = format!("/proc/{tid}/stat");
    let text = std::fs::read_to_string(&path).map_err(|source| HostError::Read {
        path: path.clone().into(),
        source,
    })?;
    // The command name is in parentheses and may contain spaces: count fields after the last ')'.
    text.rfind(')')
        .and_then(|i| text[i + 1..].split_whitespace().nth(16))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| HostError::Parse {
            path: path.into(),
            reason: "no nice field".into(),
        })
}

/// The affinity of `pid` (0 = the caller) as `sched_getaffinity` reports it.
pub fn get_affinity(pid: i32) -> Result<CpuSet> {
    let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `mask` is writable and of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &mut mask) };
    if rc != 0 {
        return Err(HostError::os(
            format!("sched_getaffinity({pid})"),
            std::io::Error::last_os_error(),
        ));
    }
    let limit = 8 * std::mem::size_of::<libc::cpu_set_t>();
    Ok((0..limit)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &mask) })
        .map(|c| c as u32)
        .collect())
}

/// `Cpus_allowed_list` of `/proc/PID/status`.
pub fn proc_cpus_allowed(pid: i32) -> Result<CpuSet> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).map_err(|source| HostError::Read {
        path: path.clone().into(),
        source,
    })?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or_else(|| HostError::Parse {
            path: path.clone().into(),
            reason: "no Cpus_allowed_list line".into(),
        })?;
    CpuSet::parse(line).map_err(|e| HostError::Parse {
        path: path.into(),
        reason: e.to_string(),
    })
}

/// Checks through both the system call and /proc that `pid` may run exactly on `want`.
pub fn verify_affinity(pid: i32, want: &CpuSet) -> Result<()> {
    let by_call = get_affinity(pid)?;
    let by_proc = proc_cpus_allowed(pid)?;
    if &by_call != want || &by_proc != want {
        return Err(HostError::Child(format!(
            "process {pid} should be pinned to CPUs {want} but sched_getaffinity says {by_call} and /proc says {by_proc}"
        )));
    }
    Ok(())
}

/// Puts process `pid` (0 = the caller) in the SCHED_RR real-time class at `priority` (1-99).
pub fn set_round_robin(pid: i32, priority: i32) -> Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param.
    if unsafe { libc::sched_setscheduler(pid, libc::SCHED_RR, &param) } != 0 {
        let err = std::io::Error::last_os_error();
        return Err(match err.raw_os_error() {
            Some(libc::EPERM) => {
                HostError::bad("--realtime: SCHED_RR needs root or CAP_SYS_NICE (EPERM)")
            }
            Some(libc::EINVAL) => HostError::bad(format!(
                "--realtime {priority}: not a valid SCHED_RR priority (1-99)"
            )),
            _ => HostError::os(
                format!("sched_setscheduler({pid}, SCHED_RR, {priority})"),
                err,
            ),
        });
    }
    Ok(())
}

/// True if `pid` is in the SCHED_RR class.
pub fn is_round_robin(pid: i32) -> Result<bool> {
    // SAFETY: no pointers involved.
    let policy = unsafe { libc::sched_getscheduler(pid) };
    if policy < 0 {
        return Err(HostError::os(
            format!("sched_getscheduler({pid})"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(policy & !libc::SCHED_RESET_ON_FORK == libc::SCHED_RR)
}

/// The SCHED_RR time slice, milliseconds (`/proc/sys/kernel/sched_rr_timeslice_ms`).
pub fn rr_quantum_ms() -> Option<u64> {
    crate::sysfs::read_opt(std::path::Path::new(
        "/proc/sys/kernel/sched_rr_timeslice_ms",
    ))?
    .parse()
    .ok()
}

/// The calling thread in SCHED_RR for a while; its previous policy comes back on drop.
pub struct RoundRobinThread {
    policy: libc::c_int,
    param: libc::sched_param,
}

impl RoundRobinThread {
    pub fn raise(priority: i32) -> Result<RoundRobinThread> {
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: queries of the calling thread into a valid sched_param.
        let policy = unsafe { libc::sched_getscheduler(0) };
        unsafe { libc::sched_getparam(0, &mut param) };
        set_round_robin(0, priority)?;
        Ok(RoundRobinThread { policy, param })
    }
}

impl Drop for RoundRobinThread {
    fn drop(&mut self) {
        // SAFETY: restores the calling thread's own policy with the parameters read before.
        unsafe { libc::sched_setscheduler(0, self.policy, &self.param) };
    }
}

const RR_SLICE: &str = "/proc/sys/kernel/sched_rr_timeslice_ms";

/// The SCHED_RR time slice set for a while (as the thesis's patched kernel allowed); the old
/// value comes back when this is dropped, including after an error or a signal. The original is
/// recorded in a state file in `state_dir` before the change, so that after a SIGKILL the next
/// command that keeps state there puts it back (and never takes the changed value for the
/// original).
pub struct RrSlice {
    setting: FileSetting,
    state: Option<StateFile>,
}

impl RrSlice {
    pub fn set(ms: u32, state_dir: &Path) -> Result<RrSlice> {
        if ms == 0 {
            return Err(HostError::bad(
                "--rr-slice-ms 0: the time slice must be at least 1 ms",
            ));
        }
        let setting = FileSetting::read(Path::new(RR_SLICE))
            .map_err(|e| HostError::bad(format!("--rr-slice-ms: cannot read {RR_SLICE}: {e}")))?;
        let mut state = StateFile::create(state_dir, "rr-slice")?;
        state.add_setting(setting.clone())?;
        if let Err(e) = std::fs::write(RR_SLICE, format!("{ms}\n")) {
            state.finish();
            return Err(match e.kind() {
                std::io::ErrorKind::PermissionDenied => {
                    HostError::bad(format!("--rr-slice-ms: writing {RR_SLICE} needs root"))
                }
                _ => HostError::os(format!("writing {RR_SLICE}"), e),
            });
        }
        Ok(RrSlice {
            setting,
            state: Some(state),
        })
    }
}

impl Drop for RrSlice {
    fn drop(&mut self) {
        if self.setting.restore().is_ok() {
            if let Some(s) = self.state.take() {
                s.finish();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_a_thread_and_read_it_back_both_ways() {
        // Run in a thread of our own so the test harness's other threads keep their affinity.
        std::thread::spawn(|| {
            let original = get_affinity(0).unwrap();
            let first: CpuSet = std::iter::once(original.first().unwrap()).collect();
            set_affinity(0, &first).unwrap();
            let tid = unsafe { libc::gettid() };
            assert_eq!(get_affinity(tid).unwrap(), first);
            // /proc/PID/status describes the thread group leader; use the task's own file.
            let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
            let line = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .unwrap();
            assert_eq!(CpuSet::parse(line).unwrap(), first);
            set_affinity(0, &original).unwrap();
        })
        .join()
        .unwrap();
    }

    #[test]
    fn impossible_masks_are_bad_input() {
        let big: CpuSet = std::iter::once(100_000).collect();
        assert!(set_affinity(0, &big).unwrap_err().is_bad_input());
    }
}
