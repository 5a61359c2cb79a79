//! The cluster's text, from its records alone: the plan, then the findings first, the
//! hosts' memory, the matrices (up to [`MAX_GRID`] hosts) and the collectives.

use super::data::{
    FindingsData, HostData, LinksData, OddHost, OddLink, ThrottledHost, KIND_COLLECTIVES,
};
use super::plan::Plan;
use numalab_results::output::table;
use numalab_results::present::of;
use numalab_results::report::num;
use numalab_results::words;
use numalab_results::Record;
use numalab_topo::fmt_bytes;
use std::fmt::Write;

/// Most hosts whose matrices are printed cell by cell.
pub const MAX_GRID: usize = 16;

fn seconds(s: f64) -> String {
    match s {
        s if s < 120.0 => format!("{s:.0} s"),
        s if s < 7200.0 => format!("{:.0} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    }
}

fn host_list(h: &[String]) -> String {
    match h.len() {
        0..=6 => h.join(", "),
        n => format!("{}, {}, {} … {}", h[0], h[1], h[2], h[n - 1]),
    }
}

impl Plan {
    /// The plan as text, for `--dry-run`.
    pub fn text(&self) -> String {
        let o = &self.options;
        let n = self.hosts.len();
        let from = match (&self.allocation, self.from_hostfile) {
            (Some(id), _) => format!("from Slurm allocation {id}"),
            (None, true) => "from the hostfile".into(),
            (None, false) => "(--hosts: a plan only)".into(),
        };
        let mut s = format!(
            "cluster plan: {n} hosts {from} ({}), one rank each\n",
            host_list(&self.hosts)
        );
        let buffers = o.mem_size.map_or("past every cache".to_string(), |b| {
            format!("{} chased and per core streamed, --mem-size", fmt_bytes(b))
        });
        let _ = writeln!(s, "  every host at once: its settings and a memory check per NUMA node (idle latency, read bandwidth of 1 core and of all cores; {} each; buffers {buffers})", words::passes(o.mem_iterations));
        let _ = writeln!(
            s,
            "  latency matrix: {} in {} of disjoint pairs, 8 B ping-pong, {} each",
            words::count(self.pairs, "pair"),
            words::count(self.latency_rounds as u64, "round"),
            words::count(o.lat_iterations as u64, "round trip")
        );
        let _ = writeln!(s, "  bandwidth matrix: {}, every host sending {} x {} to host+D while receiving from host-D, {} per step", words::count(self.shift_steps as u64, "shift step"), o.bw_window, fmt_bytes(o.bw_size), words::count(o.bw_iterations as u64, "sample"));
        let _ = writeln!(
            s,
            "  allreduce (64 B) and barrier across all hosts: {} each",
            words::passes(o.coll_iterations)
        );
        let _ = writeln!(
            s,
            "  estimate: {} (grows with the hosts: rounds and steps, not pairs)",
            seconds(self.estimate_s)
        );
        let _ = writeln!(
            s,
            "  figures kept: {} B per host pair, {} for {n} hosts (no record per pair)",
            super::plan::BYTES_PER_PAIR,
            fmt_bytes(self.state_bytes)
        );
        s
    }
}

fn odd_host_line(o: &OddHost) -> String {
    format!(
        "  odd host: {} {} {} {}; the others {}-{} {}\n",
        o.host,
        o.figure,
        num(Some(o.value), 2),
        o.unit,
        num(Some(o.others.0), 2),
        num(Some(o.others.1), 2),
        o.unit
    )
}

/// A throttled host's finding, in words (without the leading spaces).
pub fn throttled_words(t: &ThrottledHost) -> String {
    format!(
        "odd host: {}'s memory figures were measured under a CPU quota: {}",
        t.host,
        t.throttling.words()
    )
}

/// What a part of a matrix is, in words.
pub fn link_words(o: &OddLink) -> String {
    match (o.part.as_str(), &o.peer) {
        ("pair", Some(p)) => format!("the link {} -> {p} ({})", o.host, o.matrix),
        ("to", _) => format!("{}'s links in ({}: its column)", o.host, o.matrix),
        _ if o.matrix == "latency" => format!("{}'s links ({})", o.host, o.matrix),
        _ => format!("{}'s links out ({}: its row)", o.host, o.matrix),
    }
}

fn odd_link_line(o: &OddLink) -> String {
    format!(
        "  odd link: {} median {} {}; the others {}-{} {}\n",
        link_words(o),
        num(Some(o.value), 3),
        o.unit,
        num(Some(o.others.0), 3),
        num(Some(o.others.1), 3),
        o.unit
    )
}

/// The findings as text.
pub fn findings_text(f: &FindingsData) -> String {
    let mut s = String::from("Findings\n");
    for o in &f.odd_links {
        s.push_str(&odd_link_line(o));
    }
    for t in &f.throttled_hosts {
        let _ = writeln!(s, "  {}", throttled_words(t));
    }
    for o in &f.odd_hosts {
        s.push_str(&odd_host_line(o));
    }
    for d in &f.settings {
        let held: Vec<String> = d
            .values
            .iter()
            .map(|(v, h)| format!("{v} on {}", h.join(", ")))
            .collect();
        let _ = writeln!(s, "  setting differs: {}: {}", d.setting, held.join("; "));
    }
    if f.odd_links.is_empty()
        && f.odd_hosts.is_empty()
        && f.throttled_hosts.is_empty()
        && f.settings.is_empty()
    {
        s.push_str("  no odd host, link or setting\n");
    }
    for n in &f.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    let _ = writeln!(s, "  rule: {}", f.rule);
    s
}

/// The hosts' memory figures as a table.
pub fn hosts_text(hosts: &[HostData]) -> String {
    let rows: Vec<Vec<String>> = hosts
        .iter()
        .flat_map(|h| {
            h.memory.iter().map(move |m| {
                vec![
                    h.host.clone(),
                    m.node.to_string(),
                    m.cores.to_string(),
                    num(m.latency_ns, 1),
                    num(m.read_1core_gbps, 2),
                    num(m.read_all_gbps, 2),
                ]
            })
        })
        .collect();
    let mut s = String::from("Memory per host and node\n");
    s.push_str(&table(
        &[
            "host",
            "node",
            "cores",
            "latency ns",
            "read 1 core GB/s",
            "read all GB/s",
        ],
        &rows,
    ));
    for h in hosts {
        for m in &h.memory {
            if let Some(c) = &m.caveat {
                let _ = writeln!(s, "  {} node {}: {c}", h.host, m.node);
            }
        }
    }
    s.push('\n');
    s
}

fn grid(title: &str, hosts: &[String], m: &[Vec<Option<f64>>], digits: usize) -> String {
    let mut header = vec!["from \\ to"];
    header.extend(hosts.iter().map(|h| h.as_str()));
    let rows: Vec<Vec<String>> = hosts
        .iter()
        .zip(m)
        .map(|(h, r)| {
            std::iter::once(h.clone())
                .chain(r.iter().map(|v| num(*v, digits)))
                .collect()
        })
        .collect();
    format!("{title}\n{}\n", table(&header, &rows))
}

/// The matrices as text (cell by cell up to [`MAX_GRID`] hosts).
pub fn links_text(l: &LinksData) -> String {
    if l.hosts.len() > MAX_GRID {
        return format!(
            "Matrices of {} hosts: in the records and the HTML report\n",
            l.hosts.len()
        );
    }
    let us: Vec<Vec<Option<f64>>> = l
        .latency_ns
        .iter()
        .map(|r| r.iter().map(|v| v.map(|x| x / 1000.0)).collect())
        .collect();
    grid("Latency, us (8 B ping-pong, one way)", &l.hosts, &us, 1)
        + &grid(
            "Send bandwidth, GB/s (row: sender)",
            &l.hosts,
            &l.send_gbps,
            3,
        )
        + &grid(
            "Receive bandwidth, GB/s (row: sender)",
            &l.hosts,
            &l.recv_gbps,
            3,
        )
}

/// The collectives as text.
pub fn collectives_text(records: &[Record]) -> String {
    let mut s = String::new();
    for r in of(records, KIND_COLLECTIVES) {
        let us = |m: &str| num(r.median(m).map(|v| v / 1000.0), 1);
        let _ = writeln!(s, "Across all hosts ({}): allreduce of 64 B {} us, barrier {} us (medians, rank 0's clock)", r.name, us("allreduce"), us("barrier"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::plan::Options;
    use super::*;

    fn plan_text(hosts: usize, iterations: usize) -> String {
        let o = Options {
            hosts: Some(hosts),
            lat_iterations: iterations,
            bw_iterations: iterations,
            coll_iterations: iterations,
            mem_iterations: iterations,
            ..Options::default()
        };
        Plan::resolve(&o).unwrap().text()
    }

    #[test]
    fn the_plan_counts_one_pair_round_step_and_pass_in_the_singular() {
        let one = plan_text(2, 1);
        for said in [
            "1 pass each",
            "1 pair in 1 round of",
            "1 round trip each",
            "1 shift step,",
            "1 sample per step",
        ] {
            assert!(one.contains(said), "no '{said}' in:\n{one}");
        }
        let many = plan_text(3, 2);
        for said in [
            "2 passes each",
            "3 pairs in 3 rounds of",
            "2 round trips each",
            "2 shift steps,",
            "2 samples per step",
        ] {
            assert!(many.contains(said), "no '{said}' in:\n{many}");
        }
    }
}
