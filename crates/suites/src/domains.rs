//! Locality domains as the KSR studies' rings: domain A holds the owner, the others
//! follow nearest first. Within a domain, CPUs come in topology order with each
//! core's first hardware thread before any SMT sibling ("processor order").

use numalab_bench::helpers::closeness;
use numalab_topo::{cpulist, Error, Level, Machine, Result};
use serde::{Deserialize, Serialize};

/// One domain at the chosen level, named by its place in the order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ordered {
    /// "A" for the owner's domain, then "B", "C", … (nearest first).
    pub letter: String,
    /// The domain's index at its level (OS index for nodes).
    pub index: u32,
    /// Its usable CPUs, first threads of cores before SMT siblings.
    pub cpus: Vec<u32>,
}

/// "A".."Z", then "AA", "AB", …
pub fn letter(i: usize) -> String {
    let mut s = String::new();
    let mut n = i + 1;
    while n > 0 {
        n -= 1;
        s.insert(0, (b'A' + (n % 26) as u8) as char);
        n /= 26;
    }
    s
}

/// The domains at `level`, the one holding `anchor` first, the rest by closeness to it.
pub fn order(m: &Machine, level: Level, anchor: u32) -> Result<Vec<Ordered>> {
    let Some(pu) = m.pu(anchor) else {
        return Err(Error::bad(
            "--owner",
            anchor.to_string(),
            format!("a usable CPU: {}", m.cpu_list()),
        ));
    };
    let domains = m.domains(level).unwrap_or(&[]);
    if domains.is_empty() {
        let have: Vec<&str> = Level::ALL
            .iter()
            .filter(|l| m.domains(**l).is_some_and(|d| !d.is_empty()))
            .map(|l| l.name())
            .collect();
        return Err(Error::bad(
            "--level",
            level.name(),
            format!("a level this topology has: {}", have.join(", ")),
        ));
    }
    let mut out: Vec<(Vec<u32>, u32)> = Vec::new();
    for d in domains.iter().filter(|d| !d.cpus.is_empty()) {
        let mut pus: Vec<_> = d.cpus.iter().filter_map(|&c| m.pu(c)).collect();
        pus.sort_by_key(|p| (p.smt_rank, p.logical));
        out.push((pus.iter().map(|p| p.os).collect(), d.index));
    }
    let key = |cpus: &Vec<u32>| -> (bool, (u32, u32, u32)) {
        let first = m.pu(cpus[0]).expect("domain CPUs are usable PUs");
        (!cpus.contains(&anchor), closeness(m, pu, first))
    };
    out.sort_by_key(|(c, _)| key(c));
    Ok(out
        .into_iter()
        .enumerate()
        .map(|(i, (cpus, index))| Ordered {
            letter: letter(i),
            index,
            cpus,
        })
        .collect())
}

/// The letter of the domain holding `cpu`.
pub fn letter_of(domains: &[Ordered], cpu: u32) -> &str {
    domains
        .iter()
        .find(|d| d.cpus.contains(&cpu))
        .map(|d| d.letter.as_str())
        .unwrap_or("?")
}

/// "A: 0-7 B: 8-15" for plans and errors.
pub fn describe(domains: &[Ordered]) -> String {
    domains
        .iter()
        .map(|d| {
            let mut c = d.cpus.clone();
            c.sort_unstable();
            format!("{}={}", d.letter, cpulist::format(&c))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::{Host, TopologySource};

    fn synthetic(desc: &str) -> Machine {
        Host::load(&TopologySource::Synthetic(desc.into()))
            .unwrap()
            .machine
    }

    #[test]
    fn letters_run_past_z() {
        assert_eq!(letter(0), "A");
        assert_eq!(letter(25), "Z");
        assert_eq!(letter(26), "AA");
        assert_eq!(letter(27), "AB");
    }

    #[test]
    fn the_anchor_domain_is_a_and_smt_siblings_come_last() {
        let m = synthetic("pack:2 l3:2 core:2 pu:2");
        let d = order(&m, Level::L3, 9).unwrap();
        assert_eq!(d.len(), 4);
        assert!(d[0].cpus.contains(&9));
        assert_eq!(d[0].letter, "A");
        // Same package before the other package.
        let pkg = |cpu: u32| m.pu(cpu).unwrap().package;
        assert_eq!(pkg(d[1].cpus[0]), pkg(9));
        assert_ne!(pkg(d[2].cpus[0]), pkg(9));
        // First threads of both cores, then their siblings.
        let ranks: Vec<u32> = d[0]
            .cpus
            .iter()
            .map(|&c| m.pu(c).unwrap().smt_rank)
            .collect();
        assert_eq!(ranks, vec![0, 0, 1, 1]);
    }

    #[test]
    fn a_missing_level_or_cpu_is_a_user_error() {
        let m = synthetic("pack:1 core:2 pu:1");
        let e = order(&m, Level::Node, 0);
        // Synthetic topologies have one node: that level exists with one domain.
        assert!(e.is_ok());
        let e = order(&m, Level::Core, 7).unwrap_err();
        assert!(e.is_user_error() && e.to_string().contains("'7'"), "{e}");
    }
}
