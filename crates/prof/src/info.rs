//! `numalab info` (sninfo) as text: what a trace holds — machine, sampling, how it
//! ended, objects with the CPUs and nodes they ran on, sources, counters, derivable
//! metrics and findings.

use crate::metrics::Index;
use crate::tables;
use crate::trace::{Header, ObjKind, Trace};
use numalab_results::output::table;
use numalab_results::words::{count, count_as};

fn ms(ns: f64) -> String {
    format!("{:.1}", ns / 1e6)
}

/// The whole `info` text of trace `t`, read from `name`.
pub fn text(name: &str, t: &Trace) -> String {
    let ix = Index::new(t);
    let mut s = head(name, &t.header);
    s.push_str(&sampling(t, &ix));
    s.push_str(&end(t));
    s.push_str(&objects(t, &ix));
    for (title, r) in [
        ("sources", tables::sources(&t.header)),
        ("hardware counters", tables::counters(&t.header)),
        ("metrics derivable from this trace", tables::metrics(&ix)),
        ("findings", tables::found(&ix)),
    ] {
        if !r.rows.is_empty() {
            s.push_str(&format!("\n{title}:\n"));
            s.push_str(&table(r.header, &r.rows));
        }
    }
    s
}

/// What was recorded, where and how often; the nodes.
fn head(name: &str, h: &Header) -> String {
    let mut s = format!(
        "trace {}: {} v{}, {} {}on {} ({}), started {}\n",
        name,
        h.format,
        h.version,
        h.mode,
        if h.target.is_empty() {
            String::new()
        } else {
            format!("of '{}' ", h.target.join(" "))
        },
        h.provenance.hostname,
        h.provenance.kernel,
        h.provenance.timestamp
    );
    s.push_str(&format!(
        "interval {} ms{}; sampler {}\n",
        h.interval_ms,
        if h.pages_every > 0 {
            format!(
                ", pages per node every {}",
                numalab_results::words::count(h.pages_every as u64, "interval")
            )
        } else {
            String::new()
        },
        h.runon
            .map_or("not pinned".into(), |c| format!("pinned to CPU {c}"))
    ));
    for n in &h.nodes {
        s.push_str(&format!(
            "node {}: CPUs {}, {}\n",
            n.id,
            if n.cpus.is_empty() {
                "none".into()
            } else {
                numalab_topo::cpulist::format(&n.cpus)
            },
            numalab_topo::fmt_bytes(n.mem_bytes)
        ));
    }
    s
}

/// Sampling summary: rounds are the distinct sample times of the first node.
fn sampling(t: &Trace, ix: &Index) -> String {
    let h = &t.header;
    let times: Vec<u64> = ix
        .of(&format!("n{}", h.nodes.first().map_or(0, |n| n.id)))
        .iter()
        .map(|x| x.t_ns)
        .collect();
    let mut gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    gaps.sort_by(f64::total_cmp);
    format!(
        "span {:.3} s, {}, {}; interval actually taken: {}\n",
        t.span_ns() as f64 / 1e9,
        numalab_results::words::count(times.len() as u64, "sampling round"),
        numalab_results::words::count(t.samples.len() as u64, "sample"),
        if gaps.is_empty() {
            "fewer than two rounds".into()
        } else {
            format!(
                "median {} ms, max {} ms",
                ms(gaps[gaps.len() / 2]),
                ms(gaps[gaps.len() - 1])
            )
        }
    )
}

/// The sampler's CPU time, and its share of the span where the span is long enough
/// for a share to mean something (a 0.4 ms span of `record -- true` gave "108%").
fn sampler_cost(cpu_ns: u64, span_ns: u64) -> String {
    let ms = cpu_ns as f64 / 1e6;
    if span_ns < 100_000_000 {
        return format!(
            "; the sampler used {ms:.1} ms of CPU (the span, {:.1} ms, is too short for a share)",
            span_ns as f64 / 1e6
        );
    }
    format!(
        "; the sampler used {ms:.1} ms of CPU ({:.2}% of the span)",
        100.0 * cpu_ns as f64 / span_ns as f64
    )
}

/// How the recording ended, and whether its last line was torn.
fn end(t: &Trace) -> String {
    let mut s = match &t.end {
        Some(e) => format!(
            "end: {}{}{}{}\n",
            e.reason,
            e.exit_code.map_or(String::new(), |c| format!(", exit status {c}")),
            e.signal.map_or(String::new(), |c| format!(", killed by signal {c}")),
            e.sampler_cpu_ns.map_or(String::new(), |c| sampler_cost(c, t.span_ns()))
        ),
        None => "end: none — the recorder stopped before writing its end entry (killed?); this is the prefix it left\n".into(),
    };
    if t.torn_tail {
        s.push_str("the last line was cut mid-write and is skipped\n");
    }
    s
}

/// Every process and thread: parent, when it appeared, samples, CPUs and nodes.
fn objects(t: &Trace, ix: &Index) -> String {
    let h = &t.header;
    let mut s = String::new();
    let procs: Vec<_> = t.objects_of(ObjKind::Process).collect();
    let threads: Vec<_> = t.objects_of(ObjKind::Thread).collect();
    s.push_str(&format!(
        "\nobjects: {}, {}, {}\n",
        count_as(procs.len() as u64, "process", "processes"),
        count(threads.len() as u64, "thread"),
        count(h.nodes.len() as u64, "node")
    ));
    let mut rows = vec![];
    let list = |v: &[u32]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            numalab_topo::cpulist::format(v)
        }
    };
    for o in procs.iter().chain(threads.iter()) {
        let (cpus, nodes) = ix.placement(&o.id);
        rows.push(vec![
            o.id.clone(),
            o.name.clone(),
            o.parent.clone().unwrap_or_default(),
            format!("{:.3}", o.t_ns as f64 / 1e9),
            ix.of(&o.id).len().to_string(),
            list(&cpus),
            list(&nodes),
        ]);
    }
    if !rows.is_empty() {
        s.push_str(&table(
            &[
                "object",
                "name",
                "parent",
                "appeared s",
                "samples",
                "CPUs",
                "nodes",
            ],
            &rows,
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_sampler_share_of_a_span_too_short_for_one() {
        let short = sampler_cost(500_000, 460_000);
        assert!(
            !short.contains('%') && short.contains("too short"),
            "{short}"
        );
        assert!(sampler_cost(10_000_000, 1_000_000_000).contains("(1.00% of the span)"));
    }
}
