//! DSM messages and their byte encoding (little-endian, length-prefixed vectors).

/// One closed interval of one rank: its vector timestamp and the pages it wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    /// The rank that ran it.
    pub rank: u32,
    /// Its index on that rank (1, 2, …).
    pub idx: u32,
    /// Vector timestamp at its close (vt[rank] == idx).
    pub vt: Vec<u32>,
    /// Pages written in it (the write notices).
    pub pages: Vec<u32>,
}

pub use crate::diff::Diff;

/// Every message ranks exchange.
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    /// Acquire request to the lock's manager, and forwarded by it to the last requester.
    LockReq {
        lock: u32,
        from: u32,
        vt: Vec<u32>,
        forwarded: bool,
    },
    /// The lock, with the intervals the acquirer has not seen.
    LockGrant { lock: u32, intervals: Vec<Interval> },
    /// A rank's single arrival at barrier `epoch` (sent by its last local thread).
    BarArrive {
        epoch: u32,
        vt: Vec<u32>,
        intervals: Vec<Interval>,
        gc: bool,
    },
    /// Barrier release with the intervals the rank has not seen; `gc_cut` asks the ranks to
    /// validate every page and then drop intervals and diffs up to that vector timestamp.
    BarRelease {
        epoch: u32,
        intervals: Vec<Interval>,
        gc: bool,
        cut: Vec<u32>,
    },
    /// LMW: the diffs of `page` made in the sender's intervals `idxs`.
    DiffReq { page: u32, idxs: Vec<u32> },
    /// LMW: the diffs asked for, each with the sender's intervals it covers (a lazily made
    /// diff covers every interval that wrote the page since its twin).
    DiffRep {
        page: u32,
        diffs: Vec<(Vec<u32>, Diff)>,
    },
    /// Single writer: read or write access to `page`, to its manager.
    PageReq { page: u32, from: u32, write: bool },
    /// Single writer: manager to owner, serve `from`; `data` when its copy is stale.
    PageFwd {
        page: u32,
        from: u32,
        write: bool,
        data: bool,
    },
    /// Single writer: owner to requester; `owner` when ownership moves with it.
    PageRep {
        page: u32,
        write: bool,
        data: Option<Vec<u8>>,
    },
    /// SEQ: drop your copy (manager to copy holder).
    Inval { page: u32 },
    /// SEQ: copy dropped (holder to manager).
    InvalAck { page: u32 },
    /// Single writer: the requester installed the page; the manager may serve the next.
    PageDone { page: u32, from: u32, write: bool },
    /// LMWC: the sender's first access to `page`, to the page's directory home (`gcs`:
    /// garbage collections the sender has done); `run`: the sender also claims the next
    /// `run` pages, those nobody touched yet (it sweeps a block homed elsewhere).
    Touch { page: u32, gcs: u32, run: u32 },
    /// LMWC: home to the first rank to touch `page`: it is yours alone (private).
    Owner { page: u32 },
    /// LMWC: home to the pages' first toucher: rank `to` touches them too, so they are
    /// shared now; send `to` each page as it is (once past `gcs` collections). Several
    /// when `to` read ahead: one message, one reply.
    BaseReq { pages: Vec<u32>, to: u32, gcs: u32 },
    /// LMWC: the pages' contents when they turned shared (or at the last collection),
    /// one page after another in `data`.
    Base { pages: Vec<u32>, data: Vec<u8> },
    /// LMWC: home to a rank that claimed a run: these pages are yours alone (private).
    Claimed { pages: Vec<u32> },
    /// LMWC read-ahead on a stride or a dense window ([`crate::proto::ahead`]): a first
    /// touch of each page to their home, answered only for pages another rank touched
    /// first.
    TouchAhead { pages: Vec<u32>, gcs: u32 },
    /// LMWC: home to a rank that asked ahead: nobody touched these pages yet (no base).
    NotTouched { pages: Vec<u32> },
    /// LMWC prefetch at an acquire: [`Msg::DiffReq`] for several pages, one per writer.
    DiffBulkReq { reqs: Vec<(u32, Vec<u32>)> },
    /// LMWC prefetch: the [`Msg::DiffRep`] of each page asked for, in one message.
    DiffBulkRep { reps: Vec<PageDiffs> },
}

/// One page's diffs in a reply: the page, and each diff with the intervals it covers.
pub type PageDiffs = (u32, Vec<(Vec<u32>, Diff)>);

struct W(Vec<u8>);
impl W {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32s(&mut self, v: &[u32]) {
        self.u32(v.len() as u32);
        for x in v {
            self.u32(*x);
        }
    }
    fn bytes(&mut self, v: &[u8]) {
        self.u32(v.len() as u32);
        self.0.extend_from_slice(v);
    }
    fn diffs(&mut self, diffs: &[(Vec<u32>, Diff)]) {
        self.u32(diffs.len() as u32);
        for (idxs, d) in diffs {
            self.u32s(idxs);
            self.u32(d.len() as u32);
            for (start, words) in d.runs() {
                self.u32(start as u32);
                self.u32s(words);
            }
        }
    }
    fn intervals(&mut self, v: &[Interval]) {
        self.u32(v.len() as u32);
        for i in v {
            self.u32(i.rank);
            self.u32(i.idx);
            self.u32s(&i.vt);
            self.u32s(&i.pages);
        }
    }
}

struct R<'a>(&'a [u8], usize);
impl R<'_> {
    fn u8(&mut self) -> u8 {
        self.1 += 1;
        self.0[self.1 - 1]
    }
    fn u32(&mut self) -> u32 {
        let v = u32::from_le_bytes(self.0[self.1..self.1 + 4].try_into().unwrap());
        self.1 += 4;
        v
    }
    fn u32s(&mut self) -> Vec<u32> {
        let n = self.u32() as usize;
        (0..n).map(|_| self.u32()).collect()
    }
    fn bytes(&mut self) -> Vec<u8> {
        let n = self.u32() as usize;
        self.1 += n;
        self.0[self.1 - n..self.1].to_vec()
    }
    fn diffs(&mut self) -> Vec<(Vec<u32>, Diff)> {
        let n = self.u32() as usize;
        (0..n)
            .map(|_| {
                let idxs = self.u32s();
                let m = self.u32() as usize;
                let mut d = Diff::default();
                for _ in 0..m {
                    let start = self.u32() as u16;
                    let n = self.u32() as usize;
                    d.push(start, n, (0..n).map(|_| self.u32()));
                }
                (idxs, d)
            })
            .collect()
    }
    fn intervals(&mut self) -> Vec<Interval> {
        let n = self.u32() as usize;
        (0..n)
            .map(|_| Interval {
                rank: self.u32(),
                idx: self.u32(),
                vt: self.u32s(),
                pages: self.u32s(),
            })
            .collect()
    }
}

impl Msg {
    /// Bytes on the wire: the message's tag, then its fields in declaration order.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = W(Vec::with_capacity(64));
        w.u8(self.tag());
        match self {
            Msg::LockReq { .. } | Msg::LockGrant { .. } => self.encode_lock(&mut w),
            Msg::BarArrive { .. } | Msg::BarRelease { .. } => self.encode_barrier(&mut w),
            Msg::DiffReq { .. }
            | Msg::DiffRep { .. }
            | Msg::DiffBulkReq { .. }
            | Msg::DiffBulkRep { .. } => self.encode_diff(&mut w),
            _ => self.encode_page(&mut w),
        }
        w.0
    }

    /// The wire tag: the variant's place in the enum.
    fn tag(&self) -> u8 {
        match self {
            Msg::LockReq { .. } => 0,
            Msg::LockGrant { .. } => 1,
            Msg::BarArrive { .. } => 2,
            Msg::BarRelease { .. } => 3,
            Msg::DiffReq { .. } => 4,
            Msg::DiffRep { .. } => 5,
            Msg::PageReq { .. } => 6,
            Msg::PageFwd { .. } => 7,
            Msg::PageRep { .. } => 8,
            Msg::Inval { .. } => 9,
            Msg::InvalAck { .. } => 10,
            Msg::PageDone { .. } => 11,
            Msg::Touch { .. } => 12,
            Msg::Owner { .. } => 13,
            Msg::BaseReq { .. } => 14,
            Msg::Base { .. } => 15,
            Msg::DiffBulkReq { .. } => 16,
            Msg::DiffBulkRep { .. } => 17,
            Msg::Claimed { .. } => 18,
            Msg::TouchAhead { .. } => 19,
            Msg::NotTouched { .. } => 20,
        }
    }

    /// Lock request and grant fields.
    fn encode_lock(&self, w: &mut W) {
        match self {
            Msg::LockReq {
                lock,
                from,
                vt,
                forwarded,
            } => {
                w.u32(*lock);
                w.u32(*from);
                w.u32s(vt);
                w.u8(*forwarded as u8);
            }
            Msg::LockGrant { lock, intervals } => {
                w.u32(*lock);
                w.intervals(intervals);
            }
            _ => unreachable!("encode_lock of another message"),
        }
    }

    /// Barrier arrival and release fields.
    fn encode_barrier(&self, w: &mut W) {
        match self {
            Msg::BarArrive {
                epoch,
                vt,
                intervals,
                gc,
            } => {
                w.u32(*epoch);
                w.u32s(vt);
                w.intervals(intervals);
                w.u8(*gc as u8);
            }
            Msg::BarRelease {
                epoch,
                intervals,
                gc,
                cut,
            } => {
                w.u32(*epoch);
                w.intervals(intervals);
                w.u8(*gc as u8);
                w.u32s(cut);
            }
            _ => unreachable!("encode_barrier of another message"),
        }
    }

    /// LMW diff request and reply fields.
    fn encode_diff(&self, w: &mut W) {
        match self {
            Msg::DiffReq { page, idxs } => {
                w.u32(*page);
                w.u32s(idxs);
            }
            Msg::DiffRep { page, diffs } => {
                w.u32(*page);
                w.diffs(diffs);
            }
            Msg::DiffBulkReq { reqs } => {
                w.u32(reqs.len() as u32);
                for (page, idxs) in reqs {
                    w.u32(*page);
                    w.u32s(idxs);
                }
            }
            Msg::DiffBulkRep { reps } => {
                w.u32(reps.len() as u32);
                for (page, diffs) in reps {
                    w.u32(*page);
                    w.diffs(diffs);
                }
            }
            _ => unreachable!("encode_diff of another message"),
        }
    }

    /// Single-writer page and SEQ invalidation fields.
    fn encode_page(&self, w: &mut W) {
        match self {
            Msg::PageReq { page, from, write } => {
                w.u32(*page);
                w.u32(*from);
                w.u8(*write as u8);
            }
            Msg::PageFwd {
                page,
                from,
                write,
                data,
            } => {
                w.u32(*page);
                w.u32(*from);
                w.u8(*write as u8);
                w.u8(*data as u8);
            }
            Msg::PageRep { page, write, data } => {
                w.u32(*page);
                w.u8(*write as u8);
                match data {
                    Some(d) => {
                        w.u8(1);
                        w.bytes(d);
                    }
                    None => w.u8(0),
                }
            }
            Msg::Inval { page } => {
                w.u32(*page);
            }
            Msg::InvalAck { page } => {
                w.u32(*page);
            }
            Msg::PageDone { page, from, write } => {
                w.u32(*page);
                w.u32(*from);
                w.u8(*write as u8);
            }
            Msg::Touch { page, gcs, run } => {
                w.u32(*page);
                w.u32(*gcs);
                w.u32(*run);
            }
            Msg::Claimed { pages } | Msg::NotTouched { pages } => w.u32s(pages),
            Msg::TouchAhead { pages, gcs } => {
                w.u32s(pages);
                w.u32(*gcs);
            }
            Msg::Owner { page } => w.u32(*page),
            Msg::BaseReq { pages, to, gcs } => {
                w.u32s(pages);
                w.u32(*to);
                w.u32(*gcs);
            }
            Msg::Base { pages, data } => {
                w.u32s(pages);
                w.bytes(data);
            }
            _ => unreachable!("encode_page of another message"),
        }
    }

    /// Decode bytes made by [`Msg::encode`] (panics on garbage: peers are ourselves).
    pub fn decode(b: &[u8]) -> Msg {
        let mut r = R(b, 0);
        match r.u8() {
            t @ 0..=3 => Msg::decode_sync(t, &mut r),
            t @ 4..=11 => Msg::decode_page(t, &mut r),
            t => Msg::decode_lmwc(t, &mut r),
        }
    }

    /// Locks and barriers (tags 0–3).
    fn decode_sync(tag: u8, r: &mut R) -> Msg {
        match tag {
            0 => Msg::LockReq {
                lock: r.u32(),
                from: r.u32(),
                vt: r.u32s(),
                forwarded: r.u8() != 0,
            },
            1 => Msg::LockGrant {
                lock: r.u32(),
                intervals: r.intervals(),
            },
            2 => Msg::BarArrive {
                epoch: r.u32(),
                vt: r.u32s(),
                intervals: r.intervals(),
                gc: r.u8() != 0,
            },
            3 => Msg::BarRelease {
                epoch: r.u32(),
                intervals: r.intervals(),
                gc: r.u8() != 0,
                cut: r.u32s(),
            },
            t => unreachable!("sync tag {t}"),
        }
    }

    /// Pages, diffs and invalidations (tags 4–11).
    fn decode_page(tag: u8, r: &mut R) -> Msg {
        match tag {
            4 => Msg::DiffReq {
                page: r.u32(),
                idxs: r.u32s(),
            },
            5 => Msg::DiffRep {
                page: r.u32(),
                diffs: r.diffs(),
            },
            6 => Msg::PageReq {
                page: r.u32(),
                from: r.u32(),
                write: r.u8() != 0,
            },
            7 => Msg::PageFwd {
                page: r.u32(),
                from: r.u32(),
                write: r.u8() != 0,
                data: r.u8() != 0,
            },
            8 => {
                let page = r.u32();
                let write = r.u8() != 0;
                let data = (r.u8() != 0).then(|| r.bytes());
                Msg::PageRep { page, write, data }
            }
            9 => Msg::Inval { page: r.u32() },
            10 => Msg::InvalAck { page: r.u32() },
            11 => Msg::PageDone {
                page: r.u32(),
                from: r.u32(),
                write: r.u8() != 0,
            },
            t => unreachable!("page tag {t}"),
        }
    }

    /// Ownership, read-ahead and bulk messages (tags 12–20).
    fn decode_lmwc(tag: u8, r: &mut R) -> Msg {
        match tag {
            12 => Msg::Touch {
                page: r.u32(),
                gcs: r.u32(),
                run: r.u32(),
            },
            13 => Msg::Owner { page: r.u32() },
            14 => Msg::BaseReq {
                pages: r.u32s(),
                to: r.u32(),
                gcs: r.u32(),
            },
            15 => Msg::Base {
                pages: r.u32s(),
                data: r.bytes(),
            },
            16 => {
                let n = r.u32() as usize;
                let reqs = (0..n).map(|_| (r.u32(), r.u32s())).collect();
                Msg::DiffBulkReq { reqs }
            }
            17 => {
                let n = r.u32() as usize;
                let reps = (0..n).map(|_| (r.u32(), r.diffs())).collect();
                Msg::DiffBulkRep { reps }
            }
            18 => Msg::Claimed { pages: r.u32s() },
            19 => Msg::TouchAhead {
                pages: r.u32s(),
                gcs: r.u32(),
            },
            20 => Msg::NotTouched { pages: r.u32s() },
            t => panic!("unknown DSM message tag {t}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let iv = Interval {
            rank: 1,
            idx: 3,
            vt: vec![2, 3],
            pages: vec![7, 9],
        };
        let all = vec![
            Msg::LockReq {
                lock: 4,
                from: 1,
                vt: vec![1, 2],
                forwarded: true,
            },
            Msg::LockGrant {
                lock: 4,
                intervals: vec![iv.clone()],
            },
            Msg::BarArrive {
                epoch: 2,
                vt: vec![0, 1],
                intervals: vec![iv.clone()],
                gc: true,
            },
            Msg::BarRelease {
                epoch: 2,
                intervals: vec![iv],
                gc: false,
                cut: vec![3, 3],
            },
            Msg::DiffReq {
                page: 5,
                idxs: vec![1, 2],
            },
            Msg::DiffRep {
                page: 5,
                diffs: vec![(vec![1, 2], Diff::of(&[(3, &[1, 2]), (900, &[5])]))],
            },
            Msg::PageReq {
                page: 1,
                from: 0,
                write: true,
            },
            Msg::PageFwd {
                page: 1,
                from: 0,
                write: false,
                data: true,
            },
            Msg::PageRep {
                page: 1,
                write: true,
                data: Some(vec![1, 2, 3]),
            },
            Msg::PageRep {
                page: 1,
                write: false,
                data: None,
            },
            Msg::Inval { page: 3 },
            Msg::InvalAck { page: 3 },
            Msg::Touch {
                page: 5,
                gcs: 1,
                run: 3,
            },
            Msg::Claimed { pages: vec![6, 7] },
            Msg::TouchAhead {
                pages: vec![9, 25],
                gcs: 1,
            },
            Msg::NotTouched { pages: vec![25] },
            Msg::Owner { page: 5 },
            Msg::BaseReq {
                pages: vec![5, 6],
                to: 1,
                gcs: 2,
            },
            Msg::Base {
                pages: vec![5, 6],
                data: vec![7; 8192],
            },
            Msg::PageDone {
                page: 3,
                from: 1,
                write: true,
            },
            Msg::DiffBulkReq {
                reqs: vec![(5, vec![1, 2]), (9, vec![3])],
            },
            Msg::DiffBulkRep {
                reps: vec![
                    (5, vec![(vec![1, 2], Diff::of(&[(3, &[1, 2])]))]),
                    (9, vec![(vec![3], Diff::default())]),
                ],
            },
        ];
        for m in all {
            assert_eq!(Msg::decode(&m.encode()), m);
        }
    }
}
