//! Building the [`Machine`] model from hwloc: this machine, an XML file, or a synthetic string.

use crate::error::{Error, Result};
use crate::hops;
use crate::model::*;
use crate::sysfs;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::attribute::{Initiator, MemoryAttributeFlags};
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::ObjectType;
use hwlocality::object::TopologyObject;
use hwlocality::Topology;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where a topology comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopologySource {
    /// The machine numalab runs on.
    ThisSystem,
    /// An hwloc 2.x XML export.
    Xml(PathBuf),
    /// An hwloc synthetic description, e.g. "pack:2 l3:2 core:4 pu:2".
    Synthetic(String),
}

impl TopologySource {
    /// Human-readable name recorded in results.
    pub fn describe(&self) -> String {
        match self {
            TopologySource::ThisSystem => "this machine".into(),
            TopologySource::Xml(p) => format!("xml:{}", p.display()),
            TopologySource::Synthetic(s) => format!("synthetic:{s}"),
        }
    }
}

/// A loaded topology: the model plus the hwloc handle needed for binding.
pub struct Host {
    /// The plain-data model.
    pub machine: Machine,
    /// hwloc's topology (binding works only when `machine.this_system`).
    pub topology: Topology,
}

impl Host {
    /// Load a topology and build its model.
    pub fn load(source: &TopologySource) -> Result<Host> {
        let topology = build_topology(source)?;
        let machine = build_machine(&topology, source)?;
        Ok(Host { machine, topology })
    }
}

fn build_topology(source: &TopologySource) -> Result<Topology> {
    let bad = |reason: String| Error::BadTopology {
        source_name: match source {
            TopologySource::Xml(p) => p.display().to_string(),
            other => other.describe(),
        },
        reason,
    };
    let builder = Topology::builder();
    let builder = match source {
        TopologySource::ThisSystem => builder,
        TopologySource::Xml(path) => {
            // Read the file ourselves and hand hwloc the text: hwloc's errors for a
            // directory, a device or an unreadable /proc file panic inside hwlocality.
            let xml = read_xml(path).map_err(bad)?;
            builder
                .from_xml(&xml)
                .map_err(|e| bad(format!("not a valid hwloc XML file ({e})")))?
        }
        TopologySource::Synthetic(s) => builder
            .from_synthetic(s)
            .map_err(|e| bad(format!("not a valid hwloc synthetic description ({e})")))?,
    };
    builder
        .build()
        .map_err(|e| bad(format!("hwloc could not build it ({e})")))
}

/// The largest topology file read: hwloc exports of 1000-CPU machines are a few MiB.
const MAX_XML_BYTES: u64 = 64 << 20;

/// The text of an hwloc XML file: a regular, readable file of at most
/// [`MAX_XML_BYTES`] whose content starts like XML; else why not.
fn read_xml(path: &std::path::Path) -> std::result::Result<String, String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(format!(
            "it is {kind}; give an hwloc XML file (lstopo out.xml)"
        ));
    }
    if meta.len() > MAX_XML_BYTES {
        return Err(format!(
            "it holds {} bytes, more than the {MAX_XML_BYTES} an hwloc XML file may have here",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_XML_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read it ({e})"))?;
    if bytes.len() as u64 > MAX_XML_BYTES {
        return Err(format!("it holds more than {MAX_XML_BYTES} bytes"));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| "it is not text (not UTF-8); give an hwloc XML file".to_string())?;
    let body = text.trim_start_matches('\u{feff}').trim_start();
    if !body.starts_with('<') || body.contains('\0') {
        return Err("it does not start like XML ('<'); give an hwloc XML file".into());
    }
    Ok(text)
}

fn cpus_of(set: &CpuSet) -> Vec<u32> {
    set.iter_set().map(|i| usize::from(i) as u32).collect()
}

fn info(obj: &TopologyObject, key: &str) -> Option<String> {
    obj.info(key).map(|v| v.to_string_lossy().into_owned())
}

/// NUMA nodes attached to `obj`, looking through memory-side caches.
fn memory_nodes(obj: &TopologyObject) -> Vec<&TopologyObject> {
    let mut out = Vec::new();
    for child in obj.memory_children() {
        if child.object_type() == ObjectType::NUMANode {
            out.push(child);
        } else {
            out.extend(memory_nodes(child));
        }
    }
    out
}

/// The node a CPU's memory goes to by default: the nearest attached node,
/// preferring ordinary DRAM over HBM/NVM/CXL when several hang at the same place.
fn primary_node(pu: &TopologyObject) -> Option<u32> {
    let mut cur = Some(pu);
    while let Some(obj) = cur {
        let nodes = memory_nodes(obj);
        if !nodes.is_empty() {
            let dram = |n: &&&TopologyObject| {
                n.subtype()
                    .map(|s| s.to_string_lossy().eq_ignore_ascii_case("DRAM"))
                    .unwrap_or(true)
            };
            let chosen = nodes.iter().find(dram).or(nodes.first())?;
            return chosen.os_index().map(|i| i as u32);
        }
        cur = obj.parent();
    }
    None
}

fn cache_size(obj: &TopologyObject) -> Option<u64> {
    match obj.attributes() {
        Some(ObjectAttributes::Cache(c)) => c.size().map(|s| s.get()),
        _ => None,
    }
}

/// Logical index of the ancestor of `pu` with type `ty` (outermost for groups).
fn ancestor_index(pu: &TopologyObject, ty: ObjectType) -> Option<u32> {
    if ty == ObjectType::Group {
        return pu
            .ancestors()
            .filter(|a| a.object_type() == ty)
            .last()
            .map(|a| a.logical_index() as u32);
    }
    pu.first_ancestor_with_type(ty)
        .map(|a| a.logical_index() as u32)
}

fn build_machine(topology: &Topology, source: &TopologySource) -> Result<Machine> {
    let this_system = *source == TopologySource::ThisSystem && topology.is_this_system();
    let kinds = cpu_kinds(topology);
    let pus = build_pus(topology, &kinds);
    if pus.is_empty() {
        return Err(Error::BadTopology {
            source_name: source.describe(),
            reason: "it has no usable CPU".into(),
        });
    }
    let online = cpus_of(&topology.cpuset());
    let complete = cpus_of(&topology.complete_cpuset());
    let offline_cpus = complete
        .iter()
        .copied()
        .filter(|c| !online.contains(c))
        .collect();
    let disallowed_cpus = online
        .iter()
        .copied()
        .filter(|c| !pus.iter().any(|p| p.os == *c))
        .collect();
    let nodes = build_nodes(topology, &pus, this_system);
    let levels = build_levels(topology, &pus, &nodes);
    let distances = hops::node_distances(topology, &nodes, &pus);
    let root = topology.root_object();
    let tree = tree(root, &nodes);
    Ok(Machine {
        source: source.describe(),
        this_system,
        cpu_model: info(root, "CPUModel").or_else(|| {
            topology
                .objects_with_type(ObjectType::Package)
                .find_map(|p| info(p, "CPUModel"))
        }),
        hostname: info(root, "HostName"),
        pus,
        offline_cpus,
        disallowed_cpus,
        levels,
        nodes,
        distances,
        memattrs: memattrs(topology),
        cpu_kinds: kinds,
        caches: caches(topology),
        tree,
    })
}

/// Every PU with an OS index: its core, SMT rank, caches, die, package, group, node
/// and CPU kind.
fn build_pus(topology: &Topology, kinds: &[CpuKind]) -> Vec<Pu> {
    let mut pus = Vec::new();
    let mut smt_seen: BTreeMap<u32, u32> = BTreeMap::new();
    for pu in topology.objects_with_type(ObjectType::PU) {
        let Some(os) = pu.os_index() else { continue };
        let os = os as u32;
        let core = ancestor_index(pu, ObjectType::Core).unwrap_or(pu.logical_index() as u32);
        let rank = smt_seen.entry(core).or_insert(0);
        let smt_rank = *rank;
        *rank += 1;
        pus.push(Pu {
            os,
            logical: pu.logical_index() as u32,
            core,
            smt_rank,
            l2: ancestor_index(pu, ObjectType::L2Cache),
            l3: ancestor_index(pu, ObjectType::L3Cache),
            die: ancestor_index(pu, ObjectType::Die),
            package: ancestor_index(pu, ObjectType::Package),
            group: ancestor_index(pu, ObjectType::Group),
            node: primary_node(pu),
            kind: kinds.iter().find(|k| k.cpus.contains(&os)).map(|k| k.rank),
        });
    }
    pus
}

/// Every level's domains with their CPUs (cores, caches, dies, packages, groups,
/// nodes and PUs), in level order.
fn build_levels(topology: &Topology, pus: &[Pu], nodes: &[Node]) -> Vec<LevelDomains> {
    let mut levels = Vec::new();
    for (level, ty) in [
        (Level::Core, ObjectType::Core),
        (Level::L2, ObjectType::L2Cache),
        (Level::L3, ObjectType::L3Cache),
        (Level::Die, ObjectType::Die),
        (Level::Package, ObjectType::Package),
        (Level::Group, ObjectType::Group),
    ] {
        let domains = object_domains(topology, pus, level, ty);
        if !domains.is_empty() {
            levels.push(LevelDomains { level, domains });
        }
    }
    let domain = |index: u32, cpus: Vec<u32>| Domain {
        index,
        os_index: Some(index),
        cpus,
        cache_bytes: None,
    };
    levels.push(LevelDomains {
        level: Level::Node,
        domains: nodes
            .iter()
            .map(|n| {
                let cpus = pus.iter().filter(|p| p.node == Some(n.os)).map(|p| p.os);
                domain(n.os, cpus.collect())
            })
            .collect(),
    });
    levels.push(LevelDomains {
        level: Level::Pu,
        domains: pus.iter().map(|p| domain(p.os, vec![p.os])).collect(),
    });
    levels.sort_by_key(|l| l.level);
    levels
}

/// The domains of one object type, by logical index, with their CPUs and cache size.
fn object_domains(topology: &Topology, pus: &[Pu], level: Level, ty: ObjectType) -> Vec<Domain> {
    let mut domains: BTreeMap<u32, Domain> = BTreeMap::new();
    for p in pus {
        let Some(idx) = p.domain(level) else { continue };
        let d = domains.entry(idx).or_insert_with(|| {
            let obj = topology
                .objects_with_type(ty)
                .find(|o| o.logical_index() as u32 == idx);
            Domain {
                index: idx,
                os_index: obj.and_then(|o| o.os_index()).map(|i| i as u32),
                cpus: Vec::new(),
                cache_bytes: obj.and_then(cache_size),
            }
        });
        d.cpus.push(p.os);
    }
    domains.into_values().collect()
}

/// One entry per data/unified cache level, from the first object of each type.
fn caches(topology: &Topology) -> Vec<CacheInfo> {
    let mut out = Vec::new();
    for (level, ty) in [
        (1, ObjectType::L1Cache),
        (2, ObjectType::L2Cache),
        (3, ObjectType::L3Cache),
        (4, ObjectType::L4Cache),
    ] {
        let Some(obj) = topology.objects_with_type(ty).next() else {
            continue;
        };
        let Some(ObjectAttributes::Cache(c)) = obj.attributes() else {
            continue;
        };
        let Some(bytes) = c.size().map(|s| s.get()) else {
            continue;
        };
        out.push(CacheInfo {
            level,
            bytes,
            line_bytes: c.line_size().map(|l| l.get() as u32),
            shared_by: obj
                .cpuset()
                .map(|s| s.weight().unwrap_or(1) as u32)
                .unwrap_or(1),
        });
    }
    out
}

fn build_nodes(topology: &Topology, pus: &[Pu], this_system: bool) -> Vec<Node> {
    let mut nodes: Vec<Node> = topology
        .objects_with_type(ObjectType::NUMANode)
        .filter_map(|n| {
            let os = n.os_index()? as u32;
            let (total, pages) = match n.attributes() {
                Some(ObjectAttributes::NUMANode(a)) => (
                    a.local_memory().map_or(0, |m| m.get()),
                    a.page_types()
                        .iter()
                        .map(|t| PagePool {
                            size: t.size().get(),
                            count: t.count(),
                            free: None,
                        })
                        .collect(),
                ),
                _ => (0, Vec::new()),
            };
            Some(Node {
                os,
                total_bytes: total,
                free_bytes: None,
                local_cpus: n.cpuset().map(|s| cpus_of(&s)).unwrap_or_default(),
                cpu_less: !pus.iter().any(|p| p.node == Some(os)),
                subtype: n.subtype().map(|s| s.to_string_lossy().into_owned()),
                pages,
            })
        })
        .collect();
    nodes.sort_by_key(|n| n.os);
    if this_system {
        for node in &mut nodes {
            sysfs::refresh_node(node);
        }
        // Some guests account only part of their memory to node 0's sysfs meminfo
        // (seen: 5 GiB of 23 GiB). With a single node all memory is on it, so the
        // system-wide figures are the honest ones.
        if let [node] = nodes.as_mut_slice() {
            if let Some((total, avail)) = sysfs::system_memory() {
                node.total_bytes = node.total_bytes.max(total);
                node.free_bytes = Some(node.free_bytes.unwrap_or(0).max(avail));
            }
        }
    }
    nodes
}

fn cpu_kinds(topology: &Topology) -> Vec<CpuKind> {
    let Ok(kinds) = topology.cpu_kinds() else {
        return Vec::new();
    };
    kinds
        .enumerate()
        .map(|(rank, k)| CpuKind {
            rank: rank as u32,
            efficiency: k.efficiency.map(|e| e as u32),
            cpus: cpus_of(&k.cpuset),
            infos: k
                .infos
                .iter()
                .map(|i| {
                    (
                        i.name().to_string_lossy().into_owned(),
                        i.value().to_string_lossy().into_owned(),
                    )
                })
                .collect(),
        })
        .collect()
}

fn memattrs(topology: &Topology) -> Vec<MemAttr> {
    let mut out = Vec::new();
    for (name, unit) in [
        ("Latency", "ns"),
        ("ReadLatency", "ns"),
        ("WriteLatency", "ns"),
        ("Bandwidth", "MiB/s"),
        ("ReadBandwidth", "MiB/s"),
        ("WriteBandwidth", "MiB/s"),
    ] {
        let Ok(Some(attr)) = topology.memory_attribute_named(name) else {
            continue;
        };
        let mut values = Vec::new();
        for node in topology.objects_with_type(ObjectType::NUMANode) {
            let Some(os) = node.os_index() else { continue };
            if attr.flags().contains(MemoryAttributeFlags::NEED_INITIATOR) {
                let Ok((inits, vals)) = attr.initiators(node) else {
                    continue;
                };
                for (init, value) in inits.iter().zip(vals) {
                    let initiator = match init {
                        Initiator::CpuSet(set) => crate::cpulist::format(&cpus_of(set)),
                        Initiator::Object(o) => {
                            format!("{} L#{}", o.object_type(), o.logical_index())
                        }
                    };
                    values.push(MemAttrValue {
                        initiator: Some(initiator),
                        node: os as u32,
                        value,
                    });
                }
            } else if let Ok(Some(value)) = attr.value(None, node) {
                values.push(MemAttrValue {
                    initiator: None,
                    node: os as u32,
                    value,
                });
            }
        }
        if !values.is_empty() {
            out.push(MemAttr {
                name: name.into(),
                unit: unit.into(),
                values,
            });
        }
    }
    out
}

fn label(obj: &TopologyObject) -> Option<String> {
    let l = obj.logical_index();
    let size = cache_size(obj).map(|s| format!(" ({})", crate::fmt_bytes(s)));
    Some(match obj.object_type() {
        ObjectType::Machine => "Machine".to_string(),
        ObjectType::Package => format!("Package L#{l}"),
        ObjectType::Die => format!("Die L#{l}"),
        ObjectType::Group => format!("Group L#{l}"),
        ObjectType::L3Cache => format!("L3 L#{l}{}", size.unwrap_or_default()),
        ObjectType::L2Cache => format!("L2 L#{l}{}", size.unwrap_or_default()),
        ObjectType::Core => format!("Core L#{l}"),
        ObjectType::PU => format!("PU L#{l} (P#{})", obj.os_index().unwrap_or(0)),
        // L1 and instruction caches add lines without telling placement anything.
        _ => return None,
    })
}

/// A memory node in the tree: its total as the node table has it (`nodes`), so the two
/// never disagree, else hwloc's.
fn node_label(n: &TopologyObject, nodes: &[Node]) -> String {
    let os = n.os_index().map(|o| o as u32);
    let mem = match (nodes.iter().find(|m| Some(m.os) == os), n.attributes()) {
        (Some(m), _) if m.total_bytes > 0 => Some(m.total_bytes),
        (_, Some(ObjectAttributes::NUMANode(a))) => a.local_memory().map(|m| m.get()),
        _ => None,
    };
    let sub = n
        .subtype()
        .map(|s| format!(" {}", s.to_string_lossy()))
        .unwrap_or_default();
    format!(
        "NUMANode P#{}{sub} ({})",
        os.unwrap_or(0),
        mem.map(|b| format!("{} total", crate::fmt_bytes(b)))
            .unwrap_or_else(|| "size unknown".into())
    )
}

/// Compact tree: chains of single children are joined on one line with " + ".
fn tree(obj: &TopologyObject, nodes: &[Node]) -> TreeNode {
    let mem = |o: &TopologyObject| -> Vec<String> {
        memory_nodes(o)
            .iter()
            .map(|n| node_label(n, nodes))
            .collect()
    };
    let mut labels: Vec<String> = label(obj).into_iter().collect();
    let mut memory = mem(obj);
    let mut cur = obj;
    loop {
        let kids: Vec<_> = cur.normal_children().collect();
        if kids.len() == 1 && (memory_nodes(kids[0]).is_empty() || memory.is_empty()) {
            cur = kids[0];
            labels.extend(label(cur));
            memory.extend(mem(cur));
            continue;
        }
        return TreeNode {
            label: labels.join(" + "),
            memory,
            children: kids.into_iter().map(|k| tree(k, nodes)).collect(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(path: &str) -> String {
        match Host::load(&TopologySource::Xml(PathBuf::from(path))) {
            Ok(_) => panic!("{path} was accepted as a topology"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn what_is_not_an_xml_file_is_refused_by_name_before_hwloc() {
        let dir = std::env::temp_dir().join(format!("numalab-topo-xml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.xml");
        std::fs::write(&empty, "").unwrap();
        let binary = dir.join("binary.xml");
        std::fs::write(&binary, [0u8, 159, 146, 150]).unwrap();
        let text = dir.join("text.xml");
        std::fs::write(&text, "hello").unwrap();
        let d = dir.display().to_string();
        assert!(refused(&d).contains("a directory"), "{}", refused(&d));
        assert!(refused("/proc/self/mem").contains("cannot read it"));
        assert!(refused("/dev/null").contains("not a regular file"));
        for f in [&empty, &binary, &text] {
            let msg = refused(&f.display().to_string());
            assert!(msg.contains(&f.display().to_string()), "{msg}");
            assert!(msg.contains("XML"), "{msg}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
