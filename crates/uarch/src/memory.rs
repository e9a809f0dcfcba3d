//! The memory side of the machine: cache instances shared according to the topology, and the
//! memory path with latency plus bandwidth contention.

use crate::cache::{Cache, Eviction};
use crate::stream::KERNEL_BASE;
use smtsched_model::{CacheContents, MachineModel, Scope};
use std::ops::Range;

/// Bits above which an address-space tag is placed (simulated addresses stay below 2^52).
const SPACE_SHIFT: u32 = 52;
/// Where an address space's memory sits: its tag above [`SPACE_SHIFT`] plus its cache offset
/// (see [`space_offset_bytes`]), added to every address of the space below the kernel's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SpaceTag(u64);

impl SpaceTag {
    fn of(space: u32) -> Self {
        SpaceTag(((space as u64) << SPACE_SHIFT) + space_offset_bytes(space))
    }

    /// `addr` in this address space; kernel addresses are the same in every space. A user
    /// address plus the offset stays below 2^52, so the sum is the tag and the offset address
    /// side by side.
    #[inline]
    fn place(self, addr: u64) -> u64 {
        if addr >= KERNEL_BASE {
            addr
        } else {
            self.0 + addr
        }
    }
}

/// Address spaces a thread may have: below this, so a tagged address stays below 2^63.
pub const SPACES: u32 = 1 << (63 - SPACE_SHIFT);
/// Where the stand-in lines that ageing a cache puts in place of the lines a thread's uncomputed
/// fills would have brought sit (see [`Cache::age`]): at and above 2^63, where no thread's
/// addresses are, so in a cache without thread tags no access ever matches one.
const STAND_IN_BASE: u64 = 1 << 63;

/// Pages (4 KiB) over which the address spaces' offsets spread: 2 MiB, a way of the largest
/// cache modelled (16 MiB, 8 ways), so no cache's sets see the spaces aligned. Whole pages, as
/// frames are: what lies within a page (lines, sectors) keeps its alignment.
const SPACE_OFFSET_PAGES: u64 = 512;

/// Where address space `space`'s memory sits in the caches relative to space 0's. Every
/// workload lays its regions out at the same virtual addresses; a real OS backs them with
/// unrelated physical frames, so two processes' hot data do not fall on the same cache sets.
/// Without this offset every co-runner's hottest lines would compete for the same sets (on an
/// 8-thread core with 2-way L1s, eight copies of one set).
#[inline]
fn space_offset_bytes(space: u32) -> u64 {
    if space == 0 {
        0
    } else {
        (crate::rng::mix64(space as u64) % SPACE_OFFSET_PAGES) * 4096
    }
}

/// Bit above which a hardware-thread tag is placed in thread-tagged caches' line numbers.
const THREAD_TAG_SHIFT: u32 = 57;

/// Who is accessing: the simulator's slot for the software thread (for statistics and
/// thread-tagged caches), its logical CPU, and the address spaces of its data (one per process)
/// and code (shared by copies of one program, as text pages are).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requester {
    pub slot: u8,
    pub cpu: u32,
    data: SpaceTag,
    code: SpaceTag,
}

impl Requester {
    pub fn new(slot: u8, cpu: u32, data_space: u32, code_space: u32) -> Self {
        Requester {
            slot,
            cpu,
            data: SpaceTag::of(data_space),
            code: SpaceTag::of(code_space),
        }
    }
}

/// A shared memory path: a bus that carries one transfer at a time. Requests may arrive slightly
/// out of time order (cores run a few cycles apart; a dependent load issues when its address is
/// known), so the bus keeps a calendar of busy intervals and gives each transfer the first gap at
/// or after its request time.
#[derive(Clone, Debug)]
struct Bus {
    /// Busy intervals (start, end) from index `first` on, sorted, non-overlapping; adjacent ones
    /// are merged. A plain vector (cheaper to index than a ring), whose forgotten front
    /// intervals are dropped in batches; empty when none is live.
    busy: Vec<(f64, f64)>,
    first: usize,
    cycles_per_byte: f64,
    busy_cycles: f64,
}

/// Intervals a search looks at from the end before it bisects.
const BUS_SCAN_FROM_END: usize = 4;
/// Intervals ending this long before a request are forgotten (requests never arrive that late).
const BUS_HISTORY_CYCLES: f64 = 50_000.0;
/// Forgotten intervals kept at the front of [`Bus::busy`] until they are dropped at once.
const BUS_FORGOTTEN_KEPT: usize = 64;

impl Bus {
    fn new(cycles_per_byte: f64) -> Self {
        Bus {
            busy: Vec::new(),
            first: 0,
            cycles_per_byte,
            busy_cycles: 0.0,
        }
    }

    /// The intervals not forgotten.
    #[inline]
    fn live(&self) -> &[(f64, f64)] {
        &self.busy[self.first..]
    }

    /// Index in [`Bus::live`] of the first interval that ends after `now` (the ends are sorted
    /// too, as the intervals are sorted and do not overlap).
    #[inline]
    fn first_ending_after(&self, now: f64) -> usize {
        self.partition_point(|&(_, b)| b <= now)
    }

    /// `partition_point` over [`Bus::live`]. Requests come at about the latest times booked, so
    /// the point is usually among the last few intervals: those are looked at first, from the
    /// end.
    #[inline]
    fn partition_point(&self, pred: impl Fn(&(f64, f64)) -> bool) -> usize {
        let live = self.live();
        let mut i = live.len();
        for _ in 0..BUS_SCAN_FROM_END {
            match live.get(i.wrapping_sub(1)) {
                Some(iv) if !pred(iv) => i -= 1,
                _ => return i,
            }
        }
        live.partition_point(pred)
    }

    /// Whether nothing is using or booked on the bus at `now`.
    #[inline]
    fn idle_at(&self, now: f64) -> bool {
        // Usually decided by the latest booking: over by `now` (so is every other), or begun.
        match self.busy.last() {
            None => return true,
            Some(&(_, b)) if b <= now => return true,
            Some(&(a, _)) if a <= now => return false,
            Some(_) => {}
        }
        self.live()
            .get(self.first_ending_after(now))
            .is_none_or(|&(a, _)| a > now)
    }

    /// Books a transfer of `bytes` requested at `now`; returns when the transfer starts.
    #[inline]
    fn transfer(&mut self, now: f64, bytes: u32) -> f64 {
        let occupancy = bytes as f64 * self.cycles_per_byte;
        self.busy_cycles += occupancy;
        self.forget_before(now);
        match self.book_after_latest(now, occupancy) {
            Some(start) => start,
            None => self.book_in_gap(now, occupancy),
        }
    }

    /// Forgets the intervals that end [`BUS_HISTORY_CYCLES`] before `now`.
    #[inline]
    fn forget_before(&mut self, now: f64) {
        let first = self.first;
        while self
            .busy
            .get(self.first)
            .is_some_and(|&(_, end)| end < now - BUS_HISTORY_CYCLES)
        {
            self.first += 1;
        }
        if self.first != first {
            self.drop_forgotten();
        }
    }

    /// Drops the forgotten intervals: all of them once none is live (so the last interval of
    /// [`Bus::busy`] is always live), or a batch of [`BUS_FORGOTTEN_KEPT`].
    #[inline]
    fn drop_forgotten(&mut self) {
        if self.first == self.busy.len() {
            self.busy.clear();
            self.first = 0;
        } else if self.first >= BUS_FORGOTTEN_KEPT {
            self.busy.drain(..self.first);
            self.first = 0;
        }
    }

    /// Books the common request, one at or after the start of the latest booking: it goes
    /// after that booking, or at `now` once the bus is free, as [`Bus::book_in_gap`] would place
    /// it, without a search. `None` for any other request.
    #[inline]
    fn book_after_latest(&mut self, now: f64, occupancy: f64) -> Option<f64> {
        let Some(latest) = self.busy.last_mut() else {
            self.busy.push((now, now + occupancy));
            return Some(now);
        };
        let (a, b) = *latest;
        // `a < now + occupancy` rules out the one case the search decides otherwise: a
        // transfer so short that it fits before `a` (`now + occupancy` rounds to `now == a`).
        if !(a <= now && a < now + occupancy) {
            return None;
        }
        if b > now {
            latest.1 = b + occupancy;
            Some(b)
        } else if b == now {
            latest.1 = now + occupancy;
            Some(now)
        } else {
            self.busy.push((now, now + occupancy));
            Some(now)
        }
    }

    /// Books `occupancy` cycles in the first gap at or after `now`; returns when they start.
    #[inline(never)]
    fn book_in_gap(&mut self, now: f64, occupancy: f64) -> f64 {
        let mut start = now;
        for &(a, b) in &self.live()[self.first_ending_after(now)..] {
            if b <= start {
                continue;
            }
            if a >= start + occupancy {
                break;
            }
            start = b;
        }
        let end = start + occupancy;
        // [start, end) is free: every interval starting before `end` ends by `start`.
        let pos = self.partition_point(|&(a, _)| a < end);
        let live = &mut self.busy[self.first..];
        let merge_prev = pos > 0 && live[pos - 1].1 >= start;
        let merge_next = pos < live.len() && live[pos].0 <= end;
        match (merge_prev, merge_next) {
            (true, true) => {
                live[pos - 1].1 = live[pos].1;
                self.busy.remove(self.first + pos);
            }
            (true, false) => live[pos - 1].1 = end,
            (false, true) => live[pos].0 = start,
            (false, false) => self.busy.insert(self.first + pos, (start, end)),
        }
        start
    }
}

/// A stream being followed by a prefetcher.
#[derive(Clone, Copy, Debug)]
struct Stream {
    /// The line a demand access is expected at next.
    next: u64,
    /// Lines up to (not including) this one have been prefetched.
    ahead: u64,
    confirmed: bool,
    last_use: u64,
}

/// The stream prefetcher of one cache instance, with the arrival times of the lines it is
/// bringing in.
#[derive(Clone, Debug)]
struct Prefetcher {
    streams: Vec<Stream>,
    capacity: usize,
    distance_lines: u64,
    clock: u64,
    /// Recently prefetched lines and when they arrive (a small ring; older entries have arrived).
    inflight: Vec<(u64, f64)>,
    inflight_next: usize,
    /// How many ring entries fall in each bucket of line numbers: most lookups are of lines the
    /// ring does not hold, and an empty bucket answers them without a scan.
    bucket_entries: [u8; INFLIGHT_BUCKETS],
    /// How many streams each bucket of line numbers would continue (those whose `next` is
    /// within one of a line in it): most demand accesses continue no stream, and an empty
    /// bucket answers them without a search.
    continuing: [u8; CONTINUING_BUCKETS],
}

const INFLIGHT_ENTRIES: usize = 64;
const INFLIGHT_BUCKETS: usize = 4096;
/// A power of two (line numbers wrap round 2^64 onto the same buckets) of at least 3 (a stream
/// counts once per bucket, so a count stays within the 64 streams a prefetcher may have).
const CONTINUING_BUCKETS: usize = 1024;

#[inline]
fn inflight_bucket(line: u64) -> usize {
    line as usize % INFLIGHT_BUCKETS
}

#[inline]
fn continuing_bucket(line: u64) -> usize {
    line as usize % CONTINUING_BUCKETS
}

/// Whether a demand access to `line` continues a stream expecting `next`. Lines of one 128-byte
/// sector pair count as in sequence too: `line` within one of `next`, in one comparison (it
/// differs from the two only where a line number wraps round 2^64; no address maps to line 0 or
/// 2^64 - 1).
#[inline(always)]
fn continues(line: u64, next: u64) -> bool {
    line.wrapping_sub(next).wrapping_add(1) <= 2
}

impl Prefetcher {
    fn new(capacity: usize, distance_lines: u64) -> Self {
        Prefetcher {
            streams: Vec::new(),
            capacity,
            distance_lines,
            clock: 0,
            inflight: Vec::new(),
            inflight_next: 0,
            bucket_entries: [0; INFLIGHT_BUCKETS],
            continuing: [0; CONTINUING_BUCKETS],
        }
    }

    /// A demand access to `line` that missed or hit; returns the lines to prefetch.
    #[inline]
    fn observe(&mut self, line: u64, missed: bool) -> Range<u64> {
        self.clock += 1;
        if self.continuing[continuing_bucket(line)] != 0 {
            if let Some(i) = self.streams.iter().position(|s| continues(line, s.next)) {
                return self.follow(i, line);
            }
        }
        if missed {
            self.start_stream(line);
        }
        0..0
    }

    /// Stream `i` continues at `line`: it is confirmed and kept `distance_lines` ahead; returns
    /// the lines that takes.
    #[inline]
    fn follow(&mut self, i: usize, line: u64) -> Range<u64> {
        let s = &mut self.streams[i];
        let was_next = s.next;
        s.next = line + 1;
        s.last_use = self.clock;
        s.confirmed = true;
        let target = line + 1 + self.distance_lines;
        let from = s.ahead.max(line + 1);
        s.ahead = s.ahead.max(target);
        self.count_continuing(was_next, false);
        self.count_continuing(line + 1, true);
        from..target
    }

    /// Counts a stream expecting `next` in (`add`) or out of [`Prefetcher::continuing`].
    #[inline]
    fn count_continuing(&mut self, next: u64, add: bool) {
        for line in [next.wrapping_sub(1), next, next.wrapping_add(1)] {
            let count = &mut self.continuing[continuing_bucket(line)];
            if add {
                *count += 1;
            } else {
                *count -= 1;
            }
        }
    }

    /// Follows a new stream from the missed `line`, in place of the least recently used
    /// unconfirmed stream (or confirmed, if none is unconfirmed) once all are taken.
    #[inline(never)]
    fn start_stream(&mut self, line: u64) {
        let stream = Stream {
            next: line + 1,
            ahead: line + 1,
            confirmed: false,
            last_use: self.clock,
        };
        if self.streams.len() < self.capacity {
            self.streams.push(stream);
        } else if !self.streams.is_empty() {
            let victim = self.least_valued_stream();
            self.count_continuing(self.streams[victim].next, false);
            self.streams[victim] = stream;
        } else {
            return;
        }
        self.count_continuing(stream.next, true);
    }

    /// The first stream least worth keeping: by (confirmed, last use), as one number (`clock`
    /// stays far below 2^63), which a plain loop compares faster than the pair.
    fn least_valued_stream(&self) -> usize {
        let value = |s: &Stream| (s.confirmed as u64) << 63 | s.last_use;
        let mut least = 0;
        let mut least_value = value(&self.streams[0]);
        for (i, s) in self.streams.iter().enumerate().skip(1) {
            let v = value(s);
            if v < least_value {
                least = i;
                least_value = v;
            }
        }
        least
    }

    fn arrival(&self, line: u64) -> Option<f64> {
        if self.bucket_entries[inflight_bucket(line)] == 0 {
            return None;
        }
        self.inflight
            .iter()
            .find(|&&(l, _)| l == line)
            .map(|&(_, t)| t)
    }

    fn record(&mut self, line: u64, ready: f64) {
        self.bucket_entries[inflight_bucket(line)] += 1;
        if self.inflight.len() < INFLIGHT_ENTRIES {
            self.inflight.push((line, ready));
        } else {
            let (old, _) = self.inflight[self.inflight_next];
            self.bucket_entries[inflight_bucket(old)] -= 1;
            self.inflight[self.inflight_next] = (line, ready);
            self.inflight_next = (self.inflight_next + 1) % INFLIGHT_ENTRIES;
        }
    }
}

#[derive(Clone, Debug)]
struct Level {
    /// The level number from the machine description (1, 2, 3).
    level: u8,
    latency: f64,
    line_shift: u32,
    line_bytes: u32,
    thread_tagged: bool,
    fill_adjacent: bool,
    write_back: bool,
}

/// What a lookup found: how deep it went, and, for a line a prefetch is still bringing in, when
/// it arrives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lookup {
    /// Position in the access path that hit; equal to the path length for memory.
    pub depth: usize,
    /// The data cannot be ready before this cycle (0 when nothing is in flight).
    pub not_before: f64,
}

impl Lookup {
    /// The depth a performance counter would report at time `now`: a hit on a line that is still
    /// arriving counts as a miss at that level.
    pub fn counted_depth(&self, now: f64) -> usize {
        if self.not_before > now {
            self.depth + 1
        } else {
            self.depth
        }
    }
}

/// Caches on a path at most (levels 1 to 4, one cache each).
const MAX_PATH: usize = 4;

/// One cache of an access path, with what a lookup, a write-back and the timing of a hit need
/// of its level.
#[derive(Clone, Copy, Debug, Default)]
struct Step {
    cache: u32,
    line_shift: u32,
    line_bytes: u32,
    latency: f64,
    thread_tagged: bool,
    prefetch: bool,
    fill_adjacent: bool,
    write_back: bool,
}

impl Step {
    /// The line number of tagged address `addr` here, for thread `slot`.
    #[inline(always)]
    fn line(&self, addr: u64, slot: u8) -> u64 {
        let line = addr >> self.line_shift;
        if self.thread_tagged {
            line ^ (((slot as u64) + 1) << THREAD_TAG_SHIFT)
        } else {
            line
        }
    }

    /// The tagged address of `line` of this level (the thread tag, if any, taken off).
    #[inline]
    fn addr(self, line: u64) -> u64 {
        let addr = line << self.line_shift;
        if self.thread_tagged {
            addr & ((1u64 << (THREAD_TAG_SHIFT + self.line_shift)) - 1)
        } else {
            addr
        }
    }
}

/// A logical CPU's fetch or data path, with what a lookup and its timing need of each level.
#[derive(Clone, Copy, Debug)]
struct Path {
    steps: [Step; MAX_PATH],
    len: usize,
    /// Whether a lookup may take the first level inline: there is one, without a prefetcher.
    lean_first: bool,
    /// Whether every level's lines are at least the first level's: bytes in one line there are
    /// in one line at every level.
    lines_nest: bool,
    /// Bytes an access that reaches memory moves over the bus: the last level's line, or its
    /// sector of two lines.
    memory_bytes: u32,
}

impl Path {
    fn new(caches: &[usize], levels: &[Level], prefetchers: &[Option<Prefetcher>]) -> Self {
        assert!(
            caches.len() <= MAX_PATH,
            "a path has at most {MAX_PATH} levels"
        );
        let mut steps = [Step::default(); MAX_PATH];
        for (step, &i) in steps.iter_mut().zip(caches) {
            let l = &levels[i];
            *step = Step {
                cache: i as u32,
                line_shift: l.line_shift,
                line_bytes: l.line_bytes,
                latency: l.latency,
                thread_tagged: l.thread_tagged,
                prefetch: prefetchers[i].is_some(),
                fill_adjacent: l.fill_adjacent,
                write_back: l.write_back,
            };
        }
        let memory_bytes = caches.last().map_or(0, |&i| {
            let last = &levels[i];
            last.line_bytes * if last.fill_adjacent { 2 } else { 1 }
        });
        Path {
            steps,
            len: caches.len(),
            lean_first: !caches.is_empty() && !steps[0].prefetch,
            lines_nest: steps[..caches.len()]
                .iter()
                .all(|s| s.line_shift >= steps[0].line_shift),
            memory_bytes,
        }
    }
}

/// A logical CPU's view of the memory side: its two paths and the bus behind them.
#[derive(Clone, Debug)]
struct CpuPaths {
    fetch: Path,
    data: Path,
    bus: usize,
}

/// All caches and memory paths of one simulated machine.
#[derive(Clone, Debug)]
pub struct MemorySystem {
    caches: Vec<Cache>,
    levels: Vec<Level>,
    /// Per cache instance, its prefetcher if it has one.
    prefetchers: Vec<Option<Prefetcher>>,
    buses: Vec<Bus>,
    /// Per logical CPU: cache instances for instruction fetch and for data, in lookup order.
    fetch_path: Vec<Vec<usize>>,
    data_path: Vec<Vec<usize>>,
    /// Per logical CPU: the same paths with what a lookup needs of each level, and its bus.
    cpus: Vec<CpuPaths>,
    memory_latency: f64,
}

fn instance(m: &MachineModel, scope: Scope, cpu: u32) -> usize {
    let loc = m.cpu_location(cpu).expect("cpu inside the machine");
    match scope {
        Scope::Core => loc.core as usize,
        Scope::Package => loc.package as usize,
        Scope::Machine => 0,
    }
}

fn instances(m: &MachineModel, scope: Scope) -> usize {
    match scope {
        Scope::Core => m.cores() as usize,
        Scope::Package => m.topology.packages as usize,
        Scope::Machine => 1,
    }
}

impl MemorySystem {
    /// Builds the caches and buses of `machine` for `slots` software threads.
    pub fn new(machine: &MachineModel, slots: usize) -> Self {
        let mut caches = Vec::new();
        let mut levels = Vec::new();
        let mut prefetchers = Vec::new();
        // First instance index of each named cache.
        let mut first_of = std::collections::BTreeMap::new();
        for (name, spec) in &machine.cache {
            first_of.insert(name.as_str(), caches.len());
            for _ in 0..instances(machine, spec.shared_by) {
                caches.push(Cache::new(spec, slots));
                levels.push(Level {
                    level: spec.level,
                    latency: spec.latency_cycles as f64,
                    line_shift: spec.line_bytes.trailing_zeros(),
                    line_bytes: spec.line_bytes,
                    thread_tagged: spec.thread_tagged,
                    fill_adjacent: spec.fill_adjacent_line,
                    write_back: spec.write_back,
                });
                prefetchers.push(spec.prefetch.as_ref().map(|p| {
                    Prefetcher::new(
                        p.streams as usize,
                        (p.distance_bytes / spec.line_bytes) as u64,
                    )
                }));
            }
        }
        let cpus = machine.logical_cpus();
        let path_for = |contents: CacheContents, cpu: u32| -> Vec<usize> {
            machine
                .cache_path(contents)
                .into_iter()
                .map(|(name, spec)| first_of[name] + instance(machine, spec.shared_by, cpu))
                .collect()
        };
        let fetch_path: Vec<Vec<usize>> = (0..cpus)
            .map(|c| path_for(CacheContents::Instructions, c))
            .collect();
        let data_path: Vec<Vec<usize>> = (0..cpus)
            .map(|c| path_for(CacheContents::Data, c))
            .collect();
        let mem = &machine.memory;
        let buses = (0..instances(machine, mem.shared_by))
            .map(|_| Bus::new(1.0 / mem.bus_bytes_per_cycle))
            .collect();
        let cpu_paths = (0..cpus)
            .map(|c| CpuPaths {
                fetch: Path::new(&fetch_path[c as usize], &levels, &prefetchers),
                data: Path::new(&data_path[c as usize], &levels, &prefetchers),
                bus: instance(machine, mem.shared_by, c),
            })
            .collect();
        MemorySystem {
            caches,
            levels,
            prefetchers,
            buses,
            fetch_path,
            data_path,
            cpus: cpu_paths,
            memory_latency: mem.latency_cycles as f64,
        }
    }

    /// Level numbers (1, 2, 3…) along the data path of `cpu`.
    pub fn data_levels(&self, cpu: u32) -> Vec<u8> {
        self.data_path[cpu as usize]
            .iter()
            .map(|&i| self.levels[i].level)
            .collect()
    }

    pub fn fetch_levels(&self, cpu: u32) -> Vec<u8> {
        self.fetch_path[cpu as usize]
            .iter()
            .map(|&i| self.levels[i].level)
            .collect()
    }

    /// Line size of the first cache on the fetch path (fetch blocks are looked up once per line).
    pub fn fetch_line_shift(&self, cpu: u32) -> u32 {
        self.levels[self.fetch_path[cpu as usize][0]].line_shift
    }

    /// Looks up the instruction line holding `pc`; returns how deep the access went (0 = hit in
    /// the first level, path length = memory). Use [`MemorySystem::ready_time`] for its timing.
    #[inline]
    pub fn fetch(&mut self, who: Requester, pc: u64, now: f64) -> Lookup {
        let addr = who.code.place(pc);
        self.lookup::<true>(who, addr, addr, false, now)
    }

    /// Looks up a load or store of `bytes` bytes at `addr`; returns how deep the access went.
    /// An access that crosses a line boundary looks up both lines at every level it reaches and
    /// hits a level only if both do, as cachegrind counts it (one access, one miss).
    #[inline]
    pub fn data(&mut self, who: Requester, addr: u64, bytes: u16, write: bool, now: f64) -> Lookup {
        // Tagging moves the whole access by one offset (an access never spans the kernel base).
        let addr = who.data.place(addr);
        self.lookup::<false>(who, addr, addr + bytes.max(1) as u64 - 1, write, now)
    }

    #[inline(always)]
    fn path(&self, fetch: bool, cpu: usize) -> &Path {
        let paths = &self.cpus[cpu];
        if fetch {
            &paths.fetch
        } else {
            &paths.data
        }
    }

    /// Looks up the bytes from `addr` to `last` (tagged addresses) along the fetch path
    /// (`FETCH`) or the data path, level by level, until a level holds every line they span.
    /// The common case, one line that hits the first level, is decided here; the rest is
    /// [`MemorySystem::walk`]'s.
    #[inline(always)]
    fn lookup<const FETCH: bool>(
        &mut self,
        who: Requester,
        addr: u64,
        last: u64,
        write: bool,
        now: f64,
    ) -> Lookup {
        // Scalars, not `who`, go to the functions below: a struct would be copied to the stack.
        let (cpu, slot) = (who.cpu as usize, who.slot);
        let path = self.path(FETCH, cpu);
        // By reference: a copy of the whole step costs more than the fields read.
        let first = &path.steps[0];
        let line = first.line(addr, slot);
        if !path.lean_first || (last != addr && first.line(last, slot) != line) {
            return self.walk::<FETCH, true>(cpu, slot, addr, last, write, now, 0);
        }
        let (cache, writes_back) = (first.cache as usize, first.write_back);
        let (hit, evicted) = self.caches[cache].access(line, slot, write);
        if hit {
            return Lookup {
                depth: 0,
                not_before: 0.0,
            };
        }
        if let Some(ev) = evicted {
            self.evicted(FETCH, cpu, 0, writes_back, ev, now);
        }
        self.below_first_level::<FETCH>(cpu, slot, line, addr, last, now)
    }

    /// What [`MemorySystem::look_at`] does after a first-level miss of a one-line access once
    /// the evicted line is written back (the adjacent line), then the walk down the levels below.
    #[inline(never)]
    fn below_first_level<const FETCH: bool>(
        &mut self,
        cpu: usize,
        slot: u8,
        line: u64,
        addr: u64,
        last: u64,
        now: f64,
    ) -> Lookup {
        let path = self.path(FETCH, cpu);
        let (first, lines_nest) = (path.steps[0], path.lines_nest);
        if first.fill_adjacent {
            self.fill_adjacent(FETCH, cpu, 0, first, line, slot, now);
        }
        if lines_nest {
            self.walk_levels::<FETCH, false>(cpu, slot, addr, addr, false, now, 1)
        } else {
            self.walk::<FETCH, true>(cpu, slot, addr, last, false, now, 1)
        }
    }

    /// Looks up the bytes from `addr` to `last` for thread `slot` on `cpu`, level by level from
    /// depth `from` on; `SPANS`: they may span two lines at some level (else `last` is unused).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn walk<const FETCH: bool, const SPANS: bool>(
        &mut self,
        cpu: usize,
        slot: u8,
        addr: u64,
        last: u64,
        write: bool,
        now: f64,
        from: usize,
    ) -> Lookup {
        self.walk_levels::<FETCH, SPANS>(cpu, slot, addr, last, write, now, from)
    }

    /// [`MemorySystem::walk`], inline (where one call would cost more than it does).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn walk_levels<const FETCH: bool, const SPANS: bool>(
        &mut self,
        cpu: usize,
        slot: u8,
        addr: u64,
        last: u64,
        write: bool,
        now: f64,
        from: usize,
    ) -> Lookup {
        let len = self.path(FETCH, cpu).len;
        for d in from..len {
            let step = self.path(FETCH, cpu).steps[d];
            let line = step.line(addr, slot);
            let (mut hit, mut not_before) =
                self.look_at::<FETCH>(cpu, d, step, line, slot, write, now);
            if SPANS && last != addr {
                let last_line = step.line(last, slot);
                if last_line != line {
                    let (hit2, not_before2) =
                        self.look_at::<FETCH>(cpu, d, step, last_line, slot, write, now);
                    hit &= hit2;
                    not_before = f64::max(not_before, not_before2);
                }
            }
            if hit {
                return Lookup {
                    depth: d,
                    not_before,
                };
            }
        }
        Lookup {
            depth: len,
            not_before: 0.0,
        }
    }

    /// Looks up one line at level `d` of the path, cache `step`: whether it hit, and when a line
    /// a prefetch is still bringing in arrives (0 if none). A miss allocates the line.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn look_at<const FETCH: bool>(
        &mut self,
        cpu: usize,
        d: usize,
        step: Step,
        line: u64,
        slot: u8,
        write: bool,
        now: f64,
    ) -> (bool, f64) {
        let idx = step.cache as usize;
        // Only the first level sees the write; lower levels are filled clean and dirtied by
        // write-backs.
        let (hit, evicted) = self.caches[idx].access(line, slot, write && d == 0);
        if let Some(ev) = evicted {
            self.evicted(FETCH, cpu, d, step.write_back, ev, now);
        }
        let mut not_before = 0.0;
        if !FETCH && step.prefetch {
            if hit {
                not_before = self.prefetchers[idx]
                    .as_ref()
                    .and_then(|p| p.arrival(line))
                    .unwrap_or(0.0);
            }
            self.prefetch(cpu, d, step, line, !hit, slot, now);
        }
        if !hit && step.fill_adjacent {
            self.fill_adjacent(FETCH, cpu, d, step, line, slot, now);
        }
        (hit, not_before)
    }

    /// A miss of `line` at level `d` (cache `step`) also brings in the other line of its pair.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn fill_adjacent(
        &mut self,
        fetch: bool,
        cpu: usize,
        d: usize,
        step: Step,
        line: u64,
        slot: u8,
        now: f64,
    ) {
        if let Some(ev) = self.caches[step.cache as usize].fill(line ^ 1, slot, false) {
            self.evicted(fetch, cpu, d, step.write_back, ev, now);
        }
    }

    /// Lets the prefetcher of cache `step` (level `depth` of the data path) see a demand access
    /// and issue what it wants.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn prefetch(
        &mut self,
        cpu: usize,
        depth: usize,
        step: Step,
        line: u64,
        missed: bool,
        slot: u8,
        now: f64,
    ) {
        let Some(p) = self.prefetchers[step.cache as usize].as_mut() else {
            return;
        };
        let wanted = p.observe(line, missed);
        // On a busy memory path [`MemorySystem::issue_prefetches`] would only look, and stop.
        if !wanted.is_empty() && self.buses[self.cpus[cpu].bus].idle_at(now) {
            self.issue_prefetches(cpu, depth, step, wanted, slot, now);
        }
    }

    /// Fills the `wanted` lines cache `step` lacks while the memory path is idle.
    #[inline(never)]
    fn issue_prefetches(
        &mut self,
        cpu: usize,
        depth: usize,
        step: Step,
        wanted: Range<u64>,
        slot: u8,
        now: f64,
    ) {
        let idx = step.cache as usize;
        let bus = self.cpus[cpu].bus;
        for l in wanted {
            if self.caches[idx].probe(l) {
                continue;
            }
            // Prefetches only use an idle memory path; demand requests never queue behind a
            // backlog of them.
            if !self.buses[bus].idle_at(now) {
                break;
            }
            if let Some(ev) = self.caches[idx].fill(l, slot, false) {
                self.evicted(false, cpu, depth, step.write_back, ev, now);
            }
            let start = self.buses[bus].transfer(now, step.line_bytes);
            let ready = start + self.memory_latency;
            if let Some(p) = self.prefetchers[idx].as_mut() {
                p.record(l, ready);
            }
        }
    }

    /// When the data of an access that went `depth` deep, issued at `issue`, is available. An
    /// access that reaches memory books the memory path.
    #[inline]
    pub fn ready_time(&mut self, cpu: u32, fetch: bool, found: Lookup, issue: f64) -> f64 {
        let cpu = cpu as usize;
        let path = self.path(fetch, cpu);
        let depth = found.depth;
        if depth == 0 {
            return issue.max(found.not_before);
        }
        if depth < path.len {
            return (issue + path.steps[depth].latency).max(found.not_before);
        }
        self.memory_ready_time(cpu, fetch, issue)
    }

    /// When the data of an access from `cpu` that reaches memory, issued at `issue`, is
    /// available: it books the memory path. Out of line, so callers that inline
    /// [`MemorySystem::ready_time`] into a loop do not keep the bus state at hand for it.
    #[inline(never)]
    fn memory_ready_time(&mut self, cpu: usize, fetch: bool, issue: f64) -> f64 {
        let bytes = self.path(fetch, cpu).memory_bytes;
        let start = self.buses[self.cpus[cpu].bus].transfer(issue, bytes);
        start + self.memory_latency
    }

    /// Line `ev` left level `depth` of the fetch or data path, which `writes_back` or drops dirty
    /// lines. Most evicted lines are clean: only dirty ones go on to
    /// [`MemorySystem::write_back`].
    #[inline(always)]
    fn evicted(
        &mut self,
        fetch: bool,
        cpu: usize,
        depth: usize,
        writes_back: bool,
        ev: Eviction,
        now: f64,
    ) {
        if ev.dirty && writes_back {
            self.write_back(fetch, cpu, depth, ev, now);
        }
    }

    /// Writes dirty line `ev`, evicted from level `depth`, into the next level, or over the bus.
    #[inline(never)]
    fn write_back(&mut self, fetch: bool, cpu: usize, depth: usize, ev: Eviction, now: f64) {
        let path = self.path(fetch, cpu);
        let from = path.steps[depth];
        if depth + 1 < path.len {
            let next = path.steps[depth + 1];
            // Re-express the evicted line in the next level's line size.
            let line = next.line(from.addr(ev.line), ev.owner);
            if let Some(ev2) = self.caches[next.cache as usize].fill(line, ev.owner, true) {
                self.evicted(fetch, cpu, depth + 1, next.write_back, ev2, now);
            }
        } else {
            let bus = self.cpus[cpu].bus;
            self.buses[bus].transfer(now, from.line_bytes);
        }
    }

    /// Cache instances `cpu` reaches, data path first, each once (a unified level is on both
    /// paths).
    pub fn instances_of(&self, cpu: u32) -> Vec<usize> {
        let mut out = self.data_path[cpu as usize].clone();
        for &i in &self.fetch_path[cpu as usize] {
            if !out.contains(&i) {
                out.push(i);
            }
        }
        out
    }

    /// Ages cache instance `idx` (one of [`MemorySystem::instances_of`] `cpu`) as `insertions`
    /// further fills by thread `slot`, whose lines leave dirty in the share `dirty_share`, would
    /// (see [`Cache::age`]); the dirty lines it pushes out are written back, as they would have
    /// been. Instances nearer the core are aged first, so their write-backs land in the levels
    /// below before those are aged.
    pub fn age(
        &mut self,
        cpu: u32,
        idx: usize,
        slot: u8,
        insertions: u64,
        dirty_share: Option<f64>,
        now: f64,
    ) {
        let level = &self.levels[idx];
        let stand_in_line = (!level.thread_tagged).then_some(STAND_IN_BASE >> level.line_shift);
        let mut dropped = Vec::new();
        self.caches[idx].age(slot, insertions, dirty_share, stand_in_line, |ev| {
            if ev.dirty {
                dropped.push(ev)
            }
        });
        let cpu = cpu as usize;
        let (fetch, depth) = match self.data_path[cpu].iter().position(|&i| i == idx) {
            Some(d) => (false, d),
            None => {
                let d = self.fetch_path[cpu].iter().position(|&i| i == idx);
                (true, d.expect("an instance on the cpu's paths"))
            }
        };
        let from = self.path(fetch, cpu).steps[depth];
        for ev in dropped {
            self.evicted(fetch, cpu, depth, from.write_back, ev, now);
        }
    }

    pub fn cache(&self, index: usize) -> &Cache {
        &self.caches[index]
    }

    /// Cache instance indices on the data path of `cpu`.
    pub fn data_path(&self, cpu: u32) -> &[usize] {
        &self.data_path[cpu as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bus() -> Bus {
        Bus::new(1.0)
    }

    #[test]
    fn transfers_queue_first_come_first_served() {
        let mut b = bus();
        assert_eq!(b.transfer(0.0, 10), 0.0);
        assert_eq!(b.transfer(0.0, 10), 10.0);
        assert_eq!(b.transfer(5.0, 10), 20.0);
        assert_eq!(b.live().len(), 1, "adjacent transfers merge: {:?}", b.busy);
    }

    #[test]
    fn a_request_far_behind_the_latest_bookings_finds_its_gap() {
        // Ten transfers of 10 cycles, 100 apart: [0, 10), [100, 110), … [900, 910). A request
        // behind more of them than the search looks at from the end still finds its place.
        let mut b = bus();
        for i in 0..10 {
            assert_eq!(b.transfer(i as f64 * 100.0, 10), i as f64 * 100.0);
        }
        assert_eq!(
            b.transfer(5.0, 10),
            10.0,
            "after [0, 10), which it overlaps"
        );
        assert_eq!(
            b.transfer(450.0, 10),
            450.0,
            "in the gap between 410 and 500"
        );
        assert_eq!(
            b.transfer(495.0, 10),
            510.0,
            "[495, 505) overlaps [500, 510)"
        );
        assert_eq!(
            b.live().len(),
            11,
            "[0, 20) and [500, 520) merged: {:?}",
            b.busy
        );
    }

    #[test]
    fn an_earlier_request_uses_a_gap_before_a_booked_future_transfer() {
        let mut b = bus();
        // A dependent load books the bus at t=1000.
        assert_eq!(b.transfer(1000.0, 10), 1000.0);
        // A request at t=0 must not wait behind it.
        assert_eq!(b.transfer(0.0, 10), 0.0);
        // One that does not fit before t=1000 goes after it.
        assert_eq!(b.transfer(995.0, 10), 1010.0);
        assert_eq!(b.busy_cycles, 30.0);
    }
}

/// The bus calendar and the prefetcher against their first, plainer versions (kept here as
/// they were): the same answers and the same state on random request sequences.
#[cfg(test)]
mod against_the_original {
    use super::*;
    use crate::rng::SimRng;
    use std::collections::VecDeque;

    /// The bus as first written: a ring searched on every request.
    struct OriginalBus {
        busy: VecDeque<(f64, f64)>,
        cycles_per_byte: f64,
        busy_cycles: f64,
    }

    impl OriginalBus {
        fn first_ending_after(&self, now: f64) -> usize {
            self.partition_point(|&(_, b)| b <= now)
        }

        fn partition_point(&self, pred: impl Fn(&(f64, f64)) -> bool) -> usize {
            let mut i = self.busy.len();
            for _ in 0..BUS_SCAN_FROM_END {
                match self.busy.get(i.wrapping_sub(1)) {
                    Some(iv) if !pred(iv) => i -= 1,
                    _ => return i,
                }
            }
            let (front, back) = self.busy.as_slices();
            let i = front.partition_point(&pred);
            if i < front.len() {
                i
            } else {
                front.len() + back.partition_point(pred)
            }
        }

        fn idle_at(&self, now: f64) -> bool {
            self.busy
                .get(self.first_ending_after(now))
                .is_none_or(|&(a, _)| a > now)
        }

        fn transfer(&mut self, now: f64, bytes: u32) -> f64 {
            let occupancy = bytes as f64 * self.cycles_per_byte;
            self.busy_cycles += occupancy;
            while self
                .busy
                .front()
                .is_some_and(|&(_, end)| end < now - BUS_HISTORY_CYCLES)
            {
                self.busy.pop_front();
            }
            let mut start = now;
            for &(a, b) in self.busy.range(self.first_ending_after(now)..) {
                if b <= start {
                    continue;
                }
                if a >= start + occupancy {
                    break;
                }
                start = b;
            }
            let end = start + occupancy;
            let pos = self.partition_point(|&(a, _)| a < end);
            let merge_prev = pos > 0 && self.busy[pos - 1].1 >= start;
            let merge_next = pos < self.busy.len() && self.busy[pos].0 <= end;
            match (merge_prev, merge_next) {
                (true, true) => {
                    self.busy[pos - 1].1 = self.busy[pos].1;
                    self.busy.remove(pos);
                }
                (true, false) => self.busy[pos - 1].1 = end,
                (false, true) => self.busy[pos].0 = start,
                (false, false) => self.busy.insert(pos, (start, end)),
            }
            start
        }
    }

    /// Request times as the simulator makes them: mostly at about the latest booking, some a
    /// little behind or ahead, a few far behind, now and then a jump past the history horizon;
    /// transfer sizes of a line, a sector, and odd ones.
    fn bus_requests(rng: &mut SimRng, n: usize) -> Vec<(f64, u32, bool)> {
        let mut now = 0.0;
        (0..n)
            .map(|_| {
                now += match rng.below(100) {
                    0 => 60_000.0 + rng.below(1000) as f64,
                    1..=4 => -(rng.below(20_000) as f64),
                    5..=29 => -(rng.below(300) as f64) * 0.75,
                    _ => rng.below(120) as f64 * 0.25,
                };
                let bytes = [64, 128, 64, 1, 7, 256][rng.below(6) as usize];
                (now, bytes, rng.below(4) == 0)
            })
            .collect()
    }

    #[test]
    fn the_bus_books_as_the_original_did() {
        for seed in 0..200 {
            let mut rng = SimRng::new(seed);
            let cycles_per_byte = [0.75, 1.0 / 1.3333, 1.0, 0.1][seed as usize % 4];
            let mut bus = Bus::new(cycles_per_byte);
            let mut original = OriginalBus {
                busy: VecDeque::new(),
                cycles_per_byte,
                busy_cycles: 0.0,
            };
            for (i, (now, bytes, query)) in bus_requests(&mut rng, 2000).into_iter().enumerate() {
                if query {
                    assert_eq!(
                        bus.idle_at(now),
                        original.idle_at(now),
                        "seed {seed}, request {i}"
                    );
                    continue;
                }
                let (got, want) = (bus.transfer(now, bytes), original.transfer(now, bytes));
                assert_eq!(got.to_bits(), want.to_bits(), "seed {seed}, request {i}");
                assert_eq!(bus.busy_cycles.to_bits(), original.busy_cycles.to_bits());
                assert!(
                    bus.live().iter().eq(original.busy.iter()),
                    "seed {seed}, request {i}"
                );
            }
        }
    }

    /// The prefetcher as first written: every stream searched on every access.
    struct OriginalPrefetcher {
        streams: Vec<Stream>,
        capacity: usize,
        distance_lines: u64,
        clock: u64,
        inflight: Vec<(u64, f64)>,
        inflight_next: usize,
    }

    impl OriginalPrefetcher {
        fn observe(&mut self, line: u64, missed: bool, out: &mut Vec<u64>) {
            self.clock += 1;
            if let Some(s) = self
                .streams
                .iter_mut()
                .find(|s| line.wrapping_sub(s.next).wrapping_add(1) <= 2)
            {
                s.next = line + 1;
                s.last_use = self.clock;
                s.confirmed = true;
                let target = line + 1 + self.distance_lines;
                let from = s.ahead.max(line + 1);
                out.extend(from..target);
                s.ahead = s.ahead.max(target);
                return;
            }
            if !missed {
                return;
            }
            let stream = Stream {
                next: line + 1,
                ahead: line + 1,
                confirmed: false,
                last_use: self.clock,
            };
            if self.streams.len() < self.capacity {
                self.streams.push(stream);
            } else if let Some(victim) = self
                .streams
                .iter_mut()
                .min_by_key(|s| (s.confirmed, s.last_use))
            {
                *victim = stream;
            }
        }

        fn arrival(&self, line: u64) -> Option<f64> {
            self.inflight
                .iter()
                .find(|&&(l, _)| l == line)
                .map(|&(_, t)| t)
        }

        fn record(&mut self, line: u64, ready: f64) {
            if self.inflight.len() < INFLIGHT_ENTRIES {
                self.inflight.push((line, ready));
            } else {
                self.inflight[self.inflight_next] = (line, ready);
                self.inflight_next = (self.inflight_next + 1) % INFLIGHT_ENTRIES;
            }
        }
    }

    /// Lines as a few interleaved streams touch them (forward, in steps of one or two, now and
    /// then again), with random lines between, some of them near the buckets' wrap round.
    fn accessed_lines(rng: &mut SimRng, n: usize) -> Vec<(u64, bool)> {
        let mut heads: Vec<u64> = (0..12).map(|_| 1 + rng.below(1 << 20)).collect();
        (0..n)
            .map(|_| {
                let line = match rng.below(10) {
                    0..=6 => {
                        let h = &mut heads[rng.below(12) as usize];
                        *h += rng.below(3);
                        *h
                    }
                    7 => CONTINUING_BUCKETS as u64 * (1 + rng.below(8)) - rng.below(3),
                    _ => 1 + rng.below(1 << 24),
                };
                (line, rng.below(3) != 0)
            })
            .collect()
    }

    #[test]
    fn the_prefetcher_follows_streams_as_the_original_did() {
        for seed in 0..100 {
            let mut rng = SimRng::new(1000 + seed);
            let (capacity, distance) = [(8, 4), (1, 2), (3, 1), (64, 8), (0, 4)][seed as usize % 5];
            let mut p = Prefetcher::new(capacity, distance);
            let mut original = OriginalPrefetcher {
                streams: Vec::new(),
                capacity,
                distance_lines: distance,
                clock: 0,
                inflight: Vec::new(),
                inflight_next: 0,
            };
            let mut wanted = Vec::new();
            for (i, (line, missed)) in accessed_lines(&mut rng, 5000).into_iter().enumerate() {
                let at = format!("seed {seed}, access {i}");
                assert_eq!(p.arrival(line), original.arrival(line), "{at}");
                wanted.clear();
                original.observe(line, missed, &mut wanted);
                let got: Vec<u64> = p.observe(line, missed).collect();
                assert_eq!(got, wanted, "{at}");
                // Some of the wanted lines are brought in, as an idle bus would let them.
                for &l in &wanted {
                    if rng.below(2) == 0 {
                        continue;
                    }
                    let ready = rng.below(1 << 20) as f64;
                    p.record(l, ready);
                    original.record(l, ready);
                }
                assert_eq!(p.clock, original.clock);
                let state = |s: &Stream| (s.next, s.ahead, s.confirmed, s.last_use);
                assert!(
                    p.streams
                        .iter()
                        .map(state)
                        .eq(original.streams.iter().map(state)),
                    "{at}"
                );
                let mut continuing = [0u8; CONTINUING_BUCKETS];
                for s in &p.streams {
                    for l in [s.next.wrapping_sub(1), s.next, s.next.wrapping_add(1)] {
                        continuing[continuing_bucket(l)] += 1;
                    }
                }
                assert_eq!(p.continuing, continuing, "{at}");
            }
        }
    }
}
