//! How `suite cvm` and `dsm run` records are shown: the seed's figures as charts
//! (time per protocol × T broken into its parts, speedup, thread-switch classes)
//! beside the tables they are drawn from, and `dsm run`'s per-rank table.

mod explain;
mod tables;

use crate::experiment::{rank_stats, Plan, RunData, KIND_PLAN};
use numalab_results::output::table;
use numalab_results::plot;
use numalab_results::present::Presenter;
use numalab_results::report::{figure, html_table};
use numalab_results::Record;
use tables::{Row, Table, PARTS, SWITCHES};

pub use tables::text;

/// The software DSM's records: one summary per run and one per rank, and the plans.
pub struct DsmPresenter;

/// The parameter `suite cvm` marks its runs with, so their text is the suite's tables
/// (as it is for records of several runs).
pub const SUITE_PARAM: &str = "suite";

impl Presenter for DsmPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["dsm", "dsm-rank", KIND_PLAN]
    }
    fn study(&self) -> bool {
        true
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("cvm", "Multithreaded software DSM (CVM)"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        html(records)
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        let mut s = String::new();
        for r in records.iter().filter(|r| r.kind == KIND_PLAN) {
            s.push_str(&r.data_as::<Plan>().ok()?.describe());
            s.push('\n');
        }
        let runs: Vec<Record> = records
            .iter()
            .filter(|r| r.kind != KIND_PLAN)
            .cloned()
            .collect();
        let summaries = runs.iter().filter(|r| r.kind == "dsm").count();
        if summaries > 1 || runs.iter().any(|r| r.parameters[SUITE_PARAM] == "cvm") {
            s.push_str(&text(&runs));
        } else if !runs.is_empty() {
            s.push_str(&run_text(&runs));
        }
        (!s.is_empty()).then_some(s)
    }
}

fn titled(t: &Table, chart: Option<String>) -> String {
    if t.rows.is_empty() {
        return String::new();
    }
    format!("<h4>{}</h4>", numalab_results::report::esc(t.title))
        + &figure(chart, html_table(t.header, &t.rows))
}

/// Figures 3/5/6: per app, one stacked bar per protocol × T.
fn time_charts(here: &[&Row]) -> String {
    let mut apps: Vec<&str> = here.iter().map(|r| r.app.as_str()).collect();
    apps.dedup();
    apps.sort_unstable();
    apps.dedup();
    let mut out = String::new();
    for app in apps {
        let bars: Vec<(String, Vec<f64>)> = here
            .iter()
            .filter(|r| r.app == app)
            .filter_map(|r| {
                let b = tables::breakdown(r, here)?;
                Some((format!("{} T={}", r.protocol, r.t), b.parts.to_vec()))
            })
            .collect();
        // The parts add up to the run's time; a bar above 1 is a run slower than T=1.
        if let Some(svg) = plot::stacked_bars_fit(
            &format!("{app}: time per rank over the T=1 run's (IO overlaps, not drawn)"),
            "time / T=1 time (above 1: slower)",
            &PARTS,
            &bars,
            1.0,
        ) {
            out.push_str(&format!("<div class=\"chart\">{svg}</div>"));
        }
    }
    out
}

/// Figure 2: speedup over the sequential program as bars.
fn speedup_chart(here: &[&Row]) -> Option<String> {
    let bars: Vec<(String, f64)> = here
        .iter()
        .filter(|r| r.t == 1)
        .filter_map(|r| Some((format!("{} {}", r.app, r.protocol), r.seq? / r.time)))
        .collect();
    plot::bar_chart(
        "speedup over the sequential program (T=1)",
        "speedup",
        &bars,
    )
}

/// Figure 7: the share of each switch class, stacked to 100%, one chart per app so that
/// each fits the page.
fn switch_chart(here: &[&Row]) -> Option<String> {
    let mut apps: Vec<&str> = here.iter().map(|r| r.app.as_str()).collect();
    apps.sort_unstable();
    apps.dedup();
    let mut out = String::new();
    for app in apps {
        let bars: Vec<(String, Vec<f64>)> = here
            .iter()
            .filter(|r| r.t > 1 && r.app == app)
            .filter_map(|r| {
                let (all, c) = tables::switches(&r.sum);
                (all > 0).then(|| {
                    let label = format!("{} T={}", r.protocol, r.t);
                    (
                        label,
                        c.iter().map(|x| 100.0 * *x as f64 / all as f64).collect(),
                    )
                })
            })
            .collect();
        if let Some(svg) = plot::stacked_bars_fit(
            &format!("{app}: thread switches by class"),
            "% of switches",
            &SWITCHES,
            &bars,
            100.0,
        ) {
            out.push_str(&format!("<div class=\"chart\">{svg}</div>"));
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The section: per net delay, the seed's figures and tables.
fn html(records: &[Record]) -> Option<String> {
    let rs = tables::rows(records);
    let mut out = String::new();
    for d in tables::delays(&rs) {
        let (here, heading) = tables::at_delay(&rs, d);
        out.push_str(&format!(
            "<h3>{}</h3>",
            numalab_results::report::esc(&heading)
        ));
        out.push_str(&titled(&tables::fig2(&here), speedup_chart(&here)));
        out.push_str(&titled(&tables::fig356(&here), None));
        out.push_str(&titled(&tables::fault_costs(&here), None));
        out.push_str(&format!("<div class=\"fig\">{}</div>", time_charts(&here)));
        let (t2, t3, f7) = (
            tables::table2(&here),
            tables::table3(&here),
            tables::fig7(&here),
        );
        out.push_str(&titled(&t2, None));
        out.push_str(&titled(&t3, None));
        out.push_str(&titled(&f7, switch_chart(&here)));
        let all = [
            tables::fig2(&here),
            tables::fig356(&here),
            tables::fault_costs(&here),
            t2,
            t3,
            f7,
        ];
        if let Some(l) = tables::not_shown(&all) {
            out.push_str(&format!("<p>{}</p>", numalab_results::report::esc(&l)));
        }
        let why = tables::below_one(&here);
        if !why.is_empty() {
            let esc = numalab_results::report::esc;
            out.push_str(&format!("<h4>{}</h4><ul>", esc(explain::TITLE)));
            for l in why {
                out.push_str(&format!("<li>{}</li>", esc(&l)));
            }
            out.push_str("</ul>");
        }
    }
    (!out.is_empty()).then_some(out)
}

fn ms(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1e6)
}

/// `dsm run`'s table: every rank's time parts and DSM actions, then the check.
pub fn run_text(recs: &[Record]) -> String {
    let rows: Vec<Vec<String>> = rank_stats(recs)
        .iter()
        .enumerate()
        .map(|(r, s)| {
            vec![
                r.to_string(),
                ms(s.total_ns),
                ms(s.app_ns()),
                ms(s.barrier_ns),
                ms(s.fault_ns),
                ms(s.lock_ns),
                ms(s.io_ns),
                ms(s.segv_ns),
                s.remote_faults.to_string(),
                s.per_remote_fault_ns()
                    .map_or("-".into(), |v| format!("{:.1}", v / 1e3)),
                s.remote_locks.to_string(),
                s.diffs_created.to_string(),
                s.diffs_used.to_string(),
                (s.bytes / 1024).to_string(),
            ]
        })
        .collect();
    let mut out = table(
        &[
            "rank",
            "time ms",
            "app",
            "barrier",
            "fault",
            "lock",
            "io",
            "segv",
            "rem faults",
            "µs/fault",
            "rem locks",
            "diffs made",
            "diffs used",
            "KiB sent",
        ],
        &rows,
    );
    if let Some(d) = recs.first().and_then(|r| r.data_as::<RunData>().ok()) {
        let diff = d
            .check
            .as_ref()
            .map_or("-".to_string(), |c| format!("{:.1e}", c.max_rel_diff));
        out.push_str(&format!(
            "\n{}: result matches the sequential run (max relative difference {diff}); sequential {:.2} ms{}{}, speedup {}{}\n",
            recs[0].name,
            d.sequential_ns.unwrap_or(f64::NAN) / 1e6,
            runs(d.check.as_ref()),
            starved(d.check.as_ref()),
            tables::ratio(d.speedup_vs_sequential.unwrap_or(f64::NAN)),
            beyond(
                d.speedup_vs_sequential,
                recs[0].parameters["ranks"].as_u64()
            ),
        ));
        out.push_str(&fault_line(&d));
        if let Some(s) = d.speedup_vs_sequential.filter(|s| *s < 1.0) {
            out.push_str(&explain::line(
                &recs[0].name,
                &tables::ratio(s),
                d.per_interval.as_ref(),
            ));
            out.push('\n');
        }
    }
    out
}

/// The sequential runs the reference is the median of, as their range: " (median of 3
/// runs, 113.16–192.37 ms)"; nothing for an older record that kept only one.
fn runs(c: Option<&crate::experiment::Check>) -> String {
    let ns = c.map_or(&[][..], |c| &c.sequential_runs_ns[..]);
    let (Some(lo), Some(hi)) = (ns.iter().min(), ns.iter().max()) else {
        return String::new();
    };
    if ns.len() < 2 {
        return String::new();
    }
    format!(
        " (median of {} runs, {:.2}–{:.2} ms)",
        ns.len(),
        *lo as f64 / 1e6,
        *hi as f64 / 1e6
    )
}

/// Where the sequential reference was timed when its rank's CPU was busy, and when it
/// still ran on a CPU less than 80 % of its time (a busy machine), its CPU time: the
/// speedup is then not the program's.
fn starved(c: Option<&crate::experiment::Check>) -> String {
    let moved = c
        .and_then(|c| c.sequential_moved.as_ref())
        .map_or(String::new(), |m| {
            format!(" (timed on CPU {}: CPU {} was {})", m.cpu, m.from, m.why)
        });
    let Some((wall, cpu)) = c.and_then(|c| Some((c.sequential_ns, c.sequential_cpu_ns?))) else {
        return moved;
    };
    if (cpu as f64) >= 0.8 * wall as f64 {
        return moved;
    }
    format!(
        "{moved} (only {:.2} ms of it on a CPU: the machine was busy, and this speedup is not the program's)",
        cpu as f64 / 1e6
    )
}

/// A speedup above the rank count by more than 10 %: said, with its two causes (a
/// quiet SOR run read 2.98 on 2 ranks, its sequential reference 207 ms where the runs
/// around it read 115–125 ms).
fn beyond(speedup: Option<f64>, ranks: Option<u64>) -> String {
    match (speedup, ranks) {
        (Some(s), Some(n)) if n > 1 && s > 1.1 * n as f64 => format!(
            " (above its {n} ranks: the host's speed moved between the parallel and the sequential runs, or the ranks' caches together held what one could not)"
        ),
        _ => String::new(),
    }
}

/// The run's time per remote fault beside the mechanism cost, and whether the ranks'
/// compute and service threads shared CPUs; time parts explained.
fn fault_line(d: &RunData) -> String {
    let us = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1} µs", v / 1e3));
    let c = d.costs.as_ref();
    let mut s = format!(
        "remote fault: {} per fault in this run; measured just before it: {} with the owner waiting, {} with the owner computing\n",
        us(d.per_remote_fault_ns),
        us(c.and_then(|c| c.fault_idle_ns)),
        us(c.and_then(|c| c.fault_busy_ns)),
    );
    s.push_str(&explain::cpu_line(&d.sum));
    s.push_str(&interval_line(&d.sum));
    s.push_str(&prefetch_line(&d.sum));
    if let Some(p) = &d.per_interval {
        s.push_str(&volume_line(p));
    }
    if d.cores_shared == Some(true) {
        s.push_str("cores shared: each rank's compute and service threads share CPUs (the service thread runs at a raised priority where permitted and asks for a short scheduler slice, to answer requests promptly)\n");
    }
    if d.sum.service_wakeups > 0 {
        let ms = d.sum.total_ns as f64 / 1e6;
        s.push_str(&format!(
            "service threads: {} to poll for messages or on a doorbell ({:.1} per ms of a rank's time)\n",
            numalab_results::words::count(d.sum.service_wakeups, "wake-up"),
            d.sum.service_wakeups as f64 / ms.max(1e-9)
        ));
    }
    s.push_str("app + barrier + fault + lock + segv = time; io is the service thread's, overlapped with them\n");
    s
}

/// Round trips for pages: remote faults, and the bulk prefetches and stride read-aheads
/// that replaced faults.
fn prefetch_line(s: &crate::Stats) -> String {
    use numalab_results::words::{count, count_as};
    let mut parts = Vec::new();
    if s.prefetch_msgs > 0 {
        parts.push(format!(
            "{} bringing {} ({} waited for one)",
            count_as(s.prefetch_msgs, "bulk prefetch", "bulk prefetches"),
            count(s.prefetched, "page"),
            count(s.prefetch_waits, "fault")
        ));
    }
    if s.ahead_msgs > 0 {
        parts.push(format!(
            "{} (a stride or a dense window) asking {} ({} nobody had touched)",
            count(s.ahead_msgs, "read-ahead"),
            count(s.touched_ahead, "page"),
            s.ahead_untouched
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "round trips for pages: {}, {}\n",
        count(s.remote_faults, "remote fault"),
        parts.join(", ")
    )
}

/// What one interval moved and waited for, against the sequential compute it splits:
/// with n ranks the run beats the sequential program only if an interval's round trips
/// take less than (1 − 1/n) of that compute.
fn volume_line(p: &crate::experiment::PerInterval) -> String {
    let us = |v: f64| format!("{:.0} µs", v / 1e3);
    let mut s = format!(
        "per interval and rank: {:.1} KiB sent, {:.1} round trips (faults, prefetches, the acquire)",
        p.bytes / 1024.0,
        p.round_trips
    );
    if let Some(rt) = p.round_trip_ns {
        s.push_str(&format!(
            " (≈ {} at this run's time per remote fault)",
            us(rt)
        ));
    }
    if let Some(q) = p.sequential_ns.filter(|_| p.ranks >= 2) {
        let room = q * (1.0 - 1.0 / p.ranks as f64);
        s.push_str(&format!(
            "; the sequential program computes {} per interval ({}): beating it on {} needs an interval's communication under {}",
            us(q),
            numalab_results::words::count(p.intervals_per_rank.round() as u64, "interval"),
            numalab_results::words::count(p.ranks as u64, "rank"),
            us(room)
        ));
    }
    s + "\n"
}

/// Where the per-page mechanism's time went, per interval a rank closed (the counts of
/// every rank over the intervals of every rank).
fn interval_line(s: &crate::Stats) -> String {
    if s.intervals == 0 {
        return String::new();
    }
    let per = |x: u64| x as f64 / s.intervals as f64;
    // LMWC's first touches (one per page a rank ever touches, most in the first
    // interval) are averaged in too: said apart, so they are not read as a per-interval
    // cost of private pages.
    let first = if s.touches > 0 {
        format!(", {:.1} of them first touches", per(s.touches))
    } else {
        String::new()
    };
    format!(
        "per interval: {:.1} faults ({:.1} µs{first}), {:.1} mprotect calls ({:.1} µs), {:.1} twins ({:.1} µs) over {} (the ranks' together); {} private, {} turned shared\n",
        per(s.segv),
        per(s.segv_ns) / 1e3,
        per(s.mprotects),
        per(s.mprotect_ns) / 1e3,
        per(s.twins),
        per(s.twin_ns) / 1e3,
        numalab_results::words::count(s.intervals, "interval"),
        numalab_results::words::count(s.private_pages, "page"),
        s.reclassified,
    )
}

#[cfg(test)]
mod tests;
