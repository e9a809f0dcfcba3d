//! How threads running together on one SMT core divide its bandwidth: progressive filling
//! (max-min fairness in micro-ops) under the front-end, load, store and floating-point limits,
//! each thread also capped by its own ILP. This is what an alternating (Pentium 4) or ICOUNT front
//! end converges to: equal shares, with a share one thread cannot use going to the others.

use crate::stream::PhaseTiming;
use smtsched_model::OooCoreSpec;

const EPS: f64 = 1e-12;

/// Window size (uops) at which a profile's `ilp` is defined.
pub const ILP_REFERENCE_WINDOW_UOPS: f64 = 128.0;
/// ILP grows roughly as the square root of the instruction window (Michaud, Seznec & Jourdan,
/// PACT 1999; the power-law "IW characteristic" of Karkhanis & Smith, ISCA 2004). A thread confined
/// to half a partitioned reorder buffer therefore extracts about 71% of its ILP.
pub const ILP_WINDOW_EXPONENT: f64 = 0.5;

/// The dependence-limited IPC of a phase whose thread may hold `window_uops` window entries.
pub fn ilp_in_window(ilp: f64, window_uops: f64) -> f64 {
    ilp * (window_uops / ILP_REFERENCE_WINDOW_UOPS).powf(ILP_WINDOW_EXPONENT)
}

/// Instructions per cycle for each thread in `phases`, all dispatching on one core where each may
/// hold `window_uops` reorder-buffer entries.
pub fn share_bandwidth(core: &OooCoreSpec, phases: &[PhaseTiming], window_uops: f64) -> Vec<f64> {
    let phases: Vec<PhaseTiming> = phases
        .iter()
        .map(|p| PhaseTiming {
            ilp: ilp_in_window(p.ilp, window_uops),
            ..*p
        })
        .collect();
    let phases = &phases[..];
    let n = phases.len();
    // Per-instruction demand on each shared resource, and each resource's capacity per cycle.
    let caps = [
        core.frontend_uops_per_cycle,
        core.loads_per_cycle,
        core.stores_per_cycle,
        core.fp_ops_per_cycle,
    ];
    let demand = |p: &PhaseTiming| [p.uops_per_instruction, p.loads, p.stores, p.fp_ops];
    let mut rate = vec![0.0; n];
    let mut frozen = vec![false; n];
    loop {
        let open: Vec<usize> = (0..n).filter(|&i| !frozen[i]).collect();
        if open.is_empty() {
            break;
        }
        // The fill level is in uops per cycle per thread: rate_i = level / uops_i.
        let mut level = f64::INFINITY;
        for &i in &open {
            level = level.min(phases[i].ilp * phases[i].uops_per_instruction);
        }
        let mut slack = [0.0; 4];
        for r in 0..4 {
            let used: f64 = (0..n)
                .filter(|&j| frozen[j])
                .map(|j| rate[j] * demand(&phases[j])[r])
                .sum();
            let per_level: f64 = open
                .iter()
                .map(|&i| demand(&phases[i])[r] / phases[i].uops_per_instruction)
                .sum();
            slack[r] = (caps[r] - used).max(0.0);
            if per_level > EPS {
                level = level.min(slack[r] / per_level);
            }
        }
        for &i in &open {
            rate[i] = level / phases[i].uops_per_instruction;
        }
        // Freeze threads at their own limit and threads using a saturated resource.
        let mut any = false;
        for &i in &open {
            let at_ilp = rate[i] >= phases[i].ilp * (1.0 - 1e-9);
            let on_saturated = (0..4).any(|r| {
                let d = demand(&phases[i])[r];
                if d <= EPS {
                    return false;
                }
                let total: f64 = (0..n).map(|j| rate[j] * demand(&phases[j])[r]).sum();
                total >= caps[r] * (1.0 - 1e-9)
            });
            if at_ilp || on_saturated {
                frozen[i] = true;
                any = true;
            }
        }
        if !any {
            // Numerical corner: nothing reached a bound; stop rather than loop.
            break;
        }
    }
    rate
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtsched_model::{SmtSharing, WindowResource};

    fn core(width: f64) -> OooCoreSpec {
        let w = WindowResource {
            entries: 100,
            smt: SmtSharing::Partitioned,
            watermark_fraction: None,
        };
        OooCoreSpec {
            frontend_uops_per_cycle: width,
            loads_per_cycle: 1.0,
            stores_per_cycle: 1.0,
            fp_ops_per_cycle: 1.0,
            branch_mispredict_penalty_cycles: 20,
            rob: w.clone(),
            load_buffer: w.clone(),
            store_buffer: w.clone(),
            miss_buffers: w,
        }
    }

    fn phase(ilp: f64, uops: f64, loads: f64, fp: f64) -> PhaseTiming {
        PhaseTiming {
            ilp,
            uops_per_instruction: uops,
            loads,
            stores: 0.0,
            fp_ops: fp,
        }
    }

    #[test]
    fn lone_thread_gets_min_of_its_ilp_and_the_width() {
        // ilp 2, 1.5 uops/instr on a 3-wide core: width allows 2 instr/cycle, so 2.
        let r = share_bandwidth(&core(3.0), &[phase(2.0, 1.5, 0.0, 0.0)], 128.0);
        assert!((r[0] - 2.0).abs() < 1e-12);
        // ilp 4: width-bound at 3 / 1.5 = 2.
        let r = share_bandwidth(&core(3.0), &[phase(4.0, 1.5, 0.0, 0.0)], 128.0);
        assert!((r[0] - 2.0).abs() < 1e-12);
        // 50% loads on one load port: at most 2 instr/cycle even with ilp 3 on a wide core.
        let r = share_bandwidth(&core(8.0), &[phase(3.0, 1.0, 0.5, 0.0)], 128.0);
        assert!((r[0] - 2.0).abs() < 1e-12);
    }

    #[test]
    fn two_hungry_threads_split_the_front_end_equally() {
        let r = share_bandwidth(
            &core(3.0),
            &[phase(3.0, 1.0, 0.0, 0.0), phase(3.0, 1.0, 0.0, 0.0)],
            128.0,
        );
        assert!((r[0] - 1.5).abs() < 1e-12 && (r[1] - 1.5).abs() < 1e-12);
    }

    #[test]
    fn share_a_thread_cannot_use_goes_to_the_other() {
        // Thread 0 needs 0.5 uops/cycle; thread 1 gets the remaining 2.5.
        let r = share_bandwidth(
            &core(3.0),
            &[phase(0.5, 1.0, 0.0, 0.0), phase(3.0, 1.0, 0.0, 0.0)],
            128.0,
        );
        assert!(
            (r[0] - 0.5).abs() < 1e-12 && (r[1] - 2.5).abs() < 1e-12,
            "{r:?}"
        );
    }

    #[test]
    fn a_half_window_gives_seventy_one_percent_of_the_ilp() {
        let r = share_bandwidth(&core(8.0), &[phase(2.0, 1.0, 0.0, 0.0)], 64.0);
        assert!((r[0] - 2.0 * 0.5f64.sqrt()).abs() < 1e-12, "{r:?}");
    }

    #[test]
    fn fp_heavy_pair_is_limited_by_the_fp_unit() {
        // Two threads, half their instructions FP, one FP op per cycle: 1 FP op/cycle in total.
        let r = share_bandwidth(
            &core(6.0),
            &[phase(2.0, 1.0, 0.0, 0.5), phase(2.0, 1.0, 0.0, 0.5)],
            128.0,
        );
        let fp_total = 0.5 * (r[0] + r[1]);
        assert!(
            (fp_total - 1.0).abs() < 1e-9 && (r[0] - r[1]).abs() < 1e-12,
            "{r:?}"
        );
    }
}
