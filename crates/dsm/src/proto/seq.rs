//! SEQ: sequential consistency, single writer (Li and Hudak's fixed distributed manager).
//!
//! Each page has a manager (page mod ranks) that knows the owner and the copy set. A read
//! fault gets a copy from the owner, which drops to read-only; a write fault makes the
//! manager invalidate every other copy, wait for the acknowledgements, then move the page
//! (or only ownership, when the writer's copy is current) from the owner. The manager
//! serves one request per page at a time, until the requester confirms. Synchronisation
//! carries no consistency information.

use super::{Fault, Protocol};
use crate::msg::{Interval, Msg};
use crate::node::{Core, Wait};
use crate::region::{Prot, PAGE};
use std::collections::VecDeque;

#[derive(Default, Clone)]
struct Page {
    access: u8, // 0 none, 1 read, 2 write
    fetching: bool,
}

#[derive(Default, Clone)]
struct Mgr {
    owner: usize,
    copies: Vec<bool>,
    busy: bool,
    acks: usize,
    cur: Option<(usize, bool)>,
    queue: VecDeque<(usize, bool)>,
}

/// SEQ state of one rank.
pub struct Seq {
    pages: Vec<Page>,
    mgr: Vec<Mgr>,
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
            mgr: (0..n)
                .map(|p| Mgr {
                    owner: p % c.n,
                    copies: vec![true; c.n],
                    ..Default::default()
                })
                .collect(),
        }
    }

    fn serve(&mut self, c: &mut Core, p: usize, from: usize, write: bool) {
        let m = &mut self.mgr[p];
        m.busy = true;
        m.cur = Some((from, write));
        if write {
            let owner = m.owner;
            let victims: Vec<usize> = (0..c.n)
                .filter(|&r| m.copies[r] && r != from && r != owner)
                .collect();
            m.acks = victims.len();
            for r in victims {
                c.send(r, &Msg::Inval { page: p as u32 });
            }
        }
        if self.mgr[p].acks == 0 {
            self.forward(c, p);
        }
    }

    fn forward(&mut self, c: &mut Core, p: usize) {
        let m = &mut self.mgr[p];
        let (from, write) = m.cur.take().expect("forward with no request");
        let owner = m.owner;
        let data = !m.copies[from];
        if write {
            m.copies.iter_mut().for_each(|x| *x = false);
            m.owner = from;
        }
        m.copies[from] = true;
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
        c.stats.remote_faults += 1;
        c.start_remote(false);
        c.send(
            p % c.n,
            &Msg::PageReq {
                page: p as u32,
                from: c.me as u32,
                write,
            },
        );
        Fault::Wait { joined: false }
    }

    fn release(&mut self, _c: &mut Core) {}

    fn acquire(&mut self, _c: &mut Core, _intervals: &[Interval]) {}

    fn message(&mut self, c: &mut Core, from: usize, m: Msg) {
        match m {
            Msg::PageReq { page, from, write } => {
                let (p, from) = (page as usize, from as usize);
                if self.mgr[p].busy {
                    self.mgr[p].queue.push_back((from, write));
                } else {
                    self.serve(c, p, from, write);
                }
            }
            Msg::InvalAck { page } => {
                let p = page as usize;
                self.mgr[p].acks -= 1;
                if self.mgr[p].acks == 0 {
                    self.forward(c, p);
                }
            }
            Msg::PageDone { page, .. } => {
                let p = page as usize;
                self.mgr[p].busy = false;
                if let Some((f, w)) = self.mgr[p].queue.pop_front() {
                    self.serve(c, p, f, w);
                }
            }
            Msg::Inval { page } => {
                let p = page as usize;
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
                c.end_remote();
                c.wake_if(|w| w == Wait::Page(page));
                let me = c.me as u32;
                c.send(
                    p % c.n,
                    &Msg::PageDone {
                        page,
                        from: me,
                        write,
                    },
                );
            }
            m => panic!("SEQ got a message of another protocol: {m:?}"),
        }
    }
}
