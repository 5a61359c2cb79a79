//! A doorbell per rank for the ranks of one host: a futex word in a small shared-memory
//! file, rung by a sender after each message, so the receiving rank's service thread can
//! sleep in the kernel until a message comes instead of waking every few µs to poll
//! MPI (Open MPI's shared-memory transport has no blocking receive).
//!
//! Why (measured, issue 43): polling every 20 µs while the rank computes woke the service
//! thread ~50,000 times a second; at a raised priority each wake preempted the compute
//! thread on its CPU, and SOR's compute time per rank at the paper's input doubled
//! (277–294 ms for half the grid against 147 ms for the whole sequential program).
//!
//! A ring is only a hint: the waiter reads its word, probes MPI, and sleeps only while
//! the word is unchanged, with a timeout, so a ring lost (a peer without a doorbell, a
//! peer on another host) costs at most that timeout, never correctness.

use mpi::collective::{CommunicatorCollectives, SystemOperation};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Bytes between two ranks' words: one cache line each, so a ring to one rank does not
/// disturb another's.
const STRIDE: usize = 64;
/// Longest shared-memory name passed between the ranks.
const NAME: usize = 64;

/// This rank's view of its host's doorbells.
pub struct Doorbell {
    base: *mut u8,
    len: usize,
    /// World rank → slot in the file, for the ranks on this host.
    slot: Vec<Option<usize>>,
    mine: usize,
}

// SAFETY: the mapping is process-wide shared memory used only through atomics.
unsafe impl Send for Doorbell {}
unsafe impl Sync for Doorbell {}

impl Doorbell {
    /// Set up the doorbells of the ranks on this host (collective over `world`). None
    /// where the shared file cannot be had: the rank then polls as before.
    pub fn open(world: &SimpleCommunicator) -> Option<Doorbell> {
        let node = world.split_shared(world.rank());
        let n = node.size() as usize;
        let me = world.rank();
        let mut ranks = vec![0i32; n];
        node.all_gather_into(&me, &mut ranks[..]);
        let len = (n * STRIDE).max(4096);
        let mut name = [0u8; NAME];
        let leader = node.rank() == 0;
        let mut base = None;
        if leader {
            // Made before its name goes out, so every other rank finds it; an empty
            // name tells them there is none.
            let s = format!("/numalab-dsm-{}-{}", std::process::id(), unique());
            name[..s.len()].copy_from_slice(s.as_bytes());
            base = map(&name, true, len);
            if base.is_none() {
                name = [0u8; NAME];
            }
        }
        node.process_at_rank(0).broadcast_into(&mut name[..]);
        if !leader {
            base = map(&name, false, len);
        }
        // Everyone has opened it or failed to (another /dev/shm, say): the name can go,
        // the mapping stays, and the doorbells are used only where every rank has them,
        // or a rank would sleep waiting for rings that never come.
        let mut all = 0i32;
        node.all_reduce_into(&(base.is_some() as i32), &mut all, SystemOperation::min());
        if leader && name[0] != 0 {
            // SAFETY: a NUL-terminated name of our own making.
            unsafe { libc::shm_unlink(name.as_ptr() as *const libc::c_char) };
        }
        if all == 0 {
            if let Some(b) = base {
                // SAFETY: our own mapping, unused.
                unsafe { libc::munmap(b as *mut _, len) };
            }
            return None;
        }
        let base = base?;
        let mut slot = vec![None; world.size() as usize];
        for (i, &r) in ranks.iter().enumerate() {
            slot[r as usize] = Some(i);
        }
        let mine = slot[me as usize]?;
        Some(Doorbell {
            base,
            len,
            slot,
            mine,
        })
    }

    fn word(&self, i: usize) -> &AtomicU32 {
        // SAFETY: i < ranks on this host, so the word is inside the mapping, aligned.
        unsafe { &*(self.base.add(i * STRIDE) as *const AtomicU32) }
    }

    /// Whether every rank of the job is on this host (every message rings).
    pub fn covers(&self, ranks: usize) -> bool {
        self.slot.len() == ranks && self.slot.iter().all(Option::is_some)
    }

    /// Tell rank `to` (world rank) a message is on its way; nothing for other hosts.
    pub fn ring(&self, to: usize) {
        let Some(Some(i)) = self.slot.get(to) else {
            return;
        };
        let w = self.word(*i);
        w.fetch_add(1, Ordering::SeqCst);
        futex(w, libc::FUTEX_WAKE, 1, None);
    }

    /// This rank's word now: read before probing, handed to [`Doorbell::wait`].
    pub fn seen(&self) -> u32 {
        self.word(self.mine).load(Ordering::SeqCst)
    }

    /// Sleep until this rank's word moves past `seen` or `timeout` passes; true when it
    /// moved (a ring came).
    pub fn wait(&self, seen: u32, timeout: Duration) -> bool {
        let w = self.word(self.mine);
        if w.load(Ordering::SeqCst) != seen {
            return true;
        }
        futex(w, libc::FUTEX_WAIT, seen, Some(timeout));
        w.load(Ordering::SeqCst) != seen
    }
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        // SAFETY: our own mapping.
        unsafe { libc::munmap(self.base as *mut _, self.len) };
    }
}

/// A number no other job on this host picks at the same moment with the same pid.
fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Map the shared file `name` (NUL-padded), creating it on the leader.
fn map(name: &[u8; NAME], leader: bool, len: usize) -> Option<*mut u8> {
    if name[0] == 0 {
        return None;
    }
    let flags = if leader {
        libc::O_RDWR | libc::O_CREAT | libc::O_EXCL
    } else {
        libc::O_RDWR
    };
    // SAFETY: plain system calls on a NUL-terminated name and a descriptor we own.
    unsafe {
        let fd = libc::shm_open(name.as_ptr() as *const libc::c_char, flags, 0o600);
        if fd < 0 {
            return None;
        }
        if leader && libc::ftruncate(fd, len as libc::off_t) != 0 {
            libc::close(fd);
            return None;
        }
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        libc::close(fd);
        (p != libc::MAP_FAILED).then_some(p as *mut u8)
    }
}

/// FUTEX_WAIT (with a relative timeout) or FUTEX_WAKE on a word shared between processes
/// (so not FUTEX_PRIVATE_FLAG).
fn futex(w: &AtomicU32, op: i32, val: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: the word lives in a mapping that outlives the call; the timeout, when
    // given, points to a timespec on this stack.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            w.as_ptr(),
            op,
            val,
            tp,
            std::ptr::null::<u32>(),
            0,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Doorbells of `n` ranks in one process, rank `mine`'s view (ranks past `local`
    /// are on "another host": no slot).
    fn bells(n: usize, local: usize, mine: usize) -> Doorbell {
        let len = 4096;
        // SAFETY: a fresh anonymous shared mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        Doorbell {
            base: p as *mut u8,
            len,
            slot: (0..n).map(|r| (r < local).then_some(r)).collect(),
            mine,
        }
    }

    #[test]
    fn a_ring_ends_a_wait_and_no_ring_times_out() {
        let b = bells(3, 2, 0);
        assert!(!b.covers(3), "rank 2 is on another host");
        let seen = b.seen();
        let t = Instant::now();
        assert!(!b.wait(seen, Duration::from_millis(5)), "nobody rang");
        assert!(t.elapsed() >= Duration::from_millis(4));
        b.ring(0);
        // Rung before the wait: it returns at once, whatever the timeout.
        assert!(b.wait(seen, Duration::from_secs(60)));
        assert_eq!(b.seen(), seen.wrapping_add(1));
        // Another rank's ring and a ring to another host leave this word alone.
        let seen = b.seen();
        b.ring(1);
        b.ring(2);
        b.ring(7);
        assert_eq!(b.seen(), seen);
    }

    #[test]
    fn a_ring_from_another_thread_wakes_a_sleeping_waiter() {
        let b = std::sync::Arc::new(bells(2, 2, 1));
        let seen = b.seen();
        let b2 = b.clone();
        let ringer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            b2.ring(1);
        });
        // Woken by the ring, long before the minute is out.
        assert!(b.wait(seen, Duration::from_secs(60)));
        ringer.join().unwrap();
    }
}
