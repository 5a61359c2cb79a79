//! The MPI transport (rsmpi over the system's Open MPI, MPI_THREAD_MULTIPLE).
//!
//! Messages up to 1 KiB are sent at once by the calling thread (eager everywhere); larger
//! ones are started with MPI_Isend by the calling thread too and tested until complete
//! by [`crate::flight`], so neither the compute thread nor the service thread ever
//! blocks in MPI_Send: a page is larger than the shared-memory eager limit, and two
//! service threads each stuck sending a page to the other would deadlock (a blocking
//! MPI_Send also spins until the receiver takes the page, on the CPU the rank's compute
//! thread needs).
//!
//! Open MPI's shared-memory transport has no blocking receive, so the service thread
//! polls with MPI_Improbe: without a doorbell, sleeping `NUMALAB_DSM_POLL_US` (default
//! 20 µs) between polls while its rank's threads compute, spinning (with sched_yield)
//! while they are all blocked, but only for the spin time after the last message, then
//! sleeping again: a rank that waits long (at a barrier, for a slow peer) gives its CPU
//! back.
//!
//! When every rank is on this host, each send also rings the receiver's doorbell
//! ([`crate::doorbell`]), and a service thread whose threads compute, or that had no
//! message for [`SPIN`], sleeps in the kernel until one rings instead of polling: its
//! rank's compute thread keeps its CPU.
//! `NUMALAB_DSM_SPIN_US` sets that time; 0 sleeps at once. Measured (issue 43, 2-vCPU
//! VM, loaded, 3 interleaved runs each, `dsm run --input paper --protocol lmwc`):
//! sleeping at once made a remote fault 2.1–3.8 ms against 0.14–1.5 ms with 200 µs
//! (SOR 2.5 ms against 0.6 ms median, water-nsq 3.3 ms against 0.19 ms), and water-nsq
//! 12× slower: a woken thread waits for a CPU far longer than a polling one.
//!
//! A small message's sender rings before it sends. A small send (a few hundred bytes,
//! far below the eager limit) can still wait inside MPI_Send until the receiving
//! process progresses, and with the ring after the send the receiver slept on until its
//! doorbell's 2 ms timeout. Measured (issue 43, 2026-11-28, 2-vCPU VM, SWM at the
//! paper's input, 2 ranks × 1 thread, lmwc, timestamps around each send): 33 and 35
//! small sends per rank took over 1 ms (p99 1.95–2.02 ms, a home's Claimed and Owner
//! answers to first touches among them) with the ring after, none with it before (max
//! 122 µs). 3 interleaved rounds, medians, ring first against after: SWM speedup 1.09
//! against 0.57 (remote fault 212 against 742 µs), FFT 0.82 against 0.55, SOR 2.45
//! against 1.66 (parallel time 67.7 against 101.4 ms); water-nsq, ocean and barnes
//! within their spread.
//!
//! So a ring can come before its message shows; and Open MPI 4.1's shared-memory transport
//! (vader) lets one thread poll it at a time and answers every other thread's progress
//! with nothing meanwhile, so a service thread that probed while another thread of its
//! rank (compute, sender, now reaper) was inside MPI found no message, read the ring as
//! answered and slept on the doorbell to its timeout (2 ms). The service thread therefore counts the messages
//! it received against the rings and sleeps on the doorbell only when every ring has had
//! its message; otherwise it polls. Measured (issue 43, 2-vCPU VM, one core kept busy,
//! `scripts/dsm-sched.py --futex` on one SOR run, paper input, lmwc): rank 0's service
//! thread slept 5 times past a message already sent (8.8 ms together), rank 1's once
//! (2.1 ms), in a 130 ms run with 14 remote faults. With the count, 3 traced runs under the
//! same load: no lost ring (against 6, 4 and 2 in 3 runs before). Remote fault, one core
//! kept busy, medians of interleaved rounds on a VM whose other programs kept both vCPUs
//! busy (2026-11-28): 246 against 523 µs before (10 rounds; a build that also held an
//! unused priority ceiling, see [`crate::cores`]), 666 against 937 µs (5 rounds).
//!
//! While its rank's threads compute, a service thread with a doorbell does not poll
//! at all: it sleeps on the doorbell at once (unless a rung message has not shown up).
//! It used to poll after each message, backing off from the poll time until the spin
//! time was over, and each poll took the compute thread's CPU for ~13 µs (switches, a
//! timer, the probe): water-nsq's force loop ran 1.7–2× its CPU time in wall time. A
//! ring wakes a thread on a CPU another thread keeps busy in a median 24 µs round trip
//! here (against 41 µs on an idle vCPU, which halts). Measured (issue 43, 2026-11-28,
//! 2-vCPU VM, paper input, lmwc, 2 ranks × 1 thread, interleaved rounds, medians):
//! quiet, 8 rounds: SOR speedup 1.85 against 1.60 (remote fault 199 against 222 µs),
//! water-nsq parallel time 14.7 against 19.1 ms; one core kept busy, 5 rounds: SOR
//! 1.25 against 1.06 (fault 199 against 285 µs), water-nsq fault 398 against 607 µs.
//! Repeated: quiet, 10 rounds: SOR 2.12 against 1.61 (fault 156 against 199 µs),
//! water-nsq 0.26 against 0.20; busy, 8 rounds: SOR 1.06 against 1.07 (its CPU share
//! bounds it), fault 185 against 206 µs, water-nsq fault 359 against 455 µs.
//!
//! Both pollers back off: the service thread's polls while a rung message has not
//! shown up double from the poll time, and the tests of a page in flight (then a sender
//! thread's, now [`crate::flight`]'s reaper's) double from 10 to 160 µs. Each wake-up at their raised priority switches the
//! compute thread out: a 2-rank SOR run counted ~10,000 service and ~11,000–12,700
//! sender sleeps (`perf record -e sched:sched_switch`). Measured (2026-11-27, same VM,
//! host drifting: sequential SOR 110–206 ms between runs; 5 interleaved rounds, SOR,
//! paper input, lmwc): sender sleeps halved; compute threads' CPU median 135 ms with
//! both back-offs against 171 ms before (167 with the sender's alone; service threads
//! 22.6 against 33.6 ms); the speedups (medians 1.30 and 1.31) were not
//! distinguishable under that drift.
use crate::doorbell::Doorbell;
use crate::flight::Flight;
use crate::transport::Transport;
use mpi::collective::CommunicatorCollectives;
use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const TAG: i32 = 0x44534d;
const EAGER: usize = 1024;
/// Sleep between polls while the rank's threads compute (NUMALAB_DSM_POLL_US overrides).
const POLL_US: u64 = 20;
/// How long the service thread spins (its threads all blocked) after its last message
/// before it sleeps on the doorbell, or, without one, sleeps between polls like a
/// computing rank (`NUMALAB_DSM_SPIN_US` overrides).
pub const SPIN: Duration = Duration::from_micros(200);
/// How long the service thread probes again at once (spinning between probes) for a
/// rung message the probe did not find before it backs off to sleeping polls. Open
/// MPI's probe right after a doorbell wake missed the rung message in 63 of 403 wakes
/// (one water-nsq run, paper input) and found it a median 3–4 µs later, while the first
/// sleeping poll (20 µs asked, ~50 µs on this VM's timers) made each such request wait
/// ~50 µs more. Measured (issue 43, 2026-11-28, 2-vCPU VM, paper input, lmwc, 2 ranks ×
/// 1 thread, interleaved rounds, medians, with against without): quiet, 10 rounds: SOR
/// remote fault 156 against 180 µs, parallel time 98.8 against 106.8 ms, water-nsq
/// speedup 0.38 against 0.30; again 8 rounds: SOR fault 166 against 192 µs, water-nsq
/// 12.7 against 17.4 ms; one core kept busy, 8 rounds: SOR speedup 1.17 against 1.11
/// (fault 174 against 192 µs), water-nsq 25.6 against 33.4 ms. It spins without
/// yielding: a sched_yield let a computing thread of the rank take the CPU for the rest
/// of its slice, and a traced FFT run had the service thread off its CPU ~2 ms there;
/// 4 interleaved quiet rounds, spinning against yielding: FFT remote fault 308 against
/// 552 µs (parallel time 71.5 against 87.8 ms), SWM speedup 1.40 against 1.12, SOR and
/// water-nsq within their spread.
const OWED_SPIN: Duration = Duration::from_micros(60);

struct Comm(SimpleCommunicator);
// SAFETY: MPI was initialised with MPI_THREAD_MULTIPLE (checked in Mpi::new), under which
// any thread may call MPI on the communicator.
unsafe impl Send for Comm {}
unsafe impl Sync for Comm {}

/// One rank's MPI endpoint.
pub struct Mpi {
    comm: Arc<Comm>,
    rank: usize,
    size: usize,
    /// Large sends in flight, and the thread that sees them complete.
    flight: Arc<Flight>,
    reaper: Mutex<Option<JoinHandle<()>>>,
    computing: AtomicBool,
    poll: Duration,
    /// When the service thread last received a message or the threads last blocked
    /// (ns since `epoch`).
    last_msg_ns: AtomicU64,
    epoch: Instant,
    /// The doorbells, when every rank of the job is on this host.
    bell: Option<Arc<Doorbell>>,
    /// Times the service thread woke from a sleep or a doorbell wait.
    wakeups: AtomicU64,
    /// Polling and spinning after a message (see [`SPIN`]).
    spin: Duration,
    /// Messages the service thread received: with the doorbell's count of rings, says
    /// whether a rung message has not shown up yet (see [`Mpi::pending`]).
    got: AtomicU32,
}

impl Mpi {
    /// Wrap the world communicator; `multiple` says MPI granted MPI_THREAD_MULTIPLE.
    pub fn new(world: SimpleCommunicator, multiple: bool) -> Result<Mpi, String> {
        if !multiple {
            return Err("the MPI library does not provide MPI_THREAD_MULTIPLE, which the DSM's service thread needs".into());
        }
        let comm = Arc::new(Comm(world));
        let (rank, size) = (comm.0.rank() as usize, comm.0.size() as usize);
        let bell = Doorbell::open(&comm.0)
            .filter(|b| b.covers(size) && doorbell_wanted())
            .map(Arc::new);
        let flight = Arc::new(Flight::default());
        let f2 = flight.clone();
        // At the ordinary priority: its tests are not on a receiver's path (see
        // crate::flight), and at a raised one each would preempt the compute thread.
        let reaper = std::thread::Builder::new()
            .name("dsm-reaper".into())
            .spawn(move || f2.reaper())
            .map_err(|e| e.to_string())?;
        Ok(Mpi {
            comm,
            rank,
            size,
            flight,
            reaper: Mutex::new(Some(reaper)),
            computing: AtomicBool::new(false),
            poll: Duration::from_micros(
                numalab_results::envvars::whole("NUMALAB_DSM_POLL_US")?.unwrap_or(POLL_US),
            ),
            last_msg_ns: AtomicU64::new(0),
            epoch: Instant::now(),
            spin: spin_time()?,
            bell,
            wakeups: AtomicU64::new(0),
            got: AtomicU32::new(0),
        })
    }

    /// After the run: finish sending, then receive and drop stragglers until every rank
    /// is here, so no send is left waiting for a receiver that stopped.
    pub fn shutdown(&self) {
        self.flight.stop();
        if let Some(h) = self.reaper.lock().unwrap().take() {
            let _ = h.join();
        }
        let mut req = self.comm.0.immediate_barrier();
        loop {
            while let Some(ms) = self
                .comm
                .0
                .any_process()
                .immediate_matched_probe_with_tag(TAG)
            {
                let _ = ms.matched_receive_vec::<u8>();
            }
            match req.test() {
                Ok(_) => break,
                Err(r) => req = r,
            }
            std::thread::yield_now();
        }
    }
}

/// Whether the doorbell may be used (`NUMALAB_DSM_DOORBELL=off` polls as before, to
/// compare; the value was checked when numalab started).
fn doorbell_wanted() -> bool {
    numalab_results::envvars::choice("NUMALAB_DSM_DOORBELL")
        .ok()
        .flatten()
        .is_none_or(|v| v != "off")
}

/// How long to poll and spin after a message: [`SPIN`] unless `NUMALAB_DSM_SPIN_US`
/// says otherwise.
fn spin_time() -> Result<Duration, String> {
    Ok(numalab_results::envvars::whole("NUMALAB_DSM_SPIN_US")?.map_or(SPIN, Duration::from_micros))
}

/// More of `rung` rings than of `got` messages, both counted from 0 and wrapping; a
/// message received before its ring (the sender rings after sending) is not a ring owed.
fn unanswered(rung: u32, got: u32) -> bool {
    (rung.wrapping_sub(got) as i32) > 0
}

impl Mpi {
    fn touch(&self) {
        self.last_msg_ns
            .store(self.epoch.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// Spinning pays while a reply is due soon after the last message; past the spin
    /// time the rank sleeps between polls like a computing one.
    fn may_spin(&self) -> bool {
        !self.computing.load(Ordering::Relaxed) && self.recent()
    }

    /// Whether more rings came than messages were received: a peer sent a message (each
    /// send rings once, after it) that the probe did not find. Open MPI's shared-memory
    /// transport lets one thread poll it at a time (others' probes find nothing
    /// meanwhile), so a probe misses a message while another thread of this rank is
    /// inside MPI, and a wait on the doorbell would then last its whole timeout.
    fn pending(&self, rung: u32) -> bool {
        unanswered(rung, self.got.load(Ordering::Relaxed))
    }

    /// A message came (or the threads blocked) less than the spin time ago.
    fn recent(&self) -> bool {
        if self.spin.is_zero() {
            return false;
        }
        let since = (self.epoch.elapsed().as_nanos() as u64)
            .saturating_sub(self.last_msg_ns.load(Ordering::Relaxed));
        since < self.spin.as_nanos() as u64
    }
}

impl Transport for Mpi {
    fn rank(&self) -> usize {
        self.rank
    }
    fn ranks(&self) -> usize {
        self.size
    }
    fn send(&self, to: usize, bytes: Vec<u8>) {
        // Small messages go out at once: far below every Open MPI eager limit, so the
        // send needs no matching receive. Pages are started here and left in flight. A
        // small send's ring comes first: the send can still wait for the receiver to
        // progress (see the module docs), and a receiver asleep on its doorbell would
        // not until rung; a page's comes once it is started.
        if bytes.len() <= EAGER {
            if let Some(bell) = &self.bell {
                bell.ring(to);
            }
            self.comm
                .0
                .process_at_rank(to as i32)
                .send_with_tag(&bytes[..], TAG);
            return;
        }
        self.flight.start(&self.comm.0, to, TAG, bytes);
        if let Some(bell) = &self.bell {
            bell.ring(to);
        }
    }
    fn set_computing(&self, on: bool) {
        self.computing.store(on, Ordering::Relaxed);
        if !on {
            // The threads just blocked: a reply is due, spin for it.
            self.touch();
        }
    }
    fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }
    fn barrier(&self) {
        self.comm.0.barrier();
    }
    fn recv(&self, wait: Duration) -> Option<(usize, Vec<u8>)> {
        let t0 = Instant::now();
        let mut owed_since: Option<Instant> = None;
        let mut pause = self.poll;
        loop {
            let seen = self.bell.as_ref().map(|b| b.seen());
            if let Some(ms) = self
                .comm
                .0
                .any_process()
                .immediate_matched_probe_with_tag(TAG)
            {
                let (b, st) = ms.matched_receive_vec::<u8>();
                self.touch();
                self.got.fetch_add(1, Ordering::Relaxed);
                return Some((st.source_rank() as usize, b));
            }
            if t0.elapsed() >= wait {
                return None;
            }
            if self.may_spin() {
                std::thread::yield_now();
                continue;
            }
            // A rung message the probe did not find usually shows within a few µs:
            // probe again at once for a little while ([`OWED_SPIN`]), keeping the CPU:
            // a sched_yield here handed it to a computing thread of the rank for its
            // whole slice (~2 ms, while a peer waited on the message).
            if seen.is_some_and(|seen| self.pending(seen))
                && owed_since.get_or_insert_with(Instant::now).elapsed() < OWED_SPIN
            {
                std::hint::spin_loop();
                continue;
            }
            self.wakeups.fetch_add(1, Ordering::Relaxed);
            match (&self.bell, seen) {
                // Every ring answered by a message, and the threads computing or quiet
                // for the spin time: sleep until a peer rings (or the wait is over). A
                // ring wakes this thread on a CPU its compute thread keeps busy in about
                // 24 µs, with no polls taking that CPU meanwhile (see the module docs).
                (Some(b), Some(seen))
                    if (self.computing.load(Ordering::Relaxed) || !self.recent())
                        && !self.pending(seen) =>
                {
                    if b.wait(seen, wait.saturating_sub(t0.elapsed())) {
                        self.touch();
                    }
                }
                // A rung message that has not shown up past the probes above: a thread
                // inside MPI holds it back, so poll, backing off (20, 40, 80 µs…).
                (Some(_), Some(_)) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(self.spin.max(self.poll));
                }
                // No doorbell (ranks on other hosts): poll gently at a steady pace.
                _ => std::thread::sleep(self.poll),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::unanswered;

    #[test]
    fn a_ring_is_owed_only_while_rings_outnumber_messages() {
        assert!(!unanswered(0, 0));
        assert!(unanswered(3, 2), "a rung message not received yet");
        assert!(!unanswered(2, 3), "received before its ring landed");
        assert!(unanswered(1, u32::MAX), "across the wrap");
        assert!(!unanswered(u32::MAX, 1));
    }
}
