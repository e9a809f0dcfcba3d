//! Per-thread event counters, the simulator's equivalent of a PMU. Windows are differences of
//! snapshots (`end - start`), so warm-up is cut off by structure.

use serde::{Deserialize, Serialize};
use std::ops::{Add, Sub};

macro_rules! counters {
    (
        floats { $($(#[$fdoc:meta])* $ffield:ident),* $(,)? }
        counts { $($(#[$doc:meta])* $field:ident),* $(,)? }
    ) => {
        /// Events of one thread. Cache fields follow the level numbers of the machine description:
        /// `l1i` is the level-1 instruction cache (the trace cache on a Pentium 4), `l2`/`l3` the
        /// unified levels. The `kernel_` fields count the part of each event that happened in the
        /// kernel (the rest is user mode).
        #[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct ThreadCounters {
            $($(#[$fdoc])* pub $ffield: f64,)*
            $($(#[$doc])* pub $field: u64,)*
        }

        impl Sub for ThreadCounters {
            type Output = Self;
            fn sub(self, o: Self) -> Self {
                ThreadCounters {
                    $($ffield: self.$ffield - o.$ffield,)*
                    $($field: self.$field - o.$field,)*
                }
            }
        }

        impl Add for ThreadCounters {
            type Output = Self;
            fn add(self, o: Self) -> Self {
                ThreadCounters {
                    $($ffield: self.$ffield + o.$ffield,)*
                    $($field: self.$field + o.$field,)*
                }
            }
        }

        impl ThreadCounters {
            /// Every counter multiplied by `factor`, counts rounded to the nearest whole event.
            pub fn scaled(&self, factor: f64) -> Self {
                ThreadCounters {
                    $($ffield: self.$ffield * factor,)*
                    $($field: (self.$field as f64 * factor).round() as u64,)*
                }
            }

            /// Every counter by name, cycles first.
            pub fn named(&self) -> Vec<(&'static str, f64)> {
                vec![
                    $((stringify!($ffield), self.$ffield),)*
                    $((stringify!($field), self.$field as f64)),*
                ]
            }
        }
    };
}

counters! {
    floats {
        /// Cycles, fractional: the interval-style core advances time in fractions of a cycle.
        cycles,
        /// Cycles spent in the kernel.
        kernel_cycles,
    }
    counts {
        /// Retired instructions.
        instructions,
        /// Retired micro-operations.
        uops,
        /// Loads.
        loads,
        /// Stores.
        stores,
        /// Conditional branches.
        branches,
        /// Mispredicted branches.
        branch_mispredicts,
        /// Floating-point operations.
        fp_ops,
        /// Level-1 instruction (trace) cache lookups.
        l1i_accesses,
        /// Level-1 instruction (trace) cache misses.
        l1i_misses,
        /// Level-1 data cache accesses.
        l1d_accesses,
        /// Level-1 data cache misses.
        l1d_misses,
        /// Level-2 accesses (from either level-1 cache).
        l2_accesses,
        /// Level-2 misses.
        l2_misses,
        /// Level-3 accesses.
        l3_accesses,
        /// Level-3 misses.
        l3_misses,
        /// Cycles the thread could not dispatch because of a memory stall, a fetch miss or a branch
        /// redirect.
        stall_cycles,
        /// Retired instructions in the kernel.
        kernel_instructions,
        /// Level-1 instruction-cache misses in the kernel.
        kernel_l1i_misses,
        /// Level-1 data-cache misses in the kernel.
        kernel_l1d_misses,
        /// Level-2 misses in the kernel.
        kernel_l2_misses,
        /// Level-3 misses in the kernel.
        kernel_l3_misses,
        /// Entries into the kernel (system calls and interrupts).
        kernel_entries,
        /// Locked read-modify-writes (kernel spinlocks and atomics).
        locked_instructions,
    }
}

impl ThreadCounters {
    /// Share of cycles spent in the kernel.
    pub fn kernel_share(&self) -> f64 {
        if self.cycles > 0.0 {
            self.kernel_cycles / self.cycles
        } else {
            0.0
        }
    }

    pub fn ipc(&self) -> f64 {
        if self.cycles > 0.0 {
            self.instructions as f64 / self.cycles
        } else {
            0.0
        }
    }

    /// Records an access that went `depth` levels deep along a path whose levels are `levels`
    /// (`depth == levels.len()` means memory), in the kernel if `kernel`.
    #[inline(always)]
    pub fn record_path(&mut self, fetch: bool, levels: &[u8], depth: usize, kernel: bool) {
        // Most accesses hit the first level.
        match (depth, levels.first(), fetch) {
            (0, Some(1), true) => self.l1i_accesses += 1,
            (0, Some(1), false) => self.l1d_accesses += 1,
            _ => self.record_levels(fetch, levels, depth, kernel),
        }
    }

    #[inline(never)]
    fn record_levels(&mut self, fetch: bool, levels: &[u8], depth: usize, kernel: bool) {
        for (i, &lvl) in levels.iter().enumerate().take(depth + 1) {
            let missed = i < depth;
            let (acc, miss, kernel_miss) = match (lvl, fetch) {
                (1, true) => (
                    &mut self.l1i_accesses,
                    &mut self.l1i_misses,
                    &mut self.kernel_l1i_misses,
                ),
                (1, false) => (
                    &mut self.l1d_accesses,
                    &mut self.l1d_misses,
                    &mut self.kernel_l1d_misses,
                ),
                (2, _) => (
                    &mut self.l2_accesses,
                    &mut self.l2_misses,
                    &mut self.kernel_l2_misses,
                ),
                _ => (
                    &mut self.l3_accesses,
                    &mut self.l3_misses,
                    &mut self.kernel_l3_misses,
                ),
            };
            *acc += 1;
            if missed {
                *miss += 1;
                if kernel {
                    *kernel_miss += 1;
                }
            }
        }
    }

    /// Miss ratio of the level-1 data cache.
    pub fn l1d_miss_ratio(&self) -> f64 {
        ratio(self.l1d_misses, self.l1d_accesses)
    }

    pub fn l2_miss_ratio(&self) -> f64 {
        ratio(self.l2_misses, self.l2_accesses)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
