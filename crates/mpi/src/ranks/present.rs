//! How the ranks' placement records are shown: one row per rank (HTML and text),
//! the MPI library and thread level, and the plan of a dry run.

use super::plan::{Plan, KIND_PLAN};
use crate::place::RankPlacement;
use numalab_results::output::table;
use numalab_results::present::{of, warning_lines, Presenter};
use numalab_results::report::html_table;
use numalab_results::Record;

/// `mpi ranks` records (`mpi-rank`: one per rank, its data the [`RankPlacement`]).
pub struct RanksPresenter;

impl Presenter for RanksPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["mpi-rank", KIND_PLAN]
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("mpi-ranks", "Where the MPI ranks ran"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        ranks_html(records)
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        let mut out = String::new();
        for r in of(records, KIND_PLAN) {
            out.push_str(&plan_text(&r.data_as::<Plan>().ok()?));
        }
        if of(records, "mpi-rank").next().is_some() {
            out.push_str(&ranks_text(records));
        }
        (!out.is_empty()).then_some(out)
    }
}

fn plan_text(p: &Plan) -> String {
    let rows: Vec<Vec<String>> = p
        .cpus
        .iter()
        .enumerate()
        .map(|(r, c)| vec![r.to_string(), c.to_string()])
        .collect();
    format!(
        "mpi plan: {} ranks, rank-cpus {} ({}), mpirun {}\n{}\n",
        p.ranks,
        p.rank_cpus,
        if p.per_host {
            "per host"
        } else {
            "this machine"
        },
        p.mpirun,
        table(&["rank", "cpu"], &rows)
    )
}

fn ranks_text(recs: &[Record]) -> String {
    let rows = rank_rows(recs);
    let mut s = table(&RANK_HEADER, &rows);
    s.push('\n');
    if let Some(r) = recs.iter().find(|r| r.kind == "mpi-rank") {
        let p = r.placement.as_ref();
        s.push_str(&format!(
            "MPI: {}; thread level {}\n",
            p.and_then(|p| p["mpi_library"].as_str())
                .and_then(|l| l.split(',').next())
                .unwrap_or("?"),
            p.and_then(|p| p["threading_provided"].as_str())
                .unwrap_or("?"),
        ));
    }
    s.push_str(&warning_lines(recs));
    s
}

/// Where every rank ran, as each rank saw it: rows of [`RANK_HEADER`].
pub fn rank_rows(records: &[Record]) -> Vec<Vec<String>> {
    of(records, "mpi-rank")
        .filter_map(|r| r.data_as::<RankPlacement>().ok())
        .map(|p| {
            let o = |v: Option<u32>| v.map_or("-".into(), |x| x.to_string());
            vec![
                p.rank.to_string(),
                p.host,
                p.cpu.to_string(),
                p.core.to_string(),
                o(p.l3),
                o(p.node),
                o(p.package),
                if p.verified { "yes" } else { "no" }.into(),
            ]
        })
        .collect()
}

/// The columns of [`rank_rows`].
pub const RANK_HEADER: [&str; 8] = [
    "rank", "host", "cpu", "core", "l3", "node", "package", "verified",
];

fn ranks_html(records: &[Record]) -> Option<String> {
    let rows = rank_rows(records);
    (!rows.is_empty()).then(|| "<h3>ranks</h3>".to_string() + &html_table(&RANK_HEADER, &rows))
}
