//! c2c records as terminal text: the plan's rounds, or the CPU × CPU matrices with
//! SMT siblings marked.

use super::data::{C2cMatrixData, C2cPairData, C2cPlanData};
use numalab_results::disturb::PassLog;
use numalab_results::output::table;
use numalab_results::present::{of, warning_lines};
use numalab_results::settle;
use numalab_results::words;
use numalab_results::Record;
use std::fmt::Write;

/// The dry run's plan: pairs in rounds that run at once (the first 20 rounds).
pub(super) fn plan_text(r: &Record) -> Option<String> {
    let rounds = r.data_as::<C2cPlanData>().ok()?.rounds;
    let p = &r.parameters;
    let cpus = p["cpus"].as_str().map_or(0, |c| {
        numalab_topo::cpulist::parse("cpus", c).map_or(0, |v| v.len())
    });
    let mut s = format!(
        "c2c plan: {}, {} in {} (pairs in a round share no core, L3 or package and run at once)\n",
        words::count(cpus as u64, "CPU"),
        words::count(p["pairs"].as_u64().unwrap_or(0), "pair"),
        words::count(rounds.len() as u64, "round")
    );
    for (i, r) in rounds.iter().enumerate().take(20) {
        let ps: Vec<String> = r.iter().map(|p| format!("{}-{}", p.a, p.b)).collect();
        let _ = writeln!(s, "  round {}: {}", i + 1, ps.join(" "));
    }
    if rounds.len() > 20 {
        let _ = writeln!(s, "  … {} more rounds", rounds.len() - 20);
    }
    Some(s)
}

/// The measured matrices, each metric the run asked for.
pub(super) fn matrix_text(records: &[Record]) -> Option<String> {
    let r = of(records, "c2c-matrix").last()?;
    let d: C2cMatrixData = r.data_as().ok()?;
    let metric = r.parameters["metric"].as_str().unwrap_or("both");
    let pairs: Vec<Record> = of(records, "c2c").cloned().collect();
    let mut s = String::new();
    for (title, m, unsettled, on, log) in [
        (
            "CAS round trip / 2 (ns)",
            &d.cas_rtt_half_ns,
            &d.cas_unsettled,
            metric != "read",
            (|p| p.cas) as fn(C2cPairData) -> Option<PassLog>,
        ),
        (
            "read of a line Modified in the other CPU (ns)",
            &d.modified_read_ns,
            &d.read_unsettled,
            metric != "cas",
            |p| p.read,
        ),
    ] {
        if on {
            let logs: Vec<PassLog> = pairs
                .iter()
                .filter_map(|p| log(p.data_as::<C2cPairData>().ok()?))
                .collect();
            let _ = writeln!(
                s,
                "{title}, {}; '*' marks SMT siblings",
                statistic(&r.parameters, &logs)
            );
            s.push_str(&grid(&d, m, unsettled));
            s.push_str("\n\n");
        }
    }
    s.push_str(&PassLog::line_of(&pairs).unwrap_or_default());
    s.push_str(&warning_lines(std::slice::from_ref(r)));
    s.push_str(&unsettled_lines(&pairs));
    // One line for all pairs: a big machine has thousands of them.
    s.push_str(&numalab_results::disturb::fold_warnings(&pairs, "pairs").1);
    Some(s)
}

/// What each cell is, as the pairs' pass logs say it was formed: the median of the
/// undisturbed passes, or of all passes for pairs with none undisturbed, or of all
/// passes when disturbed ones are kept; with how the passes were added.
fn statistic(p: &serde_json::Value, logs: &[PassLog]) -> String {
    let settle = format!(
        "at least {} per pair, more until the median's interval is within ±{} %",
        numalab_results::words::passes(p["iterations"].as_u64().unwrap_or(0) as usize),
        p["tolerance_pct"]
            .as_f64()
            .unwrap_or(settle::DEFAULT_TOLERANCE_PCT)
    );
    let all_kept = logs
        .iter()
        .filter(|l| l.disturbed() > 0 && l.excluded() == 0)
        .count();
    let keep = logs
        .first()
        .is_some_and(|l| l.rules.policy == numalab_results::disturb::Policy::Keep);
    let what = if keep {
        "median of every pass, disturbed ones included".to_string()
    } else if all_kept == 0 {
        "median of the undisturbed passes".to_string()
    } else if all_kept == logs.len() {
        "median of all passes (none was undisturbed, so the disturbed ones are in it)".to_string()
    } else {
        format!("median of the undisturbed passes, or of all passes for the {all_kept} of {} pairs with none undisturbed", logs.len())
    };
    format!("{what} ({settle})")
}

/// The footnotes of the "unsettled*" cells: each unsettled pair's warning (the first
/// 10, then a count).
fn unsettled_lines(pairs: &[Record]) -> String {
    let lines: Vec<&String> = pairs
        .iter()
        .flat_map(|p| p.warnings.iter())
        .filter(|w| w.starts_with(settle::UNSETTLED))
        .collect();
    let mut s = String::new();
    for w in lines.iter().take(10) {
        let _ = writeln!(s, "warning: {w}");
    }
    if lines.len() > 10 {
        let _ = writeln!(
            s,
            "warning: {} more pairs did not settle (each record's warnings say why)",
            lines.len() - 10
        );
    }
    s
}

/// One matrix as a table, SMT siblings starred, unsettled cells marked.
fn grid(d: &C2cMatrixData, m: &[Vec<Option<f64>>], unsettled: &[[u32; 2]]) -> String {
    let has = |list: &[[u32; 2]], a: u32, b: u32| {
        list.iter()
            .any(|p| (p[0], p[1]) == (a, b) || (p[0], p[1]) == (b, a))
    };
    let mut header = vec!["cpu".to_string()];
    header.extend(d.cpus.iter().map(|c| c.to_string()));
    let rows: Vec<Vec<String>> = d
        .cpus
        .iter()
        .zip(m.iter())
        .map(|(&c, row)| {
            let mut r = vec![c.to_string()];
            r.extend(row.iter().zip(d.cpus.iter()).map(|(v, &e)| match v {
                Some(v) => {
                    let star = if has(&d.smt_sibling_pairs, c, e) {
                        "*"
                    } else {
                        ""
                    };
                    let settled = !has(unsettled, c, e);
                    let s = format!("{v:.1}{star}");
                    if settled {
                        s
                    } else {
                        format!("{s} {}*", settle::UNSETTLED)
                    }
                }
                None => "-".into(),
            }));
            r
        })
        .collect();
    let h: Vec<&str> = header.iter().map(|x| x.as_str()).collect();
    table(&h, &rows)
}

#[cfg(test)]
mod tests {
    use super::super::{experiment::pair_record_for_tests, PairResult};
    use super::*;
    use numalab_results::disturb::{Disturbance, PassMark, Rules};
    use numalab_results::{Provenance, Settle};
    use serde_json::json;

    fn log(disturbed: bool) -> PassLog {
        let mark = PassMark {
            attempt: 0,
            disturbed,
            used: true,
            counts: Disturbance::default(),
        };
        PassLog {
            rules: Rules::default(),
            passes: vec![mark; 5],
        }
    }

    #[test]
    fn the_header_says_what_the_median_is_of_and_an_unsettled_cell_says_so() {
        let why = "machine busy: 5 of 5 passes disturbed (run-queue wait 99 %); its interval ±59.1 % against ±10 % (budget spent)";
        let r = PairResult {
            pair: super::super::Pair {
                a: 0,
                b: 1,
                smt_siblings: false,
            },
            cas_half_ns: Some(vec![2602.4; 5]),
            modified_read_ns: None,
            cas_passes: Some(log(true)),
            read_passes: None,
            cas_settle: Some(Settle {
                passes: 5,
                ..Settle::new("cas_rtt_half", [1149.0, 3278.0], Some(why))
            }),
            read_settle: None,
            home_node: Some(0),
            distance: Vec::new(),
        };
        let params = json!({ "metric": "cas", "iterations": 5, "tolerance_pct": 10.0 });
        let prov = Provenance::collect("t", "none");
        let pair = pair_record_for_tests(&r, &params, &prov);
        assert!(!pair.settled());
        let mut m = Record::new("c2c-matrix", "2 CPUs", prov, params);
        m.set_data(&C2cMatrixData {
            cpus: vec![0, 1],
            cas_rtt_half_ns: vec![vec![None, Some(2602.4)], vec![Some(2602.4), None]],
            modified_read_ns: vec![vec![None; 2]; 2],
            smt_sibling_pairs: Vec::new(),
            statistic: "median of passes".into(),
            cas_unsettled: vec![[0, 1]],
            read_unsettled: Vec::new(),
        });
        let text = matrix_text(&[pair, m]).unwrap();
        // The contradiction: a header of "the undisturbed" over a footer of
        // "none undisturbed, so all kept".
        assert!(
            text.contains(
                "median of all passes (none was undisturbed, so the disturbed ones are in it)"
            ),
            "{text}"
        );
        assert!(!text.contains("median of the undisturbed"), "{text}");
        assert!(text.contains("2602.4 unsettled*"), "{text}");
        assert!(
            !text.contains("2602.4 \n") && !text.contains(" 2602.4  "),
            "a plain number: {text}"
        );
        assert!(
            text.contains(&format!("warning: unsettled* cpu0-cpu1: cas_rtt_half not within ±10 % in its 100 ms budget (5 passes, interval 1149…3278): {why}")),
            "{text}"
        );
    }
}
