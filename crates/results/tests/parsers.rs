//! Property tests of the results readers: the `hops,latency_ns` CSV of
//! `model fit`, and record files as `report` and `compare` read them. Arbitrary
//! or damaged input never panics, a refusal names the bad line, accepted points
//! are physical, and whatever deserialises compares (the report of such files is
//! tested in crates/answers/tests/registry.rs, where the presenters are).

use numalab_results::model::parse_csv;
use numalab_results::{compare, Record};
use proptest::prelude::*;

fn records_fixture() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/records.json"),
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn model_csv(lines in prop::collection::vec("[0-9]{0,3},[-0-9.eNaNinf]{0,8}|\\PC{0,12}", 0..6)) {
        let text = lines.join("\n");
        match parse_csv(&text) {
            Ok(points) => {
                for p in points {
                    prop_assert!(p.latency_ns.is_finite() && p.latency_ns >= 0.0, "{:?}", p);
                }
            }
            Err(e) => {
                prop_assert_eq!(e.lines().count(), 1);
                prop_assert!(lines.iter().any(|l| !l.trim().is_empty() && e.contains(l.trim())), "{}", e);
            }
        }
    }

    #[test]
    fn damaged_record_files_never_panic(at in 0usize..40_000, byte in "[ -~]", cut in 0usize..40_000) {
        let good = records_fixture();
        let mut bytes = good.clone().into_bytes();
        let i = at % bytes.len();
        bytes[i] = byte.as_bytes()[0];
        for text in [String::from_utf8_lossy(&bytes).to_string(), good[..cut.min(good.len())].to_string()] {
            if let Ok(recs) = serde_json::from_str::<Vec<Record>>(&text) {
                let c = compare::compare(&recs, &recs, false);
                let _ = compare::html(&c, "a", "b", &[], &[]);
            }
        }
    }
}

#[test]
fn non_physical_latencies_are_refused() {
    for bad in ["1,NaN", "1,inf", "2,-5"] {
        let e = parse_csv(bad).unwrap_err();
        assert!(e.contains(bad), "{e}");
    }
}
