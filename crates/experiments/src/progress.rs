//! What a long run has finished so far, kept in a file while it runs, so that the same command,
//! stopped (Ctrl-C, SIGTERM, SIGKILL, a reboot, a failed item, a Slurm job requeued), continues
//! where it stopped instead of starting over. Only the same run of the same inputs by the same
//! build continues: a changed option, an edited input file or a rebuilt program would mix results
//! of two different runs.
//!
//! The file is a journal, one JSON value per line: the run's [`Identity`], then each finished
//! item as it ends. Appending a line costs the same however many came before (a sweep may have
//! 100,000 jobs), and a last line cut short by SIGKILL is ignored on reading.

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

/// The first line of a progress file: which run its items belong to.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Identity<R> {
    /// The kind of run (`smtsched-reproduce-progress-2`, …).
    pub format: String,
    /// A fingerprint of the program (its version alone does not change with the code).
    pub build: String,
    /// A fingerprint of the inputs the run read (experiment, sweep, machine, workload files).
    pub inputs: String,
    pub run: R,
}

/// What a progress file holds for the run about to start.
#[derive(Debug, PartialEq)]
pub enum Earlier<T> {
    /// There is none.
    Nothing,
    /// The same run's finished items, in the order they finished.
    Continue(Vec<T>),
    /// Another run's (or build's, or inputs'): why, in words. It is replaced, not continued.
    SetAside(String),
}

/// The journal's first line, for `id`.
pub fn header_line<R: Serialize>(id: &Identity<R>) -> String {
    serde_json::to_string(id).expect("an identity serializes") + "\n"
}

/// The journal line of one finished item.
pub fn item_line<T: Serialize>(item: &T) -> String {
    serde_json::to_string(item).expect("an item serializes") + "\n"
}

/// Reads the progress file at `path` for the run `current` is about to start. An error (one line,
/// naming the file) means the file is not a progress file of `current.format`: it is then the
/// user's, and must be neither overwritten nor removed.
pub fn read_progress<R: RunIdentity, T: DeserializeOwned>(
    path: &Path,
    current: &Identity<R>,
) -> Result<Earlier<T>, String> {
    let file = path.display();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Earlier::Nothing),
        Err(e) => return Err(format!("{file}: {e}")),
    };
    let mut lines = text.split_inclusive('\n');
    let head: serde_json::Value = lines
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_default();
    if head["format"].as_str() != Some(current.format.as_str()) {
        return Err(format!(
            "{file}: not a progress file of this command (move it away, or write elsewhere)"
        ));
    }
    // What decides is read first, so that a build whose items have another shape is set aside,
    // not misread.
    if head["build"].as_str() != Some(current.build.as_str()) {
        return Ok(Earlier::SetAside("another build of smtsched".into()));
    }
    let differs = match serde_json::from_value::<R>(head["run"].clone()) {
        Ok(run) => run.differs_from(&current.run),
        Err(e) => Some(format!("unreadable: {e}")),
    };
    if let Some(d) = differs {
        return Ok(Earlier::SetAside(format!("another run ({d})")));
    }
    if head["inputs"].as_str() != Some(current.inputs.as_str()) {
        return Ok(Earlier::SetAside("edited input files".into()));
    }
    let mut done = Vec::new();
    for (n, line) in lines.enumerate() {
        // A last line without its end was cut short by SIGKILL (even if what is there parses, as
        // "4" of "42" does): its item is run again.
        if !line.ends_with('\n') {
            break;
        }
        match serde_json::from_str(line) {
            Ok(item) => done.push(item),
            Err(e) => return Ok(Earlier::SetAside(format!("line {}: {e}", n + 2))),
        }
    }
    Ok(Earlier::Continue(done))
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

    fn id(seed: u64, build: &str, inputs: &str) -> Identity<Seeded> {
        Identity {
            format: "f-1".into(),
            build: build.into(),
            inputs: inputs.into(),
            run: Seeded(seed),
        }
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
    fn only_the_same_run_of_the_same_inputs_by_the_same_build_continues() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        let read = |current: &Identity<Seeded>| read_progress::<Seeded, u32>(&path, current);
        assert_eq!(read(&id(1, "b", "i")).unwrap(), Earlier::Nothing);
        let journal = header_line(&id(1, "b", "i")) + &item_line(&3) + &item_line(&1);
        std::fs::write(&path, &journal).unwrap();
        assert_eq!(
            read(&id(1, "b", "i")).unwrap(),
            Earlier::Continue(vec![3, 1])
        );
        let set_aside = |why: &str| Earlier::SetAside(why.to_string());
        assert_eq!(
            read(&id(2, "b", "i")).unwrap(),
            set_aside("another run (seed 1 (not 2))")
        );
        assert_eq!(
            read(&id(1, "c", "i")).unwrap(),
            set_aside("another build of smtsched")
        );
        assert_eq!(
            read(&id(1, "b", "j")).unwrap(),
            set_aside("edited input files")
        );
        // A last line cut short is dropped; a bad line before it sets the file aside.
        std::fs::write(&path, journal.clone() + "4").unwrap();
        assert_eq!(
            read(&id(1, "b", "i")).unwrap(),
            Earlier::Continue(vec![3, 1])
        );
        std::fs::write(&path, journal + "x\n5\n").unwrap();
        assert!(
            matches!(read(&id(1, "b", "i")).unwrap(), Earlier::SetAside(w) if w.starts_with("line 4: "))
        );
    }

    #[test]
    fn a_file_that_is_not_a_progress_file_of_the_kind_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        let mut other = id(1, "b", "i");
        other.format = "f-2".into();
        for text in [header_line(&other), "mine\n".into(), String::new()] {
            std::fs::write(&path, text).unwrap();
            let e = read_progress::<Seeded, u32>(&path, &id(1, "b", "i")).unwrap_err();
            assert!(e.contains("p.json: not a progress file"), "{e}");
        }
    }
}
