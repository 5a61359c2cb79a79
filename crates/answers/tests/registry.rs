//! Record files as `numalab report` reads them, through the registry: a version-1
//! file (written before the data was typed) renders with its sections, and damaged
//! files never panic.

use numalab_answers::registry;
use numalab_results::Record;
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
    let head = registry::summary(&recs);
    assert!(head.contains("Memory hierarchy"), "{head}");
    assert!(html.contains("<div class=\"summary\" id=\"summary\">"));
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
                let _ = registry::summary(&recs);
            }
        }
    }
}

/// Records of real runs on a 2-core VM (suite cvm with sor and fft, mpi latency,
/// bandwidth, matrix and ranks, suite collectives --mpi and earth --mpi).
fn dsm_mpi_fixture() -> Vec<Record> {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/dsm-mpi-records.json"),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn body(recs: &[Record], id: &str) -> String {
    numalab_results::present::sections(registry::REGISTRY, recs)
        .into_iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no section {id}"))
        .body
        .unwrap_or_else(|| panic!("section {id} is empty"))
}

#[test]
fn the_cvm_section_draws_the_seed_figures_from_the_dsm_records() {
    let recs = dsm_mpi_fixture();
    let b = body(&recs, "cvm");
    for title in [
        "Figure 2",
        "Figures 3/5/6",
        "Table 2",
        "Table 3",
        "Figure 7",
    ] {
        assert!(b.contains(title), "{title} missing");
    }
    // One stacked time chart per app, a speedup chart and the switch chart.
    for chart in [
        "sor: time per rank",
        "fft: time per rank",
        "speedup over the sequential",
        "thread switches by class",
    ] {
        assert!(b.contains(chart), "{chart} missing");
    }
    for part in ["barrier", "fault", "segv", "no work"] {
        assert!(b.contains(part), "{part} missing");
    }
    // The text view is built from the same tables.
    let text = numalab_dsm::present::text(&recs);
    assert!(
        text.contains("Figure 7") && text.contains("sor  lmw"),
        "{text}"
    );
}

#[test]
fn the_mpi_sections_show_sizes_the_matrix_and_the_suites_over_mpi() {
    let recs = dsm_mpi_fixture();
    // Point to point and the rank matrix are two sections since each experiment has
    // its own presenter.
    let mpi = body(&recs, "mpi") + &body(&recs, "mpi-matrix");
    assert!(mpi.contains("MPI latency against message size") && mpi.contains("pingpong rank 0→1"));
    assert!(mpi.contains("MPI bandwidth against message size"));
    assert!(mpi.contains("rank × rank matrix") && mpi.contains("same L3"));
    assert!(
        mpi.matches("<svg").count() >= 4,
        "latency, bandwidth, heatmap, relations"
    );
    let coll = body(&recs, "collectives-mpi");
    // The fixture ran the collectives at one P: one point per curve is a table only.
    assert!(
        coll.contains("MPI_Allreduce")
            && !coll.contains("<svg")
            && coll.contains("seed cost models")
    );
    let earth = body(&recs, "earth-mpi");
    assert!(earth.contains("EARTH-MANNA Table 1") && earth.contains("load word"));
    assert!(earth.contains("block move") && earth.contains("loop 7") && earth.contains("<svg"));
    // Sections without records are not drawn; one line still says why.
    let html = registry::render(&recs, "dsm and mpi");
    assert!(!html.contains("<section id=\"hierarchy\""));
    assert!(html.contains("no latency-sweep records in the input"));
    assert!(!html.contains("Absent"));
}

#[test]
fn every_presenter_of_the_fixtures_kinds_renders_text_from_the_records_alone() {
    let recs = dsm_mpi_fixture();
    let mut kinds: Vec<&str> = recs.iter().map(|r| r.kind.as_str()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    for kind in kinds {
        let p = registry::presenter(kind).unwrap_or_else(|| panic!("no presenter of {kind}"));
        let mine: Vec<Record> = recs
            .iter()
            .filter(|r| p.kinds().contains(&r.kind.as_str()))
            .cloned()
            .collect();
        let text = p
            .text(&mine)
            .unwrap_or_else(|| panic!("{kind}: its presenter has no text"));
        assert!(text.lines().count() >= 2, "{kind}: {text}");
    }
    // The registry's text is every presenter's, in registry order.
    let all = registry::text(&recs);
    for head in [
        "latency (ns) from rank",
        "median per pair",
        "collectives between MPI ranks",
        "EARTH Table 1",
    ] {
        assert!(
            all.contains(head),
            "{head} missing from the registry's text"
        );
    }
}
