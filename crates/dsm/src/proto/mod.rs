//! Consistency protocols behind one interface (the seed's Page/Protocol split): each
//! keeps its own per-page state; the core calls it on faults, releases, acquires and
//! protocol messages, always with the rank's state lock held.

pub mod ahead;
pub mod classify;
pub mod lmw;
pub mod lsw;
pub mod seq;
pub mod single;

use crate::msg::{Interval, Msg};
use crate::state::Core;
use serde::{Deserialize, Serialize};

/// The protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProtocolKind {
    /// Lazy release consistency, multiple writers (twins and diffs).
    Lmw,
    /// Lazy release consistency, single writer (whole pages, ownership moves).
    Lsw,
    /// Sequential consistency, single writer (invalidate every copy on a write).
    Seq,
    /// LMW with pages classified by who touches them (after ArgoDSM's Pyxis directory):
    /// no twins, diffs, notices or invalidation for a page only one rank touches.
    Lmwc,
}

impl ProtocolKind {
    /// The seed's three, in its order (the CVM tables reproduce these).
    pub const ALL: [ProtocolKind; 3] = [ProtocolKind::Lmw, ProtocolKind::Lsw, ProtocolKind::Seq];
    /// Every protocol: the seed's and LMWC.
    pub const EVERY: [ProtocolKind; 4] = [
        ProtocolKind::Lmw,
        ProtocolKind::Lsw,
        ProtocolKind::Seq,
        ProtocolKind::Lmwc,
    ];

    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            ProtocolKind::Lmw => "lmw",
            ProtocolKind::Lsw => "lsw",
            ProtocolKind::Seq => "seq",
            ProtocolKind::Lmwc => "lmwc",
        }
    }

    /// Parse a command-line name.
    pub fn parse(s: &str) -> Option<ProtocolKind> {
        Self::EVERY.into_iter().find(|p| p.name() == s)
    }
}

/// What a fault needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Retry the access now.
    Ok,
    /// Block until the page arrives; `joined` when another local thread already asked.
    Wait {
        /// Joined a request already in flight (local page contention).
        joined: bool,
    },
}

/// A consistency protocol.
pub trait Protocol: Send {
    /// An access fault on `page` by the compute thread.
    fn fault(&mut self, c: &mut Core, page: usize, write: bool) -> Fault;
    /// A release: close the open interval.
    fn release(&mut self, c: &mut Core);
    /// An acquire: close the open interval, then apply the intervals learned.
    fn acquire(&mut self, c: &mut Core, intervals: &[Interval]);
    /// After an acquire (and a barrier's collection): ask ahead for what the acquire
    /// invalidated and this rank will likely touch (LMWC's bulk prefetch).
    fn prefetch(&mut self, _c: &mut Core) {}
    /// A protocol message.
    fn message(&mut self, c: &mut Core, from: usize, m: Msg);
    /// A fault on `page` was satisfied (the faulting thread goes on).
    fn used(&mut self, _page: usize) {}
    /// Whether this rank wants a garbage collection at the next barrier.
    fn wants_gc(&self, _c: &Core) -> bool {
        false
    }
    /// Pages that need bringing up to date before a collection.
    fn stale_pages(&self) -> Vec<usize> {
        Vec::new()
    }
    /// Drop state every rank has applied (intervals up to `cut`).
    fn discard(&mut self, _c: &mut Core, _cut: &[u32]) {}
}

/// A fresh protocol instance for a rank.
pub fn new(kind: ProtocolKind, c: &Core) -> Box<dyn Protocol> {
    match kind {
        ProtocolKind::Lmw => Box::new(lmw::Lmw::new(c)),
        ProtocolKind::Lsw => Box::new(lsw::Lsw::new(c)),
        ProtocolKind::Seq => Box::new(seq::Seq::new(c)),
        ProtocolKind::Lmwc => Box::new(lmw::Lmw::classified(c)),
    }
}
