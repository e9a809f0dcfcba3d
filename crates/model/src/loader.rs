//! Finding a description (embedded preset or user file), applying `--set key=value` overrides,
//! and deserialising it with errors that say where.

use crate::error::{ModelError, Origin};
use serde::de::DeserializeOwned;
use std::path::Path;

/// A description embedded in the binary.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub name: &'static str,
    /// Repository path the text was embedded from (shown in errors and `show`).
    pub file: &'static str,
    pub text: &'static str,
}

/// The text of a description and where it came from.
#[derive(Clone, Debug)]
pub struct Source {
    pub origin: Origin,
    pub text: String,
}

/// Looks `name` up among the presets first, then as a file path.
pub fn resolve(kind: &'static str, name: &str, presets: &[Preset]) -> Result<Source, ModelError> {
    if let Some(p) = presets.iter().find(|p| p.name == name) {
        return Ok(Source {
            origin: Origin::Preset {
                name: p.name.to_string(),
                file: p.file,
            },
            text: p.text.to_string(),
        });
    }
    let path = Path::new(name);
    if path.is_file() {
        let text = read_bounded(path).map_err(|source| ModelError::Io {
            path: path.display().to_string(),
            source,
        })?;
        return Ok(Source {
            origin: Origin::File(path.to_path_buf()),
            text,
        });
    }
    // Something there that is not a file: say what, not "no such file". (A pipe or device is
    // refused too: a description may be read more than once.)
    if let Ok(m) = std::fs::metadata(path) {
        let what = if m.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(ModelError::Io {
            path: path.display().to_string(),
            source: std::io::Error::other(format!("{what}; {kind} descriptions are TOML files")),
        });
    }
    let names: Vec<&str> = presets.iter().map(|p| p.name).collect();
    Err(ModelError::Unknown {
        kind,
        name: name.to_string(),
        hint: did_you_mean(name, &names),
        known: names.join(", "),
    })
}

/// ` (did you mean "NAME"?)` for the known name `given` most likely stands for — one it begins
/// (`gzip` for `gzip-like`) or one a typo away — or empty.
pub fn did_you_mean(given: &str, known: &[&str]) -> String {
    let given_lower = given.to_lowercase();
    let prefixed: Vec<&&str> = known
        .iter()
        .filter(|k| !given.is_empty() && k.to_lowercase().starts_with(&given_lower))
        .collect();
    let best = match prefixed.as_slice() {
        [one] => Some(**one),
        _ => known
            .iter()
            .map(|k| (strsim::jaro_winkler(&given_lower, &k.to_lowercase()), *k))
            .filter(|&(score, _)| score >= NEAR_MISS_SIMILARITY)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, k)| k),
    };
    best.map(|k| format!(" (did you mean {k:?}?)"))
        .unwrap_or_default()
}

/// Jaro-Winkler similarity at which a name counts as a typo of a known one.
const NEAR_MISS_SIMILARITY: f64 = 0.85;

/// Largest description file read: far above any real one, and a bound on what a path naming
/// something huge (a `/proc` file as root) can cost.
pub const MAX_DESCRIPTION_BYTES: u64 = 16 << 20;

/// Reads a description file of at most [`MAX_DESCRIPTION_BYTES`].
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_DESCRIPTION_BYTES + 1)
        .read_to_end(&mut bytes)?;
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    if bytes.len() as u64 > MAX_DESCRIPTION_BYTES {
        return Err(invalid(format!(
            "larger than {} MiB",
            MAX_DESCRIPTION_BYTES >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        // A recorded trace is the binary file users most often give where a TOML belongs.
        let what = if e.as_bytes().starts_with(b"SMTTRACE") {
            "a recorded trace (see `smtsched trace info`; `solo`, `corun` and `matrix` take it as a workload)"
        } else {
            "binary data"
        };
        invalid(format!("not a TOML description: {what}"))
    })
}

/// One `key.path=value` override; the value is read as a TOML value, or as a string if it is not one.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    pub path: Vec<String>,
    pub value: toml::Value,
    pub text: String,
}

impl std::str::FromStr for Override {
    type Err = ModelError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = |reason: &str| ModelError::Override {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let (key, raw) = text
            .split_once('=')
            .ok_or_else(|| err("expected KEY=VALUE"))?;
        let path: Vec<String> = key
            .trim()
            .split('.')
            .map(|s| s.trim().to_string())
            .collect();
        if path.iter().any(|p| p.is_empty()) {
            return Err(err("empty key component"));
        }
        let raw = raw.trim();
        let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(raw.to_string()));
        Ok(Override {
            path,
            value,
            text: text.to_string(),
        })
    }
}

/// Parses `source` into `T`, applying `overrides` to the TOML document first. Overrides may only
/// replace keys that exist (so a typo fails instead of being ignored).
pub fn parse<T: DeserializeOwned>(
    source: &Source,
    overrides: &[Override],
) -> Result<T, ModelError> {
    if overrides.is_empty() {
        return toml::from_str(&source.text)
            .map_err(|e| ModelError::from_toml(&source.origin, &source.text, &e));
    }
    let mut table: toml::Table = toml::from_str(&source.text)
        .map_err(|e| ModelError::from_toml(&source.origin, &source.text, &e))?;
    for o in overrides {
        apply(&mut table, o)?;
    }
    let text = toml::to_string(&table).map_err(|e| ModelError::Override {
        text: overrides[0].text.clone(),
        reason: e.to_string(),
    })?;
    toml::from_str(&text)
        .map_err(|e| ModelError::from_toml(&overridden(&source.origin, overrides), &text, &e))
}

/// Where a description with `overrides` applied came from, naming them: a value an override gave
/// is then blamed on it, not on the file.
pub fn overridden(origin: &Origin, overrides: &[Override]) -> Origin {
    if overrides.is_empty() {
        return origin.clone();
    }
    let sets: Vec<String> = overrides
        .iter()
        .map(|o| format!("--set {}", o.text))
        .collect();
    Origin::Inline(format!("{origin} with {}", sets.join(" ")))
}

fn apply(table: &mut toml::Table, o: &Override) -> Result<(), ModelError> {
    let err = |reason: String| ModelError::Override {
        text: o.text.clone(),
        reason,
    };
    let (last, parents) = o.path.split_last().expect("override path is never empty");
    let missing = |t: &toml::Table, upto: usize| {
        let keys: Vec<&str> = t.keys().map(String::as_str).collect();
        let hint = did_you_mean(&o.path[upto], &keys);
        err(format!("no key {}{hint}", o.path[..=upto].join(".")))
    };
    let mut cur = table;
    for (i, key) in parents.iter().enumerate() {
        if !cur.contains_key(key) {
            return Err(missing(cur, i));
        }
        cur = match cur.get_mut(key) {
            Some(toml::Value::Table(t)) => t,
            _ => return Err(err(format!("{} is not a table", o.path[..=i].join(".")))),
        };
    }
    if !cur.contains_key(last) {
        return Err(missing(cur, parents.len()));
    }
    cur.insert(last.clone(), o.value.clone());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_values_are_typed() {
        let o: Override = "cache.L2.size_bytes=98304".parse().unwrap();
        assert_eq!(o.path, vec!["cache", "L2", "size_bytes"]);
        assert_eq!(o.value, toml::Value::Integer(98304));
        let s: Override = "name=fast one".parse().unwrap();
        assert_eq!(s.value, toml::Value::String("fast one".into()));
        assert!("novalue".parse::<Override>().is_err());
    }

    #[test]
    fn override_of_missing_key_fails() {
        let src = Source {
            origin: Origin::Inline("t".into()),
            text: "[a]\nb = 1\n".into(),
        };
        let ok: toml::Table = parse(&src, &["a.b=2".parse().unwrap()]).unwrap();
        assert_eq!(ok["a"]["b"].as_integer(), Some(2));
        let bad = parse::<toml::Table>(&src, &["a.c=2".parse().unwrap()]).unwrap_err();
        assert!(bad.to_string().contains("no key a.c"), "{bad}");
    }

    #[test]
    fn a_near_miss_is_named() {
        let known = ["gzip-like", "gcc-like", "swim-like"];
        assert_eq!(
            did_you_mean("gzip", &known),
            " (did you mean \"gzip-like\"?)"
        );
        assert_eq!(
            did_you_mean("swimm-like", &known),
            " (did you mean \"swim-like\"?)"
        );
        assert_eq!(did_you_mean("g", &known), "");
        assert_eq!(did_you_mean("nothing-like-it", &known), "");
        let src = Source {
            origin: Origin::Inline("t".into()),
            text: "[cache.L2]\nsize_bytes = 1\n".into(),
        };
        let bad = parse::<toml::Table>(&src, &["cache.L2.size_byte=2".parse().unwrap()]);
        let text = bad.unwrap_err().to_string();
        assert!(text.contains("did you mean \"size_bytes\""), "{text}");
    }

    #[test]
    fn a_description_file_larger_than_the_limit_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.toml");
        // Sparse: 1 byte over the limit costs no disk.
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_DESCRIPTION_BYTES + 1).unwrap();
        let e = resolve("machine", big.to_str().unwrap(), &[]).unwrap_err();
        assert!(e.to_string().contains("larger than 16 MiB"), "{e}");
        let ok = dir.path().join("ok.toml");
        std::fs::write(&ok, "name = \"x\"\n").unwrap();
        assert_eq!(
            resolve("machine", ok.to_str().unwrap(), &[]).unwrap().text,
            "name = \"x\"\n"
        );
    }
}
