//! The advise check: first_touch run from the wrong node, then `numalab advise` on the
//! guest's survey and that trace. NOT WIRED YET (the lead owns the guests). To wire it:
//! `mod advise;` in guest_checks/mod.rs, `self.advise();` in `Checks::all` after
//! `self.survey()`, and in tests/guests/guest.sh after the survey (first_touch built as an
//! example and put in the initramfs beside numalab; busybox taskset with -a):
//!
//! ```sh
//! P=$(first CPU of the second CPU node); R=$(first CPU of the first CPU node)
//! run advise-record record -i 100 --pages-every 2 --pages-budget 20 -o /tmp/ft.trace -- \
//!   sh -c "taskset -c $P first_touch 16 1 4000 & p=\$!; sleep 1; taskset -a -p -c $R \$p; wait \$p"
//! run advise advise /tmp/survey --trace /tmp/ft.trace --json
//! ```
//!
//! The main thread first-touches 16 MiB on the second CPU node, then every thread is
//! moved to the first: the reader runs on node R's node with its pages on P's node.
//! TCG models no NUMA timing, so the check asserts where things are and which moves
//! are named, never that a saving is positive.

use super::Checks;
use serde_json::Value;

impl Checks<'_> {
    /// first_touch's reader: seen on the first CPU node, pages on the second, and the
    /// advice's move (when the guest's matrix prices one) names one of those two nodes.
    #[allow(dead_code)]
    pub(super) fn advise(&mut self) {
        let cpu_nodes = self.l.cpu_nodes();
        let [run_node, page_node, ..] = cpu_nodes[..] else {
            self.said("advise", "one CPU node: no wrong node to run from".into());
            return;
        };
        if self.section("advise-record", 0).is_none() {
            return;
        }
        let Some(recs) = self.records("advise") else {
            return;
        };
        let reader = recs.iter().find(|r| {
            r["data"]["section"] == "thread" && r["data"]["thread"]["name"] == "reader0"
        });
        let Some(t) = reader.map(|r| &r["data"]["thread"]) else {
            self.fail("advise", "no advice for first_touch's reader0".into());
            return;
        };
        let node = t["node"].as_u64().map(|n| n as u32);
        self.expect("advise", node == Some(run_node), || {
            format!("reader0 ran on node {node:?}, expected {run_node}")
        });
        let on_pages = t["pages"][page_node.to_string()].as_f64().unwrap_or(0.0);
        self.expect("advise", on_pages >= 0.9, || {
            format!("{:.0}% of the pages on node {page_node}: {}", on_pages * 100.0, t["pages"])
        });
        let remote = t["remote_share"].as_f64().unwrap_or(0.0);
        self.expect("advise", remote >= 0.9, || {
            format!("remote share {remote:.2}, the pages are all on node {page_node}")
        });
        let notes: Vec<&str> = recs
            .iter()
            .filter(|r| r["name"] == "notes")
            .flat_map(|r| r["data"]["notes"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        self.expect("advise", notes.iter().any(|n| n.contains("proxy")), || {
            "no counters in TCG: the advice must say page locality is a proxy".into()
        });
        let best = &t["best"];
        let mv = (best["what"].as_str(), best["to_node"].as_u64().map(|n| n as u32));
        let named_right = best.is_null()
            || mv == (Some("move memory"), Some(run_node))
            || mv == (Some("move thread"), Some(page_node));
        self.expect("advise", named_right, || {
            format!("best move {best} names neither memory to {run_node} nor thread to {page_node}")
        });
        let basis = t["basis"].to_string();
        self.expect("advise", basis.contains(&format!("node {page_node}")), || {
            format!("the price does not rest on a cell to node {page_node}: {basis}")
        });
        self.said(
            "advise",
            format!(
                "reader0 on node {run_node}, {:.0}% of pages on node {page_node}; {}",
                on_pages * 100.0,
                if best.is_null() {
                    "no move priced (TCG timing)".to_string()
                } else {
                    format!("{} to node {} saves {:.1} ns (TCG: not a NUMA figure)", mv.0.unwrap_or(""), mv.1.unwrap_or(0), best["saving_ns"].as_f64().unwrap_or(0.0))
                }
            ),
        );
    }
}
