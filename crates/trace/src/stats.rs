//! What `smtsched trace info` shows: the trailer's totals and the footprint (distinct 64-byte lines
//! and 4 KB pages touched by data and by code), computed by one pass over the trace.

use crate::error::Result;
use crate::format::{Chunk, Summary, TraceFile, TraceMeta, LINE_BYTES};
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

pub const PAGE_BYTES: u64 = 4096;

/// A fast hasher for line and page numbers (multiplicative; keys are already well spread).
#[derive(Default)]
pub(crate) struct LineHasher(u64);

impl Hasher for LineHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(crate) type LineSet = HashSet<u64, BuildHasherDefault<LineHasher>>;

/// Totals and footprint of a trace.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TraceInfo {
    pub file: String,
    pub file_bytes: u64,
    pub summary: Summary,
    pub meta: TraceMeta,
    /// Distinct 64-byte lines and 4 KB pages touched by data accesses.
    pub data_lines: u64,
    pub data_pages: u64,
    /// Distinct 64-byte lines and 4 KB pages of executed code.
    pub code_lines: u64,
    pub code_pages: u64,
    /// File bytes per million instructions.
    pub bytes_per_million_instructions: f64,
}

impl TraceInfo {
    /// Reads the whole trace once (verifying it) and measures its footprint.
    pub fn of(file: &TraceFile) -> Result<Self> {
        let (mut dl, mut dp, mut cl, mut cp) = (
            LineSet::default(),
            LineSet::default(),
            LineSet::default(),
            LineSet::default(),
        );
        let mut chunk = Chunk::default();
        for i in 0..file.chunks().len() {
            file.read_chunk(i, &mut chunk)?;
            for insn in &chunk.insns {
                let last = insn.pc + insn.size.max(1) as u64 - 1;
                for l in insn.pc / LINE_BYTES..=last / LINE_BYTES {
                    cl.insert(l);
                }
                cp.insert(insn.pc / PAGE_BYTES);
            }
            for a in &chunk.accesses {
                let last = a.addr + a.size as u64 - 1;
                for l in a.addr / LINE_BYTES..=last / LINE_BYTES {
                    dl.insert(l);
                }
                dp.insert(a.addr / PAGE_BYTES);
                dp.insert(last / PAGE_BYTES);
            }
        }
        let s = *file.summary();
        Ok(TraceInfo {
            file: file.label().to_string(),
            file_bytes: file.file_bytes(),
            summary: s,
            meta: file.meta().clone(),
            data_lines: dl.len() as u64,
            data_pages: dp.len() as u64,
            code_lines: cl.len() as u64,
            code_pages: cp.len() as u64,
            bytes_per_million_instructions: file.file_bytes() as f64 * 1e6
                / s.instructions.max(1) as f64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{AccessKind, TraceWriter};

    #[test]
    fn hand_counted_footprint() {
        let mut w = TraceWriter::new(Vec::new()).unwrap();
        // Code: 0x0ffe (4 bytes: lines 63 and 64, page 0) and 0x1002 (line 64, page 1).
        w.instruction(0x0ffe, 4).unwrap();
        w.access(AccessKind::Load, 0x10_0000, 8).unwrap(); // line 0x4000, page 0x100
        w.access(AccessKind::Store, 0x10_0008, 8).unwrap(); // same line
        w.instruction(0x1002, 2).unwrap();
        w.access(AccessKind::Modify, 0x10_0ffc, 8).unwrap(); // lines 0x403f and 0x4040, pages 0x100, 0x101
        let bytes = w.finish(&TraceMeta::default()).unwrap().0;
        let f = TraceFile::from_bytes(bytes, "t").unwrap();
        let i = TraceInfo::of(&f).unwrap();
        assert_eq!((i.code_lines, i.code_pages), (2, 2));
        assert_eq!((i.data_lines, i.data_pages), (3, 2));
    }
}
