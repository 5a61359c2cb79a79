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
use numalab_results::disturb::{PassLog, Policy, Rules};
use numalab_results::{distance, stats};
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
    let mut out = PairResult::unmeasured(p, mem.nodes.first().copied());
    let buf = s
        .cas
        .then(|| Buffer::allocate(host, &mem, 4096))
        .transpose()?;
    if let Some(buf) = &buf {
        out.set_cas(cas_passes(host, timer, p, s, buf)?);
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
    if let (Some(buf), Some(probe)) = (&buf, out.distance.first().map(|d| d.rtt_ns)) {
        let again = |_| cas_passes(host, timer, p, s, buf);
        let remeasure = s.rules.policy == Policy::Remeasure;
        checked_against_probe(&mut out, probe, remeasure, again)?;
    }
    on_part(&out);
    Ok(out)
}

/// Times the CAS passes are measured again when they read slower than the pair's probe.
pub const MAX_PROBE_REMEASURE: u32 = 2;

/// The CAS passes measured again (under `Remeasure`, up to [`MAX_PROBE_REMEASURE`]
/// times) while their median round trip reads above the pair's distance probe taken
/// after them ([`distance::above_probe`]); marked unsettled, with why, when it still
/// does. The probe times the same CAS round trip (the least of its samples), and a
/// ping-pong needs both CPUs running at once: a host that runs one vCPU late slows
/// every round trip of a pass alike, so such passes can settle narrow and still be the
/// busy host's figure (a quiet guest's quick survey read 103 ns per hand-over against a
/// 49 ns round trip probed moments later; the next survey read 30 ns).
fn checked_against_probe(
    out: &mut PairResult,
    probe_rtt: f64,
    remeasure: bool,
    mut again: impl FnMut(u32) -> Result<settle::Settled<f64>>,
) -> Result<()> {
    let half = |o: &PairResult| o.cas_half_ns.as_deref().and_then(stats::median);
    let mut tries = 0;
    while let Some(h) = half(out).filter(|h| distance::above_probe(2.0 * h, probe_rtt)) {
        if !remeasure || tries == MAX_PROBE_REMEASURE {
            if let Some(st) = out.cas_settle.as_mut() {
                st.settled = false;
                st.why = Some(format!(
                    "machine busy: a round trip read {:.0} ns, over {}× the {probe_rtt:.0} ns the pair's probe read moments later, after {tries} re-measurements (one CPU of the pair ran late)",
                    2.0 * h,
                    distance::RATIO
                ));
            }
            break;
        }
        tries += 1;
        out.set_cas(again(tries)?);
    }
    Ok(())
}

impl PairResult {
    /// Pair `pair` with its line on `home_node`, nothing measured yet.
    fn unmeasured(pair: Pair, home_node: Option<u32>) -> PairResult {
        PairResult {
            pair,
            cas_half_ns: None,
            modified_read_ns: None,
            cas_passes: None,
            read_passes: None,
            cas_settle: None,
            read_settle: None,
            home_node,
            distance: Vec::new(),
        }
    }

    /// Take `c` as the pair's CAS figures.
    fn set_cas(&mut self, c: settle::Settled<f64>) {
        self.cas_half_ns = Some(c.passes.used());
        self.cas_passes = Some(c.passes.log);
        self.cas_settle = Some(c.settle);
    }
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
    use numalab_results::disturb::{Disturbance, PassMark, Passes};
    use numalab_topo::TopologySource;

    /// Five undisturbed CAS passes at `half` ns, settled.
    fn cas(half: f64) -> settle::Settled<f64> {
        let mark = PassMark {
            attempt: 0,
            disturbed: false,
            used: true,
            counts: Disturbance::default(),
        };
        settle::Settled {
            passes: Passes {
                values: vec![half; 5],
                log: PassLog {
                    rules: Rules::default(),
                    passes: vec![mark; 5],
                },
            },
            settle: Settle {
                passes: 5,
                ..Settle::new("cas_rtt_half", [half, half], None)
            },
        }
    }

    fn pair_with(c: settle::Settled<f64>) -> PairResult {
        let pair = Pair {
            a: 0,
            b: 1,
            smt_siblings: false,
        };
        let mut out = PairResult::unmeasured(pair, Some(0));
        out.set_cas(c);
        out
    }

    #[test]
    fn cas_passes_slower_than_the_pairs_probe_are_measured_again_and_kept_if_they_agree() {
        // 103 ns per hand-over against a 49 ns probe: measured again; 26 ns agrees.
        let mut out = pair_with(cas(103.0));
        let mut tries = Vec::new();
        checked_against_probe(&mut out, 49.0, true, |k| {
            tries.push(k);
            Ok(cas(26.0))
        })
        .unwrap();
        assert_eq!(tries, [1]);
        assert_eq!(out.cas_half_ns.as_deref(), Some(&[26.0; 5][..]));
        assert!(out.cas_settle.unwrap().settled);
        // Within 1.3× of the probe (30 ns per hand-over, 56 ns round trip): kept as is.
        let mut out = pair_with(cas(30.0));
        checked_against_probe(&mut out, 56.0, true, |_| panic!("measured again")).unwrap();
        assert!(out.cas_settle.unwrap().settled);
        // Faster than the probe: the probe was the slow one, the figure stands.
        let mut out = pair_with(cas(10.0));
        checked_against_probe(&mut out, 56.0, true, |_| panic!("measured again")).unwrap();
        assert!(out.cas_settle.unwrap().settled);
    }

    #[test]
    fn cas_passes_that_stay_slower_than_the_probe_are_unsettled_with_why() {
        let mut out = pair_with(cas(103.0));
        let mut n = 0;
        checked_against_probe(&mut out, 49.0, true, |_| {
            n += 1;
            Ok(cas(100.0))
        })
        .unwrap();
        assert_eq!(n, MAX_PROBE_REMEASURE);
        let st = out.cas_settle.unwrap();
        assert!(!st.settled);
        let why = st.why.unwrap();
        assert!(
            why.starts_with("machine busy: a round trip read 200 ns, over 1.3× the 49 ns"),
            "{why}"
        );
        // Under --disturbed keep nothing is measured again, and the figure says so.
        let mut out = pair_with(cas(103.0));
        checked_against_probe(&mut out, 49.0, false, |_| panic!("measured again")).unwrap();
        assert!(!out.cas_settle.unwrap().settled);
    }

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
