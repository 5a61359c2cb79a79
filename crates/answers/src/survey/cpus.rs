//! Which CPUs the survey's core-to-core step pairs.

use numalab_topo::{Level, Machine};

/// Up to `cap` CPUs that stand for the machine's kinds of pairs: the first CPU of
/// every L3 domain (or node, or package), the first CPU's SMT sibling and another
/// core beside it, so the c2c matrix grows with domains, not with cores squared.
pub fn c2c_cpus(m: &Machine, cap: usize) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    let push = |c: u32, out: &mut Vec<u32>| {
        if !out.contains(&c) && out.len() < cap {
            out.push(c);
        }
    };
    let Some(first) = m.pus.first() else {
        return out;
    };
    push(first.os, &mut out);
    if let Some(sib) = m
        .pus
        .iter()
        .find(|p| p.core == first.core && p.os != first.os)
    {
        push(sib.os, &mut out);
    }
    if let Some(next) = m
        .pus
        .iter()
        .find(|p| p.core != first.core && p.l3 == first.l3 && p.node == first.node)
    {
        push(next.os, &mut out);
    }
    for level in [Level::L3, Level::Node, Level::Package] {
        for d in m.domains(level).into_iter().flatten() {
            if let Some(c) = d.cpus.first() {
                push(*c, &mut out);
            }
        }
    }
    out
}
