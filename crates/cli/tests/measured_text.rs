//! A measured run's text is what the registry renders from its records. Apart from
//! the dry runs' test (`experiments.rs`) because these runs measure, and a
//! measurement running beside a dry run adds a warning to one of its two runs.

mod common;
use common::tmpdir;

/// Small measured runs whose text must be their records' text (the MPI and DSM
/// families, which launch ranks, are covered by their own tests).
const MEASURED: &[&[&str]] = &[
    &["latency", "--size", "64K", "--iterations", "2"],
    &["latency", "--sweep=4K-16K", "--iterations", "2"],
    &[
        "latency",
        "--state",
        "cexh",
        "--size",
        "64K",
        "--iterations",
        "2",
    ],
    &["suite", "placement", "--size", "64K", "--iterations", "2"],
    &[
        "suite",
        "collectives",
        "--sizes",
        "1K,4K",
        "--iterations",
        "2",
    ],
    &[
        "suite",
        "earth",
        "--parts",
        "ops,split,mlp,threads",
        "--iterations",
        "2",
        "--mlp-size",
        "1M",
        "--groups",
        "1,2",
    ],
];

/// One run writes its records with `-o` and prints its text: the text must be what
/// the registry renders from the file, so the two can never tell different stories.
#[test]
fn a_measured_runs_text_is_its_records_rendered_by_the_registry() {
    let dir = tmpdir("measured-text");
    for (i, args) in MEASURED.iter().enumerate() {
        let what = args.join(" ");
        let file = dir.join(format!("{i}.json"));
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.extend(["-o".into(), file.to_string_lossy().into_owned()]);
        let out = common::bounded(
            "300",
            &a.iter().map(String::as_str).collect::<Vec<_>>(),
            &[],
        );
        if !out.status.success() {
            // A machine that cannot measure this (too few CPUs, say) refuses it by name.
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{what}: {err}");
            continue;
        }
        // Warnings depend on what else the machine did (their wording is unit-tested
        // where they are made); the rest of the text is the same on every run.
        let printed = String::from_utf8_lossy(&out.stdout);
        let steady: Vec<&str> = printed
            .lines()
            .filter(|l| !l.trim_start().starts_with("warning:"))
            .collect();
        let steady = steady.join("\n");
        let mut wording = common::wording::problems(&steady);
        wording.extend(common::wording::long_cells(&steady));
        assert!(wording.is_empty(), "{what}: {wording:#?}");
        let records = numalab_results::output::read_records(&file).expect("records written");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            numalab_answers::registry::text(&records),
            "{what}: printed text is not its records' text"
        );
    }
}
