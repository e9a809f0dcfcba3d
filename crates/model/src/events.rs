//! One vocabulary of counter events for every part of smtsched: the simulator's counters, the
//! host's perf events that count the same thing, the estimator's features and the views policies
//! read. Names are parsed once, where data is loaded; everything after that uses the enum.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A counter event the performance-ratio estimator and the policies can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterEvent {
    Instructions,
    /// Level-1 instruction cache misses (the Pentium 4's trace-cache misses).
    L1iMisses,
    L1dMisses,
    /// Misses of the last cache level.
    LlcMisses,
    FpOps,
    Loads,
    Stores,
    BranchMispredicts,
}

/// Number of [`CounterEvent`]s.
pub const EVENT_COUNT: usize = 8;

impl CounterEvent {
    /// Every event, in the order of columns in windows and samples files.
    pub const ALL: [CounterEvent; EVENT_COUNT] = [
        CounterEvent::Instructions,
        CounterEvent::L1iMisses,
        CounterEvent::L1dMisses,
        CounterEvent::LlcMisses,
        CounterEvent::FpOps,
        CounterEvent::Loads,
        CounterEvent::Stores,
        CounterEvent::BranchMispredicts,
    ];

    /// The name in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            CounterEvent::Instructions => "instructions",
            CounterEvent::L1iMisses => "l1i_misses",
            CounterEvent::L1dMisses => "l1d_misses",
            CounterEvent::LlcMisses => "llc_misses",
            CounterEvent::FpOps => "fp_ops",
            CounterEvent::Loads => "loads",
            CounterEvent::Stores => "stores",
            CounterEvent::BranchMispredicts => "branch_mispredicts",
        }
    }

    pub fn parse(name: &str) -> Option<CounterEvent> {
        CounterEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Position in [`CounterEvent::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Every name, comma-separated (for error messages).
    pub fn names() -> String {
        CounterEvent::ALL.map(|e| e.name()).join(", ")
    }
}

impl fmt::Display for CounterEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Events per cycle of one thread over an interval (DESIGN §2, "EPC"), one value per
/// [`CounterEvent`]. Instructions per cycle is the IPC.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Epc(pub [f64; EVENT_COUNT]);

impl Epc {
    pub fn get(&self, e: CounterEvent) -> f64 {
        self.0[e.index()]
    }

    pub fn set(&mut self, e: CounterEvent, v: f64) {
        self.0[e.index()] = v;
    }

    /// Builds rates from `(event, value)` pairs; events not named are 0.
    pub fn from_pairs(pairs: &[(CounterEvent, f64)]) -> Epc {
        let mut epc = Epc::default();
        for &(e, v) in pairs {
            epc.set(e, v);
        }
        epc
    }

    /// `self + other × weight`, event by event (for time-weighted sums).
    pub fn add_scaled(&mut self, other: &Epc, weight: f64) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b * weight;
        }
    }

    /// Every value divided by `d`.
    pub fn divided(&self, d: f64) -> Epc {
        Epc(self.0.map(|v| v / d))
    }

    /// Every value multiplied by `f`.
    pub fn scaled(&self, f: f64) -> Epc {
        Epc(self.0.map(|v| v * f))
    }
}

impl std::ops::Index<CounterEvent> for Epc {
    type Output = f64;
    fn index(&self, e: CounterEvent) -> &f64 {
        &self.0[e.index()]
    }
}

/// Serialized as a map from event name to value.
impl Serialize for Epc {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(EVENT_COUNT))?;
        for e in CounterEvent::ALL {
            m.serialize_entry(e.name(), &self.get(e))?;
        }
        m.end()
    }
}

/// Read from the same map; an unknown event name is an error, a missing one is 0.
impl<'de> Deserialize<'de> for Epc {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Epc, D::Error> {
        let map = std::collections::BTreeMap::<String, f64>::deserialize(d)?;
        let mut epc = Epc::default();
        for (name, v) in map {
            let e = CounterEvent::parse(&name).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "unknown event {name:?} (events: {})",
                    CounterEvent::names()
                ))
            })?;
            epc.set(e, v);
        }
        Ok(epc)
    }
}

/// Whose events a feature reads: the thread estimated, or the thread on its sibling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Side {
    Subject,
    Background,
}

/// An estimator feature: one event's rate for one side (`l1d_misses_subj`, `fp_ops_back`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Feature {
    pub event: CounterEvent,
    pub side: Side,
}

impl Feature {
    pub fn subj(event: CounterEvent) -> Feature {
        Feature {
            event,
            side: Side::Subject,
        }
    }

    pub fn back(event: CounterEvent) -> Feature {
        Feature {
            event,
            side: Side::Background,
        }
    }

    /// `<event>_subj` or `<event>_back`.
    pub fn parse(name: &str) -> Option<Feature> {
        if let Some(e) = name.strip_suffix("_subj") {
            CounterEvent::parse(e).map(Feature::subj)
        } else {
            CounterEvent::parse(name.strip_suffix("_back")?).map(Feature::back)
        }
    }

    /// Every feature: each event of the subject, then each of the background.
    pub fn all() -> Vec<Feature> {
        CounterEvent::ALL
            .into_iter()
            .map(Feature::subj)
            .chain(CounterEvent::ALL.into_iter().map(Feature::back))
            .collect()
    }

    /// The feature's value given both threads' rates.
    pub fn value(self, subj: &Epc, back: &Epc) -> f64 {
        match self.side {
            Side::Subject => subj.get(self.event),
            Side::Background => back.get(self.event),
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = match self.side {
            Side::Subject => "subj",
            Side::Background => "back",
        };
        write!(f, "{}_{side}", self.event.name())
    }
}

impl From<Feature> for String {
    fn from(f: Feature) -> String {
        f.to_string()
    }
}

impl TryFrom<String> for Feature {
    type Error = String;
    fn try_from(s: String) -> Result<Feature, String> {
        Feature::parse(&s).ok_or_else(|| {
            format!(
                "unknown feature {s:?} (features are <event>_subj or <event>_back; events: {})",
                CounterEvent::names()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_rejected() {
        for e in CounterEvent::ALL {
            assert_eq!(CounterEvent::parse(e.name()), Some(e));
        }
        for f in Feature::all() {
            assert_eq!(Feature::parse(&f.to_string()), Some(f));
        }
        assert_eq!(Feature::all().len(), 16);
        assert!(Feature::parse("l1d_misses").is_none());
        assert!(Feature::parse("l2_misses_subj").is_none());
        let err = Feature::try_from("cycles_back".to_string()).unwrap_err();
        assert!(
            err.contains("cycles_back") && err.contains("llc_misses"),
            "{err}"
        );
    }

    #[test]
    fn a_feature_reads_its_side() {
        let subj = Epc::from_pairs(&[(CounterEvent::FpOps, 0.25)]);
        let back = Epc::from_pairs(&[(CounterEvent::FpOps, 0.5)]);
        assert_eq!(Feature::subj(CounterEvent::FpOps).value(&subj, &back), 0.25);
        assert_eq!(Feature::back(CounterEvent::FpOps).value(&subj, &back), 0.5);
    }
}
