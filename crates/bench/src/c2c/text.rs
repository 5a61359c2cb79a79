//! c2c records as terminal text: the plan's rounds, or the CPU × CPU matrices with
//! SMT siblings marked.

use super::data::{C2cMatrixData, C2cPlanData};
use numalab_results::disturb::PassLog;
use numalab_results::output::table;
use numalab_results::present::{of, warning_lines};
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
        "c2c plan: {} CPUs, {} pairs in {} rounds (pairs in a round share no core, L3 or package and run at once)\n",
        cpus,
        p["pairs"].as_u64().unwrap_or(0),
        rounds.len()
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
    let iterations = &r.parameters["iterations"];
    let mut s = String::new();
    for (title, m, on) in [
        (
            "CAS round trip / 2 (ns)",
            &d.cas_rtt_half_ns,
            metric != "read",
        ),
        (
            "read of a line Modified in the other CPU (ns)",
            &d.modified_read_ns,
            metric != "cas",
        ),
    ] {
        if on {
            let _ = writeln!(
                s,
                "{title}, median of the undisturbed of {iterations} passes; '*' marks SMT siblings"
            );
            s.push_str(&grid(&d, m));
            s.push_str("\n\n");
        }
    }
    let pairs: Vec<Record> = of(records, "c2c").cloned().collect();
    s.push_str(&PassLog::line_of(&pairs).unwrap_or_default());
    s.push_str(&warning_lines(std::slice::from_ref(r)));
    // One line for all pairs: a big machine has thousands of them.
    s.push_str(&numalab_results::disturb::fold_warnings(&pairs, "pairs").1);
    Some(s)
}

/// One matrix as a table, SMT siblings starred.
fn grid(d: &C2cMatrixData, m: &[Vec<Option<f64>>]) -> String {
    let sibling = |a: u32, b: u32| {
        d.smt_sibling_pairs
            .iter()
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
                Some(v) => format!("{v:.1}{}", if sibling(c, e) { "*" } else { "" }),
                None => "-".into(),
            }));
            r
        })
        .collect();
    let h: Vec<&str> = header.iter().map(|x| x.as_str()).collect();
    table(&h, &rows)
}
