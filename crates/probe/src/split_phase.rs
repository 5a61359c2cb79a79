//! The timed loops of split-phase requests to a helper thread (the EARTH suite's
//! Tables 1, 2 and 4 on shared memory): requests all posted before any reply is
//! awaited, the issuer's posting time against the helper's serving time, and one load
//! step by step. The suite chooses the requests; the timers start and stop here.

use crate::server::{Client, Request};
use crate::Timer;

/// `it` passes of `n` requests posted, then all replies awaited: ns per request.
pub fn pipelined(timer: &Timer, cl: &mut Client, req: Request, it: usize, n: usize) -> Vec<f64> {
    (0..it)
        .map(|_| {
            let t0 = timer.start();
            let ts: Vec<_> = (0..n).map(|_| cl.post(req)).collect();
            for t in ts {
                cl.wait(t);
            }
            timer.ns(timer.stop() - t0) / n as f64
        })
        .collect()
}

/// `it` passes of `n` requests: per pass, the issuer's time in post() per request and
/// the helper's serving time per request, ns.
pub fn posting_and_serving(
    timer: &Timer,
    cl: &mut Client,
    req: Request,
    it: usize,
    n: usize,
) -> (Vec<f64>, Vec<f64>) {
    let (mut issuer, mut srv) = (Vec::new(), Vec::new());
    for _ in 0..it {
        let (b0, n0) = cl.server_work();
        let mut posting = 0u64;
        let mut ts = Vec::with_capacity(n);
        for _ in 0..n {
            let t0 = timer.start();
            ts.push(cl.post(req));
            posting += timer.stop() - t0;
        }
        for t in ts {
            cl.wait(t);
        }
        let (b1, n1) = cl.server_work();
        issuer.push(timer.ns(posting) / n as f64);
        srv.push(timer.ns(b1 - b0) / (n1 - n0).max(1) as f64);
    }
    (issuer, srv)
}

/// `n` requests one at a time, each step by step (issue, request transfer, helper's
/// work, reply transfer; stamps from one invariant counter on both cores): ns per
/// request, per step.
pub fn load_steps(timer: &Timer, cl: &mut Client, req: Request, n: usize) -> Vec<Vec<f64>> {
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); 4];
    for _ in 0..n {
        let t0 = timer.start();
        let t = cl.post(req);
        let t1 = timer.stop();
        cl.wait(t);
        let t2 = timer.stop();
        let s = cl.stamps(t);
        let d = |a: u64, b: u64| timer.ns(b.saturating_sub(a));
        per[0].push(d(t0, t1));
        per[1].push(d(t1, s.seen));
        per[2].push(d(s.seen, s.finished));
        per[3].push(d(s.finished, t2));
    }
    per
}
