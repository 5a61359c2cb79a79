//! LSW: lazy release consistency with a single writer per page.
//!
//! Pages move whole. Each page has one owner, the only rank allowed to write it; a write
//! by anyone else asks the page's manager (page mod ranks), which forwards to the owner;
//! the owner sends the page and ownership and keeps a read-only copy (lazily valid). A
//! read of an invalid page gets a copy from the current owner, which is downgraded to
//! read-only meanwhile so its next write is recorded. Write notices travel with acquires
//! as in LMW (pages only, no diffs) and invalidate non-owned copies. The manager serves
//! one request per page at a time, until the requester confirms it installed the page.
//! With a freeze time set, a page that just arrived with ownership is frozen: a forward
//! taking ownership away waits out the freeze (proto::single).

use super::single::{self, Freeze, Managers};
use super::{Fault, Protocol};
use crate::msg::{Interval, Msg};
use crate::region::{Prot, PAGE};
use crate::state::Core;

#[derive(Default, Clone)]
struct Page {
    owner: bool,
    valid: bool,
    /// A request is in flight; `stale` if a notice arrived meanwhile.
    fetching: bool,
    stale: bool,
}

/// LSW state of one rank.
pub struct Lsw {
    pages: Vec<Page>,
    mgr: Managers<()>,
    freeze: Freeze,
}

impl Lsw {
    /// Every page valid everywhere, owned by its manager.
    pub fn new(c: &Core) -> Lsw {
        let n = c.region.pages();
        Lsw {
            pages: (0..n)
                .map(|p| Page {
                    owner: p % c.n == c.me,
                    valid: true,
                    ..Default::default()
                })
                .collect(),
            mgr: Managers::new(c, |_| ()),
            freeze: Freeze::new(c),
        }
    }

    fn serve(&mut self, c: &mut Core, p: usize, from: usize, write: bool) {
        let m = &mut self.mgr.pages[p];
        let owner = m.owner;
        if write {
            m.owner = from;
        }
        c.send(
            owner,
            &Msg::PageFwd {
                page: p as u32,
                from: from as u32,
                write,
                data: true,
            },
        );
    }
}

impl Protocol for Lsw {
    fn fault(&mut self, c: &mut Core, p: usize, write: bool) -> Fault {
        let pg = &mut self.pages[p];
        if pg.fetching {
            return Fault::Wait { joined: true };
        }
        if pg.valid && (!write || pg.owner) {
            if write {
                c.region.protect(p, Prot::ReadWrite);
                c.lrc.dirty.insert(p as u32);
            }
            return Fault::Ok;
        }
        pg.fetching = true;
        pg.stale = false;
        single::ask(c, p, write)
    }

    fn used(&mut self, p: usize) {
        self.freeze.used(p);
    }

    fn release(&mut self, c: &mut Core) {
        // Written pages go read-only so the next interval's writes fault and are noticed.
        for &p in &c.lrc.dirty {
            if self.pages[p as usize].owner {
                c.region.protect(p as usize, Prot::Read);
            }
        }
        c.lrc.close();
    }

    fn acquire(&mut self, c: &mut Core, intervals: &[Interval]) {
        self.release(c);
        for iv in c.lrc.incorporate(intervals) {
            if iv.rank as usize == c.me {
                continue;
            }
            for &p in &iv.pages {
                let pg = &mut self.pages[p as usize];
                if pg.fetching {
                    pg.stale = true;
                } else if !pg.owner && pg.valid {
                    pg.valid = false;
                    c.region.protect(p as usize, Prot::None);
                }
            }
        }
    }

    fn message(&mut self, c: &mut Core, from: usize, m: Msg) {
        match m {
            Msg::PageReq { page, from, write } => {
                let (p, from) = (page as usize, from as usize);
                if self.mgr.admit(p, from, write) {
                    self.serve(c, p, from, write);
                }
            }
            Msg::PageDone { page, .. } => {
                let p = page as usize;
                if let Some((f, w)) = self.mgr.next(p) {
                    self.serve(c, p, f, w);
                }
            }
            Msg::PageFwd {
                page,
                from: to,
                write,
                data,
            } => {
                let p = page as usize;
                let m = Msg::PageFwd {
                    page,
                    from: to,
                    write,
                    data,
                };
                if write && self.freeze.hold(c, p, from, &m) {
                    return;
                }
                let pg = &mut self.pages[p];
                assert!(pg.owner, "rank {} asked for page {p} it does not own", c.me);
                // Close the application's view before copying, so no write is half-sent.
                c.region.protect(p, Prot::Read);
                if write {
                    pg.owner = false;
                }
                let data = c.region.sys_page(p).to_vec();
                c.send(
                    to as usize,
                    &Msg::PageRep {
                        page,
                        write,
                        data: Some(data),
                    },
                );
            }
            Msg::PageRep { page, write, data } => {
                let p = page as usize;
                let pg = &mut self.pages[p];
                c.region.protect(p, Prot::None);
                if let Some(d) = data {
                    c.region.sys_page(p).copy_from_slice(&d[..PAGE]);
                    c.stats.pages_received += 1;
                }
                pg.fetching = false;
                if write {
                    // The owner's copy is the newest: a notice that arrived meanwhile is met.
                    pg.owner = true;
                    pg.valid = true;
                    self.freeze.arrived(p);
                    c.lrc.dirty.insert(page);
                    c.region.protect(p, Prot::ReadWrite);
                } else if !pg.stale {
                    pg.valid = true;
                    c.region.protect(p, Prot::Read);
                } else {
                    pg.valid = false;
                }
                single::confirm(c, p, write);
            }
            m => panic!("LSW got a message of another protocol: {m:?}"),
        }
    }
}
