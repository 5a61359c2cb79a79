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
        let barrier = SpinBarrier::new(self.members.len() + helpers.len());
        let failed = AtomicBool::new(false);
        let stop = AtomicBool::new(false);
        let overhead = (self.timer.overhead_ns * self.timer.hz / 1e9) as u64;
        let state = self.state;
        let (req_out, help_out) = std::thread::scope(|s| {
            let (barrier, failed, stop, make) = (&barrier, &failed, &stop, &make);
            let start = |cpu: u32| {
                let pin = pin_current_thread(self.host, cpu);
                if pin.is_err() {
                    failed.store(true, Ordering::SeqCst);
                }
                barrier.wait();
                (pin, failed.load(Ordering::SeqCst))
            };
            let req: Vec<_> = self
                .members
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    s.spawn(
                        move || -> Result<(PinProof, Vec<Timed>, Vec<Disturbance>)> {
                            let (pin, abort) = start(m.cpu);
                            if abort {
                                return pin.map(|p| (p, Vec::new(), Vec::new()));
                            }
                            let mut work = make(i);
                            if !prepared {
                                work(&Pass { timed: false, stop });
                            }
                            let mut out = Vec::with_capacity(samples);
                            let mut dist = Vec::with_capacity(samples);
                            for _ in 0..samples {
                                if prepared {
                                    barrier.wait();
                                    // SAFETY: the member's own lines, in its live buffer.
                                    unsafe { flush::flush_lines(m.base, m.lines, m.line) };
                                    barrier.wait();
                                    barrier.wait(); // helpers prepare between these two
                                    if self.preread {
                                        std::hint::black_box(touch_read(m.base, m.lines, m.line));
                                    }
                                }
                                // Read before the barrier, so the threads still start together.
                                let sampler = Sampler::start(Some(m.cpu));
                                barrier.wait();
                                let t0 = self.timer.start();
                                let units = work(&Pass { timed: true, stop });
                                let t1 = self.timer.stop();
                                dist.push(sampler.finish());
                                if self.first_stops {
                                    stop.store(true, Ordering::Relaxed);
                                }
                                out.push(Timed {
                                    ticks: t1.saturating_sub(t0).saturating_sub(overhead),
                                    units,
                                    start: t0,
                                    end: t1,
                                });
                                barrier.wait();
                                if i == 0 {
                                    stop.store(false, Ordering::Relaxed);
                                }
                            }
                            Ok((pin?, out, dist))
                        },
                    )
                })
                .collect();
            let help: Vec<_> = helpers
                .iter()
                .enumerate()
                .map(|(h, &cpu)| {
                    s.spawn(move || -> Result<PinProof> {
                        let (pin, abort) = start(cpu);
                        if abort {
                            return pin;
                        }
                        let ev = if state == LineState::Cexm {
                            vec![1u8; self.evict_bytes]
                        } else {
                            Vec::new()
                        };
                        for _ in 0..samples {
                            barrier.wait();
                            barrier.wait(); // requestors flush between these two
                            for m in &self.members {
                                match state {
                                    LineState::Dexd | LineState::Dext if h == 0 => {
                                        touch_write(m.base, m.lines, m.line)
                                    }
                                    LineState::Shrd(_) | LineState::Cexh | LineState::Cexm => {
                                        std::hint::black_box(touch_read(m.base, m.lines, m.line));
                                    }
                                    _ => {}
                                }
                            }
                            if state == LineState::Cexm {
                                std::hint::black_box(evict(&ev));
                            }
                            barrier.wait();
                            barrier.wait(); // the timed pass starts
                            barrier.wait(); // and ends
                        }
                        pin
                    })
                })
                .collect();
            let join = |e: &str| Error::System(format!("a {e} thread panicked"));
            (
                req.into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err(join("requestor"))))
                    .collect::<Vec<_>>(),
                help.into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err(join("helper"))))
                    .collect::<Vec<_>>(),
            )
        });
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
