//! Placing a measurement's crew: requestors from a spec, helpers for the line state.

use crate::common::{bad, CliError};
use clap::Args;
use numalab_bench::helpers::{check_helpers, nearest_helpers};
use numalab_probe::LineState;
use numalab_topo::plan::resolve_threads;
use numalab_topo::{CoreKind, Machine, MemSpec, Smt, ThreadPlacement, ThreadRequest, ThreadSpec};

/// Where a measurement's requestors, helpers and memory go (shared by measuring commands).
#[derive(Args, Debug)]
pub struct CrewArgs {
    /// Requestor placement (the language of `numalab plan`); several requestors run
    /// simultaneously, each on its own buffer with its own statistics.
    #[arg(long = "cpu", visible_alias = "threads", default_value = "compact")]
    pub cpu: String,
    /// Number of requestors (default: 1 for compact/scatter/batch, every CPU listed otherwise).
    #[arg(short = 'n', long = "count")]
    pub count: Option<usize>,
    /// Home node: node number, local, hops:K, farthest (relative to the first requestor).
    #[arg(long = "mem-node", default_value = "local")]
    pub mem_node: String,
    /// Helper placement for states that need helpers (default: nearest CPUs on other cores).
    #[arg(long)]
    pub helpers: Option<String>,
}

impl CrewArgs {
    /// Parse the requestor and memory specs; a zero count is refused.
    pub fn specs(&self) -> Result<(ThreadSpec, MemSpec), CliError> {
        if self.count == Some(0) {
            return Err(bad("invalid --count '0': at least one requestor"));
        }
        Ok((
            ThreadSpec::parse(&self.cpu)?,
            MemSpec::parse(&self.mem_node)?,
        ))
    }

    /// Place requestors and the helpers `state` needs.
    pub fn place(
        &self,
        m: &Machine,
        spec: &ThreadSpec,
        state: LineState,
    ) -> Result<Placed, CliError> {
        place(m, spec, self.count, state, self.helpers.as_deref())
    }
}

/// Resolve `spec` to `count` threads (None: as the spec lists), SMT siblings last.
pub fn threads(
    m: &Machine,
    spec: ThreadSpec,
    count: Option<usize>,
) -> Result<Vec<ThreadPlacement>, CliError> {
    Ok(resolve_threads(
        m,
        &ThreadRequest {
            spec,
            count,
            smt: Smt::Last,
            kind: CoreKind::Any,
        },
    )?)
}

/// The one requestor of a single-requestor experiment.
pub fn one(m: &Machine, spec: ThreadSpec) -> Result<ThreadPlacement, CliError> {
    Ok(threads(m, spec, Some(1))?.remove(0))
}

/// Requestors, helpers, and warnings about them.
pub struct Placed {
    /// Requestor threads.
    pub requestors: Vec<ThreadPlacement>,
    /// Helper threads (as many as the state needs).
    pub helpers: Vec<ThreadPlacement>,
    /// Things the reader should know.
    pub warnings: Vec<String>,
}

/// Resolve requestors (`count` defaults to 1 for policies, every CPU for lists) and
/// the helpers `state` needs (user-placed, or nearest first on other cores).
pub fn place(
    m: &Machine,
    spec: &ThreadSpec,
    count: Option<usize>,
    state: LineState,
    helpers: Option<&str>,
) -> Result<Placed, CliError> {
    let natural = matches!(spec, ThreadSpec::List(_));
    let requestors = resolve_threads(
        m,
        &ThreadRequest {
            spec: spec.clone(),
            count: count.or((!natural).then_some(1)),
            smt: Smt::Last,
            kind: CoreKind::Any,
        },
    )?;
    let k = state.helpers();
    let mut warnings = Vec::new();
    let helpers = match helpers {
        Some(h) => {
            let hs = resolve_threads(
                m,
                &ThreadRequest {
                    spec: ThreadSpec::parse(h)?,
                    count: Some(k),
                    smt: Smt::Last,
                    kind: CoreKind::Any,
                },
            )?;
            warnings.extend(check_helpers(&requestors, &hs)?);
            hs
        }
        None => nearest_helpers(m, &requestors, k, &state.name())?,
    };
    if state == LineState::Shrd(1) {
        warnings.push("shrd:1 has a single sharer, which on MESI/MOESI caches usually holds the line Exclusive (as cexh); use shrd:2 or more for Shared lines".into());
    }
    Ok(Placed {
        requestors,
        helpers,
        warnings,
    })
}
