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
    /// A shard's command, the absolute executable first (jobs run from their own working
    /// directory); the script appends `--shard "$SLURM_ARRAY_TASK_ID/N" -o DIR/shard-ID.json`.
    pub shard_command: &'a [String],
    /// The merge's command; the script appends the shard files and `-o DIR/<merge_output>`.
    pub merge_command: &'a [String],
    /// The merged output's name under `dir`.
    pub merge_output: &'a str,
}

/// Quotes `s` for a POSIX shell: single quotes, with each `'` closed, escaped and reopened.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The submit script's text.
pub fn submit_script(p: &SlurmPlan) -> String {
    let words = |c: &[String]| {
        c.iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let dir = shell_quote(&p.dir.display().to_string());
    let name = shell_quote(p.name);
    // The job commands go to sbatch --wrap as one argument; `$SLURM_ARRAY_TASK_ID` and the glob
    // must reach the job's shell unexpanded, so that argument is itself single-quoted.
    let shard_cmd = format!(
        "{} --shard \"$SLURM_ARRAY_TASK_ID/{n}\" -o {dir}/shard-\"$SLURM_ARRAY_TASK_ID\".json",
        words(p.shard_command),
        n = p.shards
    );
    let merge_cmd = format!(
        "{} {dir}/shard-*.json -o {dir}/{}",
        words(p.merge_command),
        shell_quote(p.merge_output)
    );
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
         echo \"array job $array ({n} shards), merge job $merge: output in {dir}/{out}\"\n",
        n = p.shards,
        shard = shell_quote(&shard_cmd),
        merge = shell_quote(&merge_cmd),
        out = p.merge_output,
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
