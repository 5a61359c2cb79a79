//! `numalab plan`: resolve a placement without measuring; `--verify` binds and proves it.

use crate::common::{describing, CliError, CommonArgs};
use clap::{Args, ValueEnum};
use numalab_bench::machine;
use numalab_topo::plan::{check_capacity, resolve_memory, resolve_threads, spread_note};
use numalab_topo::spec::parse_size;
use numalab_topo::{CoreKind, MemSpec, PageSize, Plan, Smt, ThreadRequest, ThreadSpec};

/// SMT sibling use, for clap.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum SmtArg {
    /// One thread per core first; SMT siblings only when cores run out.
    Last,
    /// Fill both hardware threads of a core before the next core.
    Together,
}

/// Core kind, for clap.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum KindArg {
    /// Most performant kind first, then the others.
    Any,
    /// Only the most performant cores (P-cores).
    Big,
    /// Only the most efficient cores (E-cores).
    Little,
}

/// Arguments of `numalab plan`.
#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Thread placement: CPU ids/ranges (0-3,8), objects (node:1, pkg:0, l3:2, core:5, pu:7),
    /// or compact, scatter[:LEVEL], batch:N[:LEVEL]. node and pu take OS numbers; other
    /// objects take the logical indices `numalab topo` lists.
    #[arg(default_value = "compact")]
    spec: String,
    /// Number of threads (default: the spec's natural count: every CPU it names,
    /// one per domain for scatter).
    #[arg(short = 'n', long = "threads")]
    threads: Option<usize>,
    /// Memory placement: node number, local, hops:K, farthest, interleave[:LIST]
    /// (relative forms are relative to the first thread).
    #[arg(long)]
    mem: Option<String>,
    /// Page size of the buffer: 4k, thp, 2m or 1g.
    #[arg(long, default_value = "4k")]
    page_size: String,
    /// Buffer size (e.g. 64M, 1G) checked against the node's free memory and huge pages.
    #[arg(long)]
    size: Option<String>,
    /// SMT sibling use.
    #[arg(long, value_enum, default_value_t = SmtArg::Last)]
    smt: SmtArg,
    /// Core kind on hybrid machines.
    #[arg(long = "core-kind", value_enum, default_value_t = KindArg::Any)]
    core_kind: KindArg,
    /// Bind on this machine and prove it: pin every thread and check where it runs,
    /// allocate the buffer (default 64M) and check the node of every page.
    #[arg(long)]
    verify: bool,
    #[command(flatten)]
    common: CommonArgs,
}

impl PlanArgs {
    /// The thread request the flags make of `spec`.
    fn request(&self, spec: ThreadSpec) -> ThreadRequest {
        ThreadRequest {
            spec,
            count: self.threads,
            smt: match self.smt {
                SmtArg::Last => Smt::Last,
                SmtArg::Together => Smt::Together,
            },
            kind: match self.core_kind {
                KindArg::Any => CoreKind::Any,
                KindArg::Big => CoreKind::Big,
                KindArg::Little => CoreKind::Little,
            },
        }
    }
}

/// Run `numalab plan`.
pub fn run(a: PlanArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let spec = ThreadSpec::parse(&a.spec)?;
    let mem_spec = a.mem.as_deref().map(MemSpec::parse).transpose()?;
    let page_size = PageSize::parse(&a.page_size)?;
    let size = a.size.as_deref().map(parse_size).transpose()?;
    if a.verify && a.common.topology.is_some() {
        return Err(CliError {
            code: 2,
            msg: "invalid option '--verify' with '--topology': only this machine can be bound; drop one of them".into(),
        });
    }
    let host = a.common.host()?;
    let m = &host.machine;
    let req = a.request(spec);
    let threads = resolve_threads(m, &req)?;
    let memory = match (&mem_spec, a.verify) {
        (Some(ms), _) => Some(resolve_memory(m, ms, page_size, &threads)?),
        (None, true) => Some(resolve_memory(m, &MemSpec::Local, page_size, &threads)?),
        (None, false) => None,
    };
    let size = size.or(a.verify.then_some(64 << 20));
    if let (Some(mem), Some(size)) = (&memory, size) {
        check_capacity(m, mem, size)?;
    }
    let plan = Plan {
        thread_spec: req.spec.to_string(),
        threads,
        memory,
    };

    let (verified, mem_note) = match (a.verify, size) {
        (true, Some(size)) => {
            let (v, note) = machine::verify(&host, &plan, size, page_size)?;
            (Some(v), note)
        }
        _ => (None, None),
    };
    let mut rec = machine::plan_record(
        &describing(&host),
        &plan,
        serde_json::json!({
            "topology_source": m.source,
            "threads": a.threads,
            "smt": format!("{:?}", req.smt).to_lowercase(),
            "core_kind": format!("{:?}", req.kind).to_lowercase(),
            "mem": a.mem,
            "page_size": page_size.name(),
            "size_bytes": size,
            "verify": a.verify,
            "default_level": m.default_level().to_string(),
        }),
        serde_json::json!({ "threads": a.spec, "mem": a.mem }),
        verified.as_ref(),
        mem_note,
    );
    rec.warnings.extend(spread_note(m, &req));
    a.common.show(std::slice::from_ref(&rec))
}
