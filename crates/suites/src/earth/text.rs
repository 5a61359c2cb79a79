//! The text of `suite earth` (the threads form), from its records alone: the head
//! (all a `--dry-run` prints), then each measured part's table.

use super::hide::{masking_text, whole_pct};
use super::sizing::Sizing;
use super::EarthData;
use numalab_results::output::table;
use numalab_results::present::{of, warning_lines};
use numalab_results::Record;
use serde_json::Value;
use std::fmt::Write;

/// The text of `suite-earth` and `suite-earth-plan` records.
pub fn text(records: &[Record]) -> Option<String> {
    let measured: Vec<&Record> = of(records, "suite-earth").collect();
    let mut s = if let Some(r) = of(records, "suite-earth-plan").next() {
        head(r)
    } else {
        let mut s = head(measured.first()?);
        s.push_str(&cells(&measured));
        s.push_str(&mask_text(&measured));
        s.push_str(&mlp_text(&measured));
        s.push_str(&threads_text(&measured));
        s
    };
    s.push_str(&warning_lines(records));
    Some(s)
}

/// The first line: machine, worker and helper, parts, passes.
fn head(r: &Record) -> String {
    let p = &r.parameters;
    let parts: Vec<&str> = p["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let node = |k: &str| p[k].as_u64().map_or_else(|| "-".into(), |n| n.to_string());
    format!(
        "earth suite (seed 001, with seed 002 §6 and seed 003 §4.1) on {}: worker CPU {} (node {}), helper CPU {} (node {}){}; parts {}; {}{}\n",
        r.provenance.topology,
        p["worker_cpu"],
        node("worker_node"),
        p["helper_cpu"],
        node("helper_node"),
        p["remote_node"].as_u64().map_or_else(|| ", no remote node".into(), |n| format!(", remote node {n}")),
        parts.join(", "),
        numalab_results::words::passes(p["iterations"].as_u64().unwrap_or(0) as usize),
        budget_text(r)
    )
}

/// What the noise budget allows (and, in a plan, the most it can add to the run).
fn budget_text(r: &Record) -> String {
    let ms = match r.parameters["noise_budget_ms"].as_f64() {
        Some(ms) if ms > 0.0 => ms,
        _ => return String::new(),
    };
    let bound = r
        .data
        .as_ref()
        .and_then(|d| d["noise_bound_s"].as_f64())
        .map(|b| format!(", at most {b:.1} s more in all"))
        .unwrap_or_default();
    format!(", more where a mask or threads figure is noisy, up to {ms:.0} ms a point{bound}")
}

/// How a record's passes were sized, if they were (records from before sizing were not).
fn noise(r: &Record) -> Option<Sizing> {
    r.data_as::<EarthData>().ok()?.noise().cloned()
}

/// A masking interval wholly below −100 % in the form its figure takes, times the
/// baseline's whole time ("within noise (64…88× slower)"), from the baseline's
/// communication and whole time; None when it is not below −100 %.
fn noise_slower([lo, hi]: [f64; 2], (comm, whole): (f64, f64)) -> Option<String> {
    let times = |pct: f64| (whole - pct * comm / 100.0) / whole;
    (hi < -100.0 && whole > 0.0)
        .then(|| format!("within noise ({:.1}…{:.1}× slower)", times(hi), times(lo)))
}

/// How the mask and threads tables say a figure is noise.
const NOISE_WORDS: &str = "\"(n passes)\" where the initial passes left the figure's interval too wide and more were taken; \"within noise (lo…hi%)\" where, the noise budget spent, the interval (each median's 95 % order-statistic interval, combined) was still wider than ±10 points and ±10 % of the figure, held 0 beside a figure of 10 % or more, or lay wholly outside the possible range (records from before sizing: the p5–p95 interval held 0 or the figure left the range)";

/// A metric's p5 and p95, if measured.
fn spread(r: &Record, metric: &str) -> Option<(f64, f64)> {
    r.stat(metric).map(|s| (s.summary.p5, s.summary.p95))
}

/// A percentage with its p5–p95 interval `(lo, hi)`: the figure when the interval
/// keeps clear of 0 (and, when `bounded`, the figure lies in 0–100 %, the range an
/// overlap can have); otherwise "within noise (lo…hi %)", since the passes' spread,
/// not the effect, made the figure.
fn pct_or_noise(figure: String, pct: f64, (lo, hi): (f64, f64), bounded: bool) -> String {
    let clear = lo > 0.0 || hi < 0.0;
    let possible = !bounded || (0.0..=100.0).contains(&pct);
    if !pct.is_finite() || (clear && possible) || !lo.is_finite() || !hi.is_finite() {
        figure
    } else {
        format!("within noise ({lo:.0}…{hi:.0}%)")
    }
}

/// The masked share's interval: the baseline's p5–p95 against the masked loop's.
fn masking_interval(b: &Record, r: &Record) -> Option<(f64, f64)> {
    let (comm, (c5, c95), (p5, p95), (t5, t95)) = (
        b.median("communication_time")?,
        spread(b, "communication_time")?,
        spread(b, "computation_time")?,
        spread(r, "time")?,
    );
    Some((
        100.0 * (c5 + p5 - t95) / comm,
        100.0 * (c95 + p95 - t5) / comm,
    ))
}

/// A time with its unit: ns below 10 µs, µs above.
fn time(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() && v >= 10_000.0 => format!("{:.1} µs", v / 1000.0),
        Some(v) if v.is_finite() => format!("{v:.1} ns"),
        _ => "-".into(),
    }
}

/// Whether a cell's figure is single timer readings at the timer's resolution.
fn at_step(r: &Record) -> bool {
    r.stat("time")
        .is_some_and(|t| t.summary.at_timer_step(r.provenance.timer_step_ns))
}

fn part<'a>(recs: &[&'a Record], name: &str) -> Vec<&'a Record> {
    recs.iter()
        .copied()
        .filter(|r| r.parameters["part"] == name)
        .collect()
}

fn s<'a>(r: &'a Record, k: &str) -> &'a str {
    r.parameters[k].as_str().unwrap_or("-")
}

/// The operation, split-phase and switch tables, with what could not be measured.
fn cells(recs: &[&Record]) -> String {
    let mut out = String::new();
    for (name, title) in [
        ("ops", "operation costs (seed Table 1): time per operation"),
        ("split", "split-phase requests (seed Tables 2 and 4): issuer against helper, and one remote load step by step"),
        ("switch", "switch and creation costs (KSR Table 4)"),
    ] {
        let cells = part(recs, name);
        if cells.is_empty() {
            continue;
        }
        let rows: Vec<Vec<String>> = cells
            .iter()
            .map(|r| {
                vec![
                    s(r, "op").into(),
                    s(r, "place").into(),
                    s(r, "mode").into(),
                    time(r.median("time")) + if at_step(r) { " *" } else { "" },
                ]
            })
            .collect();
        let _ = write!(
            out,
            "\n{title}\n{}\n",
            table(&["operation", "where", "mode", "median"], &rows)
        );
        if let Some(step) = cells.iter().find(|r| at_step(r)).and_then(|r| r.provenance.timer_step_ns) {
            let _ = writeln!(out, "{}", numalab_results::stats::timer_step_note(step));
        }
        if name == "ops" {
            for r in recs.iter().filter(|r| r.parameters["part"].is_null()) {
                for u in &r.unavailable {
                    let _ = writeln!(out, "not measured: {}: {}", u.feature, u.reason);
                }
            }
        }
    }
    out
}

/// Loop 7's masking curves: one row per way u travels and communication multiplier.
fn mask_text(recs: &[&Record]) -> String {
    let mask = part(recs, "mask");
    let baselines: Vec<&Record> = mask
        .iter()
        .copied()
        .filter(|r| r.parameters["chunk"].is_null())
        .collect();
    if baselines.is_empty() {
        return String::new();
    }
    let mut out = format!("\nlatency masking with Livermore Loop 7 (seed Fig. 3): % of the baseline's communication hidden, by chunk size T (or how many times the baseline's whole time the masked loop took); {NOISE_WORDS}\n");
    let points = |b: &Record| -> Vec<&Record> {
        mask.iter()
            .copied()
            .filter(|r| {
                !r.parameters["chunk"].is_null()
                    && r.parameters["u_via"] == b.parameters["u_via"]
                    && r.parameters["multiplier"] == b.parameters["multiplier"]
            })
            .collect()
    };
    let ts: Vec<String> = points(baselines[0])
        .iter()
        .map(|r| format!("T={}", r.parameters["chunk"]))
        .collect();
    let mut header = vec![
        "u via".to_string(),
        "×comm".into(),
        "comm".into(),
        "compute".into(),
    ];
    header.extend(ts);
    header.push("best T".into());
    let rows: Vec<Vec<String>> = baselines
        .iter()
        .map(|b| {
            let (comm, comp) = (b.median("communication_time"), b.median("computation_time"));
            let whole = comm.zip(comp).map(|(a, c)| a + c);
            let mut row = vec![
                s(b, "u_via").into(),
                b.parameters["multiplier"].to_string(),
                time(comm),
                time(comp),
            ];
            for r in points(b) {
                let pct = r.parameters["masked_pct"]
                    .as_f64()
                    .filter(|p| p.is_finite());
                let text = masking_text(pct, r.median("time"), whole);
                row.push(match (noise(r), pct, masking_interval(b, r)) {
                    (Some(n), ..) => match (n.interval_pct, comm.zip(whole)) {
                        (Some(iv), Some(cw)) if !n.converged => {
                            noise_slower(iv, cw).unwrap_or_else(|| n.text(text))
                        }
                        _ => n.text(text),
                    },
                    (None, Some(p), Some(iv)) => pct_or_noise(text, p, iv, false),
                    _ => text,
                });
            }
            let p = &b.parameters;
            row.push(
                match (p["best_chunk"].as_u64(), p["best_masked_pct"].as_f64()) {
                    (Some(t), Some(pct)) => format!("{t} ({pct:.0}%)"),
                    _ => "-".into(),
                },
            );
            row
        })
        .collect();
    let h: Vec<&str> = header.iter().map(|x| x.as_str()).collect();
    out.push_str(&table(&h, &rows));
    out.push('\n');
    out
}

/// The MLP curve: per G, interleaved chains beside coroutines (and stackless state
/// machines where measured), then its summary.
fn mlp_text(recs: &[&Record]) -> String {
    let mlp = part(recs, "mlp");
    let chains = |mode: &str| -> Vec<&Record> {
        mlp.iter()
            .copied()
            .filter(|r| r.parameters["mode"] == mode && r.parameters["chains_in_l1"].is_null())
            .collect()
    };
    let inter = chains("interleaved");
    if inter.is_empty() {
        return String::new();
    }
    let others: Vec<(&str, Vec<&Record>)> = ["coroutines", "stackless"]
        .into_iter()
        .map(|m| (m, chains(m)))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let g = |r: &Record| r.parameters["g"].as_u64().unwrap_or(0);
    let one = inter
        .iter()
        .find(|r| g(r) == 1)
        .and_then(|r| r.median("access_time"));
    let mut out = String::new();
    let _ = writeln!(out, "\nmemory-level parallelism: G random chains on one core ({}); ns per access, median; hidden = 1 − ns/ns(G=1); throughput relative to interleaved", s(inter[0], "pages"));
    let hid = |v: Option<f64>| match (one, v) {
        (Some(o), Some(v)) => whole_pct(100.0 * (1.0 - v / o)),
        _ => "-".into(),
    };
    let rows: Vec<Vec<String>> = inter
        .iter()
        .map(|r| {
            let i = r.median("access_time");
            let mut row = vec![g(r).to_string(), time(i), hid(i)];
            for (_, recs) in &others {
                let c = recs
                    .iter()
                    .find(|c| g(c) == g(r))
                    .and_then(|c| c.median("access_time"));
                row.push(time(c));
                row.push(hid(c));
                row.push(
                    i.zip(c)
                        .map_or_else(|| "-".into(), |(i, c)| format!("{:.2}", i / c)),
                );
            }
            row
        })
        .collect();
    let mut head = vec!["G".to_string(), "interleaved".into(), "hidden".into()];
    for (m, _) in &others {
        head.extend([m.to_string(), "hidden".into(), "relative".into()]);
    }
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    out.push_str(&table(&head, &rows));
    out.push('\n');
    let top = inter.iter().map(|r| g(r)).max().unwrap_or(0) as usize;
    out.push_str(&mlp_summary_text(&mlp, top));
    out
}

/// The MLP summary's lines: each mode's best G and what switching alone costs.
fn mlp_summary_text(mlp: &[&Record], top: usize) -> String {
    let mut out = String::new();
    let floor = mlp.iter().find(|r| !r.parameters["chains_in_l1"].is_null());
    if let Some(EarthData::MlpSummary {
        best_interleaved: bi,
        best_coroutines: bc,
        coroutine_over_interleaved_throughput: ratio,
        interleaved_saturates_at_g: knee_g,
        accesses_in_flight: flight,
        best_stackless,
        stackless_over_interleaved_throughput,
    }) = mlp.iter().find_map(|r| r.data_as::<EarthData>().ok())
    {
        let flight = flight
            .map(|f| format!(", about {f:.0} accesses in flight"))
            .unwrap_or_default();
        let knee = if knee_g < top {
            format!("within 10% of that from G={knee_g} (the core's miss handling is full)")
        } else {
            format!("no plateau up to G={top}: the miss-handling limit lies beyond")
        };
        // A best point that breaks a plausibility rule is no headline: say so instead.
        let owned: Vec<Record> = mlp.iter().map(|r| (*r).clone()).collect();
        let flags = numalab_results::plausible::check(&owned);
        let flagged = owned.iter().find_map(|r| {
            let best = r.parameters["g"] == bi.g && r.parameters["mode"] == "interleaved";
            best.then(|| numalab_results::plausible::flag_of(&flags, r, "access_time"))?
        });
        let _ = match flagged {
            Some(f) => writeln!(
                out,
                "fastest interleaved at G={}: implausible (rule {}: {}); not stated",
                bi.g, f.rule, f.why
            ),
            None => writeln!(
                out,
                "fastest interleaved at G={}: {:.1} ns per access{flight}; {knee}",
                bi.g, bi.ns_per_access
            ),
        };
        let _ = writeln!(
            out,
            "fastest coroutines at G={}: {:.1} ns per access, {ratio:.2} × the best interleaved throughput; switching alone costs {} per access (G={}, chains in L1)",
            bc.g,
            bc.ns_per_access,
            time(floor.and_then(|r| r.median("access_time"))),
            floor.map_or_else(|| "-".into(), |r| r.parameters["g"].to_string())
        );
        if let (Some(b), Some(r)) = (best_stackless, stackless_over_interleaved_throughput) {
            let _ = writeln!(
                out,
                "fastest stackless state machines at G={}: {:.1} ns per access, {r:.2} × the best interleaved throughput (a switch is a return from poll, no stack swap)",
                b.g, b.ns_per_access
            );
        }
    }
    out
}

/// KSR Table 5: threads on one CPU sharing work.
fn threads_text(recs: &[&Record]) -> String {
    let threads = part(recs, "threads");
    if threads.is_empty() {
        return String::new();
    }
    let mut ks: Vec<u64> = Vec::new();
    for r in &threads {
        let k = r.parameters["threads"].as_u64().unwrap_or(0);
        if !ks.contains(&k) {
            ks.push(k);
        }
    }
    let mut out = format!("\nthreads on one CPU sharing work (KSR Table 5): µs, median, creating and joining the threads (no work) subtracted; overlap = (computation + communication − both) / the smaller, possible in 0–100 %; {NOISE_WORDS}\n");
    let body: Vec<Vec<String>> = ks
        .iter()
        .map(|&k| {
            let mine: Vec<&Record> = threads
                .iter()
                .copied()
                .filter(|r| r.parameters["threads"].as_u64() == Some(k))
                .collect();
            let e = mine
                .first()
                .and_then(|r| r.median("create_join_time"))
                .unwrap_or(f64::NAN);
            let find = |w: &str| mine.iter().find(|r| r.parameters["work"] == w);
            let get = |w: &str| {
                find(w)
                    .and_then(|r| r.median("time"))
                    .map_or(f64::NAN, |t| t - e)
            };
            let sp = |w: &str| {
                find(w)
                    .and_then(|r| spread(r, "time"))
                    .unwrap_or((f64::NAN, f64::NAN))
            };
            let (c, m, b) = (get("computation"), get("communication"), get("both"));
            let ((c5, c95), (m5, m95), (b5, b95)) =
                (sp("computation"), sp("communication"), sp("both"));
            let ov = 100.0 * (c + m - b) / c.min(m);
            // p5/p95 of each time: the overlap's interval (create+join cancels to one e).
            let iv = (
                100.0 * (c5 + m5 - b95 - e) / c.min(m),
                100.0 * (c95 + m95 - b5 - e) / c.min(m),
            );
            vec![
                k.to_string(),
                format!("{:.1}", e / 1000.0),
                format!("{:.1}", c / 1000.0),
                format!("{:.1}", m / 1000.0),
                format!("{:.1}", b / 1000.0),
                match mine.iter().find_map(|r| noise(r)) {
                    Some(n) => n.text(whole_pct(ov)),
                    None => pct_or_noise(whole_pct(ov), ov, iv, true),
                },
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            "threads",
            "create+join",
            "computation",
            "communication",
            "both",
            "overlap",
        ],
        &body,
    ));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::pct_or_noise;

    #[test]
    fn a_figure_whose_interval_holds_zero_or_leaves_the_range_is_noise() {
        let f = |p: f64, iv, bounded| pct_or_noise(format!("{p:.0}%"), p, iv, bounded);
        assert_eq!(f(35.0, (20.0, 50.0), true), "35%");
        assert_eq!(f(104.0, (60.0, 140.0), true), "within noise (60…140%)");
        assert_eq!(f(-226.0, (-400.0, 30.0), true), "within noise (-400…30%)");
        // A masked loop may really be slower: negative is a figure when clear of 0.
        assert_eq!(f(-56.0, (-70.0, -40.0), false), "-56%");
        assert_eq!(f(10.0, (-5.0, 25.0), false), "within noise (-5…25%)");
    }

    #[test]
    fn a_noisy_loss_beyond_the_whole_baseline_reads_in_times_slower() {
        // Baseline 100 ns communication of 400 ns: -3600 % is a 4000 ns run, 10×.
        assert_eq!(
            super::noise_slower([-7600.0, -3600.0], (100.0, 400.0)).as_deref(),
            Some("within noise (10.0…20.0× slower)")
        );
        assert_eq!(super::noise_slower([-150.0, 20.0], (100.0, 400.0)), None);
    }
    #[test]
    fn a_best_mlp_point_faster_than_its_chains_allow_is_not_stated() {
        use super::super::hide::{MlpCurve, MlpPoint};
        use numalab_results::{Provenance, Record};
        let pt = |g, ns: f64| MlpPoint {
            g,
            interleaved: vec![ns; 3],
            coroutines: vec![ns * 1.5; 3],
            stackless: Vec::new(),
        };
        let prov = Provenance::collect("t", "t");
        let text = |one: f64| {
            let curve = MlpCurve {
                points: vec![pt(1, one), pt(24, 6.8)],
                pages: "4 KiB pages".into(),
                floor: (24, vec![2.0; 3]),
            };
            let recs =
                super::super::view::mlp_records(&curve, 8 << 20, &serde_json::json!({}), &prov);
            let refs: Vec<&Record> = recs.iter().collect();
            super::mlp_text(&refs)
        };
        // One chain at 1,400 ns: 24 chains at 6.8 ns would need 206 in flight.
        let t = text(1400.0);
        assert!(
            t.contains("fastest interleaved at G=24: implausible (rule mlp-below-one-chain"),
            "{t}"
        );
        assert!(!t.contains("fastest interleaved at G=24: 6.8"), "{t}");
        // One chain at 120 ns: 17.6 in flight of 24 chains is a figure.
        let t = text(120.0);
        assert!(
            t.contains("fastest interleaved at G=24: 6.8 ns per access"),
            "{t}"
        );
    }
}
