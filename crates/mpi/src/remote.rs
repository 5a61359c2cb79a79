//! EARTH's remote operations between two ranks: remote load and store as RMA get and
//! put, block moves, and remote call and spawn as active messages to a server loop on
//! the remote rank — each sequential (wait for each) or pipelined (issue all, then
//! wait) — plus the issuer's and server's share of a request, one request's steps,
//! and G outstanding gets. The issuer returns ns per operation per pass.

use crate::error::Result;
use crate::raw::{Requests, Window};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use numalab_probe::Timer;

const CALL: i32 = 11;
const SPAWN: i32 = 12;
const STOP: i32 = 13;
const REPLY: i32 = 14;

/// The function a remote call or spawned thread runs: a little dependent work the
/// compiler cannot fold, so the reply carries a result that proves it ran.
#[inline(never)]
pub fn work(x: u64) -> u64 {
    let mut h = std::hint::black_box(x) ^ 0x9E37_79B9_7F4A_7C15;
    for _ in 0..4 {
        h = (h ^ (h >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }
    h
}

/// Whether the issuer waits for each operation or issues them all first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mode {
    /// Each operation completes before the next starts.
    Sequential,
    /// All are issued, then all are completed.
    Pipelined,
}

/// What the server measured about itself: ns per request handled (receive returned →
/// reply sent), per pass.
pub type ServerCost = Vec<f64>;

/// The server loop: answers CALL with work(arg), SPAWN by running work(arg) in a new
/// coroutine on a pooled stack, until STOP. Returns its handling time per request, per
/// `batch` requests.
fn serve(comm: &SimpleCommunicator, timer: &Timer, issuer: usize, batch: usize) -> ServerCost {
    let peer = comm.process_at_rank(issuer as i32);
    let mut stack = Some(DefaultStack::new(64 * 1024).expect("a 64 KiB stack"));
    let mut costs = Vec::new();
    let (mut acc, mut n) = (0.0, 0usize);
    loop {
        let mut arg = [0u64; 1];
        let st = peer.receive_into(&mut arg[..]);
        let t0 = timer.start();
        let tag = st.tag();
        if tag == STOP {
            break;
        }
        let v = if tag == SPAWN {
            let s = stack
                .take()
                .expect("the pooled stack is returned after each spawn");
            let a = arg[0];
            let mut co = Coroutine::with_stack(s, move |_: &Yielder<(), ()>, ()| work(a));
            let r = match co.resume(()) {
                CoroutineResult::Return(v) => v,
                CoroutineResult::Yield(()) => unreachable!("the body never yields"),
            };
            stack = Some(co.into_stack());
            r
        } else {
            work(arg[0])
        };
        peer.send_with_tag(&[v][..], REPLY);
        acc += timer.ns(timer.stop().saturating_sub(t0));
        n += 1;
        if n == batch {
            costs.push(acc / batch as f64);
            acc = 0.0;
            n = 0;
        }
    }
    costs
}

/// Active messages from `issuer` to `server`: `n` calls (or spawns) per pass, `passes`
/// passes after one warm-up pass. The issuer gets ns per operation per pass and the
/// time its send calls took (the issuer's overhead); the server its handling cost.
pub struct AmResult {
    /// Issuer: ns per operation, per pass.
    pub per_op: Vec<f64>,
    /// Issuer: ns per request spent in the send call alone, per pass.
    pub issue: Vec<f64>,
    /// Server: ns per request handled, per pass (on the server rank).
    pub server: Vec<f64>,
}

/// Remote call or spawn by active message (collective over the pair; others return at once).
#[allow(clippy::too_many_arguments)]
pub fn active_messages(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (issuer, server): (usize, usize),
    spawn: bool,
    mode: Mode,
    n: usize,
    passes: usize,
) -> Result<AmResult> {
    let me = comm.rank() as usize;
    let mut out = AmResult {
        per_op: vec![],
        issue: vec![],
        server: vec![],
    };
    if me == server {
        out.server = serve(comm, timer, issuer, n);
        out.server.drain(..out.server.len().min(1)); // the warm-up pass
    } else if me == issuer {
        let peer = comm.process_at_rank(server as i32);
        let tag = if spawn { SPAWN } else { CALL };
        for pass in 0..=passes {
            let mut issue = 0.0;
            let mut last = 0u64;
            let t0 = timer.start();
            match mode {
                Mode::Sequential => {
                    for i in 0..n {
                        // Each call takes the previous result, as EARTH's sequential use does.
                        let a = [last ^ i as u64];
                        let s0 = timer.start();
                        peer.send_with_tag(&a[..], tag);
                        issue += timer.ns(timer.stop().saturating_sub(s0));
                        let mut r = [0u64];
                        peer.receive_into_with_tag(&mut r[..], REPLY);
                        if r[0] != work(a[0]) {
                            return Err(crate::Error::System(format!(
                                "remote {} returned a wrong result",
                                if spawn { "spawn" } else { "call" }
                            )));
                        }
                        last = r[0];
                    }
                }
                Mode::Pipelined => {
                    let args: Vec<u64> = (0..n as u64).collect();
                    for a in &args {
                        let s0 = timer.start();
                        peer.send_with_tag(std::slice::from_ref(a), tag);
                        issue += timer.ns(timer.stop().saturating_sub(s0));
                    }
                    for a in &args {
                        let mut r = [0u64];
                        peer.receive_into_with_tag(&mut r[..], REPLY);
                        if r[0] != work(*a) {
                            return Err(crate::Error::System(
                                "a pipelined remote call returned a wrong result".into(),
                            ));
                        }
                    }
                }
            }
            let t = timer.ns(timer.stop().saturating_sub(t0));
            if pass > 0 {
                out.per_op.push(t / n as f64);
                out.issue.push(issue / n as f64);
            }
        }
        peer.send_with_tag(&[0u64][..], STOP);
    }
    comm.barrier();
    Ok(out)
}

/// One-sided operation for [`rma_ops`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Rma {
    /// MPI_Get of `bytes`.
    Get,
    /// MPI_Put of `bytes`.
    Put,
}

/// Remote (or, with target = issuer, local) loads/stores/block moves as RMA: `n`
/// operations of `bytes` per pass at distinct offsets, sequential (flush after each)
/// or pipelined (one flush after all). Issuer gets ns per operation per pass.
#[allow(clippy::too_many_arguments)]
pub fn rma_ops(
    comm: &SimpleCommunicator,
    timer: &Timer,
    issuer: usize,
    target: usize,
    op: Rma,
    bytes: usize,
    mode: Mode,
    n: usize,
    passes: usize,
) -> Result<Vec<f64>> {
    let me = comm.rank() as usize;
    let stride = bytes.next_multiple_of(64);
    let mut win = Window::allocate(comm, stride * n)?;
    if me == target {
        for (i, b) in win.local().iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
    }
    comm.barrier();
    let mut out = Vec::new();
    if me == issuer {
        let mut buf = vec![0u8; stride * n];
        win.lock(target, false)?;
        for pass in 0..=passes {
            let t0 = timer.start();
            for i in 0..n {
                let at = i * stride;
                match op {
                    Rma::Get => win.get(target, at, &mut buf[at..at + bytes])?,
                    Rma::Put => win.put(target, at, &buf[at..at + bytes])?,
                }
                if mode == Mode::Sequential {
                    win.flush(target)?;
                }
            }
            win.flush(target)?;
            let t = timer.ns(timer.stop().saturating_sub(t0));
            if pass > 0 {
                out.push(t / n as f64);
            }
        }
        win.unlock(target)?;
        if op == Rma::Get {
            let ok = (0..n)
                .all(|i| (0..bytes).all(|k| buf[i * stride + k] == ((i * stride + k) % 251) as u8));
            if !ok {
                return Err(crate::Error::System(
                    "a remote load returned wrong bytes".into(),
                ));
            }
        }
    }
    comm.barrier();
    drop(win);
    Ok(out)
}

/// G outstanding gets of 8 bytes at scattered offsets of `target`'s window: per pass,
/// `total` gets in rounds of G (issue G MPI_Rget, wait for all); ns per get.
#[allow(clippy::too_many_arguments)]
pub fn mlp_gets(
    comm: &SimpleCommunicator,
    timer: &Timer,
    (issuer, target): (usize, usize),
    g: usize,
    total: usize,
    window_bytes: usize,
    passes: usize,
) -> Result<Vec<f64>> {
    let me = comm.rank() as usize;
    let win = Window::allocate(comm, window_bytes)?;
    comm.barrier();
    let mut out = Vec::new();
    if me == issuer {
        let lines = (window_bytes / 64).max(1);
        let mut bufs = vec![0u8; 8 * g];
        let mut reqs = Requests::with_capacity(g);
        win.lock_all()?;
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for pass in 0..=passes {
            let rounds = total.div_ceil(g);
            let t0 = timer.start();
            for _ in 0..rounds {
                for chunk in bufs.chunks_exact_mut(8) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let at = (x as usize % lines) * 64;
                    // SAFETY: chunk lives in bufs, untouched until wait_all below.
                    unsafe { win.rget(target, at, chunk, &mut reqs)? };
                }
                reqs.wait_all()?;
            }
            let t = timer.ns(timer.stop().saturating_sub(t0));
            if pass > 0 {
                out.push(t / (rounds * g) as f64);
            }
        }
        win.unlock_all()?;
    }
    comm.barrier();
    drop(win);
    Ok(out)
}
