//! Where helper threads go: nearest first to the first requestor, never on a
//! requestor's own core (an SMT sibling shares the requestor's L1, so a line it
//! holds would be an L1 hit, not the state asked for).

use numalab_topo::{Error, Machine, Pu, Result, ThreadPlacement};

/// How near `p` is to `r`: the innermost shared level first, then hops, then topology order.
pub fn closeness(m: &Machine, r: &Pu, p: &Pu) -> (u32, u32, u32) {
    let same = |a: Option<u32>, b: Option<u32>| a.is_some() && a == b;
    let level = if same(r.l2, p.l2) {
        0
    } else if same(r.l3, p.l3) {
        1
    } else if same(r.die, p.die) {
        2
    } else if same(r.package, p.package) {
        3
    } else if same(r.node, p.node) {
        4
    } else {
        5
    };
    let hops = match (r.node, p.node) {
        (Some(a), Some(b)) => m.distances.hops_between(a, b).unwrap_or(u32::MAX),
        _ => u32::MAX,
    };
    (level, hops, p.logical)
}

/// The `k` PUs nearest the first requestor that are not on any requestor's core.
pub fn nearest_helpers(
    m: &Machine,
    requestors: &[ThreadPlacement],
    k: usize,
    state: &str,
) -> Result<Vec<ThreadPlacement>> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let Some(first) = requestors.first() else {
        return Ok(Vec::new());
    };
    let busy_cores: Vec<u32> = requestors.iter().map(|t| t.pu.core).collect();
    let mut free: Vec<&Pu> = m
        .pus
        .iter()
        .filter(|p| !busy_cores.contains(&p.core))
        .collect();
    free.sort_by_key(|p| closeness(m, &first.pu, p));
    if free.len() < k {
        let cpus: Vec<u32> = free.iter().map(|p| p.os).collect();
        return Err(Error::Unsatisfiable(format!(
            "state {state} needs {} on cores other than the requestors' ({}), but the machine has only {}{}",
            numalab_results::words::count(k as u64, "helper thread"),
            numalab_topo::cpulist::format(
                &requestors.iter().map(|t| t.pu.os).collect::<Vec<_>>()
            ),
            numalab_results::words::count(free.len() as u64, "such CPU"),
            if cpus.is_empty() {
                String::new()
            } else {
                format!(" ({})", numalab_topo::cpulist::format(&cpus))
            }
        )));
    }
    Ok(free[..k]
        .iter()
        .enumerate()
        .map(|(i, p)| ThreadPlacement {
            thread: i,
            pu: (*p).clone(),
        })
        .collect())
}

/// Check user-placed helpers: none on a requestor's CPU (error); warnings for a
/// helper on a requestor's SMT sibling.
pub fn check_helpers(
    requestors: &[ThreadPlacement],
    helpers: &[ThreadPlacement],
) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    for h in helpers {
        if let Some(r) = requestors.iter().find(|r| r.pu.os == h.pu.os) {
            return Err(Error::bad(
                "helper CPU",
                h.pu.os.to_string(),
                format!(
                    "a helper cannot share CPU {} with a requestor; choose other CPUs with --helpers",
                    r.pu.os
                ),
            ));
        }
        if let Some(r) = requestors.iter().find(|r| r.pu.core == h.pu.core) {
            warnings.push(format!(
                "helper on CPU {} is an SMT sibling of requestor CPU {}: they share the L1, so the lines it prepares may be L1 hits for the requestor",
                h.pu.os, r.pu.os
            ));
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::{Host, TopologySource};

    fn machine(desc: &str) -> Machine {
        Host::load(&TopologySource::Synthetic(desc.into()))
            .unwrap()
            .machine
    }

    fn place(m: &Machine, cpus: &[u32]) -> Vec<ThreadPlacement> {
        cpus.iter()
            .enumerate()
            .map(|(i, c)| ThreadPlacement {
                thread: i,
                pu: m.pu(*c).unwrap().clone(),
            })
            .collect()
    }

    #[test]
    fn nearest_first_skipping_the_requestors_core() {
        // 2 packages × 2 L3 × 2 cores × 2 PUs.
        let m = machine("pack:2 l3:2 core:2 pu:2");
        let r = place(&m, &[0]);
        let h = nearest_helpers(&m, &r, 3, "shrd:3").unwrap();
        let cpus: Vec<u32> = h.iter().map(|t| t.pu.os).collect();
        // Same L3 first (core 1: PUs 2,3), then the other L3 of the package.
        assert_eq!(cpus, vec![2, 3, 4]);
        assert!(cpus
            .iter()
            .all(|c| m.pu(*c).unwrap().core != m.pu(0).unwrap().core));
    }

    #[test]
    fn too_few_cores_is_a_user_error() {
        let m = machine("core:2 pu:1");
        let r = place(&m, &[0]);
        let e = nearest_helpers(&m, &r, 2, "shrd:2").unwrap_err();
        assert!(e.is_user_error());
        assert!(e.to_string().contains("shrd:2"), "{e}");
        let r = place(&m, &[0, 1]);
        assert!(nearest_helpers(&m, &r, 1, "dext").is_err());
    }

    #[test]
    fn helpers_on_a_requestor_cpu_are_refused() {
        let m = machine("core:2 pu:2");
        let r = place(&m, &[0]);
        assert!(check_helpers(&r, &place(&m, &[0])).is_err());
        assert_eq!(check_helpers(&r, &place(&m, &[1])).unwrap().len(), 1);
        assert!(check_helpers(&r, &place(&m, &[2])).unwrap().is_empty());
    }
}
