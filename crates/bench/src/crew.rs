//! Placing a measurement's crew: requestors from a spec, helpers for the line state.

use crate::helpers::{check_helpers, nearest_helpers};
use numalab_probe::LineState;
use numalab_topo::plan::resolve_threads;
use numalab_topo::{
    CoreKind, Error, Machine, MemSpec, Result, Smt, ThreadPlacement, ThreadRequest, ThreadSpec,
};
use serde::{Deserialize, Serialize};

/// Where a measurement's requestors, helpers and memory go (the user's words).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CrewOptions {
    /// Requestor placement (the language of `numalab plan`).
    pub cpu: String,
    /// Number of requestors (None: 1 for policies, every CPU for lists).
    pub count: Option<usize>,
    /// Home node: node number, local, hops:K, farthest.
    pub mem_node: String,
    /// Helper placement (None: nearest CPUs on other cores).
    pub helpers: Option<String>,
}

impl Default for CrewOptions {
    fn default() -> Self {
        CrewOptions {
            cpu: "compact".into(),
            count: None,
            mem_node: "local".into(),
            helpers: None,
        }
    }
}

impl CrewOptions {
    /// Parse the requestor and memory specs; a zero count is refused.
    pub fn specs(&self) -> Result<(ThreadSpec, MemSpec)> {
        if self.count == Some(0) {
            return Err(Error::input("invalid --count '0': at least one requestor"));
        }
        Ok((
            ThreadSpec::parse(&self.cpu)?,
            MemSpec::parse(&self.mem_node)?,
        ))
    }

    /// Place requestors and the helpers `state` needs.
    pub fn place(&self, m: &Machine, spec: &ThreadSpec, state: LineState) -> Result<Placed> {
        place(m, spec, self.count, state, self.helpers.as_deref())
    }
}

/// Resolve `spec` to `count` threads (None: as the spec lists), SMT siblings last.
pub fn threads(
    m: &Machine,
    spec: ThreadSpec,
    count: Option<usize>,
) -> Result<Vec<ThreadPlacement>> {
    resolve_threads(
        m,
        &ThreadRequest {
            spec,
            count,
            smt: Smt::Last,
            kind: CoreKind::Any,
        },
    )
}

/// The one requestor of a single-requestor experiment.
/// A list of CPUs other than one is refused naming `--cpu`: taking its first CPU would
/// ignore the rest without a word.
/// `given` is the spec as the user wrote it, for the error.
pub fn one(m: &Machine, spec: ThreadSpec, given: &str) -> Result<ThreadPlacement> {
    if let ThreadSpec::List(items) = &spec {
        let many = |i: &numalab_topo::spec::Item| matches!(i, numalab_topo::spec::Item::Cpus(c) if c.len() > 1);
        if items.len() > 1 || items.iter().any(many) {
            return Err(Error::input(format!(
                "invalid --cpu '{given}': this experiment has one requestor; give one CPU, one object (core:0) or a policy"
            )));
        }
    }
    Ok(threads(m, spec, Some(1))?.remove(0))
}

/// Requestors, helpers, and warnings about them.
#[derive(Debug, Clone)]
pub struct Placed {
    /// Requestor threads.
    pub requestors: Vec<ThreadPlacement>,
    /// Helper threads (as many as the state needs).
    pub helpers: Vec<ThreadPlacement>,
    /// Things the reader should know.
    pub warnings: Vec<String>,
}

/// The warning a lone sharer gets: where the requestor does not read the lines itself,
/// one helper usually holds them Exclusive. (The upgrade kernel's requestor reads them
/// after the helper, so there the lines are shared by two and it does not apply.)
pub const SINGLE_SHARER: &str = "shrd:1 has a single sharer, which on MESI/MOESI caches usually holds the line Exclusive (as cexh); use shrd:2 or more for Shared lines";

/// Resolve requestors (`count` defaults to 1 for policies, every CPU for lists) and
/// the helpers `state` needs (user-placed, or nearest first on other cores).
pub fn place(
    m: &Machine,
    spec: &ThreadSpec,
    count: Option<usize>,
    state: LineState,
    helpers: Option<&str>,
) -> Result<Placed> {
    let natural = matches!(spec, ThreadSpec::List(_));
    let requestors = threads(m, spec.clone(), count.or((!natural).then_some(1)))?;
    let k = state.helpers();
    let mut warnings = Vec::new();
    let helpers = match helpers {
        Some(h) => {
            let hs = threads(m, ThreadSpec::parse(h)?, Some(k))?;
            warnings.extend(check_helpers(&requestors, &hs)?);
            hs
        }
        None => nearest_helpers(m, &requestors, k, &state.name())?,
    };
    if state == LineState::Shrd(1) {
        warnings.push(SINGLE_SHARER.into());
    }
    Ok(Placed {
        requestors,
        helpers,
        warnings,
    })
}
