//! Large sends in flight: started by the thread that sends (MPI_Isend returns at once),
//! then tested until complete by whoever sends next and by a reaper thread, which frees
//! each buffer when MPI is done with it.
//!
//! Why not hand each page to a sender thread, as before: the hand-off woke that thread,
//! which at a raised priority on the rank's one CPU preempted the sending service thread
//! for its whole turn (start, test, sleep). Measured (issue 43, 2026-11-29, 2-vCPU VM,
//! barnes at the paper's input, 2 ranks × 1 thread, lmwc, timers around each send):
//! rank 0's service thread spent 40–55 ms of a 260–320 ms run in 984 hand-offs (40–56 µs
//! each, the Isend itself ~1 µs), on the CPU its compute thread needed. Nothing here
//! wakes a thread: the reaper polls on its own timer. Interleaved rounds (same VM, paper
//! input, medians), with against without: quiet, 10 rounds: remote fault barnes 186
//! against 314 µs, FFT 180 against 319 µs; speedup SWM 1.67 against 1.48, FFT 0.97
//! against 0.88, SOR 1.70 against 1.64; one core kept busy, 6 rounds: SOR 1.35 against
//! 1.12 (remote fault 122 against 235 µs), SWM 1.27 against 0.97, barnes 0.52 against
//! 0.45, water-nsq 0.34 against 0.21.
//!
//! Completion is not on the receiver's path with Open MPI's shared-memory transport: a
//! page fits the rendezvous's first fragment (32 KiB), and larger messages are read by
//! the receiver (CMA). Where a transport needs the sender to progress (a pipelined
//! rendezvous, TCP), the reaper's tests and the rank's own probes progress it, as the
//! sender thread's tests did, at the same pace while anything is in flight.

use mpi::point_to_point::Destination;
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The reaper's first sleep while sends are in flight; it doubles up to [`BUSY_MAX`].
const BUSY: Duration = Duration::from_micros(10);
/// The reaper's longest sleep while sends are in flight.
const BUSY_MAX: Duration = Duration::from_micros(160);
/// The reaper's sleep while nothing is in flight (a sender does not wake it).
const IDLE: Duration = Duration::from_millis(1);

/// A started send and the buffer it reads, leaked until the request completes.
struct Started {
    req: Request<'static, [u8], StaticScope>,
    buf: *mut [u8],
}

// SAFETY: MPI_THREAD_MULTIPLE (the transport checks it): a request may be tested on any
// thread, and the buffer belongs to the request until it completes.
unsafe impl Send for Started {}

/// The rank's sends in flight.
#[derive(Default)]
pub struct Flight {
    sends: Mutex<Vec<Started>>,
    stop: AtomicBool,
}

impl Flight {
    /// Start sending `bytes` to `to` with `tag`, after testing the sends already in
    /// flight (the caller is in MPI anyway).
    pub fn start(&self, comm: &SimpleCommunicator, to: usize, tag: i32, bytes: Vec<u8>) {
        let buf: *mut [u8] = Box::into_raw(bytes.into_boxed_slice());
        // SAFETY: the buffer is freed only once its request completes (see `reap`), so
        // the 'static borrow MPI reads it through outlives the send.
        let req = comm.process_at_rank(to as i32).immediate_send_with_tag(
            StaticScope,
            unsafe { &*buf },
            tag,
        );
        let mut sends = self.sends.lock().unwrap();
        reap(&mut sends);
        sends.push(Started { req, buf });
    }

    /// Test every send in flight: how many are left.
    pub fn reap(&self) -> usize {
        let mut sends = self.sends.lock().unwrap();
        reap(&mut sends);
        sends.len()
    }

    /// The reaper thread's loop: test the sends in flight, backing off while some stay
    /// in flight, sleeping [`IDLE`] while none is; until stopped with none left.
    pub fn reaper(&self) {
        let mut pause = BUSY;
        loop {
            let left = self.reap();
            if left == 0 {
                if self.stop.load(Ordering::Acquire) {
                    return;
                }
                pause = BUSY;
                std::thread::sleep(IDLE);
            } else {
                std::thread::sleep(pause);
                pause = (pause * 2).min(BUSY_MAX);
            }
        }
    }

    /// Have the reaper return once every send has completed.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Drop the completed sends of `sends`, freeing their buffers.
fn reap(sends: &mut Vec<Started>) {
    let mut still = Vec::with_capacity(sends.len());
    for s in sends.drain(..) {
        match s.req.test() {
            // SAFETY: MPI is done with the buffer: free what Box::into_raw leaked.
            Ok(_) => drop(unsafe { Box::from_raw(s.buf) }),
            Err(req) => still.push(Started { req, buf: s.buf }),
        }
    }
    *sends = still;
}
