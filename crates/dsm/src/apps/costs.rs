//! The mechanism costs of the seed's Section 4.1, measured on the running DSM: a remote
//! page fault, a 2-hop and a 3-hop lock acquire (3 ranks: requester 0, manager 1, last
//! holder 2), plus the local costs (SIGSEGV round trip, mprotect, twin, diff create/apply),
//! and a remote fault served while the serving rank computes (as in an app run, where
//! its service thread shares a CPU with its compute thread).
//! The "result" is the list of per-operation medians in ns, in [`COST_NAMES`] order.

use super::App;
use crate::region::{Prot, Region, PAGE};
use crate::Ctx;
use std::time::Instant;

/// What [`Costs`] reports, in order (ns, medians).
pub const COST_NAMES: [&str; 9] = [
    "remote page fault",
    "2-hop lock acquire",
    "3-hop lock acquire",
    "SIGSEGV round trip (write fault: handler, trampoline, twin, mprotect)",
    "mprotect (one page)",
    "twin (copy one page)",
    "diff create (one page, 1/8 words changed)",
    "diff apply (one page, 1/8 words changed)",
    "remote page fault (owner computing)",
];

/// How long the serving rank computes while rank 0 takes a remote fault from it.
const BUSY: std::time::Duration = std::time::Duration::from_millis(2);

/// Repetitions of each remote operation.
#[derive(Debug, Clone)]
pub struct Costs {
    /// Repetitions.
    pub reps: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ns(t: Instant) -> f64 {
    t.elapsed().as_nanos() as f64
}

impl App for Costs {
    fn name(&self) -> &'static str {
        "costs"
    }
    fn pages(&self) -> usize {
        3 * self.reps + 4
    }
    fn locks(&self) -> usize {
        2 * self.reps * 8 + 16
    }
    fn run(&self, c: &Ctx) {
        if c.tid() != 0 {
            return;
        }
        let me = c.rank();
        let mut fault = Vec::new();
        for k in 0..self.reps {
            let p = c.at::<u64>((k + 1) * PAGE);
            if me == 1 {
                // SAFETY: page k+1 of the region; written only by rank 1 before the barrier.
                unsafe { p.write_volatile(k as u64 + 1) };
            }
            c.barrier();
            if me == 0 {
                let t = Instant::now();
                // SAFETY: read after the barrier that ordered rank 1's write.
                let v = unsafe { p.read_volatile() };
                fault.push(ns(t));
                assert_eq!(v, k as u64 + 1);
            }
            c.barrier();
        }
        let (mut two, mut three) = (Vec::new(), Vec::new());
        let n = c.ranks();
        for k in 0..self.reps {
            // Lock l has manager l % n: make it 1, held last by 1 (2-hop) or by 2 (3-hop).
            let l2 = 2 * k * n + 1;
            let l3 = l2 + n;
            for (l, last, out) in [(l2, 1, &mut two), (l3, 2 % n, &mut three)] {
                if me == last {
                    c.lock(l);
                    c.unlock(l);
                }
                c.barrier();
                if me == 0 && (n > 2 || last == 1) {
                    let t = Instant::now();
                    c.lock(l);
                    out.push(ns(t));
                    c.unlock(l);
                }
                c.barrier();
            }
        }
        let busy = self.busy_faults(c);
        let mut wfault = Vec::new();
        if me == 0 {
            for k in 0..self.reps {
                let p = c.at::<u64>((self.reps + 1 + k) * PAGE);
                let t = Instant::now();
                // SAFETY: a page of the region nobody else touches; LMW makes it a local
                // write fault (handler, trampoline, twin, mprotect).
                unsafe { p.write_volatile(1) };
                wfault.push(ns(t));
            }
        }
        c.barrier();
        if me == 0 {
            let mut local = local_costs(self.reps);
            local[0] = median(wfault);
            let mut r = vec![
                median(fault),
                median(two),
                if n > 2 { median(three) } else { f64::NAN },
            ];
            r.extend(local);
            r.push(median(busy));
            c.with_scratch(|s| *s = r);
        }
    }
    fn result(&self, c: &Ctx) -> Vec<f64> {
        c.with_scratch(|s| s.clone())
    }
    fn sequential(&self) -> Vec<f64> {
        Vec::new()
    }
}

impl Costs {
    /// Rank 0 faults on pages rank 1 wrote, while rank 1 computes for [`BUSY`].
    fn busy_faults(&self, c: &Ctx) -> Vec<f64> {
        let me = c.rank();
        let mut out = Vec::new();
        for k in 0..self.reps {
            let p = c.at::<u64>((2 * self.reps + 2 + k) * PAGE);
            if me == 1 {
                // SAFETY: a page of the region written only by rank 1 before the barrier.
                unsafe { p.write_volatile(k as u64 + 7) };
            }
            c.barrier();
            if me == 1 {
                let t = Instant::now();
                while t.elapsed() < BUSY {
                    std::hint::spin_loop();
                }
            } else if me == 0 {
                let t = Instant::now();
                // SAFETY: read after the barrier that ordered rank 1's write.
                let v = unsafe { p.read_volatile() };
                out.push(ns(t));
                assert_eq!(v, k as u64 + 7);
            }
            c.barrier();
        }
        out
    }
}

/// SIGSEGV round trip is timed on the DSM's own path: a write to a valid read-only page
/// of this rank's region (handler, trampoline, twin, mprotect), then the parts alone.
fn local_costs(reps: usize) -> Vec<f64> {
    let r = Region::map(2, None).expect("scratch region");
    let (mut mp, mut tw, mut dc, mut da) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let page: Vec<u32> = (0..PAGE as u32 / 4).collect();
    let mut other = page.clone();
    for i in (0..other.len()).step_by(8) {
        other[i] ^= 1;
    }
    for _ in 0..reps.max(20) {
        let t = Instant::now();
        r.protect(0, Prot::ReadWrite);
        mp.push(ns(t));
        r.protect(0, Prot::Read);
        let t = Instant::now();
        let twin = std::hint::black_box(page.clone());
        tw.push(ns(t));
        let t = Instant::now();
        let d = std::hint::black_box(crate::diff::make(&twin, &other));
        dc.push(ns(t));
        let mut q = page.clone();
        let t = Instant::now();
        crate::diff::apply(&mut q, &d);
        da.push(ns(t));
        std::hint::black_box(&q);
    }
    vec![f64::NAN, median(mp), median(tw), median(dc), median(da)]
}
