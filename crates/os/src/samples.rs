//! Simulated samples shared by every simulated oracle of the process. A sample's rates are a
//! pure function of the machine, the protocol, and each thread's profile, starting phase and
//! logical CPU, whatever task set asked for it: the thesis's sets, its priorities experiment and
//! the USENIX paper's sets put the same SPEC stand-ins on the same package, so `reproduce all`
//! (and a sweep, or `train`) simulates each such sample once instead of once per experiment.
//! Results are identical with or without sharing; only the time taken differs.

use smtsched_model::memo::Memo;
use smtsched_model::rates::ThreadRate;
use smtsched_model::{MachineModel, WorkloadProfile};
use smtsched_uarch::protocol::Protocol;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// A machine or profile, known by its full description as `Debug` prints it (every field, floats
/// exactly, NaN and infinities apart): two descriptions that differ in any field are different.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DescriptionId(u32);

/// Everything a sample depends on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SampleKey {
    pub machine: DescriptionId,
    /// seed, warm-up and measured instructions, quantum, rounds, refill-only.
    pub protocol: (u64, u64, u64, u64, u32, bool),
    /// Each thread in run order: its profile, the instruction it starts at, its logical CPU.
    pub threads: Vec<(DescriptionId, u64, u32)>,
}

impl SampleKey {
    pub fn new(
        machine: DescriptionId,
        p: &Protocol,
        threads: Vec<(DescriptionId, u64, u32)>,
    ) -> Self {
        SampleKey {
            machine,
            protocol: (
                p.seed,
                p.warmup_instructions,
                p.measure_instructions,
                p.quantum_cycles,
                p.timeshare_rounds,
                p.refill_only,
            ),
            threads,
        }
    }
}

/// The process's shared samples.
#[derive(Default)]
pub struct SharedSamples {
    ids: Mutex<HashMap<String, DescriptionId>>,
    runs: Memo<SampleKey, Vec<ThreadRate>>,
    /// A thread alone: its solo IPC and last-level-cache footprint in lines.
    solos: Memo<SampleKey, (f64, usize)>,
    /// Samples simulated so far (runs together, solo runs).
    simulated: Mutex<(u64, u64)>,
}

static SHARED: LazyLock<SharedSamples> = LazyLock::new(SharedSamples::default);

/// The samples every oracle of this process shares.
pub fn shared() -> &'static SharedSamples {
    &SHARED
}

impl SharedSamples {
    pub fn machine_id(&self, m: &MachineModel) -> DescriptionId {
        self.id_of(format!("{m:?}"))
    }

    pub fn profile_id(&self, p: &WorkloadProfile) -> DescriptionId {
        self.id_of(format!("{p:?}"))
    }

    fn id_of(&self, text: String) -> DescriptionId {
        let mut ids = self.ids.lock().expect("samples lock");
        let next = DescriptionId(ids.len() as u32);
        *ids.entry(text).or_insert(next)
    }

    /// The rates of the sample `key`, simulated by `simulate` unless some oracle has already
    /// (or is now: then this waits for its result).
    pub fn run(
        &self,
        key: SampleKey,
        simulate: impl FnOnce() -> Vec<ThreadRate>,
    ) -> Vec<ThreadRate> {
        self.runs.get_or(key, || {
            self.simulated.lock().expect("samples lock").0 += 1;
            simulate()
        })
    }

    /// A solo sample's IPC and footprint, as [`SharedSamples::run`].
    pub fn solo(&self, key: SampleKey, simulate: impl FnOnce() -> (f64, usize)) -> (f64, usize) {
        self.solos.get_or(key, || {
            self.simulated.lock().expect("samples lock").1 += 1;
            simulate()
        })
    }

    /// How many samples have been simulated in this process: (runs together, solo runs).
    pub fn simulated(&self) -> (u64, u64) {
        *self.simulated.lock().expect("samples lock")
    }
}
