//! A real one-node Slurm cluster for tests: munged, slurmctld and slurmd from Debian, started in
//! the foreground in a temporary directory of their own (key, socket, configuration, state, logs;
//! nothing under /etc or /run is touched), on free ports of 127.0.0.1, each in its own process
//! group that dies with the test; stopped, and every process gone, when dropped. No cgroup
//! plugin is configured (process tracking by process group, no task plugin), so the machine's
//! cgroups are never touched.

use super::free_port;
use smtsched_host::procgroup::{spawn_group, stop_group};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct SlurmCluster {
    dir: PathBuf,
    /// munged, slurmctld, slurmd (stopped in reverse order).
    daemons: Vec<Child>,
}

fn hostname() -> String {
    let out = Command::new("hostname").arg("-s").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

impl SlurmCluster {
    /// Starts the cluster in `dir` and waits until its node is idle; the error says which step
    /// failed, with the tail of the logs.
    pub fn start(dir: &Path) -> Result<SlurmCluster, String> {
        for bin in [
            "munged",
            "mungekey",
            "slurmctld",
            "slurmd",
            "sbatch",
            "sinfo",
        ] {
            if Command::new("sh")
                .args(["-c", &format!("command -v {bin}")])
                .output()
                .map_or(true, |o| !o.status.success())
            {
                return Err(format!(
                    "{bin} is not installed (Debian: munge, slurmctld, slurmd, slurm-client)"
                ));
            }
        }
        for sub in ["state", "spool", "log"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| e.to_string())?;
        }
        let mut cluster = SlurmCluster {
            dir: dir.to_path_buf(),
            daemons: Vec::new(),
        };
        let key = dir.join("munge.key");
        let ok = Command::new("mungekey")
            .arg("-c")
            .arg("-k")
            .arg(&key)
            .status()
            .map_err(|e| e.to_string())?;
        if !ok.success() {
            return Err("mungekey could not create a key".into());
        }
        let d = |name: &str| dir.join(name).display().to_string();
        cluster.daemon(
            Command::new("munged")
                .args(["--foreground", "--force"])
                .arg(format!("--key-file={}", d("munge.key")))
                .arg(format!("--socket={}", d("munge.sock")))
                .arg(format!("--pid-file={}", d("munged.pid")))
                .arg(format!("--log-file={}", d("log/munged.log")))
                .arg(format!("--seed-file={}", d("munged.seed"))),
            "munged",
        )?;
        cluster.wait_for(|| dir.join("munge.sock").exists(), "munged's socket")?;
        let host = hostname();
        std::fs::write(dir.join("slurm.conf"), conf(dir, &host)).map_err(|e| e.to_string())?;
        let conf_path = d("slurm.conf");
        cluster.daemon(
            Command::new("slurmctld").args(["-D", "-f", &conf_path]),
            "slurmctld",
        )?;
        cluster.daemon(
            Command::new("slurmd").args(["-D", "-f", &conf_path, "-N", &host]),
            "slurmd",
        )?;
        cluster.wait_for(
            || {
                cluster
                    .run("sinfo", &["-h", "-o", "%t"])
                    .is_ok_and(|s| s.trim() == "idle")
            },
            "the node to be idle",
        )?;
        Ok(cluster)
    }

    /// Starts a daemon in its own process group, output to `log/NAME.out`.
    fn daemon(&mut self, cmd: &mut Command, name: &str) -> Result<(), String> {
        let out = std::fs::File::create(self.dir.join(format!("log/{name}.out")))
            .map_err(|e| e.to_string())?;
        cmd.env("SLURM_CONF", self.dir.join("slurm.conf"))
            .stdin(Stdio::null())
            .stdout(out.try_clone().map_err(|e| e.to_string())?)
            .stderr(out);
        let child = spawn_group(cmd, None).map_err(|e| format!("starting {name}: {e}"))?;
        self.daemons.push(child);
        Ok(())
    }

    /// Waits up to 30 s for `ready`; the error names what did not happen and shows the logs.
    fn wait_for(&self, ready: impl Fn() -> bool, what: &str) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ready() {
            if Instant::now() > deadline {
                return Err(format!("waited 30 s for {what}:\n{}", self.logs()));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(())
    }

    /// The last lines of every log.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for e in std::fs::read_dir(self.dir.join("log"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(8).collect();
            out.push_str(&format!("== {}\n", e.path().display()));
            for l in tail.iter().rev() {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }

    /// The environment a Slurm client needs to reach this cluster.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![(
            "SLURM_CONF".into(),
            self.dir.join("slurm.conf").display().to_string(),
        )]
    }

    /// Runs a Slurm client command against this cluster; its standard output.
    pub fn run(&self, program: &str, args: &[&str]) -> Result<String, String> {
        let out = Command::new(program)
            .args(args)
            .envs(self.env())
            .output()
            .map_err(|e| format!("{program}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{program} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Waits until no job is pending or running, up to `limit`.
    pub fn wait_idle(&self, limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        loop {
            let queue = self.run("squeue", &["-h", "-o", "%i %T %r"])?;
            if queue.trim().is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "jobs still queued after {limit:?}:\n{queue}\n{}",
                    self.logs()
                ));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Process ids of the daemons (their groups' leaders).
    pub fn pids(&self) -> Vec<u32> {
        self.daemons.iter().map(Child::id).collect()
    }
}

impl Drop for SlurmCluster {
    fn drop(&mut self) {
        // slurmd, then slurmctld, then munged: each gets SIGTERM and a moment, then SIGKILL.
        while let Some(mut d) = self.daemons.pop() {
            stop_group(&mut d, libc::SIGTERM, Duration::from_secs(5));
        }
    }
}

/// A one-node configuration: everything under `dir`, free ports, no cgroup plugins.
fn conf(dir: &Path, host: &str) -> String {
    let d = dir.display();
    format!(
        "ClusterName=smtsched-test\n\
         SlurmctldHost={host}(127.0.0.1)\n\
         SlurmctldPort={ctld}\n\
         SlurmdPort={slurmd}\n\
         AuthType=auth/munge\n\
         AuthInfo=socket={d}/munge.sock\n\
         CredType=cred/munge\n\
         SlurmUser=root\n\
         SlurmdUser=root\n\
         StateSaveLocation={d}/state\n\
         SlurmdSpoolDir={d}/spool\n\
         SlurmctldPidFile={d}/slurmctld.pid\n\
         SlurmdPidFile={d}/slurmd.pid\n\
         SlurmctldLogFile={d}/log/slurmctld.log\n\
         SlurmdLogFile={d}/log/slurmd.log\n\
         ProctrackType=proctrack/pgid\n\
         TaskPlugin=task/none\n\
         JobAcctGatherType=jobacct_gather/none\n\
         AccountingStorageType=accounting_storage/none\n\
         SchedulerType=sched/builtin\n\
         SelectType=select/cons_tres\n\
         SelectTypeParameters=CR_Core\n\
         ReturnToService=2\n\
         MpiDefault=none\n\
         SwitchType=switch/none\n\
         NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN\n\
         PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
        ctld = free_port(),
        slurmd = free_port(),
        // As many as the node has, or slurmd registers with "low CPUs" and is drained.
        cpus = std::thread::available_parallelism().map_or(1, |n| n.get()),
    )
}
