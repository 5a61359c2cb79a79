//! SEQ: sequential consistency, single writer (Li and Hudak's fixed distributed manager).
//!
//! Each page has a manager (page mod ranks) that knows the owner and the copy set. A read
//! fault gets a copy from the owner, which drops to read-only; a write fault makes the
//! manager invalidate every other copy, wait for the acknowledgements, then move the page
//! (or only ownership, when the writer's copy is current) from the owner. The manager
//! serves one request per page at a time, until the requester confirms. Synchronisation
//! carries no consistency information. With a freeze time set, a page that just arrived
//! is frozen: a forward or an invalidation taking it away waits out the freeze
//! (proto::single).

use super::single::{self, Freeze, Managers};
use super::{Fault, Protocol};
use crate::msg::{Interval, Msg};
use crate::region::{Prot, PAGE};
use crate::state::Core;

#[derive(Default, Clone)]
struct Page {
    access: u8, // 0 none, 1 read, 2 write
    fetching: bool,
}

/// What a SEQ manager adds: the copy set, and the request waiting for acknowledgements.
#[derive(Default, Clone)]
struct Copies {
    copies: Vec<bool>,
    acks: usize,
    cur: Option<(usize, bool)>,
}

/// SEQ state of one rank.
pub struct Seq {
    pages: Vec<Page>,
    mgr: Managers<Copies>,
    freeze: Freeze,
}

impl Seq {
    /// Every rank holds a read-only copy of every page; managers own them.
    pub fn new(c: &Core) -> Seq {
        let n = c.region.pages();
        Seq {
            pages: vec![
                Page {
                    access: 1,
                    fetching: false
                };
                n
            ],
            mgr: Managers::new(c, |_| Copies {
                copies: vec![true; c.n],
                ..Default::default()
            }),
            freeze: Freeze::new(c),
        }
    }

    fn serve(&mut self, c: &mut Core, p: usize, from: usize, write: bool) {
        let m = &mut self.mgr.pages[p];
        m.x.cur = Some((from, write));
        if write {
            let owner = m.owner;
            let victims: Vec<usize> = (0..c.n)
                .filter(|&r| m.x.copies[r] && r != from && r != owner)
                .collect();
            m.x.acks = victims.len();
            for r in victims {
                c.send(r, &Msg::Inval { page: p as u32 });
            }
        }
        if self.mgr.pages[p].x.acks == 0 {
            self.forward(c, p);
        }
    }

    fn forward(&mut self, c: &mut Core, p: usize) {
        let m = &mut self.mgr.pages[p];
        let (from, write) = m.x.cur.take().expect("forward with no request");
        let owner = m.owner;
        let data = !m.x.copies[from];
        if write {
            m.x.copies.iter_mut().for_each(|x| *x = false);
            m.owner = from;
        }
        m.x.copies[from] = true;
        c.send(
            owner,
            &Msg::PageFwd {
                page: p as u32,
                from: from as u32,
                write,
                data,
            },
        );
    }
}

impl Protocol for Seq {
    fn fault(&mut self, c: &mut Core, p: usize, write: bool) -> Fault {
        let pg = &mut self.pages[p];
        if pg.fetching {
            return Fault::Wait { joined: true };
        }
        if pg.access > write as u8 {
            return Fault::Ok;
        }
        pg.fetching = true;
        single::ask(c, p, write)
    }

    fn used(&mut self, p: usize) {
        self.freeze.used(p);
    }

    fn release(&mut self, _c: &mut Core) {}

    fn acquire(&mut self, _c: &mut Core, _intervals: &[Interval]) {}

    fn message(&mut self, c: &mut Core, from: usize, m: Msg) {
        match m {
            Msg::PageReq { page, from, write } => {
                let (p, from) = (page as usize, from as usize);
                if self.mgr.admit(p, from, write) {
                    self.serve(c, p, from, write);
                }
            }
            Msg::InvalAck { page } => {
                let p = page as usize;
                self.mgr.pages[p].x.acks -= 1;
                if self.mgr.pages[p].x.acks == 0 {
                    self.forward(c, p);
                }
            }
            Msg::PageDone { page, .. } => {
                let p = page as usize;
                if let Some((f, w)) = self.mgr.next(p) {
                    self.serve(c, p, f, w);
                }
            }
            Msg::Inval { page } => {
                let p = page as usize;
                if self.freeze.hold(c, p, from, &Msg::Inval { page }) {
                    return;
                }
                self.pages[p].access = 0;
                c.region.protect(p, Prot::None);
                c.send(from, &Msg::InvalAck { page });
            }
            Msg::PageFwd {
                page,
                from: to,
                write,
                data,
            } => {
                let p = page as usize;
                let to = to as usize;
                // Taking the page, or write access to it, away waits out a freeze.
                let takes = to != c.me && (write || self.pages[p].access == 2);
                let m = Msg::PageFwd {
                    page,
                    from: to as u32,
                    write,
                    data,
                };
                if takes && self.freeze.hold(c, p, from, &m) {
                    return;
                }
                // Close the application's view before copying, so no write is half-sent.
                if to != c.me {
                    let keep = if write { 0 } else { 1 };
                    self.pages[p].access = keep;
                    c.region
                        .protect(p, if write { Prot::None } else { Prot::Read });
                }
                let data = data.then(|| c.region.sys_page(p).to_vec());
                c.send(to, &Msg::PageRep { page, write, data });
            }
            Msg::PageRep { page, write, data } => {
                let p = page as usize;
                if let Some(d) = data {
                    c.region.protect(p, Prot::None);
                    c.region.sys_page(p).copy_from_slice(&d[..PAGE]);
                    c.stats.pages_received += 1;
                }
                let pg = &mut self.pages[p];
                pg.fetching = false;
                pg.access = if write { 2 } else { 1 };
                c.region
                    .protect(p, if write { Prot::ReadWrite } else { Prot::Read });
                self.freeze.arrived(p);
                single::confirm(c, p, write);
            }
            m => panic!("SEQ got a message of another protocol: {m:?}"),
        }
    }
}
