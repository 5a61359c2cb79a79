//! `numalab bandwidth`: bandwidth kernels with one or many requestors, bwmp, states.

use crate::common::{bad, check_measurable, provenance, CliError, CommonArgs};
use crate::crew_args;
use clap::Args;
use numalab_bench::bandwidth::{self, BwPlan};
use numalab_probe::bw::BwKernel;
use numalab_probe::{LineState, Timer};
use numalab_results::output::table;
use numalab_results::Record;
use numalab_topo::plan::{check_capacity, resolve_memory};
use numalab_topo::spec::parse_size;
use numalab_topo::{fmt_bytes, PageSize};
use std::fmt::Write;

/// Arguments of `numalab bandwidth`.
#[derive(Args, Debug)]
pub struct BandwidthArgs {
    /// Kernels, comma-separated, or `all`: read, readv, rdsh, rdex, zero, upgrade, nt, copy.
    #[arg(long, default_value = "readv")]
    kernel: String,
    #[command(flatten)]
    crew: crew_args::CrewArgs,
    /// Line state before each pass (default: uown for rdex, shrd:1 for upgrade, warm otherwise).
    #[arg(long)]
    state: Option<String>,
    /// Bytes per requestor (default: beyond every cache for streaming kernels; half an L2
    /// for rdex and upgrade, which work within the cache).
    #[arg(long)]
    size: Option<String>,
    /// Timed passes.
    #[arg(long, default_value_t = 10)]
    iterations: usize,
    /// snbench's bwmp: the first requestor to finish stops the others, so a shared
    /// resource's bandwidth is the sum of the requestors' figures.
    #[arg(long)]
    mp: bool,
    /// Page size: 4k, thp, 2m or 1g.
    #[arg(long, default_value = "4k")]
    page_size: String,
    /// Print the plan without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

fn kernels(s: &str) -> Result<Vec<BwKernel>, CliError> {
    if s == "all" {
        return Ok(BwKernel::ALL.to_vec());
    }
    s.split(',')
        .map(|k| BwKernel::parse(k).map_err(bad))
        .collect()
}

/// Run `numalab bandwidth`.
pub fn run(a: BandwidthArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let ks = kernels(&a.kernel)?;
    let (spec, mem) = a.crew.specs()?;
    let page = PageSize::parse(&a.page_size)?;
    let state = a
        .state
        .as_deref()
        .map(LineState::parse)
        .transpose()
        .map_err(bad)?;
    let size = a.size.as_deref().map(parse_size).transpose()?;
    if a.iterations == 0 {
        return Err(bad("invalid --iterations '0': at least 1 timed pass"));
    }
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let m = &host.machine;
    let mut plans = Vec::new();
    for k in ks {
        let st = state.unwrap_or(bandwidth::default_state(k));
        let placed = a.crew.place(m, &spec, st)?;
        let n = placed.requestors.len();
        let memp = resolve_memory(m, &mem, page, &placed.requestors)?;
        let sz = size.unwrap_or_else(|| bandwidth::default_size(m, k, n));
        check_capacity(m, &memp, sz * n as u64)?;
        let plan = BwPlan {
            requestors: placed.requestors,
            helpers: placed.helpers,
            mem: memp,
            state: st,
            kernel: k,
            size: sz,
            iterations: a.iterations,
            mp: a.mp,
            evict_bytes: numalab_bench::sizing::eviction_buffer(m),
            warnings: placed.warnings,
        };
        plan.check().map_err(bad)?;
        plan.shape()?;
        plans.push(plan);
    }
    let (prov, base_warnings) = provenance(&host);
    if a.dry_run {
        let recs: Vec<Record> = plans
            .iter()
            .map(|p| {
                let mut r = Record::new("bandwidth-plan", p.kernel.name(), prov.clone(), bandwidth::parameters(p));
                r.placement = Some(serde_json::json!({ "resolved": { "requestors": p.requestors, "helpers": p.helpers, "memory": p.mem } }));
                r.warnings = base_warnings.clone();
                r
            })
            .collect();
        return a.common.emit(&recs, || render(&recs));
    }
    let timer = Timer::best();
    let mut records = Vec::new();
    for p in &plans {
        let r = bandwidth::measure(&host, &timer, p)?;
        records.extend(bandwidth::records(&prov, &base_warnings, p, &timer, &r));
    }
    a.common.emit(&records, || render(&records))
}

fn render(records: &[Record]) -> String {
    let mut s = String::new();
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            let p = &r.parameters;
            let st = r.stats.first();
            let g = |f: fn(&numalab_results::Stat) -> f64| {
                st.map(|x| format!("{:.2}", f(x)))
                    .unwrap_or_else(|| "-".into())
            };
            vec![
                r.name.clone(),
                p["state"].as_str().unwrap_or("").into(),
                fmt_bytes(p["size_bytes"].as_u64().unwrap_or(0)),
                p["vector_isa"].as_str().unwrap_or("").into(),
                g(|x| x.summary.median),
                g(|x| x.summary.max),
                g(|x| x.summary.min),
                r.stats
                    .iter()
                    .find(|x| x.metric == "traffic")
                    .map(|x| format!("{:.2}", x.summary.median))
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let _ = writeln!(s, "Bandwidth (GB/s = 10^9 bytes/s; counted bytes as STREAM counts them, traffic adds write-allocate)\n");
    s.push_str(&table(
        &[
            "measurement",
            "state",
            "size",
            "vector",
            "median",
            "max",
            "min",
            "traffic median",
        ],
        &rows,
    ));
    s.push('\n');
    let mut seen = std::collections::BTreeSet::new();
    for w in records.iter().flat_map(|r| &r.warnings) {
        if seen.insert(w) {
            let _ = writeln!(s, "warning: {w}");
        }
    }
    s
}
