//! The Mess benchmark's processed-curve CSV (bsc-mem/Mess-Results,
//! `processed/memory_curves.csv`): written from a loaded-latency family so Mess's own
//! plotting and simulator tooling read numalab's curves, and read back as reference
//! curves measured on another machine.

use super::curve::{curves, Family};
use numalab_results::{Provenance, Record};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::fmt::Write;

/// Mess's header, column for column.
pub const MESS_HEADER: &str = "read_pct_rounded,pause,bandwidth_mean,bandwidth_std,rd_percentage_actual_mean,latency_mean,latency_std,bandwidth_smooth,latency_smooth";

/// Mess's columns for every loaded point of every family in `records`, one row each:
/// bandwidth in GB/s (the memory-traffic estimate, write-allocate and the chase
/// counted: what Mess's memory-controller counters see), latency in ns; the read share
/// is that traffic's (a regular store reads its line first, so writes only gives 50 %
/// as on Mess's own curves): `read_pct_rounded` the curve's nominal share (constant per
/// curve, as Mess's tools group by it), `rd_percentage_actual_mean` the point's, the
/// chase's reads included; pause is the injector delay; the smooth columns repeat the
/// means (nothing is smoothed). Err when the records hold no loaded point.
pub fn mess_csv(records: &[Record]) -> Result<String, String> {
    let fams = curves(records);
    let mut s = String::from(MESS_HEADER);
    s.push('\n');
    let mut rows = 0;
    for c in fams.iter().flat_map(|f: &Family| &f.curves) {
        let nominal = traffic_read_pct(c.mix.write_share());
        for p in &c.points {
            // Traffic written: the lines the injectors stored to.
            let written = p.issued_gbps * (1.0 - p.read_share);
            let rd = if p.gbps_mean > 0.0 {
                1.0 - written / p.gbps_mean
            } else {
                1.0
            };
            let [_, lat_mean, lat_std, _, _] = p.latency;
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{}",
                nominal,
                p.delay,
                p.gbps_mean,
                p.gbps_std,
                rd,
                lat_mean,
                lat_std,
                p.gbps_mean,
                lat_mean
            );
            rows += 1;
        }
    }
    if rows == 0 {
        return Err("no loaded-latency points to write as Mess curves".into());
    }
    Ok(s)
}

/// The read percentage of the memory traffic a write share issues with regular stores:
/// each written line is read for ownership first, so w writes give 1 / (1 + w) reads.
pub fn traffic_read_pct(write_share: f64) -> i64 {
    (100.0 / (1.0 + write_share)).round() as i64
}

/// `data` of a `mess-reference` record: one published curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceData {
    /// (bandwidth GB/s, latency ns) points, in bandwidth order.
    pub points: Vec<(f64, f64)>,
}

/// One parsed row: read %, bandwidth, latency.
fn row(cols: &[usize; 3], line: &str) -> Option<(i64, f64, f64)> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    let num = |i: usize| f.get(i)?.parse::<f64>().ok().filter(|v| v.is_finite());
    Some((num(cols[0])?.round() as i64, num(cols[1])?, num(cols[2])?))
}

/// A Mess `memory_curves.csv` as `mess-reference` records, one per read percentage,
/// labelled as another machine's (`source` names the file). Err names what is missing.
pub fn reference_records(
    text: &str,
    source: &str,
    prov: Provenance,
) -> Result<Vec<Record>, String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let (Some(r), Some(b), Some(l)) = (
        col("read_pct_rounded"),
        col("bandwidth_mean"),
        col("latency_mean"),
    ) else {
        return Err(format!(
            "invalid reference '{source}': expected a Mess memory_curves.csv whose header has read_pct_rounded, bandwidth_mean and latency_mean ({MESS_HEADER})"
        ));
    };
    let mut by_pct: std::collections::BTreeMap<i64, Vec<(f64, f64)>> = Default::default();
    // Rows with an empty bandwidth or latency (Mess leaves some stds empty) are skipped.
    for (pct, bw, lat) in lines.filter_map(|x| row(&[r, b, l], x)) {
        by_pct.entry(pct).or_default().push((bw, lat));
    }
    if by_pct.is_empty() {
        return Err(format!(
            "invalid reference '{source}': no row has a read percentage, bandwidth and latency"
        ));
    }
    let mut prov = prov;
    prov.hostname = format!("another machine ({source})");
    prov.topology = "a published Mess curve: not this machine".into();
    Ok(by_pct
        .into_iter()
        .rev()
        .map(|(pct, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let params = json!({ "source": source, "read_pct": pct, "machine": "another machine" });
            let mut rec = Record::new(
                "mess-reference",
                &format!("reference {pct}% reads"),
                prov.clone(),
                params,
            );
            rec.set_data(&ReferenceData { points });
            rec
        })
        .collect())
}

/// Each file as [`reference_records`]; Err names the file that cannot be read or parsed.
pub fn reference_files(files: &[std::path::PathBuf]) -> Result<Vec<Record>, String> {
    let mut out = Vec::new();
    for f in files {
        let name = f.display().to_string();
        let text = numalab_results::outpath::read_input(f).map_err(|e| {
            format!(
                "invalid reference '{name}': {}; expected a Mess memory_curves.csv",
                e.why
            )
        })?;
        let prov = Provenance::collect("none: a published curve", &name);
        out.extend(reference_records(&text, &name, prov)?);
    }
    Ok(out)
}
