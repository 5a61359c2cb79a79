//! Record files as `numalab report` reads them, through the registry: a version-1
//! file (written before the data was typed) renders with its sections, and damaged
//! files never panic.

use numalab_results::Record;
use numalab_suites::registry;
use proptest::prelude::*;

fn v1_fixture() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../results/tests/fixtures/records.json"),
    )
    .unwrap()
}

#[test]
fn a_version_1_file_renders_every_section_it_has_data_for() {
    let recs: Vec<Record> = serde_json::from_str(&v1_fixture()).unwrap();
    assert!(recs.iter().all(|r| r.schema == "numalab.record/1"));
    let secs = numalab_results::present::sections(registry::REGISTRY, &recs);
    for id in ["machine", "hierarchy", "bandwidth", "c2c"] {
        let s = secs.iter().find(|s| s.id == id).unwrap();
        assert!(
            s.body.as_deref().is_some_and(|b| b.contains("<table")),
            "{id}: {:?}",
            s.absent
        );
    }
    let html = registry::render(&recs, "fixture");
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg"));
    let head = registry::headline(&recs);
    assert!(
        head.contains("latency (plateau)") || head.contains("largest sweep size"),
        "{head}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn damaged_record_files_never_panic(at in 0usize..40_000, byte in "[ -~]", cut in 0usize..40_000) {
        let good = v1_fixture();
        let mut bytes = good.clone().into_bytes();
        let i = at % bytes.len();
        bytes[i] = byte.as_bytes()[0];
        for text in [String::from_utf8_lossy(&bytes).to_string(), good[..cut.min(good.len())].to_string()] {
            if let Ok(recs) = serde_json::from_str::<Vec<Record>>(&text) {
                let _ = registry::render(&recs, "damaged");
                let _ = registry::headline(&recs);
            }
        }
    }
}
