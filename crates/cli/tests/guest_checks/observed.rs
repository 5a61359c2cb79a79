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
        self.loaded_family(&r);
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

    /// The survey's loaded-latency family: every memory node, CPU-less ones included,
    /// has reads-only, 50/50 and writes-only points; the chase runs on a CPU of the
    /// nearest node with CPUs; every page of the chase and of each injector is on the
    /// node and every thread ran where it was bound.
    fn loaded_family(&mut self, r: &[Value]) {
        let pages_on = |m: &Value, n: u32| {
            m["pages_per_node"]
                .as_object()
                .is_some_and(|p| p.len() == 1)
                && m["pages_missing"] == 0
                && m["pages_checked"].as_u64().unwrap_or(0) > 0
                && m["pages_per_node"][n.to_string()] == m["pages_checked"]
        };
        let mut seen = Vec::new();
        for (&node, cpus) in &self.l.cpus {
            // The survey's records name the node as text, as --mem-node takes it.
            let key = node.to_string();
            let recs: Vec<&Value> = r
                .iter()
                .filter(|x| {
                    x["kind"] == "loaded-latency" && x["parameters"]["mem_node"] == key.as_str()
                })
                .collect();
            let pcts: BTreeSet<u64> = recs
                .iter()
                .filter_map(|x| x["parameters"]["write_pct"].as_u64())
                .collect();
            let what = format!("survey loaded family, node {node}");
            if !self.expect(&what, pcts == BTreeSet::from([0, 50, 100]), || {
                format!(
                    "write percentages {pcts:?} (expected 0, 50, 100) in {} records",
                    recs.len()
                )
            }) {
                continue;
            }
            // The nearest node with CPUs (by SLIT) holds the chaser.
            let row = &self.l.distances[node as usize];
            let near = self
                .l
                .cpus
                .iter()
                .filter(|(_, c)| !c.is_empty())
                .min_by_key(|(n, _)| row[**n as usize]);
            let chaser = recs[0]["parameters"]["requestor_cpu"]
                .as_u64()
                .unwrap_or(u64::MAX) as u32;
            let near_ok = near.is_some_and(|(_, c)| c.contains(&chaser));
            self.expect(&what, near_ok, || {
                format!(
                    "chase on CPU {chaser}, not on the nearest node's CPUs (node CPUs {cpus:?})"
                )
            });
            for x in &recs {
                let v = &x["placement"]["verified"];
                let mem = &v["memory"];
                let inj = mem["injectors"].as_array().cloned().unwrap_or_default();
                let ok = pages_on(&mem["chase"], node)
                    && !inj.is_empty()
                    && inj.iter().all(|m| pages_on(m, node))
                    && v["threads"]
                        .as_array()
                        .is_some_and(|t| t.iter().all(|t| t["cpu"] == t["observed_cpu"]));
                if !self.expect(&what, ok, || {
                    format!("{}: pages or threads not proved: {v}", x["name"])
                }) {
                    break;
                }
            }
            seen.push(format!(
                "{node}: {} points, chase on CPU {chaser}",
                recs.len()
            ));
        }
        self.said(
            "survey",
            format!(
                "loaded-latency families proved on memory nodes {}",
                seen.join("; ")
            ),
        );
    }
}
