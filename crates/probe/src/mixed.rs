//! Mixed kernels: one requestor interleaves R read streams and W write streams over
//! separate buffers (any ratio, regular or non-temporal stores), a stream-triad-like
//! form (a = b + s·c: 2 reads, 1 write) and a read-modify-write `update` form, at the
//! widest vector width this CPU has.
//!
//! Streams advance together line by line (every read stream's line, then every write
//! stream's), so every stream has done the same number of lines whenever the kernel
//! stops: the issued read share is
//! exactly the mix's. Bytes are counted as issued (STREAM's and likwid's convention);
//! [`MixKernel::traffic`] estimates what memory moved.

use crate::bw::CHUNK_LINES;
use crate::mix::{traffic_estimate, Mix, Store};
use seq_macro::seq;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};

/// Lines per inner loop (512 bytes of every stream): the write streams store the
/// block's first line number, so a test can tell which pass wrote a line.
pub const BLOCK_LINES: usize = 8;
/// Line size the kernels work in.
pub const LINE: usize = 64;
/// The triad's scalar.
pub const TRIAD_SCALAR: f64 = 3.0;

/// A mixed kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MixKernel {
    /// R read streams and W write streams.
    Ratio(Mix),
    /// a[i] = b[i] + s·c[i] over doubles (STREAM's triad; reads:writes 2:1).
    Triad,
    /// a[i] += 1 over one buffer (read-modify-write; reads:writes 1:1).
    Update,
}

impl MixKernel {
    /// Parse "R:W", "triad" or "update".
    pub fn parse(s: &str) -> Result<MixKernel, String> {
        match s.trim() {
            "triad" => Ok(MixKernel::Triad),
            "update" => Ok(MixKernel::Update),
            t => Mix::parse(t)
                .map(MixKernel::Ratio)
                .map_err(|e| format!("{e}; or triad (a = b + s*c) or update (read-modify-write)")),
        }
    }

    /// Parse a comma-separated list.
    pub fn parse_list(s: &str) -> Result<Vec<MixKernel>, String> {
        s.split(',').map(MixKernel::parse).collect()
    }

    /// Name as the CLI spells it ("3:1", "triad", "update").
    pub fn name(&self) -> String {
        match self {
            MixKernel::Ratio(m) => m.to_string(),
            MixKernel::Triad => "triad".into(),
            MixKernel::Update => "update".into(),
        }
    }

    /// Readable label ("reads only", "3:1", "stream-triad-like (2:1)").
    pub fn label(&self) -> String {
        match self {
            MixKernel::Ratio(m) => m.label(),
            MixKernel::Triad => "stream-triad-like (2:1)".into(),
            MixKernel::Update => "update (read-modify-write, 1:1)".into(),
        }
    }

    /// Reads and writes issued per step (one line of every buffer).
    pub fn mix(&self) -> Mix {
        match self {
            MixKernel::Ratio(m) => *m,
            MixKernel::Triad => Mix {
                reads: 2,
                writes: 1,
            },
            MixKernel::Update => Mix {
                reads: 1,
                writes: 1,
            },
        }
    }

    /// Buffers the kernel walks (reads first, then writes; triad: a, b, c).
    pub fn buffers(&self) -> usize {
        match self {
            MixKernel::Ratio(m) => m.streams() as usize,
            MixKernel::Triad => 3,
            MixKernel::Update => 1,
        }
    }

    /// Whether `store` applies: update re-stores lines it has just read, so it
    /// takes regular stores only.
    pub fn check_store(&self, store: Store) -> Result<(), String> {
        if *self == MixKernel::Update && store == Store::Nt {
            return Err("invalid --store 'nt' for mix 'update': a read-modify-write stores lines it has just read; use --store regular".into());
        }
        store.check()
    }

    /// Issued (read, write) bytes for `steps` steps.
    pub fn issued(&self, steps: u64) -> (u64, u64) {
        let m = self.mix();
        let l = LINE as u64;
        (steps * m.reads as u64 * l, steps * m.writes as u64 * l)
    }

    /// Issued bytes (reads and writes) for `steps` steps.
    pub fn bytes(&self, steps: u64) -> u64 {
        steps * self.mix().streams() as u64 * LINE as u64
    }

    /// Estimated memory traffic (read, write) of issued bytes; an update's own read
    /// is the write-allocate, so it adds none.
    pub fn traffic(&self, store: Store, issued_read: u64, issued_write: u64) -> (u64, u64) {
        match self {
            MixKernel::Update => (issued_read, issued_write),
            _ => traffic_estimate(self.mix(), store, issued_read, issued_write),
        }
    }
}

/// One ISA's full-line operations; the driver is compiled once per ISA so they inline.
trait Isa {
    /// One line's worth of vector registers.
    type V: Copy;
    unsafe fn zero() -> Self::V;
    unsafe fn splat(x: i64) -> Self::V;
    unsafe fn load_xor(acc: Self::V, p: *const u8) -> Self::V;
    unsafe fn store(p: *mut u8, v: Self::V);
    unsafe fn stream(p: *mut u8, v: Self::V);
    unsafe fn triad(a: *mut u8, b: *const u8, c: *const u8, nt: bool);
    unsafe fn update(p: *mut u8);
    unsafe fn fold(acc: Self::V) -> u64;
    unsafe fn fence();
}

#[cfg(target_arch = "x86_64")]
mod x86;

mod any;

/// Portable full-line operations (architectures without a vector driver here).
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
struct Scalar;

impl Isa for Scalar {
    type V = u64;
    unsafe fn zero() -> u64 {
        0
    }
    unsafe fn splat(x: i64) -> u64 {
        x as u64
    }
    unsafe fn load_xor(acc: u64, p: *const u8) -> u64 {
        let w = p as *const u64;
        (0..8).fold(acc, |a, i| a ^ w.add(i).read_volatile())
    }
    unsafe fn store(p: *mut u8, v: u64) {
        (0..8).for_each(|i| (p as *mut u64).add(i).write_volatile(v));
    }
    unsafe fn stream(p: *mut u8, v: u64) {
        Self::store(p, v)
    }
    unsafe fn triad(a: *mut u8, b: *const u8, c: *const u8, _nt: bool) {
        let (a, b, c) = (a as *mut f64, b as *const f64, c as *const f64);
        for i in 0..8 {
            a.add(i)
                .write_volatile(b.add(i).read() + TRIAD_SCALAR * c.add(i).read());
        }
    }
    unsafe fn update(p: *mut u8) {
        let w = p as *mut u64;
        for i in 0..8 {
            w.add(i)
                .write_volatile(w.add(i).read_volatile().wrapping_add(1));
        }
    }
    unsafe fn fold(acc: u64) -> u64 {
        acc
    }
    unsafe fn fence() {}
}

/// Where a pass is: the buffers, their lines, and the stop flag.
#[derive(Clone, Copy)]
struct Walk<'a> {
    bufs: &'a [*mut u8],
    lines: usize,
    reps: usize,
    stop: Option<&'a AtomicBool>,
}

/// Store one line, regular or non-temporal.
#[inline(always)]
unsafe fn put<I: Isa>(nt: bool, p: *mut u8, v: I::V) {
    if nt {
        I::stream(p, v)
    } else {
        I::store(p, v)
    }
}

/// A kernel's work on line `l` of the block at line `at`; a trait, not a closure: a
/// closure lacks its caller's target features, and uninlined left every vector op a call.
trait Lines {
    unsafe fn line(&mut self, at: usize, l: usize);

    /// A whole block of [`BLOCK_LINES`] lines at line `at`: its lines unrolled, so
    /// every stream has eight independent vector loads or stores per iteration at
    /// constant offsets from one index.
    #[inline(always)]
    #[allow(clippy::identity_op)] // `at + 0`, the unrolled block's first line
    unsafe fn block(&mut self, at: usize) {
        const _: () = assert!(BLOCK_LINES == 8, "the unrolled block is 8 lines");
        seq!(K in 0..8 {
            self.line(at, at + K);
        });
    }
}

/// Lines `start..end` of a chunk in blocks of [`BLOCK_LINES`]. A whole block is one
/// loop iteration ([`Lines::block`]), as likwid's kernels have (4 lines a stream, one
/// pointer increment), where the loop per line had a bound check and a block bound
/// every line.
#[inline(always)]
unsafe fn blocks<O: Lines>(start: usize, end: usize, op: &mut O) {
    let mut at = start;
    while at + BLOCK_LINES <= end {
        op.block(at);
        at += BLOCK_LINES;
    }
    for l in at..end {
        op.line(at, l);
    }
}

/// The pass loop over `w`'s lines in chunks of [`CHUNK_LINES`], checking the stop
/// flag between chunks; returns the steps done (lines per buffer).
#[inline(always)]
unsafe fn walk<O: Lines>(w: &Walk, op: &mut O) -> u64 {
    let mut done = 0u64;
    'outer: for _ in 0..w.reps {
        let mut i = 0;
        while i < w.lines {
            let end = (i + CHUNK_LINES).min(w.lines);
            blocks(i, end, op);
            done += (end - i) as u64;
            i = end;
            if w.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                break 'outer;
            }
        }
    }
    done
}

/// An R:W mix known at compile time, its buffers in arrays so they stay in
/// registers: per line, the R reads then the W writes, as likwid's and STREAM's loops
/// interleave them. Runs of 8 lines per stream, or buffers reloaded after every store
/// (a store through `*mut u8` may alias them), measured 0.73–0.78× likwid's copy on a
/// 1-thread EPYC. Each read stream folds into its own accumulator, so no load waits
/// on another stream's.
///
/// The store kind is a constant of the loop (`NT`): as a field, LLVM kept the 2:1 and
/// 3:1 loops whole and tested it on every line (AVX2 build: 3:1 nt's block was 150
/// instructions, 92 now). In L2 on a 2-vCPU EPYC VM that measured neutral.
struct Rw<I: Isa, const R: usize, const W: usize, const NT: bool> {
    rb: [*mut u8; R],
    wb: [*mut u8; W],
    accs: [I::V; R],
}

impl<I: Isa, const R: usize, const W: usize, const NT: bool> Lines for Rw<I, R, W, NT> {
    #[inline(always)]
    unsafe fn line(&mut self, at: usize, l: usize) {
        let v = I::splat(at as i64);
        for (acc, &b) in self.accs.iter_mut().zip(&self.rb) {
            *acc = I::load_xor(*acc, b.add(l * LINE));
        }
        for &b in &self.wb {
            put::<I>(NT, b.add(l * LINE), v);
        }
    }
}

#[inline(always)]
unsafe fn drive_rw<I: Isa, const R: usize, const W: usize>(nt: bool, w: &Walk) -> u64 {
    if nt {
        drive_rw_as::<I, R, W, true>(w)
    } else {
        drive_rw_as::<I, R, W, false>(w)
    }
}

#[inline(always)]
unsafe fn drive_rw_as<I: Isa, const R: usize, const W: usize, const NT: bool>(w: &Walk) -> u64 {
    let mut op = Rw::<I, R, W, NT> {
        rb: std::array::from_fn(|i| w.bufs[i]),
        wb: std::array::from_fn(|i| w.bufs[R + i]),
        accs: [I::zero(); R],
    };
    let done = walk(w, &mut op);
    for a in op.accs {
        std::hint::black_box(I::fold(a));
    }
    done
}

/// a = b + s·c, line by line.
struct Triad<I> {
    abc: [*mut u8; 3],
    nt: bool,
    isa: std::marker::PhantomData<I>,
}

impl<I: Isa> Lines for Triad<I> {
    #[inline(always)]
    unsafe fn line(&mut self, _: usize, l: usize) {
        let o = l * LINE;
        let [a, b, c] = self.abc;
        I::triad(a.add(o), b.add(o), c.add(o), self.nt);
    }
}

/// a += 1, line by line.
struct Update<I> {
    a: *mut u8,
    isa: std::marker::PhantomData<I>,
}

impl<I: Isa> Lines for Update<I> {
    #[inline(always)]
    unsafe fn line(&mut self, _: usize, l: usize) {
        I::update(self.a.add(l * LINE));
    }
}

/// The pass loop, generic over the ISA, the common mixes specialised; returns the
/// steps done (lines per buffer).
#[inline(always)]
unsafe fn drive<I: Isa>(k: MixKernel, nt: bool, w: Walk) -> u64 {
    let isa = std::marker::PhantomData::<I>;
    let done = match k {
        MixKernel::Ratio(m) => match (m.reads, m.writes) {
            (1, 0) => drive_rw::<I, 1, 0>(nt, &w),
            (0, 1) => drive_rw::<I, 0, 1>(nt, &w),
            (1, 1) => drive_rw::<I, 1, 1>(nt, &w),
            (2, 1) => drive_rw::<I, 2, 1>(nt, &w),
            (3, 1) => drive_rw::<I, 3, 1>(nt, &w),
            _ => any::drive::<I>(m, nt, &w),
        },
        MixKernel::Triad => {
            let abc = [w.bufs[0], w.bufs[1], w.bufs[2]];
            walk(&w, &mut Triad { abc, nt, isa })
        }
        MixKernel::Update => walk(&w, &mut Update { a: w.bufs[0], isa }),
    };
    if nt {
        I::fence();
    }
    done
}

/// Run `k` over `bufs` (each `lines` 64-byte lines, 64-byte aligned; ratio: the read
/// buffers first; triad: a, b, c), `reps` times, checking `stop` between chunks.
/// Returns the steps done: lines of every buffer; [`MixKernel::issued`] turns them
/// into bytes.
///
/// # Safety
/// Every buffer must be valid for reads and writes of `lines * 64` bytes, 64-byte
/// aligned, and not overlap another; `bufs.len() == k.buffers()`; for nt stores,
/// [`Store::check`] must have passed.
pub unsafe fn run(
    k: MixKernel,
    store: Store,
    bufs: &[*mut u8],
    lines: usize,
    reps: usize,
    stop: Option<&AtomicBool>,
) -> u64 {
    assert_eq!(bufs.len(), k.buffers(), "buffers of mix {}", k.name());
    let w = Walk {
        bufs,
        lines,
        reps,
        stop,
    };
    let nt = store == Store::Nt;
    #[cfg(target_arch = "x86_64")]
    {
        match crate::bw::vector_bits() {
            512 => x86::drive512(k, nt, w),
            256 => x86::drive256(k, nt, w),
            _ => x86::drive128(k, nt, w),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        drive::<Scalar>(k, nt, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C, align(64))]
    struct Lines([u8; 64 * 64]);

    fn bufs(n: usize) -> Vec<Box<Lines>> {
        (0..n).map(|_| Box::new(Lines([0; 64 * 64]))).collect()
    }

    fn words(b: &Lines) -> Vec<u64> {
        b.0.chunks(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn ratios_write_their_write_buffers_only_and_count_steps() {
        for (mix, store) in [
            ("3:1", Store::Regular),
            ("1:1", Store::Nt),
            ("2:1", Store::Regular),
            ("1:2", Store::Nt),
            ("5:3", Store::Regular),
            ("1:0", Store::Regular),
            ("0:1", Store::Nt),
        ] {
            let k = MixKernel::parse(mix).unwrap();
            let mut b = bufs(k.buffers());
            let ptrs: Vec<*mut u8> = b.iter_mut().map(|x| x.0.as_mut_ptr()).collect();
            // SAFETY: separate aligned 64-line buffers.
            let steps = unsafe { run(k, store, &ptrs, 64, 3, None) };
            assert_eq!(steps, 3 * 64, "{mix}");
            let m = k.mix();
            for (i, x) in b.iter().enumerate() {
                let written = words(x).iter().any(|&w| w != 0);
                // Line 0 of a write buffer holds 0 (its block's index): look past it.
                assert_eq!(written, i >= m.reads as usize, "{mix} buffer {i}");
            }
            let (r, w) = k.issued(steps);
            assert_eq!(r as f64 / (r + w) as f64, m.read_share(), "{mix}");
        }
    }

    #[test]
    fn triad_and_update_compute_what_they_say() {
        let k = MixKernel::Triad;
        let mut b = bufs(3);
        for (i, w) in b[1].0.chunks_mut(8).enumerate() {
            w.copy_from_slice(&(i as f64).to_le_bytes());
        }
        for w in b[2].0.chunks_mut(8) {
            w.copy_from_slice(&2.0f64.to_le_bytes());
        }
        for store in [Store::Regular, Store::Nt] {
            let ptrs: Vec<*mut u8> = b.iter_mut().map(|x| x.0.as_mut_ptr()).collect();
            // SAFETY: as above.
            assert_eq!(unsafe { run(k, store, &ptrs, 64, 1, None) }, 64);
            for (i, w) in b[0].0.chunks(8).enumerate() {
                let a = f64::from_le_bytes(w.try_into().unwrap());
                assert_eq!(a, i as f64 + TRIAD_SCALAR * 2.0);
            }
        }
        let mut u = bufs(1);
        let ptrs = [u[0].0.as_mut_ptr()];
        // SAFETY: as above.
        unsafe { run(MixKernel::Update, Store::Regular, &ptrs, 64, 2, None) };
        assert!(words(&u[0]).iter().all(|&w| w == 2));
        let w = Walk {
            bufs: &ptrs,
            lines: 64,
            reps: 1,
            stop: None,
        };
        // SAFETY: as above; the portable driver other architectures use.
        assert_eq!(unsafe { drive::<Scalar>(MixKernel::Update, false, w) }, 64);
        assert!(words(&u[0]).iter().all(|&w| w == 3));
    }

    #[test]
    fn a_raised_stop_keeps_every_stream_in_step() {
        let lines = CHUNK_LINES * 2;
        let mut v: Vec<Vec<u8>> = (0..4).map(|_| vec![0u8; lines * 64 + 64]).collect();
        let ptrs: Vec<*mut u8> = v
            .iter_mut()
            .map(|b| {
                let off = b.as_ptr().align_offset(64);
                // SAFETY: within the vector.
                unsafe { b.as_mut_ptr().add(off) }
            })
            .collect();
        let stop = AtomicBool::new(true);
        let k = MixKernel::parse("3:1").unwrap();
        // SAFETY: four aligned buffers of `lines` lines.
        let steps = unsafe { run(k, Store::Regular, &ptrs, lines, 5, Some(&stop)) };
        assert_eq!(steps, CHUNK_LINES as u64);
        assert_eq!(k.issued(steps), (3 * steps * 64, steps * 64));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_x86_width_computes_the_same() {
        type Driver = unsafe fn(MixKernel, bool, Walk) -> u64;
        let mut drivers: Vec<Driver> = vec![x86::drive128];
        if std::arch::is_x86_feature_detected!("avx2") {
            drivers.push(x86::drive256);
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            drivers.push(x86::drive512);
        }
        for d in drivers {
            let mut b = bufs(3);
            for w in b[2].0.chunks_mut(8) {
                w.copy_from_slice(&1.5f64.to_le_bytes());
            }
            let p: Vec<*mut u8> = b.iter_mut().map(|x| x.0.as_mut_ptr()).collect();
            for (k, nt) in [(MixKernel::Triad, true), (MixKernel::Triad, false)] {
                let w = Walk {
                    bufs: &p,
                    lines: 64,
                    reps: 1,
                    stop: None,
                };
                // SAFETY: three aligned 64-line buffers; the driver's feature is present.
                assert_eq!(unsafe { d(k, nt, w) }, 64);
            }
            let r = MixKernel::parse("2:1").unwrap();
            let w = Walk {
                bufs: &p,
                lines: 64,
                reps: 2,
                stop: None,
            };
            // SAFETY: as above.
            assert_eq!(unsafe { d(r, true, w) }, 128);
            assert!(words(&b[2]).iter().skip(64).take(64).all(|&x| x == 8));
            let a: Vec<f64> = b[0]
                .0
                .chunks(8)
                .map(|w| f64::from_le_bytes(w.try_into().unwrap()))
                .collect();
            assert!(a.iter().all(|&x| x == TRIAD_SCALAR * 1.5));
        }
    }

    #[test]
    fn names_traffic_and_bad_input() {
        assert_eq!(MixKernel::parse("triad"), Ok(MixKernel::Triad));
        assert_eq!(MixKernel::parse("2:1").unwrap().name(), "2:1");
        let e = MixKernel::parse("fast").unwrap_err();
        assert!(e.contains("'fast'") && e.contains("triad"), "{e}");
        assert!(MixKernel::parse("0:0").unwrap_err().contains("neither"));
        assert!(MixKernel::Update
            .check_store(Store::Nt)
            .unwrap_err()
            .contains("update"));
        assert_eq!(
            MixKernel::Triad.traffic(Store::Regular, 200, 100),
            (300, 100)
        );
        assert_eq!(MixKernel::Triad.traffic(Store::Nt, 200, 100), (200, 100));
        assert_eq!(
            MixKernel::Update.traffic(Store::Regular, 100, 100),
            (100, 100)
        );
        assert_eq!(MixKernel::Triad.mix().read_share(), 2.0 / 3.0);
    }
}
