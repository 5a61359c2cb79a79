//! `suite earth --mpi` as terminal text.

use super::data::MaskData;
use super::plan::SEED_TABLE1;
use numalab_results::output::table;
use numalab_results::present::warning_lines;
use numalab_results::Record;

/// Every part measured as text: Table 1 beside the seed, block moves, issuer and
/// server, Loop 7 masking, outstanding gets, and one load stage by stage.
pub(super) fn earth_text(recs: &[Record]) -> String {
    let mut s = String::new();
    if recs.iter().any(|r| r.parameters["part"] == "ops") {
        s.push_str(&ops_table(recs));
        s.push_str(&blocks_table(recs));
    }
    s.push_str(&split_table(recs));
    s.push_str(&mask_table(recs));
    s.push_str(&mlp_table(recs));
    s.push('\n');
    let breakdown = super::breakdown::text(recs);
    if !breakdown.is_empty() {
        s.push('\n');
        s.push_str(&breakdown);
    }
    s.push_str(&warning_lines(recs));
    s
}

/// The median of `metric`, in whole ns, or "-".
fn cell(r: Option<&Record>, metric: &str) -> String {
    r.and_then(|r| r.median(metric))
        .map_or("-".to_string(), |v| format!("{v:.0}"))
}

/// A string parameter, or "?".
fn word<'a>(r: &'a Record, k: &str) -> &'a str {
    r.parameters[k].as_str().unwrap_or("?")
}

/// The measured record of one Table 1 cell.
fn find<'a>(recs: &'a [Record], op: &str, place: &str, mode: &str) -> Option<&'a Record> {
    recs.iter().find(|r| {
        r.kind == "suite-earth-mpi"
            && r.parameters["part"] == "ops"
            && r.parameters["op"] == op
            && r.parameters["place"] == place
            && r.parameters["mode"] == mode
    })
}

/// Table 1 between ranks beside EARTH-MANNA's.
fn ops_table(recs: &[Record]) -> String {
    let rel = recs
        .iter()
        .find_map(|r| r.parameters["relation"].as_str())
        .unwrap_or("?");
    let mut s = format!("EARTH Table 1 between MPI ranks (ns, median of passes; remote rank = {rel}) beside EARTH-MANNA's (paper: the figures the paper published)\n");
    let mut rows = Vec::new();
    for (op, seed) in SEED_TABLE1 {
        let local = |mode| cell(find(recs, op, "local rank", mode), "time");
        let remote = |mode| cell(find(recs, op, "remote rank", mode), "time");
        rows.push(vec![
            op.to_string(),
            local("sequential"),
            remote("sequential"),
            local("pipelined"),
            remote("pipelined"),
            format!("{:.0}", seed[0]),
            format!("{:.0}", seed[1]),
            format!("{:.0}", seed[2]),
            format!("{:.0}", seed[3]),
        ]);
    }
    s.push_str(&table(
        &[
            "operation",
            "seq local",
            "seq remote",
            "pipe local",
            "pipe remote",
            "paper seq L",
            "paper seq R",
            "paper pipe L",
            "paper pipe R",
        ],
        &rows,
    ));
    s
}

/// Block moves (MPI_Get from the remote rank).
fn blocks_table(recs: &[Record]) -> String {
    let mut s = String::from("\n('-': call and spawn go to the remote rank's server only; the local column of the RMA rows aims at the issuer's own window)\n\nblock moves (MPI_Get from the remote rank)\n");
    let blocks: Vec<Vec<String>> = recs
        .iter()
        .filter(|r| r.parameters["op"] == "block move (get)")
        .map(|r| {
            vec![
                r.parameters["bytes"].to_string(),
                word(r, "mode").to_string(),
                cell(Some(r), "time"),
                r.median("bandwidth")
                    .map_or("-".into(), |v| format!("{v:.2}")),
            ]
        })
        .collect();
    s.push_str(&table(&["bytes", "mode", "ns per block", "GB/s"], &blocks));
    s
}

/// Table 2: the issuer's and the server's share of a remote call.
fn split_table(recs: &[Record]) -> String {
    let split: Vec<Vec<String>> = recs
        .iter()
        .filter(|r| r.parameters["part"] == "split")
        .map(|r| {
            vec![
                word(r, "op").to_string(),
                word(r, "mode").to_string(),
                cell(Some(r), "issuer_overhead"),
                cell(Some(r), "server_cost"),
                cell(Some(r), "time"),
            ]
        })
        .collect();
    if split.is_empty() {
        return String::new();
    }
    String::from("\n\nissuer and server (Table 2; seed: EU overhead 800–1500 ns, remote SU 500–2000 ns for INVOKE)\n")
        + &table(
            &[
                "operation",
                "mode",
                "issuer send ns",
                "server handling ns",
                "total ns per op",
            ],
            &split,
        )
}

/// Loop 7 with u on the remote rank: what the coroutines hid.
fn mask_table(recs: &[Record]) -> String {
    let mask: Vec<Vec<String>> = recs
        .iter()
        .filter(|r| r.kind == "suite-earth-mpi-mask")
        .map(|r| {
            vec![
                format!("×{}", r.parameters["multiplier"]),
                cell(Some(r), "baseline_comm"),
                cell(Some(r), "baseline_comp"),
                mask_curve(r),
            ]
        })
        .collect();
    if mask.is_empty() {
        return String::new();
    }
    String::from("\n\nLoop 7 with u on the remote rank: % of the baseline's communication hidden by coroutines of T iterations (MPI_Rget, yield until done), or how many times the baseline's whole time the masked loop took\n")
        + &table(
            &[
                "comm",
                "baseline comm ns",
                "baseline comp ns",
                "masked by T",
            ],
            &mask,
        )
}

/// G outstanding remote gets.
fn mlp_table(recs: &[Record]) -> String {
    let mlp: Vec<Vec<String>> = recs
        .iter()
        .filter(|r| r.parameters["part"] == "mlp")
        .map(|r| vec![r.parameters["groups"].to_string(), cell(Some(r), "time")])
        .collect();
    if mlp.is_empty() {
        return String::new();
    }
    String::from("\n\nG outstanding remote gets (MPI_Rget, 8 B at random lines of 64 MiB)\n")
        + &table(&["G", "ns per get"], &mlp)
}

/// One mask record's curve in words, for the text and the HTML table alike
/// ([`crate::earth::hide::masking_text`] at each T).
pub fn mask_curve(r: &Record) -> String {
    let base = r
        .median("baseline_comm")
        .zip(r.median("baseline_comp"))
        .map(|(a, b)| a + b);
    r.data_as::<MaskData>()
        .map(|d| d.points)
        .unwrap_or_default()
        .iter()
        .map(|p| {
            let text = crate::earth::hide::masking_text(p.masked_pct, p.median_ns, base);
            format!("T={}: {text}", p.t)
        })
        .collect::<Vec<_>>()
        .join(", ")
}
