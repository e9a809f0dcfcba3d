//! Kernel work in workloads: the kernel share, entries and locked instructions a profile asks
//! for, counters split user/kernel, and kernel memory that is the same memory for every thread
//! (Redstone et al.'s inter-thread kernel interference and prefetching). Expected values come
//! from the profiles' parameters and the cache geometry, worked out in the comments.

use smtsched_model::{
    load_machine, workload_from_source, KernelBuild, MachineModel, Origin, Override, Source,
    WorkloadProfile,
};
use smtsched_uarch::protocol::{run_together, solo, Protocol};
use smtsched_uarch::{ThreadCounters, Window, Workload};

fn workload(toml: &str) -> WorkloadProfile {
    let src = Source {
        origin: Origin::Inline("test workload".into()),
        text: toml.to_string(),
    };
    workload_from_source(&src, &[]).expect("valid test workload")
}

fn machine(overrides: &[&str]) -> MachineModel {
    let o: Vec<Override> = overrides.iter().map(|s| s.parse().unwrap()).collect();
    load_machine("northwood", &o).unwrap()
}

fn proto(warmup: u64, measure: u64) -> Protocol {
    Protocol {
        seed: 11,
        warmup_instructions: warmup,
        measure_instructions: measure,
        quantum_cycles: 1 << 40,
        timeshare_rounds: 1,
        refill_only: false,
    }
}

/// A user loop that makes system calls: a quarter of its instructions in the kernel, 2000 per
/// call, `locked` locked instructions per thousand kernel instructions.
fn syscalls(locked: f64) -> WorkloadProfile {
    workload(&format!(
        r#"name = "syscalls"
[[phase]]
instructions = 1_000_000_000
ilp = 2.0
loads = 0.2
stores = 0.1
branches = 0.1
branch_mispredict_rate = 0.01
[[phase.code]]
size_bytes = 4096
weight = 1.0
[[phase.data]]
size_bytes = 4096
weight = 1.0
pattern = "random"
[phase.kernel]
share = 0.25
instructions_per_entry = 2000
locked_per_kilo_instructions = {locked}
ilp = 1.0
loads = 0.25
stores = 0.1
branches = 0.2
branch_mispredict_rate = 0.05
[[phase.kernel.code]]
name = "ktext"
size_bytes = 16384
weight = 1.0
[[phase.kernel.data]]
name = "kdata"
size_bytes = 65536
weight = 1.0
pattern = "random"
"#
    ))
}

/// Kernel-only work (an interrupt handler or kernel thread) over a `kb` KiB random data region
/// named `region`, in the kernel or (for comparison) in user mode.
fn handler(region: &str, kb: u64, in_kernel: bool) -> WorkloadProfile {
    let body = format!(
        r#"ilp = 1.0
loads = 0.3
stores = 0.0
branches = 0.1
branch_mispredict_rate = 0.0
[[{p}.code]]
name = "htext"
size_bytes = 1024
weight = 1.0
[[{p}.data]]
name = "{region}"
size_bytes = {bytes}
weight = 1.0
pattern = "random"
"#,
        p = if in_kernel { "phase.kernel" } else { "phase" },
        bytes = kb * 1024,
    );
    let toml = if in_kernel {
        format!(
            "name = \"h-{region}\"\n[[phase]]\ninstructions = 1_000_000_000\n{user}\
             [phase.kernel]\nshare = 1.0\ninstructions_per_entry = 1_000_000\n{body}",
            user = "ilp = 1.0\nloads = 0.0\nstores = 0.0\nbranches = 0.1\n\
                    branch_mispredict_rate = 0.0\n[[phase.code]]\nsize_bytes = 64\nweight = 1.0\n",
        )
    } else {
        format!("name = \"u-{region}\"\n[[phase]]\ninstructions = 1_000_000_000\n{body}")
    };
    workload(&toml)
}

fn pair(
    m: &MachineModel,
    a: &WorkloadProfile,
    b: &WorkloadProfile,
    p: &Protocol,
) -> Vec<ThreadCounters> {
    let threads: Vec<(&dyn Workload, u32)> = vec![(a, 0), (b, 1)];
    run_together(m, &threads, p, Window::Instructions)
        .unwrap()
        .threads
        .iter()
        .map(|t| t.window)
        .collect()
}

#[test]
fn kernel_share_entries_and_locked_instructions_follow_the_profile() {
    let m = machine(&[
        "os.mode_switch_cycles=500",
        "os.locked_instruction_cycles=100",
    ]);
    let c = solo(&m, &syscalls(4.0), 0, 0, &proto(100_000, 4_000_000))
        .unwrap()
        .window;
    // 4M instructions, a quarter in the kernel: 1M kernel instructions in 500 entries of 2000.
    // User gaps are exponential with mean 6000, so over ~500 entries the share has a standard
    // deviation of about 0.25 * 0.75 / sqrt(500) = 0.008; allow four of them.
    let share = c.kernel_instructions as f64 / c.instructions as f64;
    assert!((share - 0.25).abs() < 0.035, "kernel share {share}");
    let entries = c.kernel_entries as f64;
    assert!((entries - 500.0).abs() < 60.0, "entries {entries}");
    // Locked instructions: 4 per thousand kernel instructions.
    let locked = c.locked_instructions as f64 / c.kernel_instructions as f64;
    assert!(
        (locked - 0.004).abs() < 0.0006,
        "locked per kernel instruction {locked}"
    );
    // The split never exceeds the totals.
    assert!(c.kernel_cycles > 0.0 && c.kernel_cycles < c.cycles);
    assert!(c.kernel_l1d_misses <= c.l1d_misses && c.kernel_l1i_misses <= c.l1i_misses);
    assert!(c.kernel_l2_misses <= c.l2_misses);
    // The kernel's 64 KiB of random data does not fit the 8 KiB L1D, the user's 4 KiB does:
    // nearly all L1D misses are the kernel's.
    assert!(c.kernel_l1d_misses as f64 > 0.9 * c.l1d_misses as f64);
}

#[test]
fn entries_and_locked_instructions_cost_their_cycles_and_a_up_build_has_no_locks() {
    let p = proto(100_000, 4_000_000);
    let run =
        |over: &[&str], w: &WorkloadProfile| solo(&machine(over), w, 0, 0, &p).unwrap().window;
    let w = syscalls(4.0);
    let free = run(
        &["os.mode_switch_cycles=0", "os.locked_instruction_cycles=0"],
        &w,
    );
    let costly = run(
        &[
            "os.mode_switch_cycles=500",
            "os.locked_instruction_cycles=100",
        ],
        &w,
    );
    // The same instruction stream (same seed): the extra time is about 500 cycles per entry plus
    // 100 per locked instruction, plus each locked instruction's wait for earlier misses.
    let extra = costly.cycles - free.cycles;
    let expected = 500.0 * costly.kernel_entries as f64 + 100.0 * costly.locked_instructions as f64;
    assert_eq!(costly.kernel_entries, free.kernel_entries);
    assert!(
        extra >= expected * 0.95 && extra <= expected * 1.6,
        "extra {extra} cycles, expected about {expected}"
    );
    // The UP build executes no locked instructions; its entries are the same.
    let up = run(
        &[
            "os.mode_switch_cycles=500",
            "os.locked_instruction_cycles=100",
        ],
        &w.built_for(KernelBuild::Up),
    );
    assert_eq!(up.locked_instructions, 0);
    assert!(up.cycles < costly.cycles);
    // A user-only profile has no kernel counts at all.
    let user = run(&["os.mode_switch_cycles=0"], &handler("plain", 16, false));
    assert_eq!(
        (
            user.kernel_instructions,
            user.kernel_entries,
            user.kernel_cycles
        ),
        (0, 0, 0.0)
    );
}

#[test]
fn siblings_share_kernel_lines_but_not_user_lines() {
    // Northwood's L2: 512 KiB, 8 ways, 64-byte lines = 1024 sets. Without the adjacent-line fill
    // a 320 KiB region is 5120 lines, 5 per set on average: one copy fits. Two copies (two
    // different user regions, or two differently named kernel regions) are 10 per set: at
    // least 2 of every 10 lines are out of the cache at any time, so at least ~20% of L2
    // accesses miss. One shared kernel region stays at 5 per set: Poisson(5) sets rarely exceed
    // 8 ways, and the miss ratio stays under a few per cent.
    let m = machine(&["cache.L2.fill_adjacent_line=false"]);
    let p = proto(2_000_000, 2_000_000);
    let l2_ratio = |c: &[ThreadCounters]| {
        let misses: u64 = c.iter().map(|c| c.l2_misses).sum();
        let accesses: u64 = c.iter().map(|c| c.l2_accesses).sum();
        misses as f64 / accesses as f64
    };
    let shared = pair(
        &m,
        &handler("kshared", 320, true),
        &handler("kshared", 320, true),
        &p,
    );
    let apart = pair(&m, &handler("ka", 320, true), &handler("kb", 320, true), &p);
    let user = pair(
        &m,
        &handler("ushared", 320, false),
        &handler("ushared", 320, false),
        &p,
    );
    assert!(
        l2_ratio(&shared) < 0.05,
        "shared kernel region: {}",
        l2_ratio(&shared)
    );
    assert!(
        l2_ratio(&apart) > 0.15,
        "two kernel regions: {}",
        l2_ratio(&apart)
    );
    // User memory of one name is still private to each process…
    assert!(
        l2_ratio(&user) > 0.15,
        "two processes' user regions: {}",
        l2_ratio(&user)
    );
    // …but threads of one process share it, as the kernel's is shared.
    let mut thread = handler("ushared", 320, false);
    thread.threads_share_memory = true;
    let threads = pair(&m, &thread, &thread, &p);
    assert!(
        l2_ratio(&threads) < 0.05,
        "two threads' user region: {}",
        l2_ratio(&threads)
    );
    // Every kernel access of the handlers is counted as the kernel's.
    for c in &shared {
        assert_eq!(c.kernel_instructions, c.instructions);
        assert_eq!(c.kernel_l2_misses, c.l2_misses);
    }
}

#[test]
fn a_sibling_prefetches_shared_kernel_lines() {
    // From a cold start a lone handler misses once on each of the region's 5120 lines. With a
    // sibling walking the same kernel region, each line is fetched once for both, so each
    // thread takes roughly half of the compulsory misses.
    let m = machine(&["cache.L2.fill_adjacent_line=false"]);
    let p = proto(0, 400_000);
    let h = handler("kcold", 320, true);
    let alone = solo(&m, &h, 0, 0, &p).unwrap().window.kernel_l2_misses as f64;
    // 400k instructions, 120k loads over 5120 lines: every line is touched.
    assert!(
        (alone - 5120.0).abs() < 5120.0 * 0.05,
        "solo compulsory misses {alone}"
    );
    let both = pair(&m, &h, &h, &p);
    for c in &both {
        let misses = c.kernel_l2_misses as f64;
        assert!(
            misses < 0.7 * alone,
            "with a sibling {misses}, alone {alone}"
        );
    }
    let total: f64 = both.iter().map(|c| c.kernel_l2_misses as f64).sum();
    assert!(
        total < 1.2 * alone,
        "both threads together {total}, alone {alone}"
    );
}
