//! Streaming import of `valgrind --tool=lackey --trace-mem=yes` output: the log is read in blocks
//! and parsed line by line into a [`TraceWriter`], never held whole in memory.
//!
//! Lackey writes one line per executed instruction (`I  04000b70,3`) and one per data access
//! (` L 1ffefff9a8,8`, ` S …`, ` M …` for a modify), each access after its instruction. Valgrind's
//! own messages (`==PID== …`, `--PID-- …`, `**PID** …`) are skipped; anything else is an error that
//! names the line. A process that execs another program (a wrapper script, `env`) starts a new
//! `Command:` under `--trace-children=yes`: the trace starts again there and holds the last
//! program; a second process in the log is refused (its lines cannot be told apart).

use crate::error::{Result, TraceError};
use crate::format::{AccessKind, FeedError, TraceWriter};
use crate::output::Rewind;
use std::collections::VecDeque;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};

/// What an import read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportStats {
    /// Lines read, valgrind messages included.
    pub lines: u64,
    pub instructions: u64,
    pub accesses: u64,
    /// The instruction limit was reached before the log ended.
    pub stopped_at_limit: bool,
    /// The last few valgrind messages (to explain a failed run).
    pub messages: Vec<String>,
    /// The command of each program the process ran, in order (valgrind's `Command:` lines):
    /// more than one when it exec'd another (a wrapper script, `env`); the trace holds the last.
    pub programs: Vec<String>,
}

const BLOCK_BYTES: usize = 1 << 20;
/// Longest line accepted (a valgrind message can be long; a trace line is about 30 bytes).
const MAX_LINE_BYTES: usize = 64 << 10;
const KEPT_MESSAGES: usize = 8;

/// Where a parse stopped.
enum Stop {
    Limit,
    Error {
        line: u64,
        reason: String,
        text: String,
    },
    Write(std::io::Error),
}

struct Parser<'w, W: Rewind> {
    writer: &'w mut TraceWriter<W>,
    limit: u64,
    line: u64,
    accesses: u64,
    messages: VecDeque<String>,
    /// The process traced: the PID of the log's first valgrind message.
    pid: Option<u64>,
    programs: Vec<String>,
}

static HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Parses `hex,dec` at `b[p..]` up to the line end; returns (address, size, position after '\n').
#[inline]
fn addr_size(b: &[u8], mut p: usize) -> Option<(u64, u64, usize)> {
    let start = p;
    let mut addr = 0u64;
    while let Some(&c) = b.get(p) {
        let v = HEX[c as usize];
        if v == 0xff {
            break;
        }
        addr = (addr << 4) | v as u64;
        p += 1;
    }
    if p == start || p - start > 16 || b.get(p) != Some(&b',') {
        return None;
    }
    p += 1;
    let start = p;
    let mut size = 0u64;
    while let Some(&c) = b.get(p) {
        if !c.is_ascii_digit() {
            break;
        }
        size = size * 10 + (c - b'0') as u64;
        p += 1;
        if p - start > 9 {
            return None;
        }
    }
    if p == start {
        return None;
    }
    if b.get(p) == Some(&b'\r') {
        p += 1;
    }
    (b.get(p) == Some(&b'\n')).then_some((addr, size, p + 1))
}

/// If `line` is a valgrind message (`==123==`, `--123--` or `**123**` then anything): its PID
/// and the text after the prefix.
fn message(line: &[u8]) -> Option<(u64, &[u8])> {
    if line.len() < 4 {
        return None;
    }
    let m = line[0];
    if !matches!(m, b'=' | b'-' | b'*') || line[1] != m {
        return None;
    }
    let digits = line[2..].iter().take_while(|c| c.is_ascii_digit()).count();
    let closed = line.get(2 + digits) == Some(&m) && line.get(3 + digits) == Some(&m);
    if digits == 0 || digits > 18 || !closed {
        return None;
    }
    let pid = std::str::from_utf8(&line[2..2 + digits])
        .ok()?
        .parse()
        .ok()?;
    Some((pid, line[4 + digits..].trim_ascii()))
}

fn shown(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(line);
    let s = s.trim_end_matches(['\n', '\r']);
    if s.chars().count() > 80 {
        s.chars().take(77).collect::<String>() + "..."
    } else {
        s.to_string()
    }
}

impl<W: Rewind> Parser<'_, W> {
    /// Parses the complete lines in `b` (which ends with '\n').
    fn block(&mut self, b: &[u8]) -> Result<(), Stop> {
        let mut p = 0;
        while p < b.len() {
            self.line += 1;
            let rest = &b[p..];
            let kind = match rest {
                [b'I', b' ', b' ', ..] => Some(None),
                [b' ', b'L', b' ', ..] => Some(Some(AccessKind::Load)),
                [b' ', b'S', b' ', ..] => Some(Some(AccessKind::Store)),
                [b' ', b'M', b' ', ..] => Some(Some(AccessKind::Modify)),
                _ => None,
            };
            if let Some(kind) = kind {
                let Some((addr, size, next)) = addr_size(b, p + 3) else {
                    return Err(self.error(b, p, "malformed trace line"));
                };
                let size = u32::try_from(size).unwrap_or(u32::MAX);
                let r = match kind {
                    None => {
                        if self.writer.instructions() == self.limit {
                            return Err(Stop::Limit);
                        }
                        self.writer.instruction(addr, size)
                    }
                    Some(k) => {
                        self.accesses += 1;
                        self.writer.access(k, addr, size)
                    }
                };
                match r {
                    Ok(()) => {}
                    Err(FeedError::Invalid(reason)) => return Err(self.error(b, p, &reason)),
                    Err(FeedError::Io(e)) => return Err(Stop::Write(e)),
                }
                p = next;
            } else {
                p = self.other_line(b, p)?;
            }
        }
        Ok(())
    }

    /// A line that is not an instruction or access: a valgrind message, a blank line, or garbage.
    fn other_line(&mut self, b: &[u8], p: usize) -> Result<usize, Stop> {
        let end = b[p..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |i| p + i);
        let line = &b[p..end];
        let trimmed = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some((pid, body)) = message(trimmed) {
            self.note(pid, body)
                .map_err(|reason| self.error(b, p, &reason))?;
            if self.messages.len() == KEPT_MESSAGES {
                self.messages.pop_front();
            }
            let text = shown(body);
            if !text.is_empty() {
                self.messages.push_back(text);
            }
        } else if !trimmed.is_empty() {
            return Err(self.error(b, p, "not a lackey trace line or valgrind message"));
        }
        Ok(end + 1)
    }

    /// A valgrind message of process `pid`. Another process's messages mean a child process runs
    /// under valgrind too and its trace lines would mix with the first's (lackey's lines name no
    /// process): refused. A new `Command:` of the same process is an exec: the trace so far (the
    /// wrapper's) is discarded, so that it holds the program the wrapper ran.
    fn note(&mut self, pid: u64, body: &[u8]) -> Result<(), String> {
        let first = *self.pid.get_or_insert(pid);
        if pid != first {
            return Err(format!(
                "a second process (valgrind's {pid}) writes to the log of process {first}: the \
                 program started another program (not by exec); a trace follows one process, so \
                 record that program directly"
            ));
        }
        let Some(command) = body.strip_prefix(b"Command: ") else {
            return Ok(());
        };
        if !self.programs.is_empty() {
            self.writer.restart().map_err(|e| {
                format!("the program exec'd another, and the trace cannot start again: {e}")
            })?;
            self.accesses = 0;
        }
        self.programs
            .push(String::from_utf8_lossy(command).into_owned());
        Ok(())
    }

    fn error(&self, b: &[u8], p: usize, reason: &str) -> Stop {
        let end = b[p..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |i| p + i);
        Stop::Error {
            line: self.line,
            reason: reason.to_string(),
            text: shown(&b[p..end]),
        }
    }
}

/// Reads a lackey log from `input` into `writer`. `origin` names the input in errors and
/// `output` the trace being written; `limit`
/// stops after that many instructions (the rest of the input is left unread); `interrupted` is
/// polled between blocks.
pub fn import_lackey<R: Read, W: Rewind>(
    mut input: R,
    origin: &str,
    output: &str,
    writer: &mut TraceWriter<W>,
    limit: Option<u64>,
    interrupted: Option<&AtomicBool>,
) -> Result<ImportStats> {
    let mut parser = Parser {
        writer,
        limit: limit.unwrap_or(u64::MAX),
        line: 0,
        accesses: 0,
        messages: VecDeque::new(),
        pid: None,
        programs: Vec::new(),
    };
    let mut buf = vec![0u8; BLOCK_BYTES];
    let mut filled = 0usize;
    let mut stats = ImportStats::default();
    let lackey_error = |line: u64, reason: String, text: String| TraceError::Lackey {
        origin: origin.to_string(),
        line,
        reason,
        text,
    };
    loop {
        if interrupted.is_some_and(|f| f.load(Ordering::Relaxed)) {
            return Err(TraceError::Interrupted {
                origin: origin.to_string(),
            });
        }
        if filled == buf.len() {
            if buf.len() >= MAX_LINE_BYTES + BLOCK_BYTES {
                return Err(lackey_error(
                    parser.line + 1,
                    format!("line longer than {MAX_LINE_BYTES} bytes"),
                    shown(&buf[..80]),
                ));
            }
            buf.resize(buf.len() + MAX_LINE_BYTES, 0);
        }
        let n = match input.read(&mut buf[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(TraceError::Read {
                    path: origin.to_string(),
                    source: e,
                })
            }
        };
        let eof = n == 0;
        filled += n;
        // Parse up to the last complete line.
        let complete = match buf[..filled].iter().rposition(|&c| c == b'\n') {
            Some(i) => i + 1,
            None if eof && filled > 0 => {
                return Err(lackey_error(
                    parser.line + 1,
                    "the log ends in the middle of a line (truncated?)".into(),
                    shown(&buf[..filled]),
                ))
            }
            None => 0,
        };
        match parser.block(&buf[..complete]) {
            Ok(()) => {}
            Err(Stop::Limit) => {
                stats.stopped_at_limit = true;
                break;
            }
            Err(Stop::Error { line, reason, text }) => {
                return Err(lackey_error(line, reason, text))
            }
            Err(Stop::Write(source)) => {
                return Err(TraceError::Write {
                    path: output.to_string(),
                    source,
                })
            }
        }
        buf.copy_within(complete..filled, 0);
        filled -= complete;
        if eof {
            if filled > 0 {
                return Err(lackey_error(
                    parser.line + 1,
                    "the log ends in the middle of a line (truncated?)".into(),
                    shown(&buf[..filled]),
                ));
            }
            break;
        }
        if buf.len() > BLOCK_BYTES && filled < BLOCK_BYTES / 2 {
            buf.truncate(BLOCK_BYTES);
        }
    }
    stats.lines = parser.line - stats.stopped_at_limit as u64;
    stats.instructions = parser.writer.instructions();
    stats.accesses = parser.accesses;
    stats.messages = parser.messages.into_iter().collect();
    stats.programs = parser.programs;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Chunk, TraceFile, TraceMeta};

    fn import(text: &str, limit: Option<u64>) -> Result<(ImportStats, TraceFile)> {
        let mut w = TraceWriter::new(Vec::new()).unwrap();
        let stats = import_lackey(text.as_bytes(), "log", "out", &mut w, limit, None)?;
        let bytes = w.finish(&TraceMeta::default()).unwrap().0;
        Ok((stats, TraceFile::from_bytes(bytes, "t").unwrap()))
    }

    const LOG: &str = "==1== Lackey, an example Valgrind tool\n\
                       ==1== \n\
                       I  0401ab70,3\n\
                       I  0401ab73,5\n \
                       S 1fff000668,8\n\
                       I  0401b770,1\n \
                       L 1fff000660,8\n \
                       M 0405cbe8,4\n\
                       ==1== Counted 0 calls to main()\n";

    #[test]
    fn parses_instructions_and_accesses_in_order() {
        let (stats, t) = import(LOG, None).unwrap();
        assert_eq!(stats.lines, 9);
        assert_eq!((stats.instructions, stats.accesses), (3, 3));
        assert_eq!(stats.messages.last().unwrap(), "Counted 0 calls to main()");
        let mut c = Chunk::default();
        t.read_chunk(0, &mut c).unwrap();
        let pcs: Vec<(u64, u32, u32)> =
            c.insns.iter().map(|i| (i.pc, i.size, i.accesses)).collect();
        assert_eq!(
            pcs,
            [(0x0401ab70, 3, 0), (0x0401ab73, 5, 1), (0x0401b770, 1, 2)]
        );
        assert_eq!(c.accesses[0].addr, 0x1fff000668);
        assert_eq!(c.accesses[0].kind, AccessKind::Store);
        assert_eq!(c.accesses[2].kind, AccessKind::Modify);
        assert_eq!(c.accesses[2].size, 4);
        let s = t.summary();
        assert_eq!((s.loads, s.stores, s.modifies), (1, 1, 1));
        assert_eq!((s.jumps, s.plain_jumps), (1, 0));
    }

    #[test]
    fn limit_stops_before_the_next_instruction() {
        let (stats, t) = import(LOG, Some(2)).unwrap();
        assert!(stats.stopped_at_limit);
        assert_eq!(t.summary().instructions, 2);
        assert_eq!(t.summary().stores, 1);
        assert_eq!(t.summary().loads, 0);
    }

    #[test]
    fn garbage_is_an_error_naming_the_line() {
        let bad = LOG.replace(" L 1fff000660,8", "hello world");
        let e = import(&bad, None).err().unwrap().to_string();
        assert_eq!(
            e,
            "log:7: not a lackey trace line or valgrind message: \"hello world\""
        );
        for (line, reason) in [
            ("I  zz,3", "malformed"),
            ("I  0401ab70,", "malformed"),
            ("I  0401ab70;3", "malformed"),
            (" L 12345678901234567,8", "malformed"),
            (" X 1000,8", "not a lackey"),
            (" L 1000,0", "access size 0"),
            ("I  fffffffffffff0,4", "above 2^52"),
        ] {
            let text = format!("I  1000,4\n{line}\n");
            let e = import(&text, None).err().unwrap().to_string();
            assert!(
                e.starts_with("log:2: ") && e.contains(reason),
                "{line}: {e}"
            );
        }
        let e = import(" L 1000,8\n", None).err().unwrap().to_string();
        assert!(e.contains("before any instruction"), "{e}");
        let e = import("I  1000,4\nI  10", None).err().unwrap().to_string();
        assert!(
            e.contains("log:2: the log ends in the middle of a line"),
            "{e}"
        );
    }

    #[test]
    fn lines_split_across_reads_are_joined() {
        // A reader that returns one byte at a time.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.0.is_empty() || buf.is_empty() {
                    return Ok(0);
                }
                buf[0] = self.0[0];
                self.0 = &self.0[1..];
                Ok(1)
            }
        }
        let mut w = TraceWriter::new(Vec::new()).unwrap();
        let stats =
            import_lackey(Trickle(LOG.as_bytes()), "log", "out", &mut w, None, None).unwrap();
        assert_eq!((stats.instructions, stats.accesses), (3, 3));
    }
}
