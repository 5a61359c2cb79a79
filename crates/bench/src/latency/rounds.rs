//! A sweep's short sizes measured in a second round, after every size's first, and
//! each figure judged again over both rounds' passes. A size's passes otherwise come
//! from a fraction of a second, so a stretch of a busy host (on a 2-vCPU guest, the
//! host core's other thread running another tenant's L1-heavy loop, or other tenants
//! filling the host's shared L3) moves the sizes measured during it by one factor while
//! each settles tightly: two back-to-back quiet surveys read 24 and 32 KiB at 1.29 and
//! 1.37 ns, then 1.82 and 3.60 ns, every pass settled and undisturbed; on an Emerald
//! Rapids guest (260 MiB shared L3) 64 MiB read 84 ns in one survey and 134 ns in the
//! next, each within 5 % over its three passes. With a second round seconds later, such
//! a stretch shows as two rounds that disagree, and the figure reads unsettled with why,
//! instead of a settled figure of one moment. Long sizes (memory, with passes of a
//! second or more) span the stretch in their own passes and are not measured twice.

use super::{measure, LatencyPlan, RequestorResult, SizeResult};
use crate::experiment::Progress;
use numalab_probe::Timer;
use numalab_results::disturb::PassLog;
use numalab_results::settle::Figure;
use numalab_topo::{fmt_bytes, Host, Result};
use std::time::Duration;

/// Sizes whose first round took less than this are measured in a second round.
pub const SECOND_ROUND_BELOW: Duration = Duration::from_millis(250);

/// Sizes within the last-level cache whose first round took less than this are
/// measured in a second round too: their passes cap the loads, so in a large L3 a
/// round takes 0.3–0.6 s, and what other tenants leave them of a shared L3 moves
/// them between runs. Memory sizes past it are left at one round: on the Emerald
/// Rapids guest their second rounds took the full sweep from 14–15 s to 19–22 s.
pub const SECOND_ROUND_IN_LLC_BELOW: Duration = Duration::from_secs(1);

/// Whether a size of `size` bytes whose first round took `took` is measured again,
/// with a last-level cache of `llc` bytes.
fn again(size: u64, took: Duration, llc: Option<u64>) -> bool {
    took < SECOND_ROUND_BELOW
        || (took < SECOND_ROUND_IN_LLC_BELOW && llc.is_some_and(|l| size <= l))
}

/// Measure again every size [`again`] picks (`took`, one per size) and fold the
/// second round into the first.
pub fn second(
    host: &Host,
    timer: &Timer,
    plan: &LatencyPlan,
    results: &mut [SizeResult],
    took: &[Duration],
    progress: Progress,
) -> Result<()> {
    let llc = host.machine.last_level_cache().map(|c| c.bytes);
    let short: Vec<usize> = (0..results.len())
        .filter(|&i| {
            let size = results[i].shape.size;
            took.get(i).is_some_and(|t| again(size, *t, llc))
        })
        .collect();
    for (k, &i) in short.iter().enumerate() {
        let size = results[i].shape.size;
        progress(&format!(
            "latency: second round {}/{} {:>10}",
            k + 1,
            short.len(),
            fmt_bytes(size)
        ));
        let again = measure(host, timer, plan, size)?;
        fold(&mut results[i], again);
    }
    Ok(())
}

/// Fold a size's second round into its first: every pass of both, each requestor's
/// figure judged again over them all.
pub fn fold(first: &mut SizeResult, second: SizeResult) {
    for (q, b) in first.requestors.iter_mut().zip(second.requestors) {
        // The records prove the first round's buffer; say so when the second's landed
        // on other nodes.
        let nodes = |m: &numalab_topo::buffer::MemProof| {
            m.pages_per_node.keys().copied().collect::<Vec<u32>>()
        };
        if nodes(&q.memory) != nodes(&b.memory) {
            first.warnings.push(format!(
                "requestor {}'s second-round buffer landed on nodes {:?}, the first's on {:?}",
                q.requestor,
                nodes(&b.memory),
                nodes(&q.memory)
            ));
        }
        fold_requestor(q, b);
    }
    for w in second.warnings {
        if !first.warnings.contains(&w) {
            first.warnings.push(w);
        }
    }
    // Folding re-judges each median from its intervals: a pair that moved during
    // either round still leaves it unsettled.
    if first.moved.is_none() {
        first.moved = second.moved;
    }
    super::mark_moved(first);
}

fn fold_requestor(q: &mut RequestorResult, b: RequestorResult) {
    q.ns.extend(b.ns);
    q.ticks.extend(b.ticks);
    q.all_ns.extend(b.all_ns);
    if let (Some(own), Some(more)) = (q.own_cache_ns.as_mut(), b.own_cache_ns) {
        own.extend(more);
    }
    if let (Some(c), Some(d)) = (q.clock.as_mut(), b.clock) {
        c.after_ghz = d.after_ghz;
    }
    append(&mut q.passes, b.passes);
    let s = &mut q.settle;
    s.passes += b.settle.passes;
    s.budget_ms += b.settle.budget_ms;
    let i = Figure::Median.of(&q.ns);
    s.interval = i.map_or([f64::NAN; 2], |i| [i.lo, i.hi]);
    let tol = s.tolerance_pct;
    let settled = i.is_some_and(|i| i.within(tol)) && !q.passes.mostly_disturbed();
    s.why = match (settled, i) {
        (true, _) => None,
        // Each round settled on its own: the rounds disagree.
        (false, Some(i)) if s.settled && b.settle.settled => Some(format!(
            "machine busy: two rounds of passes seconds apart disagree, its interval ±{:.1} % against ±{tol} % over both rounds' {} passes",
            i.half_pct().min(1e6),
            q.ns.len()
        )),
        (false, _) => s.why.clone().or(b.settle.why),
    };
    s.settled = settled;
}

/// The second round's passes after the first's, their attempts numbered on.
fn append(log: &mut PassLog, more: PassLog) {
    let next = log.passes.iter().map(|p| p.attempt + 1).max().unwrap_or(0);
    log.passes.extend(more.passes.into_iter().map(|mut p| {
        p.attempt += next;
        p
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::disturb::{Disturbance, PassMark, Rules};
    use numalab_results::Settle;
    use numalab_topo::buffer::MemProof;
    use numalab_topo::PageSize;

    /// A requestor whose round settled (or not) on `ns`, one undisturbed pass each.
    fn round(ns: &[f64], settled: bool) -> RequestorResult {
        let mark = PassMark {
            attempt: 0,
            disturbed: false,
            used: true,
            counts: Disturbance::default(),
        };
        RequestorResult {
            requestor: 0,
            ns: ns.to_vec(),
            ticks: ns.iter().map(|x| x * 3.0).collect(),
            all_ns: ns.to_vec(),
            passes: PassLog {
                rules: Rules::default(),
                passes: vec![mark; ns.len()],
            },
            settle: Settle {
                passes: ns.len() as u32,
                budget_ms: 50.0,
                ..Settle::new(
                    "latency",
                    [0.0, 0.0],
                    (!settled).then_some("machine busy: first"),
                )
            },
            memory: MemProof {
                bytes: 4096,
                page_size: PageSize::Base,
                pages_checked: 1,
                pages_per_node: Default::default(),
                pages_missing: 0,
                thp_bytes: None,
                expected_nodes: vec![0],
            },
            restart: None,
            own_cache_ns: None,
            clock: None,
        }
    }

    #[test]
    fn short_rounds_and_rounds_within_the_llc_are_measured_again() {
        let ms = Duration::from_millis;
        let llc = Some(260 << 20);
        assert!(again(1 << 30, ms(200), llc));
        assert!(!again(1 << 30, ms(600), llc));
        assert!(again(64 << 20, ms(600), llc));
        assert!(!again(64 << 20, ms(1500), llc));
        // No LLC known: only short rounds.
        assert!(!again(64 << 20, ms(600), None));
    }

    #[test]
    fn rounds_that_agree_stay_settled_over_both_rounds_passes() {
        let mut q = round(&[1.29, 1.30, 1.31], true);
        fold_requestor(&mut q, round(&[1.30, 1.32, 1.31], true));
        assert_eq!(q.ns.len(), 6);
        assert_eq!(q.ticks.len(), 6);
        assert!(q.settle.settled, "{:?}", q.settle);
        assert_eq!((q.settle.passes, q.settle.budget_ms), (6, 100.0));
        assert_eq!(q.settle.interval, [1.29, 1.32]);
        // The second round's passes are numbered after the first's.
        let attempts: Vec<usize> = q.passes.passes.iter().map(|p| p.attempt).collect();
        assert_eq!(attempts, [0, 0, 0, 1, 1, 1]);
    }

    /// One size measured with requestor `q`, its pairs unmoved.
    fn size(q: RequestorResult) -> SizeResult {
        SizeResult {
            shape: super::super::Shape {
                size: 4096,
                elements: 64,
                visited: 64,
                loads: 64,
            },
            requestors: vec![q],
            pins: Vec::new(),
            warnings: Vec::new(),
            distance: Vec::new(),
            distance_after: Vec::new(),
            moved: None,
        }
    }

    #[test]
    fn a_pair_that_moved_during_either_round_leaves_the_folded_median_unsettled() {
        let moved = || {
            Some(
                "CPUs 0 and 1 moved during the step: 48 ns apart before its passes, 140 ns after"
                    .to_string(),
            )
        };
        for (in_first, in_second) in [(true, false), (false, true)] {
            let mut first = size(round(&[1.3, 1.3, 1.3], true));
            let mut second = size(round(&[1.3, 1.3, 1.3], true));
            if in_first {
                first.moved = moved();
                super::super::mark_moved(&mut first);
                assert!(!first.requestors[0].settle.settled);
            }
            if in_second {
                second.moved = moved();
            }
            fold(&mut first, second);
            let s = &first.requestors[0].settle;
            assert!(!s.settled, "{s:?}");
            let why = s.why.as_deref().unwrap();
            assert!(why.starts_with("machine busy: CPUs 0 and 1 moved"), "{why}");
        }
        // Neither moved: the same passes settle when folded.
        let mut first = size(round(&[1.3, 1.3, 1.3], true));
        fold(&mut first, size(round(&[1.3, 1.3, 1.3], true)));
        assert!(first.requestors[0].settle.settled);
    }

    #[test]
    fn a_second_rounds_buffer_on_other_nodes_is_said() {
        let mut a = round(&[1.3, 1.3, 1.3], true);
        a.memory.pages_per_node.insert(0, 1);
        let mut b = round(&[1.3, 1.3, 1.3], true);
        b.memory.pages_per_node.insert(0, 1);
        let mut first = size(a.clone());
        fold(&mut first, size(b.clone()));
        assert!(first.warnings.is_empty(), "{:?}", first.warnings);
        b.memory.pages_per_node = [(1, 1)].into();
        let mut first = size(a);
        fold(&mut first, size(b));
        assert_eq!(
            first.warnings,
            ["requestor 0's second-round buffer landed on nodes [1], the first's on [0]"]
        );
    }

    #[test]
    fn rounds_that_disagree_read_unsettled_with_why() {
        // A quiet guest's 32 KiB point: 1.37 ns in one stretch, 3.6 ns in another.
        let mut q = round(&[1.36, 1.37, 1.38], true);
        fold_requestor(&mut q, round(&[3.5, 3.6, 3.7], true));
        assert!(!q.settle.settled);
        let why = q.settle.why.unwrap();
        assert!(
            why.starts_with("machine busy: two rounds of passes seconds apart disagree"),
            "{why}"
        );
        assert!(why.ends_with("over both rounds' 6 passes"), "{why}");
        // A round that had not settled keeps its own reason.
        let mut q = round(&[1.0, 2.0, 3.0], false);
        fold_requestor(&mut q, round(&[3.5, 3.6, 3.7], true));
        assert_eq!(q.settle.why.as_deref(), Some("machine busy: first"));
    }
}
