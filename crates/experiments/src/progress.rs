//! What a long run has finished so far, kept in a file while it runs, so that the same command,
//! stopped (Ctrl-C, SIGTERM, SIGKILL, a reboot, a failed item, a Slurm job requeued), continues
//! where it stopped instead of starting over. Only the same run by the same build continues: a
//! changed option or a rebuilt program would mix results of two different runs.

use crate::shards::Shard;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What makes two runs the same run (the experiments and options of a suite, a sweep file and
/// shard), as kept in a progress file.
pub trait RunIdentity: Serialize + DeserializeOwned {
    /// How the kept run `self` differs from `current`, in words (`None`: the same run).
    fn differs_from(&self, current: &Self) -> Option<String>;
}

/// A run of one shard of some work, or of all of it (`None`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ShardRun<R> {
    pub run: R,
    pub shard: Option<Shard>,
}

impl<R: RunIdentity> RunIdentity for ShardRun<R> {
    fn differs_from(&self, current: &Self) -> Option<String> {
        let part = |s: Option<Shard>| {
            s.map_or("the whole run".into(), |s| {
                format!("shard {}/{}", s.index, s.count)
            })
        };
        self.run.differs_from(&current.run).or_else(|| {
            (self.shard != current.shard)
                .then(|| format!("{}, not {}", part(self.shard), part(current.shard)))
        })
    }
}

/// A progress file: the run, the build that ran it, and the items it finished.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(bound(serialize = "R: Serialize, T: Serialize"))]
#[serde(bound(deserialize = "R: DeserializeOwned, T: DeserializeOwned"))]
pub struct Progress<R, T> {
    /// The kind of run it belongs to (`smtsched-reproduce-progress-1`, …).
    pub format: String,
    pub run: R,
    /// A fingerprint of the program that ran them (the version alone does not change with the
    /// code).
    pub build: String,
    /// The finished items, in the order they finished.
    pub done: Vec<T>,
}

impl<R: RunIdentity, T> Progress<R, T> {
    pub fn new(format: &str, run: R, build: String) -> Self {
        Progress {
            format: format.into(),
            run,
            build,
            done: Vec::new(),
        }
    }

    /// Why these finished items cannot continue `run` by `build` (`None`: they can).
    pub fn mismatch(&self, run: &R, build: &str) -> Option<String> {
        if let Some(d) = self.run.differs_from(run) {
            return Some(format!("another run ({d})"));
        }
        (self.build != build).then(|| "another build of smtsched".to_string())
    }
}

/// Reads the progress file of a run of kind `format`: `None` if there is none; an error (one
/// line, naming the file) if the file is something else, which is then the user's and must not be
/// overwritten.
pub fn read_progress<R: RunIdentity, T: DeserializeOwned>(
    path: &Path,
    format: &str,
) -> Result<Option<Progress<R, T>>, String> {
    let file = path.display();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{file}: {e}")),
    };
    let not_ours = || {
        format!("{file}: not a progress file of this command (move it away, or write elsewhere)")
    };
    let p: Progress<R, T> = serde_json::from_str(&text).map_err(|_| not_ours())?;
    if p.format != format {
        return Err(not_ours());
    }
    Ok(Some(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Serialize, Deserialize)]
    struct Seeded(u64);

    impl RunIdentity for Seeded {
        fn differs_from(&self, current: &Self) -> Option<String> {
            (self.0 != current.0).then(|| format!("seed {} (not {})", self.0, current.0))
        }
    }

    #[test]
    fn only_the_same_run_by_the_same_build_continues() {
        let kept: Progress<Seeded, u32> = Progress::new("f-1", Seeded(1), "b1".into());
        assert_eq!(kept.mismatch(&Seeded(1), "b1"), None);
        assert_eq!(
            kept.mismatch(&Seeded(1), "b2").unwrap(),
            "another build of smtsched"
        );
        assert_eq!(
            kept.mismatch(&Seeded(2), "b1").unwrap(),
            "another run (seed 1 (not 2))"
        );
    }

    #[test]
    fn a_shard_is_another_run_than_the_whole() {
        let shard = |s: Option<Shard>, seed| ShardRun {
            run: Seeded(seed),
            shard: s,
        };
        let half = Some(Shard { index: 1, count: 2 });
        assert_eq!(shard(half, 1).differs_from(&shard(half, 1)), None);
        assert_eq!(
            shard(None, 1).differs_from(&shard(half, 1)).unwrap(),
            "the whole run, not shard 1/2"
        );
        // What was run decides first.
        assert_eq!(
            shard(None, 1).differs_from(&shard(half, 2)).unwrap(),
            "seed 1 (not 2)"
        );
    }

    #[test]
    fn a_file_that_is_not_a_progress_file_of_the_kind_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        assert!(read_progress::<Seeded, u32>(&path, "f-1")
            .unwrap()
            .is_none());
        let mut kept: Progress<Seeded, u32> = Progress::new("f-1", Seeded(1), "b".into());
        kept.done = vec![3, 1];
        std::fs::write(&path, serde_json::to_string(&kept).unwrap()).unwrap();
        let back = read_progress::<Seeded, u32>(&path, "f-1").unwrap().unwrap();
        assert_eq!(back.done, [3, 1]);
        let e = read_progress::<Seeded, u32>(&path, "f-2").unwrap_err();
        assert!(e.contains("p.json: not a progress file"), "{e}");
        std::fs::write(&path, "mine\n").unwrap();
        let e = read_progress::<Seeded, u32>(&path, "f-1").unwrap_err();
        assert!(e.contains("p.json: not a progress file"), "{e}");
    }
}
