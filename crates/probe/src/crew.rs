//! A crew of pinned threads timing any work: requestors time their work, helpers put
//! the requestors' lines in the asked-for state before every pass, barriers keep
//! them in step. Every experiment (chases, bandwidth kernels) times through here.

use crate::barrier::SpinBarrier;
use crate::flush;
use crate::state::LineState;
use crate::timer::Timer;
use numalab_results::disturb::{Disturbance, Sampler};
use numalab_topo::bind::{pin_current_thread, PinProof};
use numalab_topo::{Error, Host, Result};
use std::sync::atomic::{AtomicBool, Ordering};

/// A requestor: its CPU and the lines it works on (prepared before every pass).
pub struct Member<'a> {
    /// OS CPU number.
    pub cpu: u32,
    /// Base of its buffer.
    pub base: *mut u8,
    /// Its lines (in units of `line` from `base`), in address order.
    pub lines: &'a [u32],
    /// Line size in bytes.
    pub line: usize,
}

// SAFETY: a member's buffer outlives the crew; threads only touch it as the state says.
unsafe impl Sync for Member<'_> {}

/// The threads of one measurement.
pub struct Crew<'a> {
    /// The machine (for pinning).
    pub host: &'a Host,
    /// The timer.
    pub timer: &'a Timer,
    /// Requestors, timed simultaneously.
    pub members: Vec<Member<'a>>,
    /// Helper CPUs.
    pub helpers: Vec<u32>,
    /// State prepared before each pass (warm: none).
    pub state: LineState,
    /// Requestors read their lines after the helpers, untimed (for upgrades).
    pub preread: bool,
    /// Bytes a cexm helper streams through to evict its private caches.
    pub evict_bytes: usize,
    /// snbench's bwmp: the first requestor to finish raises `Pass::stop` for the others.
    pub first_stops: bool,
}

/// What a work call is told.
pub struct Pass<'a> {
    /// False for the untimed warm-up call made before the samples of a warm state.
    pub timed: bool,
    /// Raised when another requestor finished first (only with `first_stops`).
    pub stop: &'a AtomicBool,
}

/// One timed pass of one requestor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timed {
    /// Timer ticks, start/stop overhead removed.
    pub ticks: u64,
    /// Units of work done (loads, bytes), as the work returned.
    pub units: u64,
    /// The timer's reading when the pass started and stopped. The timer is one clock
    /// for every CPU (an invariant TSC, CNTVCT or CLOCK_MONOTONIC_RAW), so requestors'
    /// passes can be laid side by side: see [`span_ticks`].
    pub start: u64,
    /// See `start`.
    pub end: u64,
}

/// Ticks from the earliest start to the latest end of passes run together (pass k of
/// every requestor, which a barrier starts together), less the timer's overhead, and
/// never less than the longest pass. An aggregate bandwidth is all bytes over this
/// span: over each requestor's own time instead, requestors the hypervisor or the
/// scheduler ran one after another (each alone, at one core's full speed, while the
/// other waited) would add up to more than the cores ever moved together.
pub fn span_ticks<'a>(passes: impl IntoIterator<Item = &'a Timed>, timer: &Timer) -> u64 {
    let overhead = (timer.overhead_ns * timer.hz / 1e9) as u64;
    let (mut lo, mut hi, mut longest) = (u64::MAX, 0, 0);
    for t in passes {
        lo = lo.min(t.start);
        hi = hi.max(t.end);
        longest = longest.max(t.ticks);
    }
    hi.saturating_sub(lo).saturating_sub(overhead).max(longest)
}

/// Samples per requestor and the pinning proof (requestors, then helpers).
#[derive(Debug, Clone)]
pub struct CrewResult {
    /// Timed passes, one vector per requestor.
    pub samples: Vec<Vec<Timed>>,
    /// What disturbed each timed pass, as `samples`.
    pub disturb: Vec<Vec<Disturbance>>,
    /// Pinning proof.
    pub pins: Vec<PinProof>,
}

/// One pass as the settling loop takes it: (ns, units, the raw pass) and what
/// disturbed it.
pub type PassRow = ((f64, u64, Timed), Disturbance);

impl CrewResult {
    /// Each requestor's passes in nanoseconds beside what disturbed each.
    pub fn pass_rows(&self, timer: &Timer) -> Vec<Vec<PassRow>> {
        self.samples
            .iter()
            .zip(&self.disturb)
            .map(|(v, d)| {
                v.iter()
                    .map(|t| (timer.ns(t.ticks), t.units, *t))
                    .zip(d.iter().cloned())
                    .collect()
            })
            .collect()
    }
}

pub(crate) fn touch_read(base: *const u8, lines: &[u32], line: usize) -> usize {
    let mut sum = 0usize;
    for &l in lines {
        // SAFETY: callers pass lines of a live buffer.
        sum = sum
            .wrapping_add(unsafe { (base.add(l as usize * line) as *const usize).read_volatile() });
    }
    sum
}

fn touch_write(base: *mut u8, lines: &[u32], line: usize) {
    for &l in lines {
        // SAFETY: as touch_read; the second word is never a chase pointer.
        unsafe { (base.add(l as usize * line + 8) as *mut usize).write_volatile(l as usize) };
    }
}

fn evict(buf: &[u8]) -> u8 {
    buf.iter()
        .step_by(64)
        .fold(0, |x, b| x ^ std::hint::black_box(*b))
}

/// What a crew's threads share while they run.
struct Shared {
    barrier: SpinBarrier,
    failed: AtomicBool,
    stop: AtomicBool,
    samples: usize,
    prepared: bool,
    overhead: u64,
}

impl Shared {
    /// Pin this thread to `cpu`, then wait for every thread: the pin, and whether any
    /// thread failed to pin (then no one measures).
    fn start(&self, host: &Host, cpu: u32) -> (Result<PinProof>, bool) {
        let pin = pin_current_thread(host, cpu);
        if pin.is_err() {
            self.failed.store(true, Ordering::SeqCst);
        }
        self.barrier.wait();
        (pin, self.failed.load(Ordering::SeqCst))
    }
}

/// A requestor thread's pin, timed passes and what disturbed each.
type RequestorOut = Result<(PinProof, Vec<Timed>, Vec<Disturbance>)>;

/// Join scoped threads, a panicked one as an error naming its role.
fn join_all<T>(
    handles: Vec<std::thread::ScopedJoinHandle<'_, Result<T>>>,
    role: &str,
) -> Vec<Result<T>> {
    handles
        .into_iter()
        .map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(Error::System(format!("a {role} thread panicked"))))
        })
        .collect()
}

/// Requestors' pins then helpers' pins, and the requestors' samples; the first error.
fn gather(req_out: Vec<RequestorOut>, help_out: Vec<Result<PinProof>>) -> Result<CrewResult> {
    let mut pins = Vec::new();
    let mut samples_out = Vec::new();
    let mut disturb = Vec::new();
    for r in req_out {
        let (pin, s, d) = r?;
        pins.push(pin);
        samples_out.push(s);
        disturb.push(d);
    }
    for h in help_out {
        pins.push(h?);
    }
    Ok(CrewResult {
        samples: samples_out,
        disturb,
        pins,
    })
}

impl Crew<'_> {
    /// Run `samples` passes. `make(i)` builds requestor i's work on its own thread;
    /// each call does one pass and returns the units it did.
    pub fn run<W, M>(&self, samples: usize, prepared: bool, make: M) -> Result<CrewResult>
    where
        M: Fn(usize) -> W + Sync,
        W: FnMut(&Pass) -> u64,
    {
        let prepared = prepared && self.state.prepared();
        if prepared && !flush::available() {
            return Err(Error::Unsatisfiable(format!(
                "state {} needs a cache-flush instruction, and none is implemented for this architecture",
                self.state.name()
            )));
        }
        let helpers: &[u32] = if prepared { &self.helpers } else { &[] };
        let shared = Shared {
            barrier: SpinBarrier::new(self.members.len() + helpers.len()),
            failed: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            samples,
            prepared,
            overhead: (self.timer.overhead_ns * self.timer.hz / 1e9) as u64,
        };
        let (req_out, help_out) = std::thread::scope(|s| {
            let (sh, make) = (&shared, &make);
            let req: Vec<_> = (0..self.members.len())
                .map(|i| s.spawn(move || self.requestor(i, sh, make)))
                .collect();
            let help: Vec<_> = helpers
                .iter()
                .enumerate()
                .map(|(h, &cpu)| s.spawn(move || self.helper(h, cpu, sh)))
                .collect();
            (join_all(req, "requestor"), join_all(help, "helper"))
        });
        gather(req_out, help_out)
    }

    /// Requestor `i`'s thread: pin, build its work, then time `samples` passes.
    fn requestor<W, M>(&self, i: usize, sh: &Shared, make: &M) -> RequestorOut
    where
        M: Fn(usize) -> W + Sync,
        W: FnMut(&Pass) -> u64,
    {
        let m = &self.members[i];
        let (pin, abort) = sh.start(self.host, m.cpu);
        if abort {
            return pin.map(|p| (p, Vec::new(), Vec::new()));
        }
        let mut work = make(i);
        if !sh.prepared {
            work(&Pass {
                timed: false,
                stop: &sh.stop,
            });
        }
        let mut out = Vec::with_capacity(sh.samples);
        let mut dist = Vec::with_capacity(sh.samples);
        for _ in 0..sh.samples {
            if sh.prepared {
                self.flush_for_helpers(m, sh);
            }
            let (timed, disturbance) = self.timed_pass(m, sh, &mut work);
            dist.push(disturbance);
            out.push(timed);
            sh.barrier.wait();
            if i == 0 {
                sh.stop.store(false, Ordering::Relaxed);
            }
        }
        Ok((pin?, out, dist))
    }

    /// A requestor's untimed preparation: flush its lines, let the helpers put them in
    /// the state, then (for upgrades) read them itself.
    fn flush_for_helpers(&self, m: &Member, sh: &Shared) {
        sh.barrier.wait();
        // SAFETY: the member's own lines, in its live buffer.
        unsafe { flush::flush_lines(m.base, m.lines, m.line) };
        sh.barrier.wait();
        sh.barrier.wait(); // helpers prepare between these two
        if self.preread {
            std::hint::black_box(touch_read(m.base, m.lines, m.line));
        }
    }

    /// One timed pass of a requestor, started together with the others by a barrier.
    fn timed_pass<W>(&self, m: &Member, sh: &Shared, work: &mut W) -> (Timed, Disturbance)
    where
        W: FnMut(&Pass) -> u64,
    {
        // Read before the barrier, so the threads still start together.
        let sampler = Sampler::start(Some(m.cpu));
        sh.barrier.wait();
        let t0 = self.timer.start();
        let units = work(&Pass {
            timed: true,
            stop: &sh.stop,
        });
        let t1 = self.timer.stop();
        let disturbance = sampler.finish();
        if self.first_stops {
            sh.stop.store(true, Ordering::Relaxed);
        }
        let timed = Timed {
            ticks: t1.saturating_sub(t0).saturating_sub(sh.overhead),
            units,
            start: t0,
            end: t1,
        };
        (timed, disturbance)
    }

    /// Helper `h`'s thread: pin, then before every pass put the requestors' lines in
    /// the state, keeping step with them through the barriers.
    fn helper(&self, h: usize, cpu: u32, sh: &Shared) -> Result<PinProof> {
        let (pin, abort) = sh.start(self.host, cpu);
        if abort {
            return pin;
        }
        let ev = if self.state == LineState::Cexm {
            vec![1u8; self.evict_bytes]
        } else {
            Vec::new()
        };
        for _ in 0..sh.samples {
            sh.barrier.wait();
            sh.barrier.wait(); // requestors flush between these two
            self.prepare_lines(h);
            if self.state == LineState::Cexm {
                std::hint::black_box(evict(&ev));
            }
            sh.barrier.wait();
            sh.barrier.wait(); // the timed pass starts
            sh.barrier.wait(); // and ends
        }
        pin
    }

    /// Helper `h` touches every requestor's lines as the state asks (a dirty state:
    /// the first helper writes them; a shared or clean one: every helper reads them).
    fn prepare_lines(&self, h: usize) {
        for m in &self.members {
            match self.state {
                LineState::Dexd | LineState::Dext if h == 0 => touch_write(m.base, m.lines, m.line),
                LineState::Shrd(_) | LineState::Cexh | LineState::Cexm => {
                    std::hint::black_box(touch_read(m.base, m.lines, m.line));
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(start: u64, end: u64) -> Timed {
        Timed {
            ticks: end - start,
            units: 1,
            start,
            end,
        }
    }

    #[test]
    fn span_covers_requestors_that_ran_one_after_another() {
        let mut timer = Timer::clock(None);
        timer.overhead_ns = 0.0;
        // Together: the span is the longest pass.
        assert_eq!(span_ticks(&[pass(100, 200), pass(105, 195)], &timer), 100);
        // One after the other (a vCPU taken away): twice one pass, so the aggregate
        // of the two is one pass's rate, not two.
        assert_eq!(span_ticks(&[pass(100, 200), pass(200, 300)], &timer), 200);
        // The overhead comes off, but the span is never below the longest pass.
        timer.overhead_ns = 10.0 * 1e9 / timer.hz;
        assert_eq!(span_ticks(&[pass(100, 200), pass(150, 205)], &timer), 100);
    }
}
