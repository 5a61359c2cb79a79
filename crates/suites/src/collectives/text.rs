//! The text of `suite collectives`, from its records alone: the plan of `--dry-run`,
//! the seed-style tables and fitted models, or OSU's layout (`--osu`).

use super::run::Plan;
use super::view::{head, plan_head, plan_text, Head};
use super::CollectiveData;
use super::Kind;
use numalab_results::linfit::LinearFit;
use numalab_results::output::table;
use numalab_results::present::{of, warning_lines};
use numalab_results::settle;
use numalab_results::stats::Summary;
use numalab_results::Record;
use numalab_topo::fmt_bytes;
use serde_json::Value;
use std::fmt::Write;

/// One measured collective, as its record holds it.
struct Row {
    kind: Kind,
    p: usize,
    lines: usize,
    time: Summary,
    thread_mean_ns: Vec<f64>,
    /// Whether its median settled (an unsettled one is marked, its warning says why).
    settled: bool,
}

impl Row {
    /// A figure of this row as a cell: marked "unsettled*" when it did not settle.
    fn cell(&self, figure: String) -> String {
        if self.settled {
            figure
        } else {
            format!("{figure} {}*", settle::UNSETTLED)
        }
    }
}

/// A run read back from its records.
struct Run<'a> {
    first: &'a Record,
    pairs: Vec<&'a Record>,
    rows: Vec<Row>,
    fits: Vec<(Kind, Result<LinearFit, String>)>,
    threads: Vec<usize>,
    block_lines: Vec<usize>,
    line: usize,
}

fn u(v: &Value) -> usize {
    v.as_u64().unwrap_or(0) as usize
}

fn nums(v: &Value) -> Vec<usize> {
    v.as_array().into_iter().flatten().map(u).collect()
}

impl<'a> Run<'a> {
    fn read(records: &'a [Record]) -> Option<Run<'a>> {
        let measured: Vec<&Record> = of(records, "suite-collectives").collect();
        let first = *measured.first()?;
        let pairs = measured
            .iter()
            .copied()
            .filter(|r| r.parameters["collective"] == "remote-read")
            .collect();
        let rows = measured
            .iter()
            .filter_map(|r| {
                let p = &r.parameters;
                Some(Row {
                    kind: serde_json::from_value(p.get("kind")?.clone()).ok()?,
                    p: u(&p["threads"]),
                    lines: u(&p["block_lines"]),
                    time: r.stat("time")?.summary.clone(),
                    thread_mean_ns: r
                        .data_as::<CollectiveData>()
                        .map(|d| d.thread_mean_ns)
                        .unwrap_or_default(),
                    settled: r.settled(),
                })
            })
            .collect();
        let fits = of(records, "suite-collectives-model")
            .filter_map(|r| {
                let kind: Kind = serde_json::from_value(r.parameters.get("kind")?.clone()).ok()?;
                let fit = match r.unavailable.first() {
                    Some(u) => Err(u.reason.clone()),
                    None => r.data_as::<LinearFit>().map_err(|e| e.to_string()),
                };
                Some((kind, fit))
            })
            .collect();
        let p = &first.parameters;
        Some(Run {
            first,
            pairs,
            rows,
            fits,
            threads: nums(&p["thread_counts"]),
            block_lines: nums(&p["block_sizes"]),
            line: u(&p["line_bytes"]).max(1),
        })
    }

    fn head(&self) -> String {
        let p = &self.first.parameters;
        let s = |k: &str| p[k].as_str().unwrap_or("-");
        head(&Head {
            topology: &self.first.provenance.topology,
            level: s("level"),
            domains: s("domains"),
            threads: &self.threads,
            block_lines: &self.block_lines,
            line: self.line,
            sync: s("sync"),
            iterations: p["iterations"].as_u64().unwrap_or(0),
        })
    }

    fn block(&self, lines: usize) -> String {
        fmt_bytes((lines * self.line) as u64)
    }
}

/// The text of the suite's records: the plan, or the seed-style tables and models.
pub fn text(records: &[Record]) -> Option<String> {
    let mut s = if let Some(r) = of(records, "suite-collectives-plan").next() {
        let plan: Plan = serde_json::from_value(r.data.clone()?).ok()?;
        let iterations = r.parameters["iterations"].as_u64().unwrap_or(0);
        plan_head(&r.provenance.topology, &plan, iterations) + &plan_text(&plan)
    } else {
        let run = Run::read(records)?;
        let mut s = run.head();
        s.push_str(&pairs_text(&run));
        s.push_str(&barriers_text(&run));
        s.push_str(&kinds_text(&run));
        s.push_str(&shifts_text(&run));
        s.push_str(&models(&run.fits));
        s
    };
    s.push_str(&warning_lines(records));
    Some(s)
}

fn us(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".into();
    }
    let u = ns / 1000.0;
    if u < 10.0 {
        format!("{u:.3}")
    } else {
        format!("{u:.1}")
    }
}

/// "median [min to p95]" in µs.
fn spread(s: &Summary) -> String {
    format!("{} [{} to {}]", us(s.median), us(s.min), us(s.p95))
}

/// Node-to-node remote reads (seed Fig. 2).
fn pairs_text(run: &Run) -> String {
    let mut s = String::new();
    let Some(first) = run.pairs.first() else {
        return s;
    };
    let _ = writeln!(
        s,
        "\nnode-to-node remote read (seed Fig. 2): root CPU {} wrote {}; ns per line, median [min to p95]",
        first.parameters["root_cpu"],
        numalab_results::words::count(first.parameters["block_lines"].as_u64().unwrap_or(0), "line")
    );
    let rows: Vec<Vec<String>> = run
        .pairs
        .iter()
        .map(|r| {
            let p = &r.parameters;
            let t = r
                .stat("read_time")
                .map(|x| {
                    let x = &x.summary;
                    format!("{:.1} [{:.1} to {:.1}]", x.median, x.min, x.p95)
                })
                .unwrap_or_else(|| "-".into());
            vec![
                p["reader_cpu"].to_string(),
                p["shares"].as_str().unwrap_or("-").to_string(),
                p["hops"]
                    .as_u64()
                    .map_or_else(|| "-".into(), |h| h.to_string()),
                settle::cell(r, t),
            ]
        })
        .collect();
    s.push_str(&table(&["reader", "shares", "hops", "ns/line"], &rows));
    s.push('\n');
    s
}

/// Barriers (seed §5.1), per P.
fn barriers_text(run: &Run) -> String {
    let barriers: Vec<&Row> = run
        .rows
        .iter()
        .filter(|m| matches!(m.kind, Kind::Barrier(_)))
        .collect();
    if barriers.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\nbarriers (seed §5.1): µs per barrier, slowest thread, median [min to p95]\n",
    );
    let rows: Vec<Vec<String>> = run
        .threads
        .iter()
        .map(|&p| {
            let mut row = vec![p.to_string()];
            for m in barriers.iter().filter(|m| m.p == p) {
                row.push(format!(
                    "{}: {}",
                    m.kind.name().trim_start_matches("barrier-"),
                    m.cell(spread(&m.time))
                ));
            }
            row
        })
        .collect();
    s.push_str(&table(&["P", "", "", ""], &rows));
    s.push('\n');
    s
}

/// One grid per collective other than barriers and shifts.
fn kinds_text(run: &Run) -> String {
    let mut s = String::new();
    let mut seen: Vec<Kind> = Vec::new();
    for m in &run.rows {
        let k = m.kind;
        if matches!(k, Kind::Barrier(_) | Kind::Shift(_)) || seen.contains(&k) {
            continue;
        }
        seen.push(k);
        let _ = writeln!(
            s,
            "\n{} — {}: µs, slowest thread, median [min to p95]; data checked",
            k.name(),
            k.seed_name()
        );
        s.push_str(&grid(run, |m| m.kind == k));
    }
    s
}

/// Cyclic shifts by distance (seed Table 3) and shift-1 by size.
fn shifts_text(run: &Run) -> String {
    let mut s = String::new();
    let shifts: Vec<&Row> = run
        .rows
        .iter()
        .filter(|m| matches!(m.kind, Kind::Shift(_)))
        .collect();
    let Some(&lines) = run.block_lines.last().filter(|_| !shifts.is_empty()) else {
        return s;
    };
    let _ = writeln!(
        s,
        "\ncyclic shift by distance k (seed Table 3): µs at {} per thread, median",
        run.block(lines)
    );
    let rows: Vec<Vec<String>> = run
        .threads
        .iter()
        .map(|&p| {
            let mut row = vec![p.to_string()];
            for m in shifts.iter().filter(|m| m.p == p && m.lines == lines) {
                row.push(format!(
                    "k={}: {}",
                    m.kind.name().trim_start_matches("shift-"),
                    m.cell(us(m.time.median))
                ));
            }
            row
        })
        .collect();
    s.push_str(&table(&["P", "", "", "", "", ""], &rows));
    s.push('\n');
    let _ = writeln!(s, "\nshift-1 by size: µs, median [min to p95]");
    s.push_str(&grid(run, |m| m.kind == Kind::Shift(1)));
    s
}

fn grid(run: &Run, pick: impl Fn(&Row) -> bool) -> String {
    let mut header = vec!["P".to_string()];
    header.extend(run.block_lines.iter().map(|&l| run.block(l)));
    let rows: Vec<Vec<String>> = run
        .threads
        .iter()
        .filter(|&&p| run.rows.iter().any(|m| m.p == p && pick(m)))
        .map(|&p| {
            let mut row = vec![p.to_string()];
            for &l in &run.block_lines {
                row.push(
                    run.rows
                        .iter()
                        .find(|m| m.p == p && m.lines == l && pick(m))
                        .map(|m| m.cell(spread(&m.time)))
                        .unwrap_or("-".into()),
                );
            }
            row
        })
        .collect();
    let h: Vec<&str> = header.iter().map(|x| x.as_str()).collect();
    table(&h, &rows) + "\n"
}

fn fit_row(k: Kind, f: &LinearFit) -> Vec<String> {
    let coef: Vec<String> = f
        .coefficients
        .iter()
        .map(|c| {
            format!(
                "{}={}",
                c.name,
                c.value.map(|v| format!("{v:.4}")).unwrap_or("?".into())
            )
        })
        .collect();
    let maxres = f.residuals.iter().fold(0.0f64, |a, r| a.max(r.abs()));
    vec![
        k.name(),
        f.formula.clone(),
        coef.join(" "),
        f.quality(),
        format!("{maxres:.3}"),
        f.n.to_string(),
    ]
}

fn models(fits: &[(Kind, Result<LinearFit, String>)]) -> String {
    if fits.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\ncost models fitted by least squares (µs; P threads, lines per thread's block):\n",
    );
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for (k, f) in fits {
        match f {
            Ok(f) => {
                rows.push(fit_row(*k, f));
                if f.note != "every coefficient fitted" && !notes.contains(&f.note) {
                    notes.push(f.note.clone());
                }
            }
            Err(e) => rows.push(vec![
                k.name(),
                "-".into(),
                e.clone(),
                "-".into(),
                "-".into(),
                "0".into(),
            ]),
        }
    }
    s.push_str(&table(
        &[
            "collective",
            "model",
            "coefficients",
            "R²",
            "max |residual|",
            "n",
        ],
        &rows,
    ));
    s.push('\n');
    for n in notes {
        let _ = writeln!(s, "? {n}");
    }
    s
}

/// OSU micro-benchmark layout: per collective and P, size with avg/min/max over
/// threads of each thread's mean time.
pub fn osu_text(records: &[Record]) -> Option<String> {
    let run = Run::read(records)?;
    let mut s = run.head();
    let mut groups: Vec<(Kind, usize)> = Vec::new();
    for m in &run.rows {
        if !groups.contains(&(m.kind, m.p)) {
            groups.push((m.kind, m.p));
        }
    }
    for (k, p) in groups {
        let _ = writeln!(
            s,
            "\n# numalab suite collectives: {} ({}), P={p}",
            k.name(),
            k.seed_name()
        );
        let _ = writeln!(
            s,
            "# {:<10}{:>18}{:>18}{:>18}{:>12}",
            "Size", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations"
        );
        for m in run.rows.iter().filter(|m| m.kind == k && m.p == p) {
            let t = &m.thread_mean_ns;
            let avg = t.iter().sum::<f64>() / t.len().max(1) as f64;
            let min = t.iter().copied().fold(f64::INFINITY, f64::min);
            let max = t.iter().copied().fold(0.0, f64::max);
            let _ = writeln!(
                s,
                "{:<12}{:>18.3}{:>18.3}{:>18.3}{:>12}{}",
                m.lines * run.line,
                avg / 1000.0,
                min / 1000.0,
                max / 1000.0,
                m.time.n,
                m.cell(String::new()).trim_end()
            );
        }
    }
    s.push_str(&warning_lines(records));
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::super::run::{Measured, Plan};
    use super::super::{records, Options, Results};
    use super::*;
    use numalab_results::Settle;

    fn settle(settled: bool) -> Settle {
        Settle {
            passes: 40,
            ..Settle::new(
                "time",
                [10.0, 30.0],
                (!settled).then_some("machine busy: 30 of 40 passes disturbed"),
            )
        }
    }

    #[test]
    fn an_unsettled_measurement_is_marked_in_the_text_the_osu_blocks_and_its_warning() {
        let host = numalab_topo::Host::load(&numalab_topo::TopologySource::Xml(
            numalab_fixtures::topology("64amd64-4s2n4ca2co.xml"),
        ))
        .unwrap();
        let o = Options {
            threads: Some("2".into()),
            sizes: "1K".into(),
            only: Some("broadcast".into()),
            ..Options::default()
        };
        let plan = Plan::resolve(&host.machine, &o).unwrap();
        let item = plan.items[0];
        let m = |settled: bool| Measured {
            item,
            time_ns: vec![20_000.0; 5],
            thread_mean_ns: vec![15_000.0, 20_000.0],
            pins: Vec::new(),
            pages_per_node: Default::default(),
            settle: settle(settled),
        };
        let ctx = numalab_bench::experiment::Context {
            prov: numalab_results::Provenance::collect("t", "none"),
            warnings: Vec::new(),
        };
        let res = |settled| Results {
            pairs: Vec::new(),
            items: vec![m(settled)],
            fits: Vec::new(),
        };
        let ok = records(&plan, &res(true), &o, &ctx);
        let busy = records(&plan, &res(false), &o, &ctx);
        assert!(ok[0].settle.as_ref().is_some_and(|s| s.settled));
        assert!(
            busy[0].warnings[0].starts_with("unsettled* broadcast"),
            "{:?}",
            busy[0].warnings
        );
        let (t_ok, t_busy) = (text(&ok).unwrap(), text(&busy).unwrap());
        assert!(!t_ok.contains(settle::UNSETTLED), "{t_ok}");
        let rows = |t: &str| {
            t.lines()
                .filter(|l| l.contains(" unsettled*") && !l.starts_with("warning"))
                .count()
        };
        assert_eq!(rows(&t_busy), 1, "{t_busy}");
        let osu = osu_text(&busy).unwrap();
        assert_eq!(rows(&osu), 1, "{osu}");
    }
}
