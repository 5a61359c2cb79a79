//! Records about the machine itself: the topology (`numalab topo`) and a resolved
//! placement with its proof (`numalab plan`).

use crate::experiment::Context;
use numalab_results::{Record, Unavailable};
use numalab_topo::bind::{verify_threads, PinProof};
use numalab_topo::buffer::{Buffer, MemProof};
use numalab_topo::{fmt_bytes, Host, PageSize, Plan, Result};
use serde::{Deserialize, Serialize};

/// The topology as one record; a single node is noted as unavailable.
pub fn topo_record(host: &Host, ctx: &Context) -> Record {
    let m = &host.machine;
    let mut rec = Record::new(
        "topo",
        "topology",
        ctx.prov.clone(),
        serde_json::json!({ "topology_source": m.source }),
    );
    rec.set_data(m);
    rec.warnings = ctx.warnings.clone();
    if m.nodes.len() < 2 {
        rec.unavailable.push(Unavailable {
            feature: "second NUMA node".into(),
            reason: match m.nodes.len() {
                1 => "this topology has one NUMA node".into(),
                n => format!("this topology has {n} NUMA nodes"),
            },
        });
    }
    if m.this_system {
        // What this process may not do here (a container, a seccomp profile, a sysctl).
        rec.unavailable
            .extend(
                numalab_topo::privileges::probe()
                    .into_iter()
                    .map(|d| Unavailable {
                        feature: d.feature,
                        reason: format!("{}; fix: {}", d.reason, d.fix),
                    }),
            );
    }
    rec
}

/// What `--verify` proved: each thread's CPU and every page's node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verified {
    /// Where each thread ran.
    pub threads: Vec<PinProof>,
    /// Where the buffer's pages landed.
    pub memory: MemProof,
}

/// Bind the plan's threads and allocate its buffer on this machine, and prove where
/// they landed; the note says when transparent huge pages backed less than asked.
pub fn verify(
    host: &Host,
    plan: &Plan,
    size: u64,
    page: PageSize,
) -> Result<(Verified, Option<String>)> {
    let threads = verify_threads(host, &plan.threads)?;
    let mem = plan.memory.as_ref().expect("verify always has memory");
    let buf = Buffer::allocate(host, mem, size)?;
    let mut note = None;
    if page == PageSize::Thp {
        let thp = buf.proof.thp_bytes.unwrap_or(0);
        if thp < buf.proof.bytes {
            note = Some(format!(
                "only {} of {} is backed by transparent huge pages",
                fmt_bytes(thp),
                fmt_bytes(buf.proof.bytes)
            ));
        }
    }
    Ok((
        Verified {
            threads,
            memory: buf.proof.clone(),
        },
        note,
    ))
}

/// A resolved placement as a record: what was asked, resolved and (if bound) verified.
pub fn plan_record(
    ctx: &Context,
    plan: &Plan,
    parameters: serde_json::Value,
    requested: serde_json::Value,
    verified: Option<&Verified>,
    note: Option<String>,
) -> Record {
    let mut rec = Record::new("plan", &plan.thread_spec, ctx.prov.clone(), parameters);
    rec.placement = Some(serde_json::json!({
        "requested": requested,
        "resolved": plan,
        "verified": verified,
    }));
    rec.warnings = ctx.warnings.clone();
    rec.warnings.extend(note);
    rec
}
