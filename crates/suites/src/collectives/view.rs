//! Text views of the collectives suite: seed-style tables, OSU-style blocks, models.

use super::run::{Measured, PairResult, Plan};
use super::Kind;
use numalab_results::linfit::LinearFit;
use numalab_results::output::table;
use numalab_results::stats::{median, percentile};
use numalab_topo::{fmt_bytes, Machine};
use std::fmt::Write;

/// What a run produced.
pub struct Results {
    /// Remote-read pairs.
    pub pairs: Vec<PairResult>,
    /// Collectives.
    pub items: Vec<Measured>,
    /// Fitted models per collective.
    pub fits: Vec<(Kind, Vec<Result<LinearFit, String>>)>,
}

/// The first line: machine, thread order, sizes.
pub fn head(m: &Machine, plan: &Plan, iterations: usize) -> String {
    format!(
        "collectives suite (KSR seed 002) on {}: threads in order of {} domains {}; P = {:?}; blocks of {}; barrier between stages: {}; {} passes\n",
        m.summary(),
        plan.level,
        crate::domains::describe(&plan.domains),
        plan.threads,
        plan.block_lines.iter().map(|l| fmt_bytes((l * plan.line) as u64)).collect::<Vec<_>>().join(", "),
        plan.sync.name(),
        iterations
    )
}

/// The plan without measuring.
pub fn plan_text(plan: &Plan) -> String {
    let mut s = String::new();
    if !plan.pairs.is_empty() {
        let _ = writeln!(
            s,
            "\nremote read: root CPU {} writes {} lines, then each reader reads them:",
            plan.cpus[0], plan.pair_lines
        );
        let rows: Vec<Vec<String>> = plan
            .pairs
            .iter()
            .map(|p| {
                vec![
                    p.reader.to_string(),
                    p.shares.clone(),
                    p.hops.map(|h| h.to_string()).unwrap_or("-".into()),
                ]
            })
            .collect();
        s.push_str(&table(&["reader", "shares", "hops"], &rows));
        s.push('\n');
    }
    for &p in &plan.threads {
        let names: Vec<String> = {
            let mut v: Vec<String> = plan
                .items
                .iter()
                .filter(|i| i.p == p)
                .map(|i| i.kind.name())
                .collect();
            v.dedup();
            v
        };
        let _ = writeln!(
            s,
            "\nP={p} on CPUs {:?}:\n  {}",
            &plan.cpus[..p],
            names.join(", ")
        );
    }
    let _ = writeln!(s, "\n{} measurements", plan.items.len() + plan.pairs.len());
    s
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

fn spread(v: &[f64]) -> String {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() {
        return "-".into();
    }
    format!(
        "{} [{}..{}]",
        us(median(&s).unwrap_or(f64::NAN)),
        us(s[0]),
        us(percentile(&s, 0.95))
    )
}

/// The seed-style tables and the fitted models.
pub fn text(plan: &Plan, r: &Results) -> String {
    let mut s = String::new();
    s.push_str(&pairs_text(plan, r));
    s.push_str(&barriers_text(plan, r));
    s.push_str(&kinds_text(plan, r));
    s.push_str(&shifts_text(plan, r));
    s.push_str(&models(&r.fits));
    s
}

/// Node-to-node remote reads (seed Fig. 2).
fn pairs_text(plan: &Plan, r: &Results) -> String {
    let mut s = String::new();
    if !r.pairs.is_empty() {
        let _ = writeln!(s, "\nnode-to-node remote read (seed Fig. 2): root CPU {} wrote {} lines; ns per line, median [min..p95]", plan.cpus[0], plan.pair_lines);
        let rows: Vec<Vec<String>> = r
            .pairs
            .iter()
            .map(|p| {
                let mut v = p.ns.clone();
                v.sort_by(f64::total_cmp);
                vec![
                    p.pair.reader.to_string(),
                    p.pair.shares.clone(),
                    p.pair.hops.map(|h| h.to_string()).unwrap_or("-".into()),
                    format!(
                        "{:.1} [{:.1}..{:.1}]",
                        median(&v).unwrap_or(f64::NAN),
                        v[0],
                        percentile(&v, 0.95)
                    ),
                ]
            })
            .collect();
        s.push_str(&table(&["reader", "shares", "hops", "ns/line"], &rows));
        s.push('\n');
    }
    s
}

/// Barriers (seed §5.1), per P.
fn barriers_text(plan: &Plan, r: &Results) -> String {
    let mut s = String::new();
    let barriers: Vec<&Measured> = r
        .items
        .iter()
        .filter(|m| matches!(m.item.kind, Kind::Barrier(_)))
        .collect();
    if !barriers.is_empty() {
        let _ = writeln!(
            s,
            "\nbarriers (seed §5.1): µs per barrier, slowest thread, median [min..p95]"
        );
        let rows: Vec<Vec<String>> = plan
            .threads
            .iter()
            .map(|&p| {
                let mut row = vec![p.to_string()];
                for m in barriers.iter().filter(|m| m.item.p == p) {
                    row.push(format!(
                        "{}: {}",
                        m.item.kind.name().trim_start_matches("barrier-"),
                        spread(&m.time_ns)
                    ));
                }
                row
            })
            .collect();
        s.push_str(&table(&["P", "", "", ""], &rows));
        s.push('\n');
    }
    s
}

/// One grid per collective other than barriers and shifts.
fn kinds_text(plan: &Plan, r: &Results) -> String {
    let mut s = String::new();
    let mut seen: Vec<Kind> = Vec::new();
    for m in &r.items {
        let k = m.item.kind;
        if matches!(k, Kind::Barrier(_) | Kind::Shift(_)) || seen.contains(&k) {
            continue;
        }
        seen.push(k);
        let _ = writeln!(
            s,
            "\n{} — {}: µs, slowest thread, median [min..p95]; data checked",
            k.name(),
            k.seed_name()
        );
        s.push_str(&grid(plan, r, |m| m.item.kind == k));
    }
    s
}

/// Cyclic shifts by distance (seed Table 3) and shift-1 by size.
fn shifts_text(plan: &Plan, r: &Results) -> String {
    let mut s = String::new();
    let shifts: Vec<&Measured> = r
        .items
        .iter()
        .filter(|m| matches!(m.item.kind, Kind::Shift(_)))
        .collect();
    if let Some(&lines) = plan.block_lines.last().filter(|_| !shifts.is_empty()) {
        let _ = writeln!(
            s,
            "\ncyclic shift by distance k (seed Table 3): µs at {} per thread, median",
            fmt_bytes((lines * plan.line) as u64)
        );
        let rows: Vec<Vec<String>> = plan
            .threads
            .iter()
            .map(|&p| {
                let mut row = vec![p.to_string()];
                for m in shifts
                    .iter()
                    .filter(|m| m.item.p == p && m.item.lines == lines)
                {
                    row.push(format!(
                        "k={}: {}",
                        m.item.kind.name().trim_start_matches("shift-"),
                        us(median(&m.time_ns).unwrap_or(f64::NAN))
                    ));
                }
                row
            })
            .collect();
        s.push_str(&table(&["P", "", "", "", "", ""], &rows));
        s.push('\n');
        let _ = writeln!(s, "\nshift-1 by size: µs, median [min..p95]");
        s.push_str(&grid(plan, r, |m| m.item.kind == Kind::Shift(1)));
    }
    s
}

fn grid(plan: &Plan, r: &Results, pick: impl Fn(&Measured) -> bool) -> String {
    let mut header = vec!["P".to_string()];
    header.extend(
        plan.block_lines
            .iter()
            .map(|l| fmt_bytes((l * plan.line) as u64)),
    );
    let rows: Vec<Vec<String>> = plan
        .threads
        .iter()
        .filter(|&&p| r.items.iter().any(|m| m.item.p == p && pick(m)))
        .map(|&p| {
            let mut row = vec![p.to_string()];
            for &l in &plan.block_lines {
                row.push(
                    r.items
                        .iter()
                        .find(|m| m.item.p == p && m.item.lines == l && pick(m))
                        .map(|m| spread(&m.time_ns))
                        .unwrap_or("-".into()),
                );
            }
            row
        })
        .collect();
    let h: Vec<&str> = header.iter().map(|x| x.as_str()).collect();
    table(&h, &rows) + "\n"
}

fn models(fits: &[(Kind, Vec<Result<LinearFit, String>>)]) -> String {
    if fits.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\ncost models fitted by least squares (µs; P threads, lines per thread's block):\n",
    );
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for (k, fs) in fits {
        for f in fs {
            match f {
                Ok(f) => {
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
                    rows.push(vec![
                        k.name(),
                        f.formula.clone(),
                        coef.join(" "),
                        f.r2.map(|r| format!("{r:.3}")).unwrap_or("-".into()),
                        format!("{maxres:.3}"),
                        f.n.to_string(),
                    ]);
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
pub fn osu_text(plan: &Plan, r: &Results) -> String {
    let mut s = String::new();
    let mut groups: Vec<(Kind, usize)> = Vec::new();
    for m in &r.items {
        if !groups.contains(&(m.item.kind, m.item.p)) {
            groups.push((m.item.kind, m.item.p));
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
        for m in r.items.iter().filter(|m| m.item.kind == k && m.item.p == p) {
            let t = &m.thread_mean_ns;
            let avg = t.iter().sum::<f64>() / t.len().max(1) as f64;
            let min = t.iter().copied().fold(f64::INFINITY, f64::min);
            let max = t.iter().copied().fold(0.0, f64::max);
            let _ = writeln!(
                s,
                "{:<12}{:>18.3}{:>18.3}{:>18.3}{:>12}",
                m.item.lines * plan.line,
                avg / 1000.0,
                min / 1000.0,
                max / 1000.0,
                m.time_ns.len()
            );
        }
    }
    s
}
