//! `--export-hwloc FILE.xml`: this machine's hwloc topology with numalab's measured
//! node × node latency and bandwidth as its Latency and Bandwidth memory attributes,
//! so hwloc-based allocators (`HWLOC_XMLFILE=FILE.xml`) rank nodes by measurement.

use crate::advise::Measured;
use numalab_topo::hwloc_xml::{with_memattrs, AttrValue};
use numalab_topo::{Error, Host, Result};
use std::path::Path;

/// GB/s (10^9 bytes/s, numalab's unit) in MiB/s (hwloc's).
fn mib_per_s(gbps: f64) -> u64 {
    (gbps * 1e9 / (1 << 20) as f64).round() as u64
}

/// Write the XML to `path`; the words the record keeps about it.
pub fn write(host: &Host, m: &Measured, path: &str) -> Result<String> {
    let lat: Vec<AttrValue> = m
        .lat
        .iter()
        .map(|((i, t), c)| AttrValue {
            initiator: *i,
            target: *t,
            value: c.median.round() as u64,
        })
        .collect();
    let bw: Vec<AttrValue> =
        m.bw.iter()
            .map(|((i, t), c)| AttrValue {
                initiator: *i,
                target: *t,
                value: mib_per_s(c.median),
            })
            .collect();
    let (xml, skipped) = with_memattrs(&host.topology, &lat, &bw)?;
    numalab_results::output::write_atomic(Path::new(path), xml.as_bytes())
        .map_err(|e| Error::System(e.to_string()))?;
    let mut words = format!(
        "wrote {path}: this machine's topology with {} measured latency (ns) and {} bandwidth (MiB/s) values as hwloc's Latency and Bandwidth attributes (medians; use HWLOC_XMLFILE={path})",
        lat.len() - skipped.iter().filter(|s| s.starts_with("Latency")).count(),
        bw.len() - skipped.iter().filter(|s| s.starts_with("Bandwidth")).count(),
    );
    if !skipped.is_empty() {
        words.push_str(&format!("; left out: {}", skipped.join("; ")));
    }
    Ok(words)
}
