//! The suite's tables in the seed's layout, built once from the `dsm` records and
//! shown as text (`suite cvm`) or HTML (the report's section).

use crate::experiment::{MechCosts, PerInterval, RunData};
use crate::Stats;
use numalab_results::output::table;
use numalab_results::Record;

/// One run of the suite, from its `dsm` summary record.
pub(super) struct Row {
    pub app: String,
    pub protocol: String,
    pub t: usize,
    pub delay: u64,
    pub ranks: usize,
    pub sum: Stats,
    pub time: f64,
    pub seq: Option<f64>,
    pub per_fault: Option<f64>,
    pub costs: Option<MechCosts>,
    pub cores_shared: Option<bool>,
    pub per_interval: Option<PerInterval>,
}

/// The runs of the `dsm` records (records whose data does not match are left out).
pub(super) fn rows(recs: &[Record]) -> Vec<Row> {
    recs.iter()
        .filter(|r| r.kind == "dsm")
        .filter_map(|r| {
            let p = &r.parameters;
            let d: RunData = r.data_as().ok()?;
            Some(Row {
                app: p["app"].as_str()?.to_string(),
                protocol: p["protocol"].as_str()?.to_string(),
                t: p["threads"].as_u64()? as usize,
                delay: p["net_delay_ns"].as_u64()?,
                ranks: p["ranks"].as_u64()? as usize,
                sum: d.sum,
                time: d.time_ns,
                seq: d.sequential_ns,
                per_fault: d.per_remote_fault_ns,
                costs: d.costs,
                cores_shared: d.cores_shared,
                per_interval: d.per_interval,
            })
        })
        .collect()
}

/// The net delays the runs used, smallest first.
pub(super) fn delays(rs: &[Row]) -> Vec<u64> {
    let mut d: Vec<u64> = rs.iter().map(|r| r.delay).collect();
    d.sort_unstable();
    d.dedup();
    d
}

/// A titled table.
pub(super) struct Table {
    pub title: &'static str,
    pub header: &'static [&'static str],
    pub rows: Vec<Vec<String>>,
}

fn pct(x: u64, of: u64) -> String {
    if of == 0 {
        "-".into()
    } else {
        format!("{:.0}", 100.0 * x as f64 / of as f64)
    }
}

/// A ratio to two decimals, or to two significant digits when smaller (a measured
/// ratio never reads 0.00); exact zero as 0.
pub(super) fn ratio(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() >= 0.01 || !x.is_finite() {
        format!("{x:.2}")
    } else {
        let digits = (-x.abs().log10()).ceil() as usize + 1;
        format!("{x:.digits$}")
    }
}

/// Figure 2: speedup of T = 1 runs over the sequential program.
pub(super) fn fig2(here: &[&Row]) -> Table {
    let rows = here
        .iter()
        .filter(|r| r.t == 1)
        .map(|r| {
            vec![
                r.app.clone(),
                r.protocol.clone(),
                format!("{:.2}", r.time / 1e6),
                r.seq.map_or("-".into(), |s| format!("{:.2}", s / 1e6)),
                r.seq.map_or("-".into(), |s| ratio(s / r.time)),
            ]
        })
        .collect();
    Table {
        title: "Figure 2: speedup of T=1 runs over the sequential program",
        header: &["app", "protocol", "time ms", "sequential ms", "speedup"],
        rows,
    }
}

/// The parts of a run's time, in the order of [`PARTS`]: the compute thread's, which
/// do not overlap and add up to its time. IO, the service thread's time handling
/// messages, runs beside them and is shown apart.
pub(super) const PARTS: [&str; 5] = ["app", "barrier", "fault", "lock", "segv"];

/// A run's breakdown against its T = 1 twin (per-rank means over the T = 1 per-rank mean).
pub(super) struct Breakdown {
    /// The run's time (slowest rank) over the T = 1 run's.
    pub time: f64,
    /// [`PARTS`], exclusive: they sum to the run's per-rank mean time over T = 1's.
    pub parts: [f64; 5],
    /// IO, overlapping the parts.
    pub io: f64,
}

/// A run's breakdown (None without a T = 1 run of the same app and protocol).
pub(super) fn breakdown(r: &Row, here: &[&Row]) -> Option<Breakdown> {
    let base = here
        .iter()
        .find(|b| b.app == r.app && b.protocol == r.protocol && b.t == 1)?;
    let n = r.ranks.max(1) as f64;
    let bt = base.sum.total_ns as f64 / n;
    let f = |x: u64| x as f64 / n / bt;
    let s = &r.sum;
    Some(Breakdown {
        time: r.time / base.time,
        parts: [
            f(s.app_ns()),
            f(s.barrier_ns),
            f(s.fault_ns),
            f(s.lock_ns),
            f(s.segv_ns),
        ],
        io: f(s.io_ns),
    })
}

/// Figures 3, 5, 6: execution time normalised to T = 1, with the breakdown.
pub(super) fn fig356(here: &[&Row]) -> Table {
    let rows = here
        .iter()
        .filter_map(|r| {
            let b = breakdown(r, here)?;
            let mut row = vec![r.app.clone(), r.protocol.clone(), r.t.to_string()];
            row.push(ratio(b.time));
            row.extend(b.parts.iter().map(|p| ratio(*p)));
            row.push(ratio(b.io));
            Some(row)
        })
        .collect();
    Table {
        title: "Figures 3/5/6: execution time normalised to T=1, and its parts (per-rank means over the T=1 mean; app..segv add up to the rank's time, IO is the service thread's, overlapped with them)",
        header: &[
            "app",
            "protocol",
            "T",
            "time",
            "app",
            "barrier",
            "fault",
            "lock",
            "segv",
            "IO (overlapped)",
        ],
        rows,
    }
}

fn us(ns: Option<f64>) -> String {
    ns.map_or("-".into(), |v| format!("{:.1}", v / 1e3))
}

/// Remote faults: the time each took in the run beside the mechanism cost measured in
/// the same job just before it.
pub(super) fn fault_costs(here: &[&Row]) -> Table {
    let rows = here
        .iter()
        .map(|r| {
            let c = r.costs.as_ref();
            vec![
                r.app.clone(),
                r.protocol.clone(),
                r.t.to_string(),
                r.sum.remote_faults.to_string(),
                us(r.per_fault),
                us(c.and_then(|c| c.fault_idle_ns)),
                us(c.and_then(|c| c.fault_busy_ns)),
                match r.cores_shared {
                    Some(true) => "yes".into(),
                    Some(false) => "no".into(),
                    None => "-".into(),
                },
            ]
        })
        .collect();
    Table {
        title: "Remote faults: µs per fault in the run (request to page installed, mean) beside the mechanism cost measured just before it (median; owner waiting, owner computing)",
        header: &[
            "app",
            "protocol",
            "T",
            "rem faults",
            "µs/fault run",
            "cost idle µs",
            "cost busy µs",
            "cores shared",
        ],
        rows,
    }
}

/// The line naming the tables with no row here (no run they describe), or None: a
/// table is never an empty header.
pub(super) fn not_shown(tables: &[Table]) -> Option<String> {
    let names: Vec<&str> = tables
        .iter()
        .filter(|t| t.rows.is_empty())
        .map(|t| t.title.split(':').next().unwrap_or(t.title))
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "not shown, no run here they describe: {} (Table 2 describes LMW runs, Table 3 LSW and SEQ runs)",
            names.join(", ")
        )
    })
}

/// Table 2: LMW's DSM actions.
pub(super) fn table2(here: &[&Row]) -> Table {
    let rows = here
        .iter()
        .filter(|r| r.protocol == "lmw")
        .map(|r| {
            let s = &r.sum;
            vec![
                r.app.clone(),
                r.t.to_string(),
                (s.bytes / 1024).to_string(),
                s.remote_faults.to_string(),
                s.remote_locks.to_string(),
                s.overlap_faults.to_string(),
                s.overlap_locks.to_string(),
                s.contention_page.to_string(),
                s.contention_lock.to_string(),
                s.diffs_created.to_string(),
                s.page_intervals.to_string(),
                s.diffs_used.to_string(),
            ]
        })
        .collect();
    Table {
        title: "Table 2: LMW DSM actions (all ranks; \"eager would\": the diffs creating one per page and interval would have made)",
        header: &[
            "app",
            "T",
            "BW KB",
            "rem faults",
            "rem locks",
            "overlap faults",
            "overlap locks",
            "cont page",
            "cont lock",
            "diff create",
            "eager would",
            "diff use",
        ],
        rows,
    }
}

/// Table 3: LSW and SEQ behaviour.
pub(super) fn table3(here: &[&Row]) -> Table {
    let rows = here
        .iter()
        .filter(|r| r.protocol != "lmw")
        .map(|r| {
            let s = &r.sum;
            vec![
                r.app.clone(),
                r.protocol.clone(),
                r.t.to_string(),
                (s.bytes / 1024).to_string(),
                s.remote_faults.to_string(),
                s.lock_msgs.to_string(),
                s.contention_page.to_string(),
                s.freezes.to_string(),
            ]
        })
        .collect();
    Table {
        title: "Table 3: LSW and SEQ behaviour (all ranks)",
        header: &[
            "app",
            "protocol",
            "T",
            "BW KB",
            "rem faults",
            "lock msgs",
            "page cont",
            "freezes",
        ],
        rows,
    }
}

/// The thread-switch classes of Figure 7, in the order of [`SWITCHES`].
pub(super) const SWITCHES: [&str; 4] = ["useful", "tail", "no work", "all block"];

/// A run's switches: all of them, and each class.
pub(super) fn switches(s: &Stats) -> (u64, [u64; 4]) {
    let c = [s.sw_useful, s.sw_tail, s.sw_no_work, s.sw_all_block];
    (c.iter().sum(), c)
}

/// Figure 7: thread switches at remote requests and barrier arrivals.
pub(super) fn fig7(here: &[&Row]) -> Table {
    let rows = here
        .iter()
        .filter(|r| r.t > 1)
        .map(|r| {
            let (all, c) = switches(&r.sum);
            let mut row = vec![r.app.clone(), r.protocol.clone(), r.t.to_string()];
            row.push(all.to_string());
            row.extend(c.iter().map(|x| pct(*x, all)));
            row
        })
        .collect();
    Table {
        title: "Figure 7: thread switches (% of switches at remote requests and barrier arrivals)",
        header: &[
            "app",
            "protocol",
            "T",
            "switches",
            "useful %",
            "tail %",
            "no work %",
            "all block %",
        ],
        rows,
    }
}

/// The runs at one net delay, and the heading that names it.
pub(super) fn at_delay(rs: &[Row], d: u64) -> (Vec<&Row>, String) {
    let here: Vec<&Row> = rs.iter().filter(|r| r.delay == d).collect();
    let ranks = here.first().map_or(0, |r| r.ranks);
    (
        here,
        format!(
            "net delay {d} ns, {}",
            numalab_results::words::count(ranks as u64, "rank")
        ),
    )
}

/// One line per run of `here` whose speedup over the sequential program is under 1:
/// its communication per interval against the sequential compute per interval.
pub(super) fn below_one(here: &[&Row]) -> Vec<String> {
    here.iter()
        .filter_map(|r| {
            let s = r.seq? / r.time;
            let name = format!("{} {} T={}", r.app, r.protocol, r.t);
            (s < 1.0).then(|| super::explain::line(&name, &ratio(s), r.per_interval.as_ref()))
        })
        .collect()
}

/// The suite's text tables, in the seed's order, per net delay.
pub fn text(recs: &[Record]) -> String {
    let rs = rows(recs);
    let mut out = String::new();
    for d in delays(&rs) {
        let (here, heading) = at_delay(&rs, d);
        out.push_str(&format!("\n== {heading} ==\n"));
        let all = [
            fig2(&here),
            fig356(&here),
            fault_costs(&here),
            table2(&here),
            table3(&here),
            fig7(&here),
        ];
        for t in all.iter().filter(|t| !t.rows.is_empty()) {
            out.push_str(&format!("\n{}\n", t.title));
            out.push_str(&table(t.header, &t.rows));
        }
        out.push_str(
            &not_shown(&all)
                .map(|l| format!("\n{l}\n"))
                .unwrap_or_default(),
        );
        let why = below_one(&here);
        if !why.is_empty() {
            out.push_str(&format!("\n{}\n", super::explain::TITLE));
            for l in why {
                out.push_str(&format!("{l}\n"));
            }
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: usize, total: u64, io: u64) -> Row {
        // Two ranks; the compute thread's waits are a fixed share of each rank's time.
        let one = Stats {
            total_ns: total,
            barrier_ns: total / 5,
            fault_ns: total / 4,
            lock_ns: total / 10,
            segv_ns: total / 50,
            io_ns: io,
            ..Default::default()
        };
        Row {
            app: "sor".into(),
            protocol: "lmw".into(),
            t,
            delay: 0,
            ranks: 2,
            sum: Stats::sum([&one, &one]),
            time: total as f64,
            seq: None,
            per_fault: None,
            costs: None,
            cores_shared: None,
            per_interval: None,
        }
    }

    #[test]
    fn a_table_with_no_run_is_not_an_empty_header_and_is_named_once() {
        let mut lsw = row(1, 10_000_000, 0);
        lsw.protocol = "lsw".into();
        let here = [&lsw];
        let all = [table2(&here), table3(&here)];
        assert!(all[0].rows.is_empty() && !all[1].rows.is_empty());
        let line = not_shown(&all).unwrap();
        assert!(
            line.contains("not shown") && line.contains("Table 2"),
            "{line}"
        );
        assert!(!line.contains("Table 3,"), "{line}");
        assert!(not_shown(&[table3(&here)]).is_none());
    }

    #[test]
    fn small_ratios_keep_two_significant_digits() {
        assert_eq!(ratio(0.0), "0");
        assert_eq!(ratio(0.0047), "0.0047");
        assert_eq!(ratio(0.012), "0.01");
        assert_eq!(ratio(0.00012345), "0.00012");
        assert_eq!(ratio(1.5), "1.50");
    }

    #[test]
    fn stacked_parts_add_up_to_the_time_and_io_stands_apart() {
        // IO as large as a fifth of the time: stacked, the parts would reach 1.2.
        let (base, other) = (row(1, 10_000_000, 2_000_000), row(2, 7_000_000, 3_000_000));
        let here = [&base, &other];
        for (r, want) in [(&base, 1.0), (&other, 0.7)] {
            let b = breakdown(r, &here).unwrap();
            let sum: f64 = b.parts.iter().sum();
            assert!((sum - want).abs() < 1e-9, "parts sum to {sum}, want {want}");
            assert!((b.time - want).abs() < 1e-9);
            assert!(b.io > 0.0 && b.parts.iter().all(|p| *p >= 0.0));
        }
        let t = fig356(&here);
        assert_eq!(t.header.len(), t.rows[0].len());
        assert_eq!(*t.header.last().unwrap(), "IO (overlapped)");
    }
}
