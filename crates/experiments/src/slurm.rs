//! `smtsched sweep slurm`: a shell script that submits a sweep to Slurm as a job array — one
//! task per shard, each writing its shard file — and a merge job that runs once every shard has
//! succeeded (`--dependency=afterok`), writing the same results an unsharded run writes.

use std::path::Path;

/// What the script runs, and where.
pub struct SlurmPlan<'a> {
    /// The smtsched executable (absolute: jobs run from their own working directory).
    pub exe: &'a Path,
    /// The sweep file (absolute).
    pub sweep: &'a Path,
    pub name: &'a str,
    pub shards: u32,
    /// Where shard files, logs and `results.json` go (absolute).
    pub dir: &'a Path,
}

/// Quotes `s` for a POSIX shell: single quotes, with each `'` closed, escaped and reopened.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The submit script's text.
pub fn submit_script(p: &SlurmPlan) -> String {
    let q = |path: &Path| shell_quote(&path.display().to_string());
    let (exe, sweep, dir) = (q(p.exe), q(p.sweep), q(p.dir));
    let name = shell_quote(p.name);
    // The job commands go to sbatch --wrap as one argument; `$SLURM_ARRAY_TASK_ID` and the glob
    // must reach the job's shell unexpanded, so that argument is itself single-quoted.
    let shard_cmd = format!(
        "{exe} sweep run {sweep} --shard \"$SLURM_ARRAY_TASK_ID/{n}\" -o {dir}/shard-\"$SLURM_ARRAY_TASK_ID\".json",
        n = p.shards
    );
    let merge_cmd = format!("{exe} sweep merge {dir}/shard-*.json -o {dir}/results.json");
    format!(
        "#!/bin/sh\n\
         # Submits sweep {name} to Slurm: {n} shards as a job array, then a merge job that runs\n\
         # when all of them have succeeded. Written by `smtsched sweep slurm`.\n\
         set -eu\n\
         mkdir -p {dir}\n\
         array=$(sbatch --parsable --job-name={name} --array=1-{n} --chdir={dir} \\\n  \
         --output={dir}/shard-%a.log --wrap={shard})\n\
         array=${{array%%;*}}\n\
         merge=$(sbatch --parsable --job-name={name}-merge --dependency=afterok:\"$array\" \\\n  \
         --chdir={dir} --output={dir}/merge.log --wrap={merge})\n\
         merge=${{merge%%;*}}\n\
         echo \"array job $array ({n} shards), merge job $merge: results in {dir}/results.json\"\n",
        n = p.shards,
        shard = shell_quote(&shard_cmd),
        merge = shell_quote(&merge_cmd),
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
}
