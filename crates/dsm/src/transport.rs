//! How ranks exchange bytes: a small trait, with an in-process mesh for tests.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;
use std::time::Duration;

/// Point-to-point bytes between ranks; `recv` is called by the service thread only.
pub trait Transport: Send + Sync {
    /// This rank.
    fn rank(&self) -> usize;
    /// Ranks in the job.
    fn ranks(&self) -> usize;
    /// Send without waiting for the receiver.
    fn send(&self, to: usize, bytes: Vec<u8>);
    /// The rank's threads start (true) or stop (false) computing; a polling transport
    /// polls gently while they compute.
    fn set_computing(&self, _on: bool) {}
    /// The next message, waiting at most `wait`.
    fn recv(&self, wait: Duration) -> Option<(usize, Vec<u8>)>;
    /// Wait until every rank is here (the timed section starts together on every rank;
    /// a transport whose ranks start together needs nothing).
    fn barrier(&self) {}
    /// Times the service thread woke to poll or from a doorbell (0 where it blocks on
    /// the wire itself).
    fn wakeups(&self) -> u64 {
        0
    }
}

/// One rank's end of an in-process mesh (ranks are OS threads of one process).
pub struct Local {
    rank: usize,
    to: Vec<Sender<(usize, Vec<u8>)>>,
    rx: Mutex<Receiver<(usize, Vec<u8>)>>,
}

impl Local {
    /// A full mesh of `n` ranks.
    pub fn mesh(n: usize) -> Vec<Local> {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..n).map(|_| channel()).unzip();
        rxs.into_iter()
            .enumerate()
            .map(|(rank, rx)| Local {
                rank,
                to: txs.clone(),
                rx: Mutex::new(rx),
            })
            .collect()
    }
}

impl Transport for Local {
    fn rank(&self) -> usize {
        self.rank
    }
    fn ranks(&self) -> usize {
        self.to.len()
    }
    fn send(&self, to: usize, bytes: Vec<u8>) {
        // A peer that already finished has dropped its receiver; nothing waits for it.
        let _ = self.to[to].send((self.rank, bytes));
    }
    fn recv(&self, wait: Duration) -> Option<(usize, Vec<u8>)> {
        self.rx.lock().unwrap().recv_timeout(wait).ok()
    }
}

impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    fn rank(&self) -> usize {
        (**self).rank()
    }
    fn ranks(&self) -> usize {
        (**self).ranks()
    }
    fn send(&self, to: usize, bytes: Vec<u8>) {
        (**self).send(to, bytes)
    }
    fn set_computing(&self, on: bool) {
        (**self).set_computing(on)
    }
    fn recv(&self, wait: Duration) -> Option<(usize, Vec<u8>)> {
        (**self).recv(wait)
    }
    fn wakeups(&self) -> u64 {
        (**self).wakeups()
    }
    fn barrier(&self) {
        (**self).barrier()
    }
}
