//! Where the network receive softirq runs. On loopback every packet is "received" on the CPU
//! that sent it unless Receive Packet Steering moves the softirq to the CPUs named in
//! `/sys/class/net/lo/queues/rx-0/rps_cpus` (a hexadecimal mask) — the loopback counterpart of a
//! NIC's IRQ affinity in the thesis's Table 5.1.

use crate::error::{HostError, Result};
use crate::leftovers::FileSetting;
use smtsched_model::CpuSet;

pub const LO_RPS: &str = "/sys/class/net/lo/queues/rx-0/rps_cpus";

/// The mask file's text for `cpus`: comma-separated 32-bit hex words, most significant first.
pub fn mask_text(cpus: &CpuSet) -> String {
    let top = cpus.max().unwrap_or(0) / 32;
    (0..=top)
        .rev()
        .map(|w| {
            let bits = cpus
                .iter()
                .filter(|c| c / 32 == w)
                .fold(0u32, |m, c| m | (1 << (c % 32)));
            format!("{bits:08x}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The CPUs a mask file names.
pub fn parse_mask(text: &str) -> Option<CpuSet> {
    let mut set = CpuSet::new();
    for (i, word) in text.trim().split(',').rev().enumerate() {
        let bits = u32::from_str_radix(word, 16).ok()?;
        for b in 0..32 {
            if bits & (1 << b) != 0 {
                set.insert(i as u32 * 32 + b);
            }
        }
    }
    Some(set)
}

/// Reads the current steering; whether it can be changed is found by writing it back.
pub fn probe(path: &str) -> Result<FileSetting> {
    let setting = FileSetting::read(path.as_ref())
        .map_err(|e| HostError::Unsupported(format!("cannot read {path}: {e}")))?;
    std::fs::write(path, format!("{}\n", setting.original)).map_err(|e| {
        HostError::Unsupported(format!(
            "cannot steer the receive softirq: writing {path} failed ({e}){}",
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                "; it needs root"
            } else {
                ""
            }
        ))
    })?;
    Ok(setting)
}

/// Steers the receive softirq to `cpus` (an empty set: back to the sending CPU).
pub fn steer(setting: &FileSetting, cpus: &CpuSet) -> Result<()> {
    setting.set(&mask_text(cpus))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_follow_the_kernels_bitmap_format() {
        // bitmap_parse(): 32-bit hex words, comma-separated, most significant first.
        let set = |l: &str| CpuSet::parse(l).unwrap();
        assert_eq!(mask_text(&set("0")), "00000001");
        assert_eq!(mask_text(&set("0-1")), "00000003");
        assert_eq!(mask_text(&set("1,33")), "00000002,00000002");
        assert_eq!(mask_text(&CpuSet::new()), "00000000");
        assert_eq!(parse_mask("00000002,00000002"), Some(set("1,33")));
        assert_eq!(parse_mask("0"), Some(CpuSet::new()));
        assert_eq!(parse_mask("xyz"), None);
    }
}
