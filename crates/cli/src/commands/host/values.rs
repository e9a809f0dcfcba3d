//! Typed values of the `host` and `measure` flags whose syntax is the command line's own: clap
//! parses them, so a malformed one is a one-line error naming the flag and the value (exit 2)
//! before anything runs.

use smtsched_host::kernels::KernelKind;
use smtsched_host::looper;
use smtsched_host::perf::Event;
use smtsched_model::Placement;
use std::str::FromStr;

/// A size in bytes: `4096`, `64KiB`, `16MiB`, `1GiB` (and `K`, `M`, `G`, `KB`… as binary units
/// too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let n: u64 = num.parse().map_err(|_| {
            format!("size {text:?}: expected a number of bytes, e.g. 65536, 64KiB or 16MiB")
        })?;
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            _ => {
                return Err(format!(
                    "size {text:?}: unknown unit {unit:?} (use KiB, MiB or GiB)"
                ))
            }
        };
        n.checked_mul(mult)
            .map(ByteSize)
            .ok_or_else(|| format!("size {text:?} is too large"))
    }
}

/// `--events`: a comma-separated list, `default`, `all` or `none`.
#[derive(Clone, Debug, PartialEq)]
pub struct Events(pub Vec<Event>);

impl FromStr for Events {
    type Err = smtsched_host::HostError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Event::parse_list(text).map(Events)
    }
}

/// Built-in kernels: a comma-separated list, or `all`.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernels(pub Vec<KernelKind>);

impl FromStr for Kernels {
    type Err = smtsched_host::HostError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "all" {
            return Ok(Kernels(KernelKind::ALL.to_vec()));
        }
        let kinds = text.split(',').map(|n| KernelKind::parse(n.trim()));
        kinds.collect::<Result<_, _>>().map(Kernels)
    }
}

/// `KERNEL=VALUE`: a value for one built-in kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct PerKernel<T> {
    pub kernel: KernelKind,
    pub value: T,
}

impl<T: FromStr> FromStr for PerKernel<T>
where
    T::Err: std::fmt::Display,
{
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let (name, value) = name_value(text)?;
        let kernel = KernelKind::parse(name).map_err(|e| format!("{name}=…: {e}"))?;
        let value = value.parse().map_err(|e| format!("{value:?}: {e}"))?;
        Ok(PerKernel { kernel, value })
    }
}

/// A number of a kernel's work units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work(pub u64);

impl FromStr for Work {
    type Err = &'static str;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.parse().map(Work).map_err(|_| "not a whole number")
    }
}

/// `NAME=COMMAND LINE`: a command workload, its line split as a shell would.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedCommand {
    pub name: String,
    pub argv: Vec<String>,
}

impl FromStr for NamedCommand {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let (name, line) = name_value(text)?;
        let argv = looper::split_command(line).map_err(|e| format!("{name}: {e}"))?;
        Ok(NamedCommand {
            name: name.to_string(),
            argv,
        })
    }
}

/// `NAME=VALUE`, both trimmed, the name not empty.
fn name_value(text: &str) -> Result<(&str, &str), String> {
    text.split_once('=')
        .map(|(k, v)| (k.trim(), v.trim()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("{text:?}: expected NAME=VALUE"))
}

/// Placements: a comma-separated list (repeats once), or `all`.
#[derive(Clone, Debug, PartialEq)]
pub struct Placements(pub Vec<Placement>);

impl FromStr for Placements {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        if text.trim() == "all" {
            return Ok(Placements(vec![
                Placement::Siblings,
                Placement::Cores,
                Placement::Timeshare,
            ]));
        }
        let mut out = Vec::new();
        for part in text.split(',') {
            let p: Placement = part.trim().parse()?;
            if !out.contains(&p) {
                out.push(p);
            }
        }
        Ok(Placements(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let size = |t: &str| t.parse::<ByteSize>().map(|s| s.0);
        assert_eq!(size("4096").unwrap(), 4096);
        assert_eq!(size("64KiB").unwrap(), 64 << 10);
        assert_eq!(size("16M").unwrap(), 16 << 20);
        assert_eq!(size("1GiB").unwrap(), 1 << 30);
        assert!(size("12 parsecs").is_err());
        assert!(size("MiB").is_err());
    }

    #[test]
    fn placements_parse() {
        let p = |t: &str| t.parse::<Placements>().map(|p| p.0);
        assert_eq!(p("all").unwrap().len(), 3);
        assert_eq!(
            p("smp,rr").unwrap(),
            vec![Placement::Cores, Placement::Timeshare]
        );
        assert!(p("diagonal").is_err());
    }

    #[test]
    fn per_kernel_values() {
        let f: PerKernel<ByteSize> = "pointer-chase=16MiB".parse().unwrap();
        assert_eq!((f.kernel.name(), f.value.0), ("pointer-chase", 16 << 20));
        assert!("pointer-chase=lots".parse::<PerKernel<ByteSize>>().is_err());
        assert!("novalue".parse::<PerKernel<Work>>().is_err());
    }
}
