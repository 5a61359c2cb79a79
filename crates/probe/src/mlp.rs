//! Memory-level parallelism of one core: G independent random pointer chains,
//! advanced either hand-interleaved (G loads in flight from one loop) or as G
//! stackful coroutines that prefetch their next line and yield, so the other
//! chains' misses overlap theirs, or as G stackless state machines (futures
//! polled round-robin) doing the same.
//!
//! The chains carry on from pass to pass rather than restarting, so a pass never
//! revisits lines a recent pass left in the caches: every line comes back only after
//! the whole buffer has been walked.

use crate::timer::Timer;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use seq_macro::seq;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Link every line of `len` bytes at `base` into one random cycle (word 0 holds the
/// next line's address) and return the visit order (line numbers).
///
/// # Safety
/// `base..base+len` must be a live, writable buffer aligned to `line`.
pub unsafe fn link(base: *mut u8, len: usize, line: usize, seed: u64) -> Vec<usize> {
    let n = len / line;
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand_pcg::Pcg64Mcg::seed_from_u64(seed));
    for i in 0..n {
        let next = base.add(order[(i + 1) % n] * line);
        (base.add(order[i] * line) as *mut *const u8).write(next);
    }
    order
}

/// G starting points spread evenly along the cycle, so G chains of `n/G` steps
/// each never meet.
pub fn starts(base: *const u8, order: &[usize], line: usize, g: usize) -> Vec<*const u8> {
    let step = order.len() / g.max(1);
    (0..g)
        .map(|i| base.wrapping_add(order[i * step] * line))
        .collect()
}

#[inline(always)]
fn next(p: *const u8) -> *const u8 {
    // SAFETY: p is a linked line; word 0 holds the next line's address.
    unsafe { (p as *const *const u8).read_volatile() }
}

/// Software prefetch of one line into L1 (none on other architectures).
#[inline(always)]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch never faults.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: prfm never faults.
    unsafe {
        core::arch::asm!("prfm pldl1keep, [{0}]", in(reg) p, options(nostack, readonly))
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}

/// True when this architecture has a software prefetch the coroutine chase uses.
pub fn has_prefetch() -> bool {
    cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
}

fn interleaved_n<const G: usize>(at: &mut [*const u8], steps: usize) {
    // A fixed-size array keeps the G pointers in registers.
    let mut p: [*const u8; G] = std::array::from_fn(|i| at[i]);
    for _ in 0..steps {
        for q in p.iter_mut() {
            *q = next(*q);
        }
    }
    at.copy_from_slice(&p);
}

/// Advance every chain `steps` times from one loop, leaving each chain's new line in
/// `at`. G = 1…64.
pub fn interleaved(at: &mut [*const u8], steps: usize) {
    seq!(N in 1..=64 {
        match at.len() {
            #( N => interleaved_n::<N>(at, steps), )*
            _ => panic!("interleaved chase supports 1..=64 chains"),
        }
    })
}

/// A stack whose top is moved down by a few cache lines. Page-aligned stack tops
/// all map to the same L1 sets, so more coroutines than the L1's ways evict one
/// another's live frames on every switch; coloured tops spread them over the sets.
pub struct Colored {
    inner: DefaultStack,
    offset: usize,
}

// SAFETY: the base stays inside the inner stack (offset < 4 KiB of a 64 KiB stack)
// and keeps its alignment (offset is a multiple of 64).
unsafe impl corosensei::stack::Stack for Colored {
    fn base(&self) -> corosensei::stack::StackPointer {
        corosensei::stack::StackPointer::new(self.inner.base().get() - self.offset)
            .expect("a stack base is not null")
    }

    fn limit(&self) -> corosensei::stack::StackPointer {
        self.inner.limit()
    }
}

/// A pool of coroutine stacks, reused so timing excludes mapping new stacks.
pub struct Stacks(Vec<Colored>);

impl Stacks {
    /// `n` stacks of 64 KiB, their tops 192 B apart modulo a page (three lines each).
    pub fn new(n: usize) -> std::io::Result<Stacks> {
        (0..n)
            .map(|k| {
                DefaultStack::new(64 * 1024).map(|inner| Colored {
                    inner,
                    offset: (k * 192) % 4096,
                })
            })
            .collect::<std::io::Result<_>>()
            .map(Stacks)
    }
}

/// Advance every chain `steps` times, each chain a coroutine that prefetches its next
/// line and yields before loading it; round-robin scheduling. Each chain's new line
/// is left in `at`.
pub fn coroutines(at: &mut [*const u8], steps: usize, stacks: &mut Stacks) {
    assert!(stacks.0.len() >= at.len(), "one stack per chain");
    let mut coros: Vec<Coroutine<(), (), usize, Colored>> = at
        .iter()
        .map(|&s| {
            let s = s as usize;
            let stack = stacks.0.pop().expect("checked");
            Coroutine::with_stack(stack, move |y: &Yielder<(), ()>, ()| {
                let mut p = s as *const u8;
                for _ in 0..steps {
                    prefetch(p);
                    y.suspend(());
                    p = next(p);
                }
                p as usize
            })
        })
        .collect();
    // Every chain takes the same number of steps, so every coroutine suspends
    // `steps` times and returns on its next resume: fixed rounds, no bookkeeping.
    for _ in 0..steps {
        for c in coros.iter_mut() {
            c.resume(());
        }
    }
    for (c, slot) in coros.iter_mut().zip(at.iter_mut()) {
        if let CoroutineResult::Return(v) = c.resume(()) {
            *slot = v as *const u8;
        }
    }
    stacks.0.extend(coros.into_iter().map(|c| c.into_stack()));
}

/// One chain as a stackless state machine (a frame and a resume point, as EARTH's
/// fibers are): it starts by prefetching its first line; each poll loads the line
/// prefetched before, then prefetches the next and returns pending, `left` times in
/// all. Written by hand rather than as an `async fn`: the compiler's state machine
/// dispatched every poll through a jump table on a 48-byte frame and reached
/// 0.89–0.90× the interleaved loop on a 2-vCPU EPYC VM. With a first-poll flag in
/// the frame (a byte tested and stored every poll, the pointer stored and reloaded for
/// the prefetch) a poll was 17 instructions and three branches, and a quiet 16-core
/// host read 0.88×; priming at the start makes a poll six (load the frame's pointer,
/// load the line, store it, decrement `left`, branch, prefetch).
struct Chase {
    p: *const u8,
    left: usize,
}

impl Chase {
    /// A chain at `p` that takes `steps` (at least 1) steps: its first state, the
    /// first line prefetched.
    #[inline(always)]
    fn new(p: *const u8, steps: usize) -> Chase {
        prefetch(p);
        Chase { p, left: steps }
    }
}

impl Future for Chase {
    type Output = *const u8;
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<*const u8> {
        let p = next(self.p);
        self.p = p;
        self.left -= 1;
        if self.left == 0 {
            return Poll::Ready(p);
        }
        prefetch(p);
        Poll::Pending
    }
}

/// Advance every chain `steps` times, each chain a stackless state machine that
/// prefetches its next line and returns pending before loading it; round-robin
/// polling through `Future::poll`. A switch is a return from `poll`, with no stack to
/// swap: the stackful switch cost about what G = 32 chains leave per access.
pub fn stackless(at: &mut [*const u8], steps: usize) {
    if steps == 0 {
        return;
    }
    let mut cx = Context::from_waker(Waker::noop());
    // One contiguous block of state machines: polling walks it in order, as the
    // interleaved loop walks its array of pointers.
    let mut chains: Vec<Chase> = at.iter().map(|&p| Chase::new(p, steps)).collect();
    // As with coroutines: every chain is pending `steps - 1` times, then ready.
    for _ in 1..steps {
        for c in chains.iter_mut() {
            let _ = Pin::new(c).poll(&mut cx);
        }
    }
    for (c, slot) in chains.iter_mut().zip(at.iter_mut()) {
        if let Poll::Ready(p) = Pin::new(c).poll(&mut cx) {
            *slot = p;
        }
    }
}

/// How the chains are advanced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Mode {
    /// One loop, G loads per iteration.
    Interleaved,
    /// G coroutines: prefetch, yield, load.
    Coroutines,
    /// G stackless state machines: prefetch, yield, load.
    Stackless,
}

/// A linked buffer: its base, the cycle's visit order and the line size.
#[derive(Debug, Clone, Copy)]
pub struct Linked<'a> {
    /// Start of the buffer.
    pub base: *const u8,
    /// Line numbers in cycle order (from [`link`]).
    pub order: &'a [usize],
    /// Line size in bytes.
    pub line: usize,
}

/// ns per access of `g` chains advanced `accesses / g` steps a pass, one sample per
/// pass (after one untimed pass), on the calling thread. The chains carry on from
/// where the last pass left them.
pub fn measure(
    timer: &Timer,
    chains: Linked,
    g: usize,
    accesses: usize,
    mode: Mode,
    passes: usize,
) -> std::io::Result<Vec<f64>> {
    let Linked { base, order, line } = chains;
    // Past `order.len() / g` steps a chain walks lines its neighbour walked earlier
    // this pass; callers keep `accesses` within the buffer's lines when that matters.
    let steps = (accesses / g).max(1);
    let mut at = starts(base, order, line, g);
    let mut stacks = Stacks::new(if mode == Mode::Coroutines { g } else { 0 })?;
    let mut out = Vec::with_capacity(passes);
    for pass in 0..=passes {
        let t0 = timer.start();
        match mode {
            Mode::Interleaved => interleaved(&mut at, steps),
            Mode::Coroutines => coroutines(&mut at, steps, &mut stacks),
            Mode::Stackless => stackless(&mut at, steps),
        };
        let t1 = timer.stop();
        std::hint::black_box(&at);
        if pass > 0 {
            out.push(timer.ns(t1 - t0) / (steps * g) as f64);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chains(lines: usize) -> (Vec<u64>, Vec<usize>) {
        let mut buf = vec![0u64; lines * 8];
        // SAFETY: the vector is lines × 64 bytes, 8-byte aligned (line 64 needs only word alignment here).
        let order = unsafe { link(buf.as_mut_ptr() as *mut u8, lines * 64, 64, 7) };
        (buf, order)
    }

    #[test]
    fn the_links_form_one_cycle_through_every_line() {
        let (buf, order) = chains(1000);
        let base = buf.as_ptr() as *const u8;
        let mut p = base.wrapping_add(order[0] * 64);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            assert!(seen.insert(p as usize));
            p = next(p);
        }
        assert_eq!(p, base.wrapping_add(order[0] * 64));
    }

    #[test]
    fn every_mode_finishes_every_chain_at_the_same_lines() {
        let (buf, order) = chains(4096);
        let base = buf.as_ptr() as *const u8;
        for g in [1, 3, 8, 64] {
            let s = starts(base, &order, 64, g);
            // Two calls of `steps` each: the second carries on from the first.
            let steps = 4096 / g / 3;
            let want: Vec<*const u8> = (0..g)
                .map(|i| base.wrapping_add(order[(i * (4096 / g) + 2 * steps) % 4096] * 64))
                .collect();
            let mut at = s.clone();
            interleaved(&mut at, steps);
            interleaved(&mut at, steps);
            assert_eq!(at, want, "G={g}");
            let mut stacks = Stacks::new(g).unwrap();
            let mut at = s.clone();
            coroutines(&mut at, steps, &mut stacks);
            coroutines(&mut at, steps, &mut stacks);
            assert_eq!(at, want, "G={g}");
            assert_eq!(stacks.0.len(), g);
            let mut at = s.clone();
            stackless(&mut at, steps);
            stackless(&mut at, steps);
            assert_eq!(at, want, "G={g}");
        }
    }
}
