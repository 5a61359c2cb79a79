//! How the rank matrix is shown: the rank × rank heatmap in machine order, its cells
//! grouped by relation (HTML and text), one summary card per relation, and the plan.

use super::data::MatrixData;
use super::plan::{Plan, KIND_PLAN};
use crate::place::RankPlacement;
use numalab_results::output::table;
use numalab_results::plot;
use numalab_results::present::{of, warning_lines, Presenter};
use numalab_results::report::{figure, grid_table, html_table, num};
use numalab_results::summary::{self, stat_figure, Card, Figure, Spread};
use numalab_results::Record;

/// `mpi matrix` records and its plan.
pub struct MatrixPresenter;

impl Presenter for MatrixPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["mpi-matrix", "mpi-matrix-pair", KIND_PLAN]
    }
    fn study(&self) -> bool {
        true
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("mpi-matrix", "MPI rank matrix"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        matrix(records)
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        let mut out = String::new();
        for r in of(records, KIND_PLAN) {
            out.push_str(&r.data_as::<Plan>().ok()?.text());
        }
        out.push_str(&matrix_text(records));
        (!out.is_empty()).then_some(out)
    }
    fn cards(&self, records: &[Record]) -> Vec<Card> {
        matrix_cards(records)
    }
}

/// Summary cards of the rank matrix: one per relation (nearest first), its median
/// one-way latency with the range over its pairs, or over one pair's passes.
pub fn matrix_cards(records: &[Record]) -> Vec<Card> {
    let Some(r) = of(records, "mpi-matrix").last() else {
        return Vec::new();
    };
    let Ok(d) = r.data_as::<MatrixData>() else {
        return Vec::new();
    };
    let size = r.parameters["size"].as_u64().unwrap_or(0);
    let label = format!("{size} B one way");
    d.groups
        .iter()
        .filter_map(|g| {
            let fig = if g.pairs > 1 {
                Figure::new(&label, g.median_ns, "ns", 1, "mpi-matrix").with(Some(Spread {
                    lo: g.min_ns,
                    hi: g.max_ns,
                    what: format!("range over {} pairs", g.pairs),
                }))
            } else {
                let pair = of(records, "mpi-matrix-pair")
                    .find(|p| p.parameters["relation"] == g.relation.as_str())?;
                stat_figure(pair, "latency", &label, "ns", 1, "mpi-matrix", "passes")?
            };
            let mut c = Card::one(
                summary::Group::Cores,
                &format!("MPI ranks, {}", g.relation),
                fig,
            );
            c.detail = Some(format!(
                "{} pair{} of ranks",
                g.pairs,
                if g.pairs == 1 { "" } else { "s" }
            ));
            Some(c)
        })
        .collect()
}

/// The order to show `n` ranks in (rank numbers) and the boundaries between hosts,
/// packages, nodes and L3 domains in that order, from the ranks' placement records:
/// neighbours in the heatmap are neighbours in the machine whatever `--rank-cpus`
/// placed where. Ranks without a placement record keep their order, after the others.
pub fn rank_order(records: &[Record], n: usize) -> (Vec<usize>, Vec<plot::Boundary>) {
    let placed: Vec<RankPlacement> = of(records, "mpi-rank")
        .filter_map(|r| r.data_as::<RankPlacement>().ok())
        .collect();
    let at = |r: usize| placed.iter().find(|p| p.rank == r);
    let key = |r: usize| at(r).map(|p| (p.host.clone(), p.package, p.node, p.l3, p.core, p.cpu));
    let mut order: Vec<usize> = (0..n).collect();
    // Cached: the key clones the host name.
    order.sort_by_cached_key(|&r| (key(r).is_none(), key(r), r));
    // The host compared as a string beside the numbered domains.
    let bounds = plot::boundaries(&order, |r| {
        at(r).map(|p| {
            let n = |x: Option<u32>| x.map(|v| v.to_string());
            vec![
                ("host", Some(p.host.clone())),
                ("package", n(p.package)),
                ("node", n(p.node)),
                ("l3", n(p.l3)),
            ]
        })
    });
    (order, bounds)
}

/// The rank × rank heatmap in machine order, and its cells grouped by relation.
fn matrix(records: &[Record]) -> Option<String> {
    let r = of(records, "mpi-matrix").last()?;
    let d: MatrixData = r.data_as().ok()?;
    let (order, bounds) = rank_order(records, d.latency_ns.len());
    let labels: Vec<String> = order.iter().map(|k| format!("rank {k}")).collect();
    let cells = plot::permute(&d.latency_ns, &order);
    let title = format!(
        "one-way latency of {} B ping-pong (ns)",
        r.parameters["size"]
    );
    let groups: Vec<Vec<String>> = d
        .groups
        .iter()
        .map(|g| {
            vec![
                g.relation.clone(),
                g.pairs.to_string(),
                num(Some(g.min_ns), 1),
                num(Some(g.median_ns), 1),
                num(Some(g.max_ns), 1),
            ]
        })
        .collect();
    let by_relation = plot::bar_chart(
        "median latency by relation (ns)",
        "ns",
        &d.groups
            .iter()
            .map(|g| (g.relation.clone(), g.median_ns))
            .collect::<Vec<_>>(),
    );
    Some(
        format!("<h3>rank × rank matrix ({})</h3>", d.statistic)
            + &figure(
                plot::heatmap_domains(&title, &labels, &labels, &cells, &bounds),
                grid_table(&labels, &labels, &cells),
            )
            + &figure(
                by_relation,
                html_table(
                    &["relation", "pairs", "min ns", "median ns", "max ns"],
                    &groups,
                ),
            ),
    )
}

/// The rank × rank matrix and its groups by relation.
fn matrix_text(recs: &[Record]) -> String {
    let Some(m) = recs.iter().find(|r| r.kind == "mpi-matrix") else {
        return String::new();
    };
    let d: Option<MatrixData> = m.data_as().ok();
    let n = m.parameters["ranks"].as_u64().unwrap_or(0) as usize;
    let cell = |a: usize, b: usize| d.as_ref().and_then(|d| *d.latency_ns.get(a)?.get(b)?);
    let mut header = vec!["rank".to_string()];
    header.extend((0..n).map(|r| r.to_string()));
    let rows: Vec<Vec<String>> = (0..n)
        .map(|a| {
            let mut row = vec![a.to_string()];
            row.extend((0..n).map(|b| match cell(a, b) {
                Some(v) => format!("{v:.1}"),
                None => "-".into(),
            }));
            row
        })
        .collect();
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut s = format!(
        "one-way latency (ns) of {} B ping-pong, median per pair\n",
        m.parameters["size"]
    );
    s.push_str(&table(&h, &rows));
    s.push_str("\n\nby relation\n");
    let g: Vec<Vec<String>> = d
        .iter()
        .flat_map(|d| &d.groups)
        .map(|g| {
            vec![
                g.relation.clone(),
                g.pairs.to_string(),
                format!("{:.1}", g.min_ns),
                format!("{:.1}", g.median_ns),
                format!("{:.1}", g.max_ns),
            ]
        })
        .collect();
    s.push_str(&table(
        &["relation", "pairs", "min ns", "median ns", "max ns"],
        &g,
    ));
    s.push('\n');
    for dom in d.iter().flat_map(|d| d.by_host.iter().chain(&d.by_node)) {
        s.push_str(&domains_text(dom));
    }
    s.push_str(&warning_lines(recs));
    s
}

/// Host × host (or one host's node × node): the median of the pair medians per cell.
fn domains_text(d: &super::data::Domains) -> String {
    let what = match &d.host {
        None => "host × host".to_string(),
        Some(h) => format!("node × node on {h}"),
    };
    let mut header = vec![""];
    header.extend(d.labels.iter().map(String::as_str));
    let rows: Vec<Vec<String>> = d
        .labels
        .iter()
        .zip(&d.median_ns)
        .map(|(l, row)| {
            let mut r = vec![l.clone()];
            r.extend(
                row.iter()
                    .map(|v| v.map_or("-".into(), |v| format!("{v:.1}"))),
            );
            r
        })
        .collect();
    format!(
        "\n{what}: median ns of the pairs between them\n{}\n",
        table(&header, &rows)
    )
}
#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::Provenance;

    fn placed(rank: usize, host: &str, cpu: u32, l3: u32) -> Record {
        let mut r = Record::new(
            "mpi-rank",
            "rank",
            Provenance::collect("test", "synthetic"),
            serde_json::json!({ "rank": rank }),
        );
        r.set_data(&RankPlacement {
            rank,
            host: host.into(),
            local_rank: 0,
            cpu,
            core: cpu,
            l3: Some(l3),
            node: Some(0),
            package: Some(0),
            observed_cpu: Some(cpu),
            verified: true,
            shares_cpu: false,
        });
        r
    }

    #[test]
    fn ranks_are_shown_host_by_host_and_domain_by_domain() {
        // Scattered: rank 1 on another host, rank 2 beside rank 0 in another L3, rank 3
        // without a placement record.
        let recs = vec![
            placed(0, "a", 0, 0),
            placed(1, "b", 0, 0),
            placed(2, "a", 8, 1),
        ];
        let (order, bounds) = rank_order(&recs, 4);
        assert_eq!(order, [0, 2, 1, 3]);
        let b: Vec<(usize, &str)> = bounds.iter().map(|b| (b.after, b.kind)).collect();
        assert_eq!(b, [(0, "l3"), (1, "host")]);
        // No placement records: rank order, no boundaries.
        let (order, bounds) = rank_order(&[], 3);
        assert_eq!(order, [0, 1, 2]);
        assert!(bounds.is_empty());
    }

    #[test]
    fn the_matrix_gives_one_card_per_relation_and_a_sentence() {
        let prov = || Provenance::collect("test", "synthetic");
        let mut m = Record::new(
            "mpi-matrix",
            "matrix",
            prov(),
            serde_json::json!({"size": 8}),
        );
        let g = |relation: &str, pairs, min_ns, median_ns, max_ns| super::super::data::Group {
            relation: relation.into(),
            pairs,
            min_ns,
            median_ns,
            max_ns,
        };
        m.set_data(&MatrixData {
            latency_ns: Vec::new(),
            relations: Vec::new(),
            groups: vec![
                g("same L3", 1, 150.0, 150.0, 150.0),
                g("other package", 3, 300.0, 320.0, 400.0),
            ],
            statistic: "median".into(),
            by_host: None,
            by_node: Vec::new(),
        });
        let mut pair = Record::new(
            "mpi-matrix-pair",
            "rank 0↔1",
            prov(),
            serde_json::json!({"relation": "same L3"}),
        );
        pair.add_samples("latency", "ns", &[140.0, 150.0, 160.0]);
        let cards = matrix_cards(&[pair, m]);
        let t: Vec<(&str, f64, String)> = cards
            .iter()
            .map(|c| {
                let f = &c.figures[0];
                (
                    c.title.as_str(),
                    f.value,
                    f.spread.as_ref().unwrap().what.clone(),
                )
            })
            .collect();
        assert_eq!(
            t,
            [
                (
                    "MPI ranks, same L3",
                    150.0,
                    "p5–p95 of 3 passes".to_string()
                ),
                (
                    "MPI ranks, other package",
                    320.0,
                    "range over 3 pairs".into()
                ),
            ]
        );
        assert!(
            summary::describe(&cards)
                .contains("An MPI message of 8 B takes 150 ns one way between ranks (same L3)."),
            "{}",
            summary::describe(&cards)
        );
    }
}
