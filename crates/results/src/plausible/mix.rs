//! Mixed-traffic rule: a mix with writes no faster than the reads-only mix of the same
//! memory and requestors (MLC's injection table: all reads is its fastest row but for
//! a little controller-dependent gain). Only mixes of regular stores are held to it: a
//! regular store reads its line for ownership first, a non-temporal one reads nothing
//! and waits on no fetch, so where a core's reads are bound by its misses in flight
//! its nt stores drain faster. On the 2-vCPU Emerald Rapids guest, quiet, one core's
//! nt kernel streamed 19.6–20.4 GB/s against 11.4–14.6 reading, two cores' 0:1 nt mix
//! 37.9–38.0 against 23.2–24.7 reads only, in every survey: physics, not noise.

use super::{Flag, Ref, MIX_OVER_READS_TOL};
use crate::record::Record;

/// What makes two mixes comparable: the memory, the requestors and the page size.
fn group(r: &Record) -> String {
    let p = &r.parameters;
    format!("{} {} {}", p["nodes"], p["requestor_cpus"], p["page_size"])
}

/// Flags each mix with writes whose issued bandwidth exceeds the reads-only mix of its
/// group by more than [`MIX_OVER_READS_TOL`]. The mix is the figure named; the
/// reads-only figure is named too only when every mix with writes (two or more) is
/// above it, since then it is the one that reads low (a disturbed pass).
pub(super) fn mix_over_reads(records: &[Record], flags: &mut Vec<Flag>) {
    let mixes: Vec<(&Record, f64, f64)> = records
        .iter()
        .filter(|r| r.kind == "bandwidth-mix")
        .filter_map(|r| {
            let share = r.parameters["read_share"].as_f64()?;
            Some((r, share, r.figure("bandwidth")?))
        })
        .collect();
    let regular = |m: &&(&Record, f64, f64)| m.1 < 1.0 && m.0.parameters["store"] != "nt";
    for &(w, share, gbps) in mixes.iter().filter(regular) {
        let reads = mixes
            .iter()
            .filter(|m| m.1 >= 1.0 && group(m.0) == group(w))
            .max_by(|a, b| a.2.total_cmp(&b.2));
        let Some(&(rd, _, rd_gbps)) = reads else {
            continue;
        };
        let over = |g: f64| g > rd_gbps * (1.0 + MIX_OVER_READS_TOL);
        if over(gbps) {
            let writers: Vec<f64> = mixes
                .iter()
                .filter(regular)
                .filter(|m| group(m.0) == group(w))
                .map(|m| m.2)
                .collect();
            let reads_low = writers.len() >= 2 && writers.iter().all(|&g| over(g));
            let mut records = vec![Ref::of(w, "bandwidth")];
            if reads_low {
                records.push(Ref::of(rd, "bandwidth"));
            }
            flags.push(Flag {
                rule: "mix-faster-than-reads",
                records,
                why: format!(
                    "{} ({:.0} % reads) at {gbps:.1} GB/s, {:.1}× the reads-only mix's {rd_gbps:.1} GB/s from the same memory and CPUs",
                    w.name,
                    share * 100.0,
                    gbps / rd_gbps
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::Provenance;
    use serde_json::json;

    fn mix(name: &str, share: f64, gbps: f64, cpus: &[u32]) -> Record {
        let params =
            json!({"nodes": [0], "requestor_cpus": cpus, "page_size": "4k", "read_share": share});
        let mut r = Record::new("bandwidth-mix", name, Provenance::collect("t", "t"), params);
        r.add_samples("bandwidth", "GB/s", &[gbps, gbps, gbps]);
        r
    }

    #[test]
    fn a_mix_far_above_reads_only_is_flagged_and_a_near_one_is_not() {
        let recs = vec![
            mix("mix 1:0", 1.0, 6.8, &[0, 1]),
            mix("mix 3:1", 0.75, 7.5, &[0, 1]),
            mix("mix 1:1", 0.5, 36.1, &[0, 1]),
            // Other requestors: not held against the reads above.
            mix("mix 2:1", 2.0 / 3.0, 30.0, &[0]),
        ];
        let mut flags = Vec::new();
        mix_over_reads(&recs, &mut flags);
        assert_eq!(flags.len(), 1, "{flags:#?}");
        assert_eq!(flags[0].rule, "mix-faster-than-reads");
        // The other mixes agree with the reads-only one: only the 1:1 mix is named.
        assert_eq!(flags[0].records.len(), 1, "{flags:#?}");
        assert_eq!(flags[0].records[0].name, "mix 1:1");
        assert!(flags[0].why.contains("5.3×"), "{}", flags[0].why);
    }

    #[test]
    fn non_temporal_stores_above_reads_only_are_not_flagged() {
        let mut nt = mix("mix 0:1 nt", 0.0, 38.0, &[0, 1]);
        nt.parameters["store"] = "nt".into();
        let recs = vec![
            mix("mix 1:0", 1.0, 23.2, &[0, 1]),
            mix("mix 0:1", 0.0, 12.3, &[0, 1]),
            nt.clone(),
        ];
        let mut flags = Vec::new();
        mix_over_reads(&recs, &mut flags);
        assert!(flags.is_empty(), "{flags:#?}");
        // The same figure with regular stores is flagged.
        let mut regular = nt;
        regular.parameters["store"] = "regular".into();
        let recs = vec![mix("mix 1:0", 1.0, 23.2, &[0, 1]), regular];
        mix_over_reads(&recs, &mut flags);
        assert_eq!(flags.len(), 1, "{flags:#?}");
    }

    #[test]
    fn reads_only_below_every_mix_is_named_as_well() {
        let recs = vec![
            mix("mix 1:0", 1.0, 2.0, &[0, 1]),
            mix("mix 3:1", 0.75, 7.5, &[0, 1]),
            mix("mix 1:1", 0.5, 7.0, &[0, 1]),
        ];
        let mut flags = Vec::new();
        mix_over_reads(&recs, &mut flags);
        assert_eq!(flags.len(), 2, "{flags:#?}");
        assert!(flags
            .iter()
            .all(|f| f.records.len() == 2 && f.records[1].name == "mix 1:0"));
    }
}
