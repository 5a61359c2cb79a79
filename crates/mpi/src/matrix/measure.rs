//! The timed matrix: a ping-pong between every pair of ranks in turn, then the
//! rank × rank medians grouped by relation.

use super::data::{Group, MatrixData};
use super::plan::Plan;
use crate::error::Result;
use crate::kernels;
use crate::place::Relation;
use crate::world::World;
use numalab_probe::Timer;
use numalab_results::stats::median;
use numalab_results::{Provenance, Record};
use numalab_topo::Host;
use serde_json::json;

/// Group pair medians by relation, nearest relation first.
pub fn group(cells: &[(Relation, f64)]) -> Vec<Group> {
    let mut rels: Vec<Relation> = cells.iter().map(|c| c.0).collect();
    rels.sort();
    rels.dedup();
    rels.into_iter()
        .filter_map(|rel| {
            let v: Vec<f64> = cells.iter().filter(|c| c.0 == rel).map(|c| c.1).collect();
            Some(Group {
                relation: rel.name().into(),
                pairs: v.len(),
                min_ns: v.iter().copied().fold(f64::INFINITY, f64::min),
                median_ns: median(&v)?,
                max_ns: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            })
        })
        .collect()
}

/// Run the matrix (collective). Rank 0 gets every record: one per pair and the matrix.
pub fn measure(
    world: &World,
    host: &Host,
    plan: &Plan,
    mut progress: impl FnMut(usize, usize),
) -> Result<Option<Vec<Record>>> {
    let comm = world.comm();
    let timer = Timer::best();
    let prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
    let o = &plan.options;
    let mut mine = Vec::new();
    for (i, &(a, b)) in plan.pairs.iter().enumerate() {
        if world.is_root() {
            progress(i, plan.pairs.len());
        }
        let samples = kernels::ping_pong(
            comm,
            &timer,
            (a, b),
            o.size as usize,
            o.warmup,
            o.iterations,
            kernels::Method::default(),
        )?;
        if let Some(samples) = samples {
            let rel = Relation::between(&world.placements[a], &world.placements[b]);
            let mut r = Record::new(
                "mpi-matrix-pair",
                &format!("rank {a}↔{b}"),
                prov.clone(),
                json!({ "from_rank": a, "to_rank": b, "relation": rel.name(), "size": o.size,
                        "iterations": o.iterations, "warmup": o.warmup,
                        "method": "MPI_Send + MPI_Recv round trip, halved; each timed" }),
            );
            r.placement = Some(world.placement_value(&[a, b]));
            r.add_samples("latency", "ns", &samples);
            r.warnings = prov.warnings();
            world.warn_shared(&[a, b], &mut r);
            mine.push(r);
        }
    }
    let Some(mut all) = world.gather_records(&mine)? else {
        return Ok(None);
    };
    let m = matrix_record(world, &prov, plan, &all);
    all.push(m);
    Ok(Some(all))
}

/// The rank × rank matrix of the pairs' medians, grouped by relation, as one record.
fn matrix_record(world: &World, prov: &Provenance, plan: &Plan, pairs: &[Record]) -> Record {
    let o = &plan.options;
    let n = plan.ranks;
    let mut m: Vec<Vec<Option<f64>>> = vec![vec![None; n]; n];
    let mut cells = Vec::new();
    let mut measured = Vec::new();
    for r in pairs {
        let (a, b) = (
            r.parameters["from_rank"].as_u64().unwrap_or(0) as usize,
            r.parameters["to_rank"].as_u64().unwrap_or(0) as usize,
        );
        if let Some(s) = r.stat("latency") {
            m[a][b] = Some(s.summary.median);
            m[b][a] = Some(s.summary.median);
            measured.push((a, b, s.summary.median));
            cells.push((
                Relation::between(&world.placements[a], &world.placements[b]),
                s.summary.median,
            ));
        }
    }
    let relations: Vec<Vec<&str>> = (0..n)
        .map(|a| {
            (0..n)
                .map(|b| Relation::between(&world.placements[a], &world.placements[b]).name())
                .collect()
        })
        .collect();
    let mut rec = Record::new(
        "mpi-matrix",
        &format!("{n} ranks"),
        prov.clone(),
        json!({ "ranks": n, "size": o.size, "iterations": o.iterations, "warmup": o.warmup }),
    );
    rec.placement = Some(world.placement_value(&(0..n).collect::<Vec<_>>()));
    rec.set_data(&MatrixData {
        latency_ns: m,
        relations: relations
            .iter()
            .map(|row| row.iter().map(|s| s.to_string()).collect())
            .collect(),
        groups: group(&cells),
        statistic: "median one-way latency of each pair".into(),
        by_host: super::domains::by_host(&world.placements, &measured),
        by_node: super::domains::by_node(&world.placements, &measured),
    });
    rec.warnings = prov.warnings();
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_ordered_nearest_first() {
        let g = group(&[
            (Relation::OtherPackage, 300.0),
            (Relation::SameL3, 100.0),
            (Relation::SameL3, 120.0),
            (Relation::SameL3, 500.0),
        ]);
        assert_eq!(g[0].relation, "same L3");
        assert_eq!((g[0].pairs, g[0].median_ns, g[0].max_ns), (3, 120.0, 500.0));
        assert_eq!(g[1].relation, "other package");
    }
}
