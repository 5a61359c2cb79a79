//! The advise check: `numalab advise` on the guest's survey and the trace of the
//! `record` step, whose program ran on node 0's first CPU with its memory bound to node 1
//! (the wrong node, by mbind, so where its pages are does not depend on timing). TCG
//! models no NUMA timing, so the check asserts where the thread and the pages are, that
//! the advice says page locality is a proxy, and that a priced move names a node — never
//! that a saving is positive or which node a move goes to (the matrix it is priced from
//! is timed by TCG).

use super::Checks;
use serde_json::Value;

impl Checks<'_> {
    /// The chase's thread: seen on the first CPU node, pages mostly on the second, the
    /// proxy caveat, and a price resting on the second node's cell.
    pub(super) fn advise(&mut self) {
        let cpu_nodes = self.l.cpu_nodes();
        let [run_node, page_node, ..] = cpu_nodes[..] else {
            self.said("advise", "one CPU node: no wrong node to run from".into());
            return;
        };
        let Some(recs) = self.records("advise") else {
            return;
        };
        // The chase runs pinned to CPU 0, the first CPU of the first CPU node: the
        // busiest thread seen there. Not "seen on CPU 0 only": under TCG a sample can
        // land between the thread's creation and its pinning, on another CPU.
        let run_ms = |r: &&Value| r["data"]["thread"]["run_ms"].as_f64().unwrap_or(0.0);
        let chase = recs
            .iter()
            .filter(|r| {
                r["data"]["section"] == "thread"
                    && r["data"]["thread"]["cpus"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|x| x == 0))
            })
            .max_by(|a, b| run_ms(a).total_cmp(&run_ms(b)));
        let Some(t) = chase.map(|r| &r["data"]["thread"]) else {
            self.fail("advise", "no advice for the thread pinned to CPU 0".into());
            return;
        };
        let node = t["node"].as_u64().map(|n| n as u32);
        self.expect("advise", node == Some(run_node), || {
            format!("the chase ran on node {node:?}, expected {run_node}")
        });
        let on_pages = t["pages"][page_node.to_string()].as_f64().unwrap_or(0.0);
        // More there than where it ran, not all: the binary's own file pages sit wherever
        // the kernel unpacked the initramfs (61-96% on node 1 in the runs so far).
        let on_run = t["pages"][run_node.to_string()].as_f64().unwrap_or(0.0);
        self.expect("advise", on_pages > on_run, || {
            format!(
                "{:.0}% of the pages on node {page_node}, {:.0}% on node {run_node}: {}",
                on_pages * 100.0,
                on_run * 100.0,
                t["pages"]
            )
        });
        let remote = t["remote_share"].as_f64().unwrap_or(0.0);
        self.expect("advise", remote > 0.5, || {
            format!("remote share {remote:.2}, the pages are mostly on node {page_node}")
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
        let mv = (
            best["what"].as_str(),
            best["to_node"].as_u64().map(|n| n as u32),
        );
        // Which move wins rests on the guest's matrix, which TCG times at random: only
        // that a priced move names a node is checked, never which one.
        self.expect("advise", best.is_null() || mv.1.is_some(), || {
            format!("best move {best} names no node")
        });
        let basis = t["basis"].to_string();
        self.expect(
            "advise",
            basis.contains(&format!("node {page_node}")),
            || format!("the price does not rest on a cell to node {page_node}: {basis}"),
        );
        self.said(
            "advise",
            format!(
                "the chase on node {run_node}, {:.0}% of pages on node {page_node}; {}",
                on_pages * 100.0,
                if best.is_null() {
                    "no move priced (TCG timing)".to_string()
                } else {
                    format!(
                        "{} to node {} saves {:.1} ns (TCG: not a NUMA figure)",
                        mv.0.unwrap_or(""),
                        mv.1.unwrap_or(0),
                        best["saving_ns"].as_f64().unwrap_or(0.0)
                    )
                }
            ),
        );
    }
}
