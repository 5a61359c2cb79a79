//! The system side of a trace (snsar): per-node allocation counters, free memory,
//! CPU busy time and memory-controller counters, plus system-wide NUMA-balancing
//! counters. Used alone by `monitor` and beside the threads by `record`.

use crate::counters::{self, Uncore};
use crate::procfs::Roots;
use crate::trace::{FieldDesc, NodeInfo, ObjKind, Object, Sample, SourceStatus};
use std::collections::BTreeMap;

/// numastat fields kept (pages allocated, not accesses).
pub const NUMASTAT: [&str; 6] = [
    "numa_hit",
    "numa_miss",
    "numa_foreign",
    "local_node",
    "other_node",
    "interleave_hit",
];

/// vmstat fields kept (system-wide NUMA balancing and migration).
pub const VMSTAT: [&str; 5] = [
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pages_migrated",
    "pgmigrate_success",
    "numa_pte_updates",
];

/// Samples the machine's nodes.
pub struct System {
    roots: Roots,
    nodes: Vec<NodeInfo>,
    uncore: Vec<Uncore>,
}

impl System {
    /// Prepare the sampler; `uncore` opens memory-controller counters when possible.
    pub fn new(roots: Roots, nodes: Vec<NodeInfo>, uncore: bool) -> System {
        let node_of = |cpu: u32| nodes.iter().find(|n| n.cpus.contains(&cpu)).map(|n| n.id);
        let uncore = if uncore {
            counters::open_uncore(&roots.sys, node_of)
        } else {
            vec![]
        };
        System {
            roots,
            nodes,
            uncore,
        }
    }

    /// The nodes sampled.
    pub fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    /// Memory-controller counter descriptors (opened or not).
    pub fn uncore_descs(&self) -> Vec<crate::trace::CounterDesc> {
        self.uncore.iter().map(|u| u.desc.clone()).collect()
    }

    /// What each system source delivers here.
    pub fn sources(&self) -> Vec<SourceStatus> {
        let n0 = self.nodes.first().map_or(0, |n| n.id);
        let st = |source: &str, ok: bool, yes: &str, no: &str| SourceStatus {
            source: source.into(),
            available: ok,
            detail: if ok { yes.into() } else { no.into() },
        };
        let open = self.uncore.iter().filter(|u| u.counter.is_some()).count();
        let uncore = if self.uncore.is_empty() {
            st("perf-uncore", false, "", "no memory-controller PMU (uncore_imc_*, amd_umc_*) in sysfs: bandwidth per node cannot be measured here")
        } else if open == 0 {
            let why = self
                .uncore
                .iter()
                .find_map(|u| u.desc.error.clone())
                .unwrap_or_default();
            st(
                "perf-uncore",
                false,
                "",
                &format!("memory-controller PMUs present but none opened: {why}"),
            )
        } else {
            st(
                "perf-uncore",
                true,
                &format!(
                    "{open} memory-controller counters (CAS reads and writes) per socket or die"
                ),
                "",
            )
        };
        vec![
            uncore,
            st(
                "numastat",
                self.roots.numastat(n0).is_some(),
                "per-node page allocation counters (allocations, not accesses)",
                "sysfs node numastat unreadable",
            ),
            st(
                "node-meminfo",
                self.roots.node_meminfo(n0).is_some(),
                "per-node total and free memory",
                "sysfs node meminfo unreadable",
            ),
            st(
                "proc-stat",
                self.roots.cpu_times().is_some(),
                "per-CPU busy time, summed per node",
                "/proc/stat unreadable",
            ),
            st(
                "vmstat",
                self.roots
                    .vmstat()
                    .is_some_and(|v| v.contains_key("numa_hint_faults")),
                "system-wide NUMA-balancing hint faults and page migrations",
                "/proc/vmstat has no numa_hint_faults (kernel without CONFIG_NUMA_BALANCING)",
            ),
        ]
    }

    /// Field descriptions of node and system samples.
    pub fn fields(&self) -> Vec<FieldDesc> {
        let mut v: Vec<FieldDesc> = NUMASTAT
            .iter()
            .map(|k| {
                FieldDesc::new(
                    "node",
                    k,
                    "pages",
                    true,
                    "numastat",
                    "pages allocated (numastat); allocations, not accesses",
                )
            })
            .collect();
        v.push(FieldDesc::new(
            "node",
            "mem_free",
            "bytes",
            false,
            "node-meminfo",
            "free memory on the node",
        ));
        v.push(FieldDesc::new(
            "node",
            "mem_total",
            "bytes",
            false,
            "node-meminfo",
            "memory on the node",
        ));
        v.push(FieldDesc::new(
            "node",
            "cpu_busy",
            "jiffies",
            true,
            "proc-stat",
            "busy time of the node's CPUs",
        ));
        v.push(FieldDesc::new(
            "node",
            "cpu_total",
            "jiffies",
            true,
            "proc-stat",
            "all time of the node's CPUs",
        ));
        for u in self.uncore.iter().filter(|u| u.counter.is_some()) {
            v.push(FieldDesc::new(
                "node",
                &u.desc.field,
                &u.desc.unit,
                true,
                "perf-uncore",
                &format!(
                    "{} on {} (raw count; × {} = {})",
                    u.desc.event, u.desc.pmu, u.desc.scale, u.desc.unit
                ),
            ));
        }
        for k in VMSTAT {
            v.push(FieldDesc::new(
                "system",
                k,
                "count",
                true,
                "vmstat",
                "system-wide NUMA balancing / migration counter",
            ));
        }
        v
    }

    /// Objects: the system and every node.
    pub fn objects(&self) -> Vec<Object> {
        let mut v = vec![Object {
            t_ns: 0,
            id: "sys".into(),
            kind: ObjKind::System,
            pid: None,
            tid: None,
            node: None,
            name: "system".into(),
            parent: None,
        }];
        for n in &self.nodes {
            v.push(Object {
                t_ns: 0,
                id: format!("n{}", n.id),
                kind: ObjKind::Node,
                pid: None,
                tid: None,
                node: Some(n.id),
                name: format!("node {}", n.id),
                parent: Some("sys".into()),
            });
        }
        v
    }

    /// One sample of the system and every node.
    pub fn sample(&mut self, t_ns: u64) -> Vec<Sample> {
        let mut out = vec![];
        if let Some(vm) = self.roots.vmstat() {
            let v: BTreeMap<String, f64> = VMSTAT
                .iter()
                .filter_map(|k| Some((k.to_string(), *vm.get(*k)? as f64)))
                .collect();
            if !v.is_empty() {
                out.push(Sample {
                    t_ns,
                    obj: "sys".into(),
                    v,
                });
            }
        }
        let cpu = self.roots.cpu_times().unwrap_or_default();
        for n in &self.nodes {
            let mut v = BTreeMap::new();
            if let Some(ns) = self.roots.numastat(n.id) {
                for k in NUMASTAT {
                    if let Some(x) = ns.get(k) {
                        v.insert(k.to_string(), *x as f64);
                    }
                }
            }
            if let Some((total, free)) = self.roots.node_meminfo(n.id) {
                v.insert("mem_total".into(), total as f64);
                v.insert("mem_free".into(), free as f64);
            }
            if !n.cpus.is_empty() && !cpu.is_empty() {
                let (b, t) = n
                    .cpus
                    .iter()
                    .filter_map(|c| cpu.get(c))
                    .fold((0, 0), |(b, t), (x, y)| (b + x, t + y));
                v.insert("cpu_busy".into(), b as f64);
                v.insert("cpu_total".into(), t as f64);
            }
            for u in self.uncore.iter_mut().filter(|u| u.desc.node == Some(n.id)) {
                if let Some(c) = u.counter.as_mut() {
                    if let Ok(r) = counters::read(c) {
                        put_reading(&mut v, &u.desc.field, &r);
                    }
                }
            }
            out.push(Sample {
                t_ns,
                obj: format!("n{}", n.id),
                v,
            });
        }
        out
    }
}

/// Store a counter reading as three fields: raw count, enabled and running ns.
pub fn put_reading(v: &mut BTreeMap<String, f64>, field: &str, r: &counters::Reading) {
    v.insert(field.to_string(), r.count as f64);
    v.insert(format!("{field}.enabled_ns"), r.enabled_ns as f64);
    v.insert(format!("{field}.running_ns"), r.running_ns as f64);
}

/// The reading stored by `put_reading`, if all three fields are there.
pub fn get_reading(v: &BTreeMap<String, f64>, field: &str) -> Option<counters::Reading> {
    Some(counters::Reading {
        count: *v.get(field)? as u64,
        enabled_ns: *v.get(&format!("{field}.enabled_ns"))? as u64,
        running_ns: *v.get(&format!("{field}.running_ns"))? as u64,
    })
}

/// This machine's nodes with CPUs and memory.
pub fn nodes_of(m: &numalab_topo::Machine) -> Vec<NodeInfo> {
    m.nodes
        .iter()
        .map(|n| NodeInfo {
            id: n.os,
            cpus: m
                .pus
                .iter()
                .filter(|p| p.node == Some(n.os))
                .map(|p| p.os)
                .collect(),
            mem_bytes: n.total_bytes,
        })
        .collect()
}
