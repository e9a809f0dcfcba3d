//! Slurm submissions (`sweep slurm`, `reproduce all --slurm`): a script that submits the shards
//! as a job array and a merge job after them, each running this executable.

use super::{check_outputs, out, write_file};
use crate::errors::bad_input;
use anyhow::{Context, Result};
use smtsched_experiments::slurm::{submit_script, SlurmPlan};
use std::path::{Path, PathBuf};

/// A submission, its paths absolute and its script's path checked.
#[derive(Debug)]
pub(crate) struct Submission {
    /// The job name.
    pub name: String,
    pub shards: u32,
    /// Where shard files, logs and the merged output go.
    pub dir: PathBuf,
    /// Where every job runs from: this process's working directory.
    pub workdir: PathBuf,
    /// A shard's command and the merge's, this executable first.
    pub shard_command: Vec<String>,
    pub merge_command: Vec<String>,
    /// The merged output's name under `dir`.
    pub merge_output: &'static str,
    /// Where the script goes (standard output when `None`).
    pub output: Option<PathBuf>,
}

impl Submission {
    /// Commands are `this executable` followed by each of `shard_args` and `merge_args`; the
    /// shards split `items` (counted as `unit`) among them.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        shards: u32,
        (items, unit): (usize, &str),
        dir: &Path,
        shard_args: &[String],
        merge_args: &[&str],
        merge_output: &'static str,
        output: Option<PathBuf>,
    ) -> Result<Self> {
        if shards as usize > items {
            return Err(bad_input(format!(
                "--shards {shards}: more than the {items} {unit} to run (a shard would have none)"
            )));
        }
        // The script makes --dir (mkdir -p) when it runs: only a file in its place is wrong now.
        if dir.exists() && !dir.is_dir() {
            return Err(bad_input(format!(
                "--dir {}: not a directory",
                dir.display()
            )));
        }
        check_outputs([output.as_deref()])?;
        let exe = executable()?;
        let command = |args: Vec<String>| [vec![exe.clone()], args].concat();
        Ok(Submission {
            name,
            shards,
            dir: absolute(dir)?,
            workdir: std::env::current_dir().context("finding the working directory")?,
            shard_command: command(shard_args.to_vec()),
            merge_command: command(merge_args.iter().map(|s| s.to_string()).collect()),
            merge_output,
            output,
        })
    }

    /// Writes the script (executable) to its file, or prints it.
    pub fn write(&self) -> Result<()> {
        let script = submit_script(&SlurmPlan {
            name: &self.name,
            shards: self.shards,
            dir: &self.dir,
            workdir: &self.workdir,
            shard_command: &self.shard_command,
            merge_command: &self.merge_command,
            merge_output: self.merge_output,
        });
        let Some(p) = &self.output else {
            return out(&script);
        };
        write_file(p, script.as_bytes())?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", p.display()))
    }
}

/// `p` made absolute (the script may be run from anywhere).
pub(crate) fn absolute(p: &Path) -> Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

/// This executable's absolute path, for job scripts.
fn executable() -> Result<String> {
    let exe = std::env::current_exe().context("finding this executable")?;
    Ok(exe.display().to_string())
}
