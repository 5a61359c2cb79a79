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

/// The largest bandwidth a reference row may have, GB/s: ten times any memory system
/// published; beyond it a row is a unit or parse error, not a measurement.
const MAX_REFERENCE_GBPS: f64 = 10_000.0;

/// The largest loaded latency a reference row may have, ns (one millisecond).
const MAX_REFERENCE_NS: f64 = 1e6;

/// One row's read %, bandwidth and latency: Ok(None) when the bandwidth or latency is
/// empty (Mess leaves some cells empty), Err naming the value that is not a possible
/// measurement.
fn row(cols: &[usize; 3], line: &str) -> Result<Option<(i64, f64, f64)>, String> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    let cell = |i: usize| f.get(i).copied().filter(|v| !v.is_empty());
    let (Some(pct), Some(bw), Some(lat)) = (cell(cols[0]), cell(cols[1]), cell(cols[2])) else {
        return Ok(None);
    };
    // `open`: whether the low end is excluded (a bandwidth or latency of 0 is not one).
    let num = |name: &str, v: &str, open: bool, hi: f64, valid: &str| match v.parse::<f64>() {
        Ok(x) if x.is_finite() && (x > 0.0 || (!open && x == 0.0)) && x <= hi => Ok(x),
        _ => Err(format!("{name} '{v}' (valid: {valid})")),
    };
    let pct = num("read_pct_rounded", pct, false, 100.0, "0 to 100")?;
    let bw = num(
        "bandwidth_mean",
        bw,
        true,
        MAX_REFERENCE_GBPS,
        "above 0, at most 10000 GB/s",
    )?;
    let lat = num(
        "latency_mean",
        lat,
        true,
        MAX_REFERENCE_NS,
        "above 0, at most 1e6 ns",
    )?;
    Ok(Some((pct.round() as i64, bw, lat)))
}

/// A Mess `memory_curves.csv` as `mess-reference` records, one per read percentage,
/// labelled as another machine's (`source` names the file). Err names what is missing
/// or the first row whose values are not a possible measurement (the whole file is
/// refused: a curve with a dropped point would be plotted as if complete).
pub fn reference_records(
    text: &str,
    source: &str,
    prov: Provenance,
) -> Result<Vec<Record>, String> {
    // A UTF-8 byte-order mark (spreadsheets write one) is not part of the first name.
    let mut lines = text.trim_start_matches('\u{feff}').lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or("")
        .split(',')
        .map(|h| h.trim().trim_matches('"'))
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
    let mut empty = Vec::new();
    for (i, line) in lines.enumerate().filter(|(_, x)| !x.trim().is_empty()) {
        let bad = |e| format!("invalid reference '{source}' line {}: {e}", i + 2);
        match row(&[r, b, l], line).map_err(bad)? {
            Some((pct, bw, lat)) => by_pct.entry(pct).or_default().push((bw, lat)),
            None => empty.push((i + 2).to_string()),
        }
    }
    if by_pct.is_empty() {
        return Err(format!(
            "invalid reference '{source}': no row has a read percentage, bandwidth and latency"
        ));
    }
    let mut prov = prov;
    prov.hostname = format!("another machine ({source})");
    prov.topology = "a published Mess curve: not this machine".into();
    let mut out: Vec<Record> = by_pct
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
        .collect();
    if !empty.is_empty() {
        out[0].warnings.push(format!(
            "{source}: {} {} left out: an empty read percentage, bandwidth or latency",
            numalab_results::words::noun(empty.len() as u64, "line"),
            empty.join(", ")
        ));
    }
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Record>, String> {
        reference_records(text, "m.csv", Provenance::collect("test", "m.csv"))
    }

    #[test]
    fn impossible_reference_rows_are_refused_by_line_and_value() {
        let h = "read_pct_rounded,bandwidth_mean,latency_mean\n";
        for (row, named) in [
            ("100,-5,90", "bandwidth_mean '-5'"),
            ("100,0,90", "bandwidth_mean '0'"),
            ("100,1e308,90", "bandwidth_mean '1e308'"),
            ("100,NaN,90", "bandwidth_mean 'NaN'"),
            ("100,10,0", "latency_mean '0'"),
            ("100,10,-1", "latency_mean '-1'"),
            ("250,10,90", "read_pct_rounded '250'"),
            ("-5,10,90", "read_pct_rounded '-5'"),
        ] {
            let e = parse(&format!("{h}100,5,80\n{row}\n")).unwrap_err();
            assert!(e.contains("line 3") && e.contains(named), "{row}: {e}");
        }
    }

    #[test]
    fn a_bom_is_accepted_and_empty_cells_are_named() {
        let recs = parse(
            "\u{feff}read_pct_rounded,bandwidth_mean,latency_mean\n100,5,80\n100,,90\n50,6,95\n",
        )
        .unwrap();
        assert_eq!(recs.len(), 2);
        let warned: Vec<&String> = recs.iter().flat_map(|r| &r.warnings).collect();
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(warned[0].contains("line 3 left out"), "{warned:?}");
    }
}
