//! Every rank describes where it runs in one record; rank 0 gathers them.

use crate::error::Result;
use crate::world::World;
use numalab_results::{Provenance, Record};
use numalab_topo::Host;
use serde_json::json;

/// This rank's record: its placement, proved, with its own host's provenance.
pub fn my_record(world: &World, host: &Host) -> Record {
    let prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
    let me = world.me();
    let mut r = Record::new(
        "mpi-rank",
        &format!("rank {}", world.rank),
        prov.clone(),
        json!({ "rank": world.rank, "ranks": world.size }),
    );
    r.placement = Some(world.placement_value(&[world.rank]));
    r.set_data(&me);
    r.warnings = prov.warnings();
    if !me.verified {
        r.warnings
            .push(format!("rank {}: pinning not verified", world.rank));
    }
    if me.shares_cpu {
        r.warnings.push(format!(
            "rank {} shares CPU {} with another rank (more ranks than CPUs): timings include waiting for the CPU",
            world.rank, me.cpu
        ));
    }
    r.unavailable.extend(world.threading_unavailable());
    r
}

/// Every rank's record on rank 0 (collective); None elsewhere.
pub fn measure(world: &World, host: &Host) -> Result<Option<Vec<Record>>> {
    world.gather_records(&[my_record(world, host)])
}
