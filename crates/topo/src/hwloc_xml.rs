//! A topology exported as hwloc XML whose Latency and Bandwidth memory attributes are
//! replaced by given (measured) values, so hwloc-based allocators read the measurement
//! (`HWLOC_XMLFILE=FILE.xml`). hwlocality can only set values of attributes it
//! registers itself, so the attributes are written into hwloc's own XML export: the
//! NUMA nodes' `gp_index` and the initiators' `cpuset` come from that same text.

use crate::error::{Error, Result};
use hwlocality::topology::export::xml::XMLExportFlags;
use hwlocality::Topology;

/// One value: from the CPUs of node `initiator` to memory on node `target`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttrValue {
    /// The initiator node (its CPUs are the initiator cpuset).
    pub initiator: u32,
    /// The memory node.
    pub target: u32,
    /// ns for Latency, MiB/s for Bandwidth (hwloc's units).
    pub value: u64,
}

/// A NUMA node as hwloc's XML names it.
struct XmlNode {
    os: u32,
    gp_index: String,
    cpuset: String,
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    Some(&tag[start..start + tag[start..].find('"')?])
}

fn numa_nodes(xml: &str) -> Vec<XmlNode> {
    xml.match_indices("<object type=\"NUMANode\"")
        .filter_map(|(i, _)| {
            let tag = &xml[i..i + xml[i..].find('>')?];
            Some(XmlNode {
                os: attr(tag, "os_index")?.parse().ok()?,
                gp_index: attr(tag, "gp_index")?.to_string(),
                cpuset: attr(tag, "cpuset")?.to_string(),
            })
        })
        .collect()
}

/// `xml` without the `<memattr name="NAME" …>` element (self-closed or not).
fn without_memattr(xml: &str, name: &str) -> String {
    let open = format!("<memattr name=\"{name}\"");
    let Some(start) = xml.find(&open) else {
        return xml.to_string();
    };
    let tag_end = start + xml[start..].find('>').unwrap_or(0) + 1;
    let end = if xml[..tag_end].ends_with("/>") {
        tag_end
    } else {
        xml[start..]
            .find("</memattr>")
            .map_or(tag_end, |e| start + e + "</memattr>".len())
    };
    // The line's indentation and newline go with it.
    let line_start = xml[..start].rfind('\n').map_or(start, |i| i + 1);
    let end = if xml[end..].starts_with('\n') {
        end + 1
    } else {
        end
    };
    format!("{}{}", &xml[..line_start], &xml[end..])
}

fn element(
    name: &str,
    flags: u32,
    values: &[AttrValue],
    nodes: &[XmlNode],
    skipped: &mut Vec<String>,
) -> String {
    let mut s = format!("  <memattr name=\"{name}\" flags=\"{flags}\">\n");
    for v in values {
        let by_os = |n: u32| nodes.iter().find(|x| x.os == n);
        match (by_os(v.initiator), by_os(v.target)) {
            (Some(i), Some(t)) if !i.cpuset.is_empty() && i.cpuset != "0x0" => s.push_str(&format!(
                "    <memattr_value target_obj_type=\"NUMANode\" target_obj_gp_index=\"{}\" value=\"{}\" initiator_cpuset=\"{}\"/>\n",
                t.gp_index, v.value, i.cpuset
            )),
            _ => skipped.push(format!(
                "{name} node {} → node {}: this topology has no such pair of nodes with CPUs and memory",
                v.initiator, v.target
            )),
        }
    }
    s.push_str("  </memattr>\n");
    s
}

/// `topology` as hwloc XML with `latency` (ns) and `bandwidth` (MiB/s) as its Latency
/// and Bandwidth attributes in place of the firmware's; also the values left out, why.
pub fn with_memattrs(
    topology: &Topology,
    latency: &[AttrValue],
    bandwidth: &[AttrValue],
) -> Result<(String, Vec<String>)> {
    let xml = topology
        .export_xml(XMLExportFlags::empty())
        .map_err(|e| Error::System(format!("hwloc could not export the topology as XML ({e})")))?;
    let xml = xml.as_str().to_string();
    let nodes = numa_nodes(&xml);
    let mut out = without_memattr(&without_memattr(&xml, "Latency"), "Bandwidth");
    let Some(close) = out.rfind("</topology>") else {
        return Err(Error::System(
            "hwloc's XML export has no </topology>".into(),
        ));
    };
    let mut skipped = Vec::new();
    // hwloc's flags: Latency is lower-is-best (2), Bandwidth higher-is-best (1); both need an initiator (4).
    let mut add = String::new();
    if !latency.is_empty() {
        add.push_str(&element("Latency", 2 | 4, latency, &nodes, &mut skipped));
    }
    if !bandwidth.is_empty() {
        add.push_str(&element(
            "Bandwidth",
            1 | 4,
            bandwidth,
            &nodes,
            &mut skipped,
        ));
    }
    out.insert_str(close, &add);
    Ok((out, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Host, TopologySource};

    #[test]
    fn measured_values_replace_the_firmwares_and_hwloc_reads_them_back() {
        let path = numalab_fixtures::topology("8intel64-4n2t-memattrs.xml");
        let host = Host::load(&TopologySource::Xml(path)).unwrap();
        let lat = [AttrValue {
            initiator: 0,
            target: 1,
            value: 321,
        }];
        let bw = [
            AttrValue {
                initiator: 0,
                target: 0,
                value: 9999,
            },
            AttrValue {
                initiator: 0,
                target: 42,
                value: 1,
            },
        ];
        let (xml, skipped) = with_memattrs(&host.topology, &lat, &bw).unwrap();
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert!(skipped[0].contains("node 42"));
        // The fixture's own Bandwidth value (20 to gp_index 8) is gone, one element each.
        assert_eq!(xml.matches("<memattr name=\"Bandwidth\"").count(), 1);
        assert!(!xml.contains("value=\"20\" initiator_cpuset=\"0x000000ff\""));
        assert!(
            xml.contains("<memattr name=\"foobar\""),
            "other attributes stay"
        );
        let file =
            std::env::temp_dir().join(format!("numalab-hwloc-xml-{}.xml", std::process::id()));
        std::fs::write(&file, &xml).unwrap();
        let back = Host::load(&TopologySource::Xml(file.clone()))
            .unwrap()
            .machine;
        let _ = std::fs::remove_file(&file);
        let value = |name: &str, node: u32| {
            back.memattrs
                .iter()
                .find(|a| a.name == name)
                .and_then(|a| a.values.iter().find(|v| v.node == node))
                .map(|v| v.value)
        };
        assert_eq!(value("Latency", 1), Some(321));
        assert_eq!(value("Bandwidth", 0), Some(9999));
    }
}
