//! The checks of the commands that observe a program or the machine (`record`,
//! `monitor`) and of the survey's results and report.

use super::records::fmt;
use super::Checks;
use serde_json::Value;
use std::collections::BTreeSet;

impl Checks<'_> {
    pub(super) fn record(&mut self) {
        let Some(_) = self.section("record", 0) else {
            return;
        };
        let Some(mem) = self.section("record-mem", 0) else {
            return;
        };
        let samples: Vec<Value> = mem
            .out
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let max_on = |node: u32| {
            samples
                .iter()
                .filter(|s| {
                    s["object"]
                        .as_str()
                        .is_some_and(|o| o.ends_with(&format!("/n{node}")))
                })
                .filter_map(|s| s["value"].as_f64())
                .fold(0.0f64, f64::max)
        };
        let (n0, n1) = (max_on(0), max_on(1));
        self.expect("record", n1 >= 16.0, || {
            format!("process.mem on node 1 peaks at {n1:.1} MiB; the program bound 16 MiB there")
        });
        let Some(loc) = self.section("record-locality", 0) else {
            return;
        };
        let low = loc
            .out
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|s| s["value"].as_f64())
            .fold(f64::MAX, f64::min);
        self.expect("record", low < 0.5, || {
            format!("page locality never below {low}: the threads on node 0 use node 1's pages")
        });
        let info = self
            .section("record-info", 0)
            .map(|s| s.out.clone())
            .unwrap_or_default();
        let finding = info
            .lines()
            .find(|l| l.contains("hot node"))
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        self.said("record", format!("process.mem peaks: node 0 {n0:.1} MiB, node 1 {n1:.1} MiB; lowest page locality {low:.3}; {finding}"));
    }

    pub(super) fn monitor(&mut self) {
        let Some(s) = self.section("monitor", 0) else {
            return;
        };
        let nodes: BTreeSet<u32> = s
            .out
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                (w.len() > 2 && w[0].parse::<f64>().is_ok())
                    .then(|| w[1].parse().ok())
                    .flatten()
            })
            .collect();
        let want: BTreeSet<u32> = self.l.nodes().into_iter().collect();
        self.expect("monitor", nodes == want, || {
            format!("lines for nodes {nodes:?}")
        });
        self.said("monitor", format!("lines for nodes {{{}}}", fmt(&nodes)));
    }

    pub(super) fn survey(&mut self) {
        let Some(_) = self.section("survey", 0) else {
            return;
        };
        let Some(r) = self.records("survey-results") else {
            return;
        };
        let kinds: BTreeSet<&str> = r.iter().filter_map(|x| x["kind"].as_str()).collect();
        for k in [
            "matrix-latency",
            "matrix-bandwidth",
            "intervene",
            "invalidate",
            "model",
        ] {
            self.expect("survey", kinds.contains(k), || {
                format!("results.json has no {k} records")
            });
        }
        let html = self
            .secs
            .get("survey-report")
            .map(|s| s.out.clone())
            .unwrap_or_default();
        let mut with_data = Vec::new();
        for id in ["matrix", "invalidate", "intervene", "model"] {
            let Some(start) = html.find(&format!("<section id=\"{id}\">")) else {
                self.fail("survey", format!("report.html has no section {id}"));
                continue;
            };
            let end = html[start..]
                .find("</section>")
                .map_or(html.len(), |e| start + e);
            let body = &html[start..end];
            if self.expect(
                "survey",
                !body.contains("Absent") && body.contains("<table"),
                || format!("report section {id} has no data"),
            ) {
                with_data.push(id);
            }
        }
        // The summary names the node classes the matrix measured: local and at least one
        // remote class (a hop count or a CPU-less node), and the fitted model.
        let summary = match (html.find("id=\"summary\""), html.find("<nav>")) {
            (Some(a), Some(b)) if a < b => &html[a..b],
            _ => "",
        };
        let remote: Vec<&str> = summary
            .split("<div class=\"t\">")
            .skip(1)
            .filter_map(|c| c.split('<').next())
            .filter(|t| {
                t.ends_with(" hop") || t.ends_with(" hops") || t.starts_with("CPU-less node")
            })
            .collect();
        self.expect(
            "survey",
            summary.contains(">local<") && !remote.is_empty() && summary.contains("Latency model"),
            || format!("the summary lacks local, remote or model cards: {summary}"),
        );
        self.said(
            "survey",
            format!(
                "{} records; multi-node report sections with data: {with_data:?}; summary node classes: local, {}",
                r.len(),
                remote.join(", ")
            ),
        );
    }
}
