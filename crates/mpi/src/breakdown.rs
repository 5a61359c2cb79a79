//! One remote load between ranks, stage by stage (EARTH's Table 4): the issuer's
//! thread (a coroutine) sends a request to a server loop on the remote rank and
//! yields; the server sees the request (MPI_Probe), reads it (MPI_Recv), loads the
//! word and sends it back; the issuer sees and reads the reply, stores the result,
//! marks the thread ready and resumes it. Every step is stamped on the rank that does
//! it, so each stage is a difference of two stamps, not a remainder. The two
//! transfers span ranks: they are stamped only where both ranks read one clock (one
//! host); elsewhere the caller derives them and says so.
//!
//! Also the same load as one-sided RMA: MPI_Get (origin-side injection) and
//! MPI_Win_flush (transfer and completion), each timed; the target's CPU takes no
//! part (passive target), which is the point of comparison.

use crate::error::{Error, Result};
use crate::raw::Window;
use crate::remote::work;
use corosensei::{CoroutineResult, ScopedCoroutine, Yielder};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use numalab_probe::Timer;
use std::cell::{Cell, RefCell};

const REQ: i32 = 21;
const REPLY: i32 = 22;
const STOP: i32 = 23;

/// Stamps of one request on the issuer, in timer ticks.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct IssuerStamps {
    /// Before MPI_Send of the request.
    pub send: u64,
    /// MPI_Send returned.
    pub sent: u64,
    /// MPI_Probe saw the reply.
    pub seen: u64,
    /// MPI_Recv of the reply returned.
    pub read: u64,
    /// The result is stored in the thread's slot and the thread marked ready.
    pub stored: u64,
    /// The thread runs again (first instruction after its yield).
    pub resumed: u64,
}

/// Stamps of one request on the server, in timer ticks.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct ServerStamps {
    /// MPI_Probe saw the request.
    pub seen: u64,
    /// MPI_Recv of the request returned.
    pub read: u64,
    /// The word is loaded.
    pub loaded: u64,
    /// MPI_Send of the reply returned.
    pub sent: u64,
}

/// What the issuer gets back: both ranks' stamps per request (warm-up dropped).
#[derive(Debug, Clone, Default)]
pub struct Stamps {
    /// The issuer's stamps.
    pub issuer: Vec<IssuerStamps>,
    /// The server's stamps for the same requests.
    pub server: Vec<ServerStamps>,
}

/// `n` remote loads of 8 B at random lines of the server's `buffer_bytes` buffer, one
/// at a time (collective over the job; other ranks only join the final gather). The
/// issuer gets both ranks' stamps; others get empty stamps.
pub fn remote_load_stages(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (issuer, server): (usize, usize),
    n: usize,
    buffer_bytes: usize,
) -> Result<Stamps> {
    let me = comm.rank() as usize;
    let warm = n / 10 + 1;
    let mut mine_server: Vec<ServerStamps> = Vec::new();
    let mut mine_issuer: Vec<IssuerStamps> = Vec::new();
    if me == server {
        mine_server = serve(comm, timer, issuer, buffer_bytes);
    } else if me == issuer {
        mine_issuer = issue(comm, timer, server, n + warm, buffer_bytes)?;
    }
    // The server's stamps travel to the issuer as plain numbers.
    let all = crate::gather::gather_to_root(comm, &mine_server)?;
    let server_stamps: Vec<ServerStamps> = if me == 0 {
        all.map(|mut v| std::mem::take(&mut v[server]))
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    // Rank 0 forwards them when the issuer is not rank 0.
    let server_stamps = if issuer == 0 {
        server_stamps
    } else if me == 0 {
        let bytes = serde_json::to_vec(&server_stamps)
            .map_err(|e| Error::System(format!("serialising stamps: {e}")))?;
        comm.process_at_rank(issuer as i32).send(&bytes[..]);
        Vec::new()
    } else if me == issuer {
        let (bytes, _) = comm.process_at_rank(0).receive_vec::<u8>();
        serde_json::from_slice(&bytes)
            .map_err(|e| Error::System(format!("rank 0 sent bad stamps: {e}")))?
    } else {
        Vec::new()
    };
    comm.barrier();
    if me != issuer {
        return Ok(Stamps::default());
    }
    if server_stamps.len() != mine_issuer.len() {
        return Err(Error::System(format!(
            "the server stamped {}, the issuer {}",
            numalab_results::words::count(server_stamps.len() as u64, "request"),
            mine_issuer.len()
        )));
    }
    Ok(Stamps {
        issuer: mine_issuer.split_off(warm.min(mine_issuer.len())),
        server: server_stamps[warm.min(server_stamps.len())..].to_vec(),
    })
}

/// Index of the line a request asks for: a scrambled sequence, so neither rank's
/// prefetcher walks the buffer ahead of the requests.
fn line_of(i: u64, lines: u64) -> u64 {
    (work(i) >> 7) % lines
}

fn serve(
    comm: &SimpleCommunicator,
    timer: &Timer,
    issuer: usize,
    buffer_bytes: usize,
) -> Vec<ServerStamps> {
    let peer = comm.process_at_rank(issuer as i32);
    let words: Vec<u64> = (0..(buffer_bytes / 8).max(8) as u64).map(work).collect();
    let mut out = Vec::new();
    loop {
        let st = peer.probe();
        let seen = timer.stop();
        let mut req = [0u64; 1];
        peer.receive_into_with_tag(&mut req[..], st.tag());
        let read = timer.stop();
        if st.tag() == STOP {
            break;
        }
        // The issuer asks for a line below the buffer's line count.
        let v = std::hint::black_box(words[(req[0] as usize * 8) % words.len()]);
        let loaded = timer.stop();
        peer.send_with_tag(&[v][..], REPLY);
        let sent = timer.stop();
        out.push(ServerStamps {
            seen,
            read,
            loaded,
            sent,
        });
    }
    out
}

/// The issuer: one thread (a coroutine) issues the loads one after another, yielding
/// after each request; the scheduler loop waits for the reply, stores it in the
/// thread's slot, marks it ready and resumes it.
fn issue(
    comm: &SimpleCommunicator,
    timer: &Timer,
    server: usize,
    n: usize,
    buffer_bytes: usize,
) -> Result<Vec<IssuerStamps>> {
    let peer = comm.process_at_rank(server as i32);
    let lines = ((buffer_bytes / 8).max(8) / 8) as u64;
    let slot: Cell<u64> = Cell::new(0);
    let ready: Cell<bool> = Cell::new(false);
    // The thread's side of each request: its send stamps, then its resume stamp.
    let mine: RefCell<Vec<IssuerStamps>> = RefCell::new(Vec::with_capacity(n));
    let bad: Cell<Option<u64>> = Cell::new(None);
    let thread = ScopedCoroutine::new(|y: &Yielder<(), ()>, ()| {
        for i in 0..n as u64 {
            let line = line_of(i, lines);
            let send = timer.start();
            peer.send_with_tag(&[line][..], REQ);
            let sent = timer.stop();
            y.suspend(());
            let resumed = timer.stop();
            if !ready.replace(false) || slot.get() != work(line * 8) {
                bad.set(Some(i));
            }
            mine.borrow_mut().push(IssuerStamps {
                send,
                sent,
                resumed,
                ..Default::default()
            });
        }
    });
    let mut sched = Vec::with_capacity(n);
    thread.scope(|mut t| {
        while let CoroutineResult::Yield(()) = t.as_mut().resume(()) {
            peer.probe_with_tag(REPLY);
            let seen = timer.stop();
            let mut r = [0u64; 1];
            peer.receive_into_with_tag(&mut r[..], REPLY);
            let read = timer.stop();
            slot.set(r[0]);
            ready.set(true);
            let stored = timer.stop();
            sched.push((seen, read, stored));
        }
    });
    peer.send_with_tag(&[0u64][..], STOP);
    if let Some(i) = bad.get() {
        return Err(Error::System(format!(
            "remote load {i} returned a wrong word from rank {server}"
        )));
    }
    let mut out = mine.into_inner();
    for (s, (seen, read, stored)) in out.iter_mut().zip(sched) {
        s.seen = seen;
        s.read = read;
        s.stored = stored;
    }
    Ok(out)
}

/// One-sided form: per load, ns in MPI_Get and ns in MPI_Win_flush (issuer only).
pub struct RmaStages {
    /// ns inside MPI_Get (origin-side injection).
    pub get: Vec<f64>,
    /// ns inside MPI_Win_flush (transfer and completion).
    pub flush: Vec<f64>,
}

/// `n` remote loads of 8 B as MPI_Get + MPI_Win_flush at scrambled lines of the
/// target's window, each call timed (collective).
pub fn rma_load_stages(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (issuer, target): (usize, usize),
    n: usize,
    window_bytes: usize,
) -> Result<RmaStages> {
    let me = comm.rank() as usize;
    let mut win = Window::allocate(comm, window_bytes.max(64))?;
    let lines = (window_bytes.max(64) / 64) as u64;
    if me == target {
        for (i, w) in win.local().chunks_exact_mut(8).enumerate() {
            w.copy_from_slice(&work(i as u64).to_ne_bytes());
        }
    }
    comm.barrier();
    let mut out = RmaStages {
        get: vec![],
        flush: vec![],
    };
    if me == issuer {
        let warm = n / 10 + 1;
        win.lock(target, false)?;
        let mut buf = [0u8; 8];
        for i in 0..(n + warm) as u64 {
            let at = line_of(i, lines) as usize * 64;
            let t0 = timer.start();
            win.get(target, at, &mut buf)?;
            let t1 = timer.stop();
            win.flush(target)?;
            let t2 = timer.stop();
            if u64::from_ne_bytes(buf) != work(at as u64 / 8) {
                win.unlock(target)?;
                return Err(Error::System(format!(
                    "MPI_Get {i} returned a wrong word from rank {target}"
                )));
            }
            if i >= warm as u64 {
                out.get.push(timer.ns(t1.saturating_sub(t0)));
                out.flush.push(timer.ns(t2.saturating_sub(t1)));
            }
        }
        win.unlock(target)?;
    }
    comm.barrier();
    drop(win);
    Ok(out)
}
