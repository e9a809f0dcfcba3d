//! The trace file: every executed instruction (address and length) and every data access (kind,
//! address, size) of one run of a program, in program order, compressed.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! header   "SMTTRACE" | u32 version | u32 0
//! chunk*   u32 compressed_len | u32 raw_len | u32 instructions | u32 accesses | u32 crc32 | u32 0
//!          | u64 first_pc | zstd frame (compressed_len bytes) of the chunk's columns
//! trailer  "SMTT-END" | u32 chunks | u32 meta_len | summary (9 × u64)
//!          | per chunk: u64 offset | u32 instructions | u32 accesses | u64 first_pc
//!          | metadata (JSON, meta_len bytes)
//! footer   u64 trailer offset | u32 crc32 of the trailer | u32 0 | "SMTT-END"
//! ```
//!
//! A chunk holds up to [`CHUNK_INSTRUCTIONS`] instructions and is decoded on its own, so replay
//! can start anywhere and memory stays bounded. Its raw form is six columns, which compress far
//! better than interleaved records:
//!
//! * `ops`, one byte per instruction: bits 0–3 the length (0 = in `isizes`), bit 4 set when the
//!   instruction does not follow the previous one (its address is then in `jumps`), bits 5–7 the
//!   number of data accesses (7 = in `counts`);
//! * `jumps`: zigzag LEB128 of `pc − (previous pc + previous length)` (the chunk starts from 0);
//! * `isizes`, `counts`: LEB128 escapes;
//! * `acc`, one byte per access: bits 6–7 the kind (load, store, modify), bits 0–5 the size
//!   (0 = in `asizes`);
//! * `asizes`: LEB128 escapes; `addrs`: zigzag LEB128 of the address minus the previous access's.
//!
//! The raw chunk is the six column lengths (LEB128), then the columns in that order:
//! `ops jumps isizes counts acc asizes addrs` (the `ops` length is the chunk's instruction count).
//! A file is valid only when complete: a missing footer means the writer never finished.

use crate::error::{Result, TraceError};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

pub const MAGIC: [u8; 8] = *b"SMTTRACE";
pub const END_MAGIC: [u8; 8] = *b"SMTT-END";
pub const VERSION: u32 = 1;
/// Instructions per chunk at most.
pub const CHUNK_INSTRUCTIONS: u32 = 1 << 18;
/// A chunk is closed at the next instruction once it holds this many data accesses.
pub const CHUNK_ACCESSES: u32 = 1 << 20;
/// Data accesses one instruction may make (lackey's largest is a 512-byte state save, split into
/// a handful of accesses).
pub const MAX_ACCESSES_PER_INSTRUCTION: u32 = 65_535;
/// Largest instruction or access size accepted, in bytes.
pub const MAX_SIZE: u32 = 1 << 16;
/// Addresses (and address + size) must stay below this: the simulator tags address spaces above
/// bit 52.
pub const ADDRESS_LIMIT: u64 = 1 << 52;
/// Line size used by the summary's line-crossing count.
pub const LINE_BYTES: u64 = 64;

const HEADER_BYTES: u64 = 16;
const CHUNK_HEADER_BYTES: u64 = 32;
const SUMMARY_FIELDS: usize = 9;
const INDEX_ENTRY_BYTES: u64 = 24;
const FOOTER_BYTES: u64 = 24;
/// Largest raw chunk a valid writer can produce, with margin (guards allocations on bad input).
const MAX_RAW_BYTES: u32 = 64 << 20;
const ZSTD_LEVEL: i32 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AccessKind {
    Load,
    Store,
    /// A read-modify-write of one location by one instruction (lackey's `M`).
    Modify,
}

/// One data access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub kind: AccessKind,
    pub addr: u64,
    pub size: u32,
}

impl Access {
    /// Whether the access touches two lines of [`LINE_BYTES`].
    pub fn crosses_line(&self) -> bool {
        self.size > 1
            && (self.addr / LINE_BYTES) != ((self.addr + self.size as u64 - 1) / LINE_BYTES)
    }
}

/// One executed instruction; its data accesses follow in the chunk's access list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub pc: u64,
    pub size: u32,
    pub accesses: u32,
}

/// A decoded chunk: instructions in order, and all their accesses in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chunk {
    pub insns: Vec<Insn>,
    pub accesses: Vec<Access>,
}

/// Totals of a whole trace, kept in its trailer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub instructions: u64,
    pub loads: u64,
    pub stores: u64,
    pub modifies: u64,
    /// Sum of instruction lengths.
    pub instruction_bytes: u64,
    /// Instructions after which execution does not continue at the next address (taken branches,
    /// calls, returns).
    pub jumps: u64,
    /// Those of them that make no data access (a `ret` or `call` does).
    pub plain_jumps: u64,
    /// Data accesses beyond the first of their instruction.
    pub extra_accesses: u64,
    /// Data accesses that cross a 64-byte line boundary.
    pub line_crossings: u64,
}

impl Summary {
    pub fn accesses(&self) -> u64 {
        self.loads
            .saturating_add(self.stores)
            .saturating_add(self.modifies)
    }

    fn to_array(self) -> [u64; SUMMARY_FIELDS] {
        [
            self.instructions,
            self.loads,
            self.stores,
            self.modifies,
            self.instruction_bytes,
            self.jumps,
            self.plain_jumps,
            self.extra_accesses,
            self.line_crossings,
        ]
    }

    fn from_array(a: [u64; SUMMARY_FIELDS]) -> Self {
        Summary {
            instructions: a[0],
            loads: a[1],
            stores: a[2],
            modifies: a[3],
            instruction_bytes: a[4],
            jumps: a[5],
            plain_jumps: a[6],
            extra_accesses: a[7],
            line_crossings: a[8],
        }
    }
}

/// Where a trace came from, kept in its trailer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceMeta {
    /// `lackey` for traces from valgrind's lackey tool.
    pub format: String,
    /// The traced command, when recorded by `smtsched trace record`.
    #[serde(default)]
    pub command: Vec<String>,
    /// The imported log, when imported.
    #[serde(default)]
    pub imported_from: String,
    /// Recording stopped at an instruction limit before the program ended.
    #[serde(default)]
    pub stopped_at_limit: bool,
    /// Program and version that wrote the file.
    #[serde(default)]
    pub written_by: String,
}

// ---------------------------------------------------------------------------------------------
// LEB128 helpers

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A cursor over one column of a raw chunk.
struct Column<'a> {
    bytes: &'a [u8],
    pos: usize,
    name: &'static str,
}

impl<'a> Column<'a> {
    #[inline]
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| format!("column {} ends early", self.name))?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(format!("column {}: integer overflows 64 bits", self.name));
            }
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(format!("column {}: integer overflows 64 bits", self.name));
            }
        }
    }

    fn finished(&self) -> Result<(), String> {
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(format!(
                "column {} has {} bytes left over",
                self.name,
                self.bytes.len() - self.pos
            ))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Chunk encoding

/// Columns of the chunk being built.
#[derive(Default)]
struct ChunkBuilder {
    ops: Vec<u8>,
    jumps: Vec<u8>,
    isizes: Vec<u8>,
    counts: Vec<u8>,
    acc: Vec<u8>,
    asizes: Vec<u8>,
    addrs: Vec<u8>,
    instructions: u32,
    accesses: u32,
    first_pc: u64,
    expected_pc: u64,
    prev_addr: u64,
}

impl ChunkBuilder {
    fn clear(&mut self) {
        for c in [
            &mut self.ops,
            &mut self.jumps,
            &mut self.isizes,
            &mut self.counts,
            &mut self.acc,
            &mut self.asizes,
            &mut self.addrs,
        ] {
            c.clear();
        }
        self.instructions = 0;
        self.accesses = 0;
        self.expected_pc = 0;
        self.prev_addr = 0;
    }

    fn push_insn(&mut self, pc: u64, size: u32, accesses: u32) {
        if self.instructions == 0 {
            self.first_pc = pc;
        }
        let mut op = 0u8;
        if (1..16).contains(&size) {
            op |= size as u8;
        } else {
            put_varint(&mut self.isizes, size as u64);
        }
        if pc != self.expected_pc {
            op |= 0x10;
            put_varint(
                &mut self.jumps,
                zigzag(pc.wrapping_sub(self.expected_pc) as i64),
            );
        }
        if accesses < 7 {
            op |= (accesses as u8) << 5;
        } else {
            op |= 7 << 5;
            put_varint(&mut self.counts, accesses as u64);
        }
        self.ops.push(op);
        self.expected_pc = pc + size as u64;
        self.instructions += 1;
    }

    fn push_access(&mut self, a: Access) {
        let kind = match a.kind {
            AccessKind::Load => 0u8,
            AccessKind::Store => 1,
            AccessKind::Modify => 2,
        };
        let mut b = kind << 6;
        if (1..64).contains(&a.size) {
            b |= a.size as u8;
        } else {
            put_varint(&mut self.asizes, a.size as u64);
        }
        self.acc.push(b);
        put_varint(
            &mut self.addrs,
            zigzag(a.addr.wrapping_sub(self.prev_addr) as i64),
        );
        self.prev_addr = a.addr;
        self.accesses += 1;
    }

    fn raw(&self) -> Vec<u8> {
        let cols = [
            &self.jumps,
            &self.isizes,
            &self.counts,
            &self.acc,
            &self.asizes,
            &self.addrs,
        ];
        let total: usize = self.ops.len() + cols.iter().map(|c| c.len()).sum::<usize>();
        let mut out = Vec::with_capacity(total + 64);
        put_varint(&mut out, self.ops.len() as u64);
        for c in cols {
            put_varint(&mut out, c.len() as u64);
        }
        out.extend_from_slice(&self.ops);
        for c in cols {
            out.extend_from_slice(c);
        }
        out
    }
}

/// Decodes a chunk's raw (decompressed) columns into `out`. Public for the fuzz targets; readers
/// use [`TraceFile::read_chunk`].
#[doc(hidden)]
pub fn decode_raw_chunk(raw: &[u8], out: &mut Chunk) -> Result<(), String> {
    out.insns.clear();
    out.accesses.clear();
    let mut head = Column {
        bytes: raw,
        pos: 0,
        name: "lengths",
    };
    let mut lens = [0usize; 7];
    for l in &mut lens {
        let v = head.varint()?;
        *l = usize::try_from(v).map_err(|_| "column length out of range".to_string())?;
    }
    let mut pos = head.pos;
    let names = ["ops", "jumps", "isizes", "counts", "acc", "asizes", "addrs"];
    let mut cols: Vec<Column> = Vec::with_capacity(7);
    for (i, &len) in lens.iter().enumerate() {
        let end = pos
            .checked_add(len)
            .filter(|&e| e <= raw.len())
            .ok_or_else(|| format!("column {} runs past the end of the chunk", names[i]))?;
        cols.push(Column {
            bytes: &raw[pos..end],
            pos: 0,
            name: names[i],
        });
        pos = end;
    }
    if pos != raw.len() {
        return Err(format!("{} bytes after the last column", raw.len() - pos));
    }
    let [ops, jumps, isizes, counts, acc, asizes, addrs]: [Column; 7] =
        cols.try_into().map_err(|_| "columns".to_string())?;
    let (mut jumps, mut isizes, mut counts, mut acc, mut asizes, mut addrs) =
        (jumps, isizes, counts, acc, asizes, addrs);
    if ops.bytes.len() > CHUNK_INSTRUCTIONS as usize {
        return Err(format!("{} instructions in one chunk", ops.bytes.len()));
    }
    out.insns.reserve(ops.bytes.len());
    let mut expected = 0u64;
    let mut prev_addr = 0u64;
    for &op in ops.bytes {
        let size = match op & 0x0f {
            0 => isizes.varint()?,
            s => s as u64,
        };
        if size > MAX_SIZE as u64 || (1..16).contains(&size) && op & 0x0f == 0 {
            return Err(format!("instruction length {size} is invalid"));
        }
        let pc = if op & 0x10 != 0 {
            let d = unzigzag(jumps.varint()?);
            let pc = expected.wrapping_add(d as u64);
            if pc == expected {
                return Err("a jump to the next instruction".into());
            }
            pc
        } else {
            expected
        };
        if pc.checked_add(size).is_none_or(|e| e > ADDRESS_LIMIT) {
            return Err(format!("instruction address {pc:#x} is out of range"));
        }
        let n = match op >> 5 {
            7 => {
                let n = counts.varint()?;
                if !(7..=MAX_ACCESSES_PER_INSTRUCTION as u64).contains(&n) {
                    return Err(format!("access count {n} is invalid"));
                }
                n as u32
            }
            n => n as u32,
        };
        for _ in 0..n {
            let b = acc.byte()?;
            let kind = match b >> 6 {
                0 => AccessKind::Load,
                1 => AccessKind::Store,
                2 => AccessKind::Modify,
                _ => return Err("access kind 3 is invalid".into()),
            };
            let size = match b & 0x3f {
                0 => {
                    let s = asizes.varint()?;
                    if s > MAX_SIZE as u64 || (1..64).contains(&s) {
                        return Err(format!("access size {s} is invalid"));
                    }
                    s as u32
                }
                s => s as u32,
            };
            let addr = prev_addr.wrapping_add(unzigzag(addrs.varint()?) as u64);
            if addr
                .checked_add(size as u64)
                .is_none_or(|e| e > ADDRESS_LIMIT)
            {
                return Err(format!("data address {addr:#x} is out of range"));
            }
            prev_addr = addr;
            out.accesses.push(Access { kind, addr, size });
        }
        out.insns.push(Insn {
            pc,
            size: size as u32,
            accesses: n,
        });
        expected = pc + size;
    }
    for c in [&jumps, &isizes, &counts, &acc, &asizes, &addrs] {
        c.finished()?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Writer

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IndexEntry {
    offset: u64,
    instructions: u32,
    accesses: u32,
    first_pc: u64,
}

/// Why a [`TraceWriter`] refused an instruction or access.
#[derive(Debug)]
pub enum FeedError {
    /// The value cannot be held by the format (the input is bad).
    Invalid(String),
    /// Writing out a finished chunk failed.
    Io(std::io::Error),
}

impl std::fmt::Display for FeedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FeedError::Invalid(s) => f.write_str(s),
            FeedError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Writes a trace to any [`Write`]: feed instructions and their accesses in program order, then
/// [`TraceWriter::finish`]. Memory use is one chunk.
pub struct TraceWriter<W: Write> {
    out: W,
    offset: u64,
    chunk: ChunkBuilder,
    index: Vec<IndexEntry>,
    summary: Summary,
    /// The instruction whose accesses are still arriving: (pc, size, accesses so far).
    pending: Option<(u64, u32, u32)>,
    prev_end: Option<u64>,
    prev_plain: bool,
}

impl<W: crate::output::Rewind> TraceWriter<W> {
    /// Discards everything written and starts an empty trace on the same output.
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.out.rewind()?;
        self.start()
    }
}

impl<W: Write> TraceWriter<W> {
    /// Starts a trace (writes the header).
    pub fn new(out: W) -> std::io::Result<Self> {
        let mut w = TraceWriter {
            out,
            offset: 0,
            chunk: ChunkBuilder::default(),
            index: Vec::new(),
            summary: Summary::default(),
            pending: None,
            prev_end: None,
            prev_plain: true,
        };
        w.start()?;
        Ok(w)
    }

    /// Writes the header and sets every field but the output to an empty trace's.
    fn start(&mut self) -> std::io::Result<()> {
        let mut header = Vec::with_capacity(HEADER_BYTES as usize);
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        self.out.write_all(&header)?;
        self.offset = HEADER_BYTES;
        self.chunk = ChunkBuilder::default();
        self.index.clear();
        self.summary = Summary::default();
        self.pending = None;
        self.prev_end = None;
        self.prev_plain = true;
        Ok(())
    }

    /// Instructions written so far (including one whose accesses may still come).
    pub fn instructions(&self) -> u64 {
        self.summary.instructions
    }

    /// The next executed instruction. Fails on an address or size the format cannot hold.
    pub fn instruction(&mut self, pc: u64, size: u32) -> Result<(), FeedError> {
        if size > MAX_SIZE {
            return Err(FeedError::Invalid(format!(
                "instruction length {size} is above {MAX_SIZE}"
            )));
        }
        if pc
            .checked_add(size as u64)
            .is_none_or(|e| e > ADDRESS_LIMIT)
        {
            return Err(FeedError::Invalid(format!(
                "instruction address {pc:#x} is above 2^52"
            )));
        }
        self.close_pending().map_err(FeedError::Io)?;
        if let Some(end) = self.prev_end {
            if end != pc {
                self.summary.jumps += 1;
                if self.prev_plain {
                    self.summary.plain_jumps += 1;
                }
            }
        }
        self.prev_end = Some(pc + size as u64);
        self.summary.instructions += 1;
        self.summary.instruction_bytes += size as u64;
        self.pending = Some((pc, size, 0));
        Ok(())
    }

    /// A data access of the latest instruction.
    pub fn access(&mut self, kind: AccessKind, addr: u64, size: u32) -> Result<(), FeedError> {
        let invalid = |s: String| Err(FeedError::Invalid(s));
        let Some(p) = self.pending.as_mut() else {
            return invalid("data access before any instruction".into());
        };
        if size == 0 || size > MAX_SIZE {
            return invalid(format!(
                "access size {size} is not between 1 and {MAX_SIZE}"
            ));
        }
        if addr
            .checked_add(size as u64)
            .is_none_or(|e| e > ADDRESS_LIMIT)
        {
            return invalid(format!("data address {addr:#x} is above 2^52"));
        }
        if p.2 == MAX_ACCESSES_PER_INSTRUCTION {
            return invalid(format!(
                "more than {MAX_ACCESSES_PER_INSTRUCTION} data accesses by one instruction"
            ));
        }
        p.2 += 1;
        if p.2 > 1 {
            self.summary.extra_accesses += 1;
        }
        let a = Access { kind, addr, size };
        if a.crosses_line() {
            self.summary.line_crossings += 1;
        }
        match kind {
            AccessKind::Load => self.summary.loads += 1,
            AccessKind::Store => self.summary.stores += 1,
            AccessKind::Modify => self.summary.modifies += 1,
        }
        self.chunk.push_access(a);
        Ok(())
    }

    fn close_pending(&mut self) -> std::io::Result<()> {
        if let Some((pc, size, n)) = self.pending.take() {
            self.chunk.push_insn(pc, size, n);
            self.prev_plain = n == 0;
            if self.chunk.instructions >= CHUNK_INSTRUCTIONS
                || self.chunk.accesses >= CHUNK_ACCESSES
            {
                self.flush_chunk()?;
            }
        }
        Ok(())
    }

    fn flush_chunk(&mut self) -> std::io::Result<()> {
        if self.chunk.instructions == 0 {
            return Ok(());
        }
        let raw = self.chunk.raw();
        let compressed = zstd::bulk::compress(&raw, ZSTD_LEVEL)?;
        let mut head = Vec::with_capacity(CHUNK_HEADER_BYTES as usize);
        head.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
        head.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        head.extend_from_slice(&self.chunk.instructions.to_le_bytes());
        head.extend_from_slice(&self.chunk.accesses.to_le_bytes());
        head.extend_from_slice(&crc32fast::hash(&compressed).to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        head.extend_from_slice(&self.chunk.first_pc.to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(&compressed)?;
        self.index.push(IndexEntry {
            offset: self.offset,
            instructions: self.chunk.instructions,
            accesses: self.chunk.accesses,
            first_pc: self.chunk.first_pc,
        });
        self.offset += CHUNK_HEADER_BYTES + compressed.len() as u64;
        self.chunk.clear();
        Ok(())
    }

    /// Ends the trace: writes the last chunk, the trailer and the footer. Returns the output and
    /// the totals.
    pub fn finish(mut self, meta: &TraceMeta) -> std::io::Result<(W, Summary)> {
        self.close_pending()?;
        self.flush_chunk()?;
        let meta_json = serde_json::to_vec(meta).map_err(std::io::Error::other)?;
        let mut t = Vec::new();
        t.extend_from_slice(&END_MAGIC);
        t.extend_from_slice(&(self.index.len() as u32).to_le_bytes());
        t.extend_from_slice(&(meta_json.len() as u32).to_le_bytes());
        for v in self.summary.to_array() {
            t.extend_from_slice(&v.to_le_bytes());
        }
        for e in &self.index {
            t.extend_from_slice(&e.offset.to_le_bytes());
            t.extend_from_slice(&e.instructions.to_le_bytes());
            t.extend_from_slice(&e.accesses.to_le_bytes());
            t.extend_from_slice(&e.first_pc.to_le_bytes());
        }
        t.extend_from_slice(&meta_json);
        let crc = crc32fast::hash(&t);
        t.extend_from_slice(&self.offset.to_le_bytes());
        t.extend_from_slice(&crc.to_le_bytes());
        t.extend_from_slice(&0u32.to_le_bytes());
        t.extend_from_slice(&END_MAGIC);
        self.out.write_all(&t)?;
        self.out.flush()?;
        Ok((self.out, self.summary))
    }
}

// ---------------------------------------------------------------------------------------------
// Reader

enum Bytes {
    File(std::fs::File),
    Memory(Vec<u8>),
}

impl Bytes {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        match self {
            Bytes::File(f) => std::os::unix::fs::FileExt::read_exact_at(f, buf, offset),
            Bytes::Memory(v) => {
                let start = usize::try_from(offset).map_err(std::io::Error::other)?;
                let src = start
                    .checked_add(buf.len())
                    .and_then(|end| v.get(start..end))
                    .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
                buf.copy_from_slice(src);
                Ok(())
            }
        }
    }
}

/// Where a chunk is and what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkInfo {
    pub offset: u64,
    pub instructions: u32,
    pub accesses: u32,
    pub first_pc: u64,
    compressed_len: u32,
    raw_len: u32,
    crc: u32,
}

/// An open trace file, checked for completeness and consistency. Chunks are read on demand with
/// positioned reads, so one `TraceFile` serves any number of replay streams at once.
pub struct TraceFile {
    bytes: Bytes,
    label: String,
    len: u64,
    summary: Summary,
    meta: TraceMeta,
    chunks: Vec<ChunkInfo>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Whether the file at `path` starts with the trace signature (used to tell traces from profiles).
pub fn is_trace_file(path: &Path) -> bool {
    let mut magic = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && magic == MAGIC
}

impl TraceFile {
    /// Opens and checks a trace file: header, trailer, index and every chunk header and checksum.
    pub fn open(path: &Path) -> Result<Self> {
        let f = std::fs::File::open(path).map_err(|e| TraceError::read(path, e))?;
        let len = f.metadata().map_err(|e| TraceError::read(path, e))?.len();
        Self::from_source(Bytes::File(f), len, path.display().to_string())
    }

    /// A trace held in memory (tests and fuzzing); `label` names it in errors.
    pub fn from_bytes(bytes: Vec<u8>, label: &str) -> Result<Self> {
        let len = bytes.len() as u64;
        Self::from_source(Bytes::Memory(bytes), len, label.to_string())
    }

    fn from_source(bytes: Bytes, len: u64, label: String) -> Result<Self> {
        let corrupt = |detail: String| TraceError::Corrupt {
            path: label.clone(),
            detail,
        };
        let truncated = |detail: &str| TraceError::Truncated {
            path: label.clone(),
            detail: detail.to_string(),
        };
        let read = |buf: &mut [u8], at: u64| {
            bytes.read_at(buf, at).map_err(|e| TraceError::Read {
                path: label.clone(),
                source: e,
            })
        };
        if len < 8 {
            return Err(if len == 0 {
                truncated("the file is empty")
            } else {
                TraceError::NotATrace { path: label }
            });
        }
        let mut header = [0u8; HEADER_BYTES as usize];
        let hlen = len.min(HEADER_BYTES) as usize;
        read(&mut header[..hlen], 0)?;
        if header[..8] != MAGIC {
            return Err(TraceError::NotATrace { path: label });
        }
        if len < HEADER_BYTES + FOOTER_BYTES {
            return Err(truncated("it ends before the end marker"));
        }
        let version = u32_at(&header, 8);
        if version != VERSION || u32_at(&header, 12) != 0 {
            return Err(TraceError::Version {
                path: label,
                version,
                supported: VERSION,
            });
        }
        let mut footer = [0u8; FOOTER_BYTES as usize];
        read(&mut footer, len - FOOTER_BYTES)?;
        if footer[16..] != END_MAGIC {
            return Err(truncated(
                "no end marker (the writer did not finish: interrupted recording or cut file)",
            ));
        }
        let trailer_at = u64_at(&footer, 0);
        let fixed = 8 + 4 + 4 + 8 * SUMMARY_FIELDS as u64;
        if trailer_at < HEADER_BYTES
            || trailer_at
                .checked_add(fixed + FOOTER_BYTES)
                .is_none_or(|end| end > len)
        {
            return Err(corrupt(format!(
                "trailer offset {trailer_at} is out of range"
            )));
        }
        let trailer_len = len - FOOTER_BYTES - trailer_at;
        if trailer_len > 1 << 30 {
            return Err(corrupt("trailer is implausibly large".into()));
        }
        let mut t = vec![0u8; trailer_len as usize];
        read(&mut t, trailer_at)?;
        if crc32fast::hash(&t) != u32_at(&footer, 8) || u32_at(&footer, 12) != 0 {
            return Err(corrupt("trailer checksum mismatch".into()));
        }
        if t[..8] != END_MAGIC {
            return Err(corrupt("trailer does not start with the end marker".into()));
        }
        let n_chunks = u32_at(&t, 8) as u64;
        let meta_len = u32_at(&t, 12) as u64;
        let mut fields = [0u64; SUMMARY_FIELDS];
        for (i, f) in fields.iter_mut().enumerate() {
            *f = u64_at(&t, 16 + 8 * i);
        }
        let summary = Summary::from_array(fields);
        if fixed + n_chunks * INDEX_ENTRY_BYTES + meta_len != trailer_len {
            return Err(corrupt(format!(
                "trailer is {trailer_len} bytes, but {n_chunks} chunks and {meta_len} bytes of metadata need {}",
                fixed + n_chunks * INDEX_ENTRY_BYTES + meta_len
            )));
        }
        let mut chunks = Vec::with_capacity(n_chunks as usize);
        let mut at = fixed as usize;
        let mut next_offset = HEADER_BYTES;
        let (mut instructions, mut accesses) = (0u64, 0u64);
        for i in 0..n_chunks {
            let offset = u64_at(&t, at);
            let ins = u32_at(&t, at + 8);
            let acc = u32_at(&t, at + 12);
            let first_pc = u64_at(&t, at + 16);
            at += INDEX_ENTRY_BYTES as usize;
            if offset != next_offset || offset + CHUNK_HEADER_BYTES > trailer_at {
                return Err(corrupt(format!("chunk {i} is not where the index says")));
            }
            let mut h = [0u8; CHUNK_HEADER_BYTES as usize];
            read(&mut h, offset)?;
            let info = ChunkInfo {
                offset,
                instructions: ins,
                accesses: acc,
                first_pc,
                compressed_len: u32_at(&h, 0),
                raw_len: u32_at(&h, 4),
                crc: u32_at(&h, 16),
            };
            if u32_at(&h, 8) != ins
                || u32_at(&h, 12) != acc
                || u32_at(&h, 20) != 0
                || u64_at(&h, 24) != first_pc
            {
                return Err(corrupt(format!(
                    "chunk {i}'s header disagrees with the index"
                )));
            }
            if ins == 0 || ins > CHUNK_INSTRUCTIONS || info.raw_len > MAX_RAW_BYTES {
                return Err(corrupt(format!("chunk {i} has an invalid size")));
            }
            next_offset = offset + CHUNK_HEADER_BYTES + info.compressed_len as u64;
            if next_offset > trailer_at {
                return Err(corrupt(format!("chunk {i} runs into the trailer")));
            }
            instructions += ins as u64;
            accesses += acc as u64;
            chunks.push(info);
        }
        if chunks.is_empty() {
            return Err(TraceError::Empty { origin: label });
        }
        if next_offset != trailer_at {
            return Err(corrupt(
                "bytes between the last chunk and the trailer".into(),
            ));
        }
        if instructions != summary.instructions || accesses != summary.accesses() {
            return Err(corrupt("the chunk index disagrees with the summary".into()));
        }
        let meta: TraceMeta =
            serde_json::from_slice(&t[at..]).map_err(|e| corrupt(format!("metadata: {e}")))?;
        Ok(TraceFile {
            bytes,
            label,
            len,
            summary,
            meta,
            chunks,
        })
    }

    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    pub fn meta(&self) -> &TraceMeta {
        &self.meta
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// Size of the file in bytes.
    pub fn file_bytes(&self) -> u64 {
        self.len
    }

    pub fn chunks(&self) -> &[ChunkInfo] {
        &self.chunks
    }

    /// Reads and decodes chunk `i` into `out` (buffers are reused).
    pub fn read_chunk(&self, i: usize, out: &mut Chunk) -> Result<()> {
        let c = self.chunks[i];
        let corrupt = |detail: String| TraceError::Corrupt {
            path: self.label.clone(),
            detail: format!("chunk {i}: {detail}"),
        };
        let mut compressed = vec![0u8; c.compressed_len as usize];
        self.bytes
            .read_at(&mut compressed, c.offset + CHUNK_HEADER_BYTES)
            .map_err(|e| TraceError::Read {
                path: self.label.clone(),
                source: e,
            })?;
        if crc32fast::hash(&compressed) != c.crc {
            return Err(corrupt("checksum mismatch".into()));
        }
        let raw = zstd::bulk::decompress(&compressed, c.raw_len as usize)
            .map_err(|e| corrupt(format!("decompression failed: {e}")))?;
        if raw.len() != c.raw_len as usize {
            return Err(corrupt("decompressed size differs from the header".into()));
        }
        decode_raw_chunk(&raw, out).map_err(corrupt)?;
        if out.insns.len() != c.instructions as usize
            || out.accesses.len() != c.accesses as usize
            || out.insns[0].pc != c.first_pc
        {
            return Err(corrupt("contents disagree with the header".into()));
        }
        Ok(())
    }

    /// Decodes every chunk and checks the trailer's totals against the contents.
    pub fn verify(&self) -> Result<()> {
        let mut s = Summary::default();
        let mut chunk = Chunk::default();
        let mut prev: Option<(u64, bool)> = None;
        for i in 0..self.chunks.len() {
            self.read_chunk(i, &mut chunk)?;
            tally(&chunk, &mut s, &mut prev);
        }
        if s != self.summary {
            return Err(TraceError::Corrupt {
                path: self.label.clone(),
                detail: "the summary disagrees with the contents".into(),
            });
        }
        Ok(())
    }
}

/// Adds a chunk's instructions to `s`; `prev` carries (end address, made no access) of the last
/// instruction across chunks.
pub(crate) fn tally(chunk: &Chunk, s: &mut Summary, prev: &mut Option<(u64, bool)>) {
    let mut k = 0;
    for insn in &chunk.insns {
        if let Some((end, plain)) = *prev {
            if end != insn.pc {
                s.jumps += 1;
                s.plain_jumps += plain as u64;
            }
        }
        s.instructions += 1;
        s.instruction_bytes += insn.size as u64;
        for (j, a) in chunk.accesses[k..k + insn.accesses as usize]
            .iter()
            .enumerate()
        {
            match a.kind {
                AccessKind::Load => s.loads += 1,
                AccessKind::Store => s.stores += 1,
                AccessKind::Modify => s.modifies += 1,
            }
            s.extra_accesses += (j > 0) as u64;
            s.line_crossings += a.crosses_line() as u64;
        }
        k += insn.accesses as usize;
        *prev = Some((insn.pc + insn.size as u64, insn.accesses == 0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Rec<'a> = (u64, u32, &'a [(AccessKind, u64, u32)]);

    fn write(insns: &[Rec]) -> Vec<u8> {
        let mut w = TraceWriter::new(Vec::new()).unwrap();
        for &(pc, size, accs) in insns {
            w.instruction(pc, size).unwrap();
            for &(k, a, s) in accs {
                w.access(k, a, s).unwrap();
            }
        }
        w.finish(&TraceMeta::default()).unwrap().0
    }

    #[test]
    fn round_trip_small() {
        use AccessKind::*;
        let bytes = write(&[
            (0x1000, 3, &[]),
            (0x1003, 5, &[(Load, 0x7ff0, 8)]),
            (0x2000, 20, &[(Store, 0x10, 64), (Modify, 0x7ff8, 8)]),
            (0x2014, 0, &[]),
            (0x100, 1, &[(Load, 1, 1); 9]),
        ]);
        let t = TraceFile::from_bytes(bytes, "t").unwrap();
        let s = t.summary();
        assert_eq!(s.instructions, 5);
        assert_eq!((s.loads, s.stores, s.modifies), (10, 1, 1));
        // 0x1008 != 0x2000 (after a load) and 0x2014 -> 0x100 (plain): two jumps, one plain.
        assert_eq!((s.jumps, s.plain_jumps), (2, 1));
        assert_eq!(s.extra_accesses, 1 + 8);
        assert_eq!(s.line_crossings, 1); // 0x10 + 64 bytes reaches into the next line
        t.verify().unwrap();
        let mut c = Chunk::default();
        t.read_chunk(0, &mut c).unwrap();
        assert_eq!(
            c.insns[2],
            Insn {
                pc: 0x2000,
                size: 20,
                accesses: 2
            }
        );
        assert_eq!(
            c.accesses[1],
            Access {
                kind: Store,
                addr: 0x10,
                size: 64
            }
        );
        assert_eq!(
            c.insns[3],
            Insn {
                pc: 0x2014,
                size: 0,
                accesses: 0
            }
        );
        assert_eq!(c.insns[4].accesses, 9);
    }

    #[test]
    fn crossing_lines() {
        let a = |addr, size| Access {
            kind: AccessKind::Load,
            addr,
            size,
        };
        assert!(!a(0, 64).crosses_line());
        assert!(a(1, 64).crosses_line());
        assert!(a(60, 8).crosses_line());
        assert!(!a(56, 8).crosses_line());
        assert!(!a(63, 1).crosses_line());
    }

    #[test]
    fn every_cut_of_a_file_is_rejected() {
        let insns: Vec<Rec> = (0..300).map(|i| (0x4000 + i * 4, 4, &[][..])).collect();
        let bytes = write(&insns);
        for cut in 0..bytes.len() {
            let r = TraceFile::from_bytes(bytes[..cut].to_vec(), "t");
            assert!(r.is_err(), "cut at {cut} accepted");
        }
    }

    #[test]
    fn absurd_trailer_offsets_are_errors() {
        // Found by the fuzzer: an offset near 2^64 overflowed the range check.
        let mut bytes = write(&[(0x4000, 4, &[])]);
        let n = bytes.len();
        for bad in [u64::MAX, u64::MAX - 40, 0, n as u64] {
            bytes[n - 24..n - 16].copy_from_slice(&bad.to_le_bytes());
            assert!(TraceFile::from_bytes(bytes.clone(), "t").is_err());
        }
    }

    #[test]
    fn flipped_bytes_are_caught() {
        let insns: Vec<Rec> = (0..300)
            .map(|i| (0x4000 + i * 4, 4, &[(AccessKind::Load, 0x9000, 8)][..]))
            .collect();
        let bytes = write(&insns);
        for at in 0..bytes.len() {
            let mut b = bytes.clone();
            b[at] ^= 0x41;
            let ok = TraceFile::from_bytes(b, "t").and_then(|t| t.verify().map(|_| t));
            assert!(ok.is_err(), "flip at {at} went unnoticed");
        }
    }
}
