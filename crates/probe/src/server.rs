//! EARTH's synchronization unit on today's machines: a helper thread on another core
//! that serves split-phase requests (load, store, call, block fetch) posted to a
//! single-producer ring in shared memory. The issuer posts and goes on; it collects
//! the reply later. Each slot records when the server saw the request and when it
//! finished, so one remote operation can be broken into its steps.
//!
//! A single-producer ring with per-slot sequence numbers is a few lines; no crate
//! gives per-request server timestamps, hence this module.

use crate::timer::Timer;
use corosensei::stack::DefaultStack;
use numalab_topo::bind::{pin_current_thread, PinProof};
use numalab_topo::{Error, Host, Result};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Slots in the ring: the most requests outstanding at once.
pub const CAPACITY: usize = 1024;

/// What the server does for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Load the word at the address; reply with it.
    Load(*const u64),
    /// Store the value at the address; reply 0.
    Store(*mut u64, u64),
    /// Call [`served`] with the argument; reply with its result.
    Call(u64),
    /// Copy `words` words from `src` to `dst`, `repeat` times (communication × repeat).
    Fetch {
        /// Source.
        src: *const u64,
        /// Destination.
        dst: *mut u64,
        /// Words per copy.
        words: usize,
        /// Copies (the seed's communication multiplier).
        repeat: usize,
    },
    /// Create a coroutine that calls [`served`] with the argument, run it to the end;
    /// reply with its result (a remote coroutine spawn).
    Spawn(u64),
    /// Stop serving.
    Quit,
}

// SAFETY: requests carry addresses of buffers both threads may touch by design.
unsafe impl Send for Request {}

/// The function a remote call runs.
#[inline(never)]
pub fn served(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(2654435761).wrapping_add(1))
}

/// One request's slot: the issuer writes only the first line and the server only the
/// second, so a request costs one line transfer each way. 128-byte aligned so the
/// adjacent-line prefetcher pairs a slot's own two lines, never two slots'.
#[repr(C, align(128))]
struct Slot {
    posted: Posted,
    reply: Reply,
}

#[repr(C, align(64))]
struct Posted {
    seq: AtomicU64,
    req: UnsafeCell<Request>,
}

#[repr(C, align(64))]
struct Reply {
    done: AtomicU64,
    result: UnsafeCell<u64>,
    seen: UnsafeCell<u64>,
    finished: UnsafeCell<u64>,
}

/// The ring shared by the issuer and the server.
pub struct Ring {
    slots: Vec<Slot>,
    busy_ticks: AtomicU64,
    served: AtomicU64,
}

// SAFETY: a slot's cells are written by one side only between the posted/done
// release-acquire handoffs that order them.
unsafe impl Sync for Ring {}

impl Ring {
    fn new() -> Ring {
        Ring {
            slots: (0..CAPACITY)
                .map(|_| Slot {
                    posted: Posted {
                        seq: AtomicU64::new(0),
                        req: UnsafeCell::new(Request::Quit),
                    },
                    reply: Reply {
                        done: AtomicU64::new(0),
                        result: UnsafeCell::new(0),
                        seen: UnsafeCell::new(0),
                        finished: UnsafeCell::new(0),
                    },
                })
                .collect(),
            busy_ticks: AtomicU64::new(0),
            served: AtomicU64::new(0),
        }
    }
}

/// Spin until `ok`, yielding after a long wait (only matters when the two sides
/// share a CPU, which a measurement never plans but a test may see).
#[inline]
fn spin_until(ok: impl Fn() -> bool) {
    let mut n = 0u32;
    while !ok() {
        if n < 1 << 16 {
            n += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// A posted request, to collect later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(u64);

/// When the server saw and finished one request (timer ticks, same counter as the issuer's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamps {
    /// The server saw the request.
    pub seen: u64,
    /// The server finished it.
    pub finished: u64,
}

/// The issuing side (one per server).
pub struct Client<'a> {
    ring: &'a Ring,
    next: u64,
}

impl Client<'_> {
    /// Post a request; waits only while the ring is full.
    #[inline]
    pub fn post(&mut self, req: Request) -> Ticket {
        let seq = self.next + 1;
        self.next = seq;
        let slot = &self.ring.slots[(seq as usize - 1) % CAPACITY];
        // The previous occupant of this slot must be served before it is reused.
        let prev = seq.saturating_sub(CAPACITY as u64);
        spin_until(|| slot.reply.done.load(Ordering::Acquire) >= prev);
        // SAFETY: the server does not read this slot until `posted` says so.
        unsafe { *slot.posted.req.get() = req };
        slot.posted.seq.store(seq, Ordering::Release);
        Ticket(seq)
    }

    /// True when the request has been served.
    #[inline]
    pub fn ready(&self, t: Ticket) -> bool {
        self.ring.slots[(t.0 as usize - 1) % CAPACITY]
            .reply
            .done
            .load(Ordering::Acquire)
            >= t.0
    }

    /// Wait for a request and return its reply. Collect a ticket before
    /// `CAPACITY` newer requests are posted: its slot is reused after that.
    #[inline]
    pub fn wait(&self, t: Ticket) -> u64 {
        let slot = &self.ring.slots[(t.0 as usize - 1) % CAPACITY];
        spin_until(|| slot.reply.done.load(Ordering::Acquire) >= t.0);
        // SAFETY: served (done >= t), and the slot is not reused before the next lap.
        unsafe { *slot.reply.result.get() }
    }

    /// The server's timestamps of a served request (valid until the slot is reused).
    pub fn stamps(&self, t: Ticket) -> Stamps {
        let slot = &self.ring.slots[(t.0 as usize - 1) % CAPACITY];
        self.wait(t);
        // SAFETY: as in wait.
        unsafe {
            Stamps {
                seen: *slot.reply.seen.get(),
                finished: *slot.reply.finished.get(),
            }
        }
    }

    /// Timer ticks the server has spent serving, and requests served, so far.
    pub fn server_work(&self) -> (u64, u64) {
        (
            self.ring.busy_ticks.load(Ordering::Acquire),
            self.ring.served.load(Ordering::Acquire),
        )
    }
}

/// Serve one request. Spawns reuse the server's one spare stack, like a pooled local
/// spawn, so the figure is the coroutine's creation and run, not mapping a stack.
fn execute(req: Request, spare: &mut Option<DefaultStack>) -> u64 {
    // SAFETY: the issuer guarantees the addresses it posts are live and aligned.
    unsafe {
        match req {
            Request::Load(p) => p.read_volatile(),
            Request::Store(p, v) => {
                p.write_volatile(v);
                0
            }
            Request::Call(x) => served(x),
            Request::Fetch {
                src,
                dst,
                words,
                repeat,
            } => {
                for _ in 0..repeat {
                    for i in 0..words {
                        dst.add(i).write_volatile(src.add(i).read_volatile());
                    }
                }
                words as u64
            }
            Request::Spawn(x) => {
                let body = move |_: &corosensei::Yielder<(), ()>, ()| served(x);
                let mut c = match spare.take() {
                    Some(stack) => corosensei::Coroutine::with_stack(stack, body),
                    None => corosensei::Coroutine::with_stack(
                        DefaultStack::new(64 * 1024).expect("a 64 KiB coroutine stack"),
                        body,
                    ),
                };
                let v = match c.resume(()) {
                    corosensei::CoroutineResult::Return(v) => v,
                    corosensei::CoroutineResult::Yield(()) => 0,
                };
                if c.done() {
                    *spare = Some(c.into_stack());
                }
                v
            }
            Request::Quit => 0,
        }
    }
}

fn serve(ring: &Ring, timer: &Timer) {
    let mut seq = 1u64;
    // Mapped before the first request so no request pays for it.
    let mut spare = DefaultStack::new(64 * 1024).ok();
    loop {
        let slot = &ring.slots[(seq as usize - 1) % CAPACITY];
        spin_until(|| slot.posted.seq.load(Ordering::Acquire) >= seq);
        let t0 = timer.start();
        // SAFETY: posted, so the issuer has finished writing the request.
        let req = unsafe { *slot.posted.req.get() };
        let r = execute(req, &mut spare);
        let t1 = timer.stop();
        // SAFETY: the issuer reads these only after `done`.
        unsafe {
            *slot.reply.result.get() = r;
            *slot.reply.seen.get() = t0;
            *slot.reply.finished.get() = t1;
        }
        ring.busy_ticks.fetch_add(t1 - t0, Ordering::Relaxed);
        ring.served.fetch_add(1, Ordering::Relaxed);
        slot.reply.done.store(seq, Ordering::Release);
        if req == Request::Quit {
            return;
        }
        seq += 1;
    }
}

/// Run `body` with a client of a server pinned to `cpu`; the server stops after.
pub fn with_server<R>(
    host: &Host,
    timer: &Timer,
    cpu: u32,
    body: impl FnOnce(&mut Client) -> R,
) -> Result<(R, PinProof)> {
    let ring = Ring::new();
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let ring = &ring;
        let h = s.spawn(move || {
            let pin = pin_current_thread(host, cpu);
            let ok = pin.is_ok();
            let _ = tx.send(pin);
            if ok {
                serve(ring, timer);
            }
        });
        let pin = rx
            .recv()
            .map_err(|_| Error::System("the server thread died before pinning".into()))??;
        /// Stops the server however the body ends (a panic included), so the
        /// scope can join it.
        struct Stop<'r>(Client<'r>);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                let t = self.0.post(Request::Quit);
                self.0.wait(t);
            }
        }
        let mut stop = Stop(Client { ring, next: 0 });
        let r = body(&mut stop.0);
        drop(stop);
        h.join()
            .map_err(|_| Error::System("the server thread panicked".into()))?;
        Ok((r, pin))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::TopologySource;

    #[test]
    fn each_side_of_a_slot_writes_its_own_line() {
        assert_eq!(std::mem::size_of::<Posted>(), 64, "a request fits one line");
        assert_eq!(std::mem::offset_of!(Slot, reply), 64);
        assert_eq!(std::mem::size_of::<Slot>(), 128);
    }

    #[test]
    fn every_request_is_served_in_order_with_the_right_reply() {
        let host = Host::load(&TopologySource::ThisSystem).unwrap();
        let timer = Timer::best();
        let cpu = host.machine.pus.last().unwrap().os;
        let mut word = 41u64;
        let src: Vec<u64> = (0..100).collect();
        let mut dst = vec![0u64; 100];
        let wp: *mut u64 = &mut word;
        let ((), _) = with_server(&host, &timer, cpu, |c| {
            let t = c.post(Request::Load(wp));
            assert_eq!(c.wait(t), 41);
            let t = c.post(Request::Store(wp, 7));
            c.wait(t);
            let t = c.post(Request::Load(wp));
            assert_eq!(c.wait(t), 7);
            // Three laps of the ring, a full ring in flight at a time.
            for lap in 0..3u64 {
                let base = lap * CAPACITY as u64;
                let tickets: Vec<_> = (base..base + CAPACITY as u64)
                    .map(|i| (i, c.post(Request::Call(i))))
                    .collect();
                for (i, t) in tickets {
                    assert_eq!(c.wait(t), served(i));
                }
            }
            let t = c.post(Request::Fetch {
                src: src.as_ptr(),
                dst: dst.as_mut_ptr(),
                words: 100,
                repeat: 2,
            });
            assert_eq!(c.wait(t), 100);
            let sp = c.post(Request::Spawn(5));
            assert_eq!(c.wait(sp), served(5));
            let s = c.stamps(t);
            assert!(s.finished >= s.seen);
            let (busy, n) = c.server_work();
            assert!(busy > 0 && n as usize == 5 + 3 * CAPACITY);
        })
        .unwrap();
        assert_eq!(dst, src);
    }
}
