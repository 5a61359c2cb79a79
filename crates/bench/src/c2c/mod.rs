//! Core-to-core: CAS ping-pong (RTT/2) and the latency of reading lines Modified in
//! the other core, for every pair of CPUs; pairs that share no resource run at once.

mod data;
mod experiment;
pub mod order;
mod present;
mod text;
pub use data::{C2cMatrixData, C2cPairData, C2cPlanData};
pub use experiment::{run, Measured, Options, Plan};
pub use present::C2cPresenter;

use crate::latency::{self, LatencyPlan};
use numalab_probe::{pingpong, LineState, Request, Timer};
use numalab_results::disturb::{PassLog, Rules};
use numalab_results::{settle, Settle};
use numalab_topo::buffer::Buffer;
use numalab_topo::plan::resolve_memory;
use numalab_topo::{Host, Machine, MemSpec, PageSize, Pu, Result, ThreadPlacement};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Where the line of a pair lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Home {
    /// On the writer's (initiator's) node.
    Writer,
    /// On the reader's (responder's) node.
    Reader,
}

/// One pair: `a` initiates / writes, `b` responds / reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pair {
    /// Initiator (writer).
    pub a: u32,
    /// Responder (reader).
    pub b: u32,
    /// Whether they are SMT siblings of one core.
    pub smt_siblings: bool,
}

/// The resources a pair loads: its cores, L3 domains and packages.
fn resources(m: &Machine, p: &Pair) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    for cpu in [p.a, p.b] {
        if let Some(pu) = m.pu(cpu) {
            s.insert(format!("core:{}", pu.core));
            if let Some(l) = pu.l3 {
                s.insert(format!("l3:{l}"));
            }
            if let Some(k) = pu.package {
                s.insert(format!("pkg:{k}"));
            }
        }
    }
    s
}

/// Every ordered-once pair of `cpus` (a < b in the given order).
pub fn pairs(m: &Machine, cpus: &[u32]) -> Vec<Pair> {
    let core = |c: u32| m.pu(c).map(|p: &Pu| p.core);
    let mut out = Vec::new();
    for (i, &a) in cpus.iter().enumerate() {
        for &b in &cpus[i + 1..] {
            out.push(Pair {
                a,
                b,
                smt_siblings: core(a).is_some() && core(a) == core(b),
            });
        }
    }
    out
}

/// Group pairs into rounds whose pairs share no core, L3 domain or package, so a
/// round's pairs can be timed at once without disturbing each other.
pub fn schedule(m: &Machine, pairs: &[Pair]) -> Vec<Vec<Pair>> {
    let mut rounds: Vec<(BTreeSet<String>, Vec<Pair>)> = Vec::new();
    for p in pairs {
        let r = resources(m, p);
        match rounds.iter_mut().find(|(used, _)| used.is_disjoint(&r)) {
            Some((used, v)) => {
                used.extend(r);
                v.push(*p);
            }
            None => rounds.push((r, vec![*p])),
        }
    }
    rounds.into_iter().map(|(_, v)| v).collect()
}

/// Measured figures of one pair.
#[derive(Debug, Clone, Serialize)]
pub struct PairResult {
    /// The pair.
    pub pair: Pair,
    /// CAS round trip / 2, ns per undisturbed pass (see `cas_passes`).
    pub cas_half_ns: Option<Vec<f64>>,
    /// Reading lines Modified in `a`'s cache from `b`, ns per load per undisturbed pass.
    pub modified_read_ns: Option<Vec<f64>>,
    /// What disturbed each CAS pass.
    pub cas_passes: Option<PassLog>,
    /// What disturbed each read pass.
    pub read_passes: Option<PassLog>,
    /// How the CAS median settled.
    pub cas_settle: Option<Settle>,
    /// How the read median settled.
    pub read_settle: Option<Settle>,
    /// Node the line(s) lived on.
    pub home_node: Option<u32>,
    /// How far apart the pair was, probed before the read figure, for `compare`.
    pub distance: Vec<numalab_results::distance::CpuDistance>,
}

/// Settings of a c2c run.
#[derive(Debug, Clone, Copy)]
pub struct C2cSettings {
    /// Round trips per CAS pass.
    pub round_trips: u64,
    /// Passes.
    pub iterations: usize,
    /// Measure CAS ping-pong.
    pub cas: bool,
    /// Measure modified-line reads.
    pub read: bool,
    /// Where lines live.
    pub home: Home,
    /// Bytes of Modified lines read per pass.
    pub read_bytes: u64,
    /// What is done with a disturbed pass.
    pub rules: Rules,
}

fn placement(m: &Machine, cpu: u32) -> Option<ThreadPlacement> {
    m.pu(cpu).map(|p| ThreadPlacement {
        thread: 0,
        pu: p.clone(),
    })
}

/// What a pair hands over as each of its parts ends: the CAS figures alone, then the
/// pair with its read figures too.
pub type OnPart<'a> = &'a (dyn Fn(&PairResult) + Sync);

/// Measure one pair: the CAS median settled, then (as `on_part` hears after each) the
/// modified-line read median settled.
pub fn measure_pair(
    host: &Host,
    timer: &Timer,
    p: Pair,
    s: &C2cSettings,
    on_part: OnPart,
) -> Result<PairResult> {
    let m = &host.machine;
    let (wa, rb) = (placement(m, p.a), placement(m, p.b));
    let (Some(writer), Some(reader)) = (wa, rb) else {
        return Err(numalab_topo::Error::bad(
            "CPU pair",
            format!("{},{}", p.a, p.b),
            m.cpu_list(),
        ));
    };
    let home_of = match s.home {
        Home::Writer => &writer,
        Home::Reader => &reader,
    };
    let mem = resolve_memory(
        m,
        &MemSpec::Local,
        PageSize::Base,
        std::slice::from_ref(home_of),
    )?;
    let mut out = PairResult {
        pair: p,
        cas_half_ns: None,
        modified_read_ns: None,
        cas_passes: None,
        read_passes: None,
        cas_settle: None,
        read_settle: None,
        home_node: mem.nodes.first().copied(),
        distance: Vec::new(),
    };
    if s.cas {
        let buf = Buffer::allocate(host, &mem, 4096)?;
        let c = cas_passes(host, timer, p, s, &buf)?;
        out.cas_half_ns = Some(c.passes.used());
        out.cas_passes = Some(c.passes.log);
        out.cas_settle = Some(c.settle);
        if s.read {
            on_part(&out);
        }
    }
    if s.read {
        let mut plan = LatencyPlan::basic(
            vec![reader.clone()],
            vec![writer.clone()],
            mem.clone(),
            LineState::Dexd,
            Request::Read,
            s.iterations,
            0,
        );
        plan.rules = s.rules;
        let mut res = latency::measure(host, timer, &plan, s.read_bytes)?;
        out.distance = res.distance;
        let r = res.requestors.remove(0);
        out.modified_read_ns = Some(r.ns);
        out.read_passes = Some(r.passes);
        out.read_settle = Some(Settle {
            metric: "modified_read".into(),
            ..r.settle
        });
    }
    on_part(&out);
    Ok(out)
}

/// The CAS ping-pong's passes (RTT/2 per pass), added until their median settles.
fn cas_passes(
    host: &Host,
    timer: &Timer,
    p: Pair,
    s: &C2cSettings,
    buf: &Buffer,
) -> Result<settle::Settled<f64>> {
    let step = settle::Step {
        metric: "cas_rtt_half",
        figure: settle::Figure::Median,
        want: s.iterations,
    };
    let (clock, sleep) = (&mut settle::clock(), &mut std::thread::sleep);
    let mut v = settle::measure(
        &s.rules,
        step,
        |x: &f64| *x,
        clock,
        sleep,
        |n| -> Result<_> {
            let pp = pingpong::ping_pong(host, timer, p.a, p.b, buf, s.round_trips.max(1), n)?;
            Ok(vec![pp
                .rtt_ns
                .iter()
                .map(|r| r / 2.0)
                .zip(pp.disturb)
                .collect()])
        },
    )?;
    Ok(v.remove(0))
}

/// Measure every round; the pairs of a round run concurrently.
pub fn measure(
    host: &Host,
    timer: &Timer,
    rounds: &[Vec<Pair>],
    s: &C2cSettings,
    mut progress: impl FnMut(usize, usize),
    on_part: OnPart,
) -> Result<Vec<PairResult>> {
    let mut out = Vec::new();
    for (i, round) in rounds.iter().enumerate() {
        progress(i, rounds.len());
        let res: Vec<Result<PairResult>> = std::thread::scope(|sc| {
            let hs: Vec<_> = round
                .iter()
                .map(|&p| sc.spawn(move || measure_pair(host, timer, p, s, on_part)))
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(numalab_topo::Error::System("a c2c pair panicked".into()))
                    })
                })
                .collect()
        });
        for r in res {
            out.push(r?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::TopologySource;

    #[test]
    fn rounds_never_share_a_resource_and_cover_every_pair() {
        let host =
            Host::load(&TopologySource::Synthetic("pack:2 l3:2 core:2 pu:2".into())).unwrap();
        let m = &host.machine;
        let cpus: Vec<u32> = m.pus.iter().map(|p| p.os).collect();
        let ps = pairs(m, &cpus);
        assert_eq!(ps.len(), 16 * 15 / 2);
        assert_eq!(ps.iter().filter(|p| p.smt_siblings).count(), 8);
        let rounds = schedule(m, &ps);
        assert_eq!(rounds.iter().map(|r| r.len()).sum::<usize>(), ps.len());
        for r in &rounds {
            for (i, x) in r.iter().enumerate() {
                for y in &r[i + 1..] {
                    assert!(resources(m, x).is_disjoint(&resources(m, y)), "{x:?} {y:?}");
                }
            }
        }
        // Pairs inside different packages can share a round.
        assert!(rounds.iter().any(|r| r.len() > 1));
        assert!(rounds.len() < ps.len());
    }
}
