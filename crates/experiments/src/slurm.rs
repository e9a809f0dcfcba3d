//! `smtsched sweep slurm` and `smtsched reproduce all --slurm`: a shell script that submits
//! sharded work to Slurm as a job array — one task per shard, each writing its shard file — and a
//! merge job that runs once every shard has succeeded (`--dependency=afterok`), writing what an
//! unsharded run writes.

use std::path::Path;

/// What the script runs, and where.
pub struct SlurmPlan<'a> {
    /// The job name (the merge job's is this with `-merge`).
    pub name: &'a str,
    pub shards: u32,
    /// Where shard files, logs and the merged output go (absolute).
    pub dir: &'a Path,
    /// The directory the script was written from (absolute). Every job `cd`s there first, so
    /// each relative path resolves as it did for the command that wrote the script — including
    /// paths no argument shows (a sweep file's machines, an experiment file's task set) and
    /// arguments that are a name or a file (`--only`, `--estimator`), which rewriting the
    /// arguments as absolute paths would miss.
    pub workdir: &'a Path,
    /// A shard's command, the absolute executable first; the script appends
    /// `--shard "$SLURM_ARRAY_TASK_ID/N" -o DIR/shard-ID.json`.
    pub shard_command: &'a [String],
    /// The merge's command; the script appends DIR/shard-1.json … DIR/shard-N.json (this
    /// submission's shards, not whatever an earlier one left in DIR) and `-o DIR/<merge_output>`.
    pub merge_command: &'a [String],
    /// The merged output's name under `dir`.
    pub merge_output: &'a str,
}

/// Quotes `s` for a POSIX shell: single quotes, with each `'` closed, escaped and reopened.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The words of `c`, each quoted.
fn words(c: &[String]) -> String {
    c.iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A shard job's and the merge job's shell commands, for `sbatch --wrap`. Each `cd`s to the
/// plan's `workdir` first; the merge's shell lists the shard files itself (N names could
/// overflow the one argument --wrap takes).
fn job_commands(p: &SlurmPlan) -> (String, String) {
    let dir = shell_quote(&p.dir.display().to_string());
    let cd = format!("cd {} && ", shell_quote(&p.workdir.display().to_string()));
    let n = p.shards;
    let shard = format!(
        "{cd}exec {} --shard \"$SLURM_ARRAY_TASK_ID/{n}\" -o {dir}/shard-\"$SLURM_ARRAY_TASK_ID\".json",
        words(p.shard_command),
    );
    let merge = format!(
        "{cd}set -- && i=1 && while [ \"$i\" -le {n} ]; do set -- \"$@\" {dir}/shard-\"$i\".json; \
         i=$((i + 1)); done && exec {} \"$@\" -o {dir}/{}",
        words(p.merge_command),
        shell_quote(p.merge_output),
    );
    (shard, merge)
}

/// The submit script's text.
pub fn submit_script(p: &SlurmPlan) -> String {
    let dir = shell_quote(&p.dir.display().to_string());
    let name = shell_quote(p.name);
    // `$SLURM_ARRAY_TASK_ID` and `$i` must reach the job's shell unexpanded, so each --wrap
    // argument is itself single-quoted.
    let (shard_cmd, merge_cmd) = job_commands(p);
    format!(
        "#!/bin/sh\n\
         # Submits {name} to Slurm: {n} shards as a job array, then a merge job that runs\n\
         # when all of them have succeeded. Written by smtsched.\n\
         set -eu\n\
         mkdir -p {dir}\n\
         array=$(sbatch --parsable --job-name={name} --array=1-{n} --chdir={dir} \\\n  \
         --output={dir}/shard-%a.log --wrap={shard})\n\
         array=${{array%%;*}}\n\
         merge=$(sbatch --parsable --job-name={name}-merge --dependency=afterok:\"$array\" \\\n  \
         --chdir={dir} --output={dir}/merge.log --wrap={merge})\n\
         merge=${{merge%%;*}}\n\
         echo \"array job $array ({n} shards), merge job $merge: output in \"{dir}/{out}\n",
        n = p.shards,
        shard = shell_quote(&shard_cmd),
        merge = shell_quote(&merge_cmd),
        out = shell_quote(p.merge_output),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_quotes_and_spaces() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        // The shell reads it back as the original.
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", shell_quote("x 'y' $HOME *")))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "x 'y' $HOME *");
    }

    /// A directory whose name a shell would read as code or quotes is only ever a name: the
    /// script (with an `sbatch` that prints a job id) runs nothing it holds and prints it as is.
    #[test]
    fn the_script_treats_every_path_as_a_name() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let sbatch = bin.join("sbatch");
        std::fs::write(&sbatch, "#!/bin/sh\necho 42\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&sbatch, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = tmp.path().join("o\"$(touch INJECTED)'$HOME");
        let command = ["smtsched".to_string(), "sweep".into()];
        let script = submit_script(&SlurmPlan {
            name: "n'1",
            shards: 2,
            dir: &dir,
            workdir: tmp.path(),
            shard_command: &command,
            merge_command: &command,
            merge_output: "results.json",
        });
        let path = std::env::var("PATH").unwrap();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .current_dir(tmp.path())
            .env("PATH", format!("{}:{path}", bin.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(!tmp.path().join("INJECTED").exists());
        assert!(dir.is_dir());
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            format!(
                "array job 42 (2 shards), merge job 42: output in {}/results.json\n",
                dir.display()
            )
        );
    }
}
