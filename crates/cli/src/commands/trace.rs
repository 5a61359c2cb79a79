//! Post-mortem tools for traces (sninfo, sndump): `info`, `dump` and `export`.

use crate::common::{bad, CliError};
use clap::Args;
use numalab_prof::metrics::{self, catalogue, series, Index};
use numalab_prof::tables;
use numalab_prof::trace::{self, ObjKind, Trace};
use numalab_results::output::{check_creatable, table, write_atomic};
use std::path::{Path, PathBuf};

/// Arguments of `numalab info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    /// The trace (numalab record or numalab monitor -o).
    trace: PathBuf,
}

/// Arguments of `numalab dump`.
#[derive(Args, Debug)]
pub struct DumpArgs {
    /// The trace.
    trace: PathBuf,
    /// Only these metrics (repeat the option); all derivable ones by default.
    #[arg(long = "metric", value_name = "NAME")]
    metric: Vec<String>,
    /// Only these objects (t1234, p1234, n0, sys; repeat the option).
    #[arg(long = "object", value_name = "ID")]
    object: Vec<String>,
    /// Print the raw sampled fields instead of derived metrics.
    #[arg(long)]
    raw: bool,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    json: bool,
}

/// Arguments of `numalab export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The trace.
    trace: PathBuf,
    /// Chrome trace-event JSON for the Perfetto UI (the one format offered).
    #[arg(long)]
    perfetto: bool,
    /// Output file (default: TRACE.perfetto.json).
    #[arg(short = 'o', long = "output", value_name = "FILE.json")]
    output: Option<PathBuf>,
}

/// Read a trace; a file that is not one is the user's error.
pub fn load(p: &Path) -> Result<Trace, CliError> {
    trace::read(p).map_err(|e| bad(e.to_string()))
}

fn ms(ns: f64) -> String {
    format!("{:.1}", ns / 1e6)
}

/// Run `numalab info`.
pub fn info(a: InfoArgs) -> Result<(), CliError> {
    let t = load(&a.trace)?;
    let ix = Index::new(&t);
    let h = &t.header;
    let mut s = String::new();
    s.push_str(&format!(
        "trace {}: {} v{}, {} {}on {} ({}), started {}\n",
        a.trace.display(),
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
    ));
    s.push_str(&format!(
        "interval {} ms{}; sampler {}\n",
        h.interval_ms,
        if h.pages_every > 0 {
            format!(", pages per node every {} intervals", h.pages_every)
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
    // Sampling summary: rounds are the distinct sample times of the first node.
    let times: Vec<u64> = ix
        .of(&format!("n{}", h.nodes.first().map_or(0, |n| n.id)))
        .iter()
        .map(|x| x.t_ns)
        .collect();
    let mut gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    gaps.sort_by(f64::total_cmp);
    s.push_str(&format!(
        "span {:.3} s, {} sampling rounds, {} samples; interval actually taken: {}\n",
        t.span_ns() as f64 / 1e9,
        times.len(),
        t.samples.len(),
        if gaps.is_empty() {
            "fewer than two rounds".into()
        } else {
            format!(
                "median {} ms, max {} ms",
                ms(gaps[gaps.len() / 2]),
                ms(gaps[gaps.len() - 1])
            )
        }
    ));
    s.push_str(&match &t.end {
        Some(e) => format!(
            "end: {}{}{}{}\n",
            e.reason,
            e.exit_code.map_or(String::new(), |c| format!(", exit status {c}")),
            e.signal.map_or(String::new(), |c| format!(", killed by signal {c}")),
            e.sampler_cpu_ns.map_or(String::new(), |c| format!(
                "; the sampler used {:.1} ms of CPU ({:.2}% of the span)",
                c as f64 / 1e6,
                100.0 * c as f64 / t.span_ns().max(1) as f64
            ))
        ),
        None => "end: none — the recorder stopped before writing its end entry (killed?); this is the prefix it left\n".into(),
    });
    if t.torn_tail {
        s.push_str("the last line was cut mid-write and is skipped\n");
    }
    let procs: Vec<_> = t.objects_of(ObjKind::Process).collect();
    let threads: Vec<_> = t.objects_of(ObjKind::Thread).collect();
    s.push_str(&format!(
        "\nobjects: {} processes, {} threads, {} nodes\n",
        procs.len(),
        threads.len(),
        h.nodes.len()
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
    for (title, r) in [
        ("sources", tables::sources(h)),
        ("hardware counters", tables::counters(h)),
        ("metrics derivable from this trace", tables::metrics(&ix)),
        ("findings", tables::found(&ix)),
    ] {
        if !r.rows.is_empty() {
            s.push_str(&format!("\n{title}:\n"));
            s.push_str(&table(r.header, &r.rows));
        }
    }
    print!("{s}");
    Ok(())
}

/// Run `numalab dump`.
pub fn dump(a: DumpArgs) -> Result<(), CliError> {
    let t = load(&a.trace)?;
    let ix = Index::new(&t);
    let names = metrics::names();
    for m in &a.metric {
        if a.raw {
            return Err(bad(format!(
                "invalid --metric '{m}' with --raw: --raw prints every sampled field"
            )));
        }
        if !names.contains(&m.as_str()) {
            return Err(bad(format!(
                "invalid --metric '{m}': valid metrics are {}",
                names.join(", ")
            )));
        }
    }
    let ids: Vec<&str> = t.objects.iter().map(|o| o.id.as_str()).collect();
    for o in &a.object {
        if !ids.contains(&o.as_str()) {
            return Err(bad(format!(
                "invalid --object '{o}': objects in this trace are {}",
                ids.join(", ")
            )));
        }
    }
    let keep = |obj: &str| {
        a.object.is_empty()
            || a.object
                .iter()
                .any(|o| obj == o || obj.starts_with(&format!("{o}/")))
    };
    let mut rows: Vec<(u64, String, String, f64)> = vec![];
    let mut notes = vec![];
    if a.raw {
        for s in t.samples.iter().filter(|s| keep(&s.obj)) {
            for (k, v) in &s.v {
                rows.push((s.t_ns, s.obj.clone(), k.clone(), *v));
            }
        }
    } else {
        let cat = catalogue(&ix);
        for m in cat
            .iter()
            .filter(|m| a.metric.is_empty() || a.metric.iter().any(|x| x == m.name))
        {
            if let Some(w) = &m.missing {
                notes.push(format!("# {}: not derivable from this trace: {w}", m.name));
                continue;
            }
            for p in series(&ix, m.name).into_iter().filter(|p| keep(&p.obj)) {
                rows.push((p.t_ns, p.obj, m.name.to_string(), p.value));
            }
        }
    }
    rows.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let mut s = String::new();
    if a.json {
        for (t_ns, obj, m, v) in rows {
            s.push_str(&serde_json::json!({"t_s": t_ns as f64 / 1e9, "object": obj, "metric": m, "value": v}).to_string());
            s.push('\n');
        }
    } else {
        for n in notes {
            s.push_str(&n);
            s.push('\n');
        }
        s.push_str(&format!(
            "{:>10} {:<14} {:<28} {:>16}\n",
            "t (s)",
            "object",
            if a.raw { "field" } else { "metric" },
            "value"
        ));
        for (t_ns, obj, m, v) in rows {
            s.push_str(&format!(
                "{:>10.3} {:<14} {:<28} {:>16.4}\n",
                t_ns as f64 / 1e9,
                obj,
                m,
                v
            ));
        }
    }
    print!("{s}");
    Ok(())
}

/// Run `numalab export`.
pub fn export(a: ExportArgs) -> Result<(), CliError> {
    if !a.perfetto {
        return Err(bad(
            "missing format: give --perfetto (Chrome trace-event JSON for the Perfetto UI)",
        ));
    }
    let out = a.output.clone().unwrap_or_else(|| {
        let mut s = a.trace.clone().into_os_string();
        s.push(".perfetto.json");
        s.into()
    });
    if out.extension().is_none_or(|e| e != "json") {
        return Err(bad(format!(
            "invalid output '{}': expected a .json file",
            out.display()
        )));
    }
    check_creatable(&out)?;
    let t = load(&a.trace)?;
    let doc = numalab_prof::export::perfetto(&t);
    write_atomic(&out, doc.to_string().as_bytes())?;
    eprintln!(
        "numalab export: wrote {} (open it at the Perfetto UI or chrome://tracing)",
        out.display()
    );
    Ok(())
}
