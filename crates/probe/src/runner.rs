//! Running timed passes: pinned requestor threads chase, pinned helper threads put
//! the lines in the asked-for state before every pass, barriers keep them in step.

use crate::chase::{Chase, SelfLoop};
use crate::flush;
use crate::kernel::{self, Access, KernelFn};
use crate::state::{LineState, Request};
use crate::timer::Timer;
use numalab_topo::bind::{pin_current_thread, PinProof};
use numalab_topo::{Error, Host, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;

/// A requestor: the CPU it runs on and the chase it times.
pub struct Requestor<'a> {
    /// OS CPU number.
    pub cpu: u32,
    /// Its chase (each requestor has its own lines).
    pub chase: &'a Chase,
}

/// Everything fixed across rounds of one measurement.
pub struct Setup<'a> {
    /// The machine (for pinning).
    pub host: &'a Host,
    /// The timer.
    pub timer: &'a Timer,
    /// Requestors, timed simultaneously.
    pub requestors: Vec<Requestor<'a>>,
    /// Helper CPUs (as many as the state needs).
    pub helpers: Vec<u32>,
    /// Line state prepared before each pass.
    pub state: LineState,
    /// The request (kernel) timed.
    pub request: Request,
    /// Bytes of the eviction buffer a cexm helper streams through.
    pub evict_bytes: usize,
}

/// What a round chases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The requestor's chase, prepared as the state says.
    Chase,
    /// A one-line self loop (L1-resident reference), never prepared.
    SelfLoop,
}

/// One round: a kernel variant timed `samples` times.
#[derive(Debug, Clone, Copy)]
pub struct Round {
    /// Dependent work operations after each load.
    pub work: usize,
    /// Timed passes.
    pub samples: usize,
    /// Loads per timed pass (for a prepared chase: at most the visited elements).
    pub loads: usize,
    /// What is chased.
    pub target: Target,
}

/// Per-requestor samples of one round.
#[derive(Debug, Clone)]
pub struct RoundResult {
    /// ns per load, one vector per requestor.
    pub ns_per_load: Vec<Vec<f64>>,
    /// Timer ticks per load, one vector per requestor.
    pub ticks_per_load: Vec<Vec<f64>>,
    /// Pinning proof of the requestors, then the helpers.
    pub pins: Vec<PinProof>,
}

fn touch_read(base: *const u8, lines: &[u32], line: usize) -> usize {
    let mut sum = 0usize;
    for &l in lines {
        // SAFETY: the caller passes lines of a live chase buffer.
        sum = sum
            .wrapping_add(unsafe { (base.add(l as usize * line) as *const usize).read_volatile() });
    }
    sum
}

fn touch_write(base: *mut u8, lines: &[u32], line: usize) {
    for &l in lines {
        // SAFETY: as touch_read; the second word is not part of the chase.
        unsafe { (base.add(l as usize * line + 8) as *mut usize).write_volatile(l as usize) };
    }
}

fn evict(buf: &[u8]) -> u8 {
    let mut x = 0u8;
    for i in (0..buf.len()).step_by(64) {
        // SAFETY: i < buf.len().
        x ^= unsafe { (buf.as_ptr().add(i)).read_volatile() };
    }
    x
}

/// Run one round and collect every requestor's samples.
pub fn run_round(setup: &Setup, round: &Round) -> Result<RoundResult> {
    let access: Access = setup.request.access();
    let f: KernelFn = kernel::kernel(access, round.work).ok_or_else(|| {
        Error::bad(
            "work",
            round.work.to_string(),
            format!("0..={}", kernel::MAX_WORK),
        )
    })?;
    let prepared = setup.state.prepared() && round.target == Target::Chase;
    if prepared && !flush::available() {
        return Err(Error::Unsatisfiable(format!(
            "state {} needs a cache-flush instruction, and none is implemented for this architecture",
            setup.state.name()
        )));
    }
    if prepared {
        if let Some(r) = setup
            .requestors
            .iter()
            .find(|r| round.loads > r.chase.visited())
        {
            return Err(Error::System(format!(
                "a prepared pass of {} loads exceeds the {} prepared lines on CPU {}",
                round.loads,
                r.chase.visited(),
                r.cpu
            )));
        }
    }
    let helpers: &[u32] = if prepared { &setup.helpers } else { &[] };
    let parties = setup.requestors.len() + helpers.len();
    let barrier = Barrier::new(parties);
    let failed = AtomicBool::new(false);
    let overhead = (setup.timer.overhead_ns * setup.timer.hz / 1e9) as u64;
    let upgrade = setup.request == Request::Upgrade;
    let state = setup.state;

    let (req_out, help_out) = std::thread::scope(|s| {
        let barrier = &barrier;
        let failed = &failed;
        let req: Vec<_> = setup
            .requestors
            .iter()
            .map(|r| {
                s.spawn(move || -> Result<(PinProof, Vec<u64>)> {
                    let pin = pin_current_thread(setup.host, r.cpu);
                    if pin.is_err() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    barrier.wait();
                    if failed.load(Ordering::SeqCst) {
                        return pin.map(|p| (p, Vec::new()));
                    }
                    let own = SelfLoop::new();
                    let chase = r.chase;
                    let lines = chase.visited_lines();
                    let line = chase.layout.line;
                    let mut p = match round.target {
                        Target::Chase => chase.start(),
                        Target::SelfLoop => own.start(),
                    };
                    if !prepared {
                        // SAFETY: p starts a cyclic chase (or the self loop).
                        p = unsafe { kernel::run(f, p, round.loads) };
                    }
                    let mut ticks = Vec::with_capacity(round.samples);
                    for _ in 0..round.samples {
                        if prepared {
                            barrier.wait();
                            // SAFETY: the lines belong to this requestor's buffer.
                            unsafe { flush::flush_lines(chase.base(), lines, line) };
                            barrier.wait();
                            barrier.wait(); // helpers prepare between these two
                            if upgrade {
                                std::hint::black_box(touch_read(chase.base(), lines, line));
                            }
                            p = chase.start();
                        }
                        barrier.wait();
                        let t0 = setup.timer.start();
                        // SAFETY: as above.
                        p = unsafe { kernel::run(f, p, round.loads) };
                        let t1 = setup.timer.stop();
                        ticks.push((t1.saturating_sub(t0)).saturating_sub(overhead));
                    }
                    std::hint::black_box(p);
                    Ok((pin?, ticks))
                })
            })
            .collect();
        let help: Vec<_> = helpers
            .iter()
            .enumerate()
            .map(|(i, &cpu)| {
                s.spawn(move || -> Result<PinProof> {
                    let pin = pin_current_thread(setup.host, cpu);
                    if pin.is_err() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    barrier.wait();
                    if failed.load(Ordering::SeqCst) {
                        return pin;
                    }
                    let ev = if state == LineState::Cexm {
                        vec![1u8; setup.evict_bytes]
                    } else {
                        Vec::new()
                    };
                    for _ in 0..round.samples {
                        barrier.wait();
                        barrier.wait(); // requestors flush between these two
                        for r in &setup.requestors {
                            let (base, lines, line) =
                                (r.chase.base(), r.chase.visited_lines(), r.chase.layout.line);
                            match state {
                                LineState::Dexd | LineState::Dext if i == 0 => {
                                    touch_write(base, lines, line)
                                }
                                LineState::Shrd(_) | LineState::Cexh | LineState::Cexm => {
                                    std::hint::black_box(touch_read(base, lines, line));
                                }
                                _ => {}
                            }
                        }
                        if state == LineState::Cexm {
                            std::hint::black_box(evict(&ev));
                        }
                        barrier.wait();
                        barrier.wait(); // the timed pass starts
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
    let mut ns = Vec::new();
    let mut tk = Vec::new();
    for r in req_out {
        let (pin, ticks) = r?;
        pins.push(pin);
        let per = |t: &u64| {
            *t as f64 / round.loads.div_ceil(kernel::UNROLL).max(1) as f64 / kernel::UNROLL as f64
        };
        tk.push(ticks.iter().map(per).collect());
        ns.push(
            ticks
                .iter()
                .map(|t| {
                    setup.timer.ns(*t)
                        / (round.loads.div_ceil(kernel::UNROLL).max(1) * kernel::UNROLL) as f64
                })
                .collect(),
        );
    }
    for h in help_out {
        pins.push(h?);
    }
    Ok(RoundResult {
        ns_per_load: ns,
        ticks_per_load: tk,
        pins,
    })
}
