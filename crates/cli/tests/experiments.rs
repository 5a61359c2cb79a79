//! The experiment registry (`numalab_answers::experiments::ALL`) against the binary:
//! every listed experiment's `--dry-run --json` gives plan records (and `-o` writes
//! the same), and every command the binary offers is either listed there or named
//! below with why it is not an experiment.

mod common;
use common::{numalab, tmpdir, validate};
use numalab_answers::experiments::{Experiment, ALL};

/// Commands that are not experiments (they measure nothing, or run a battery of
/// listed experiments), with why.
const NOT_EXPERIMENTS: &[(&str, &str)] = &[
    ("survey", "a battery of the listed experiments"),
    ("report", "renders saved records"),
    ("advise", "reads a survey's records"),
    ("compare", "reads two record files"),
    ("topo", "describes the machine"),
    ("plan", "resolves a placement"),
    ("model fit", "fits saved records"),
    ("model predict", "fits saved records"),
    ("monitor", "samples the system, a trace not records"),
    ("record", "samples a command, a trace not records"),
    ("info", "reads a trace"),
    ("dump", "reads a trace"),
    ("export", "reads a trace"),
    ("schema", "prints the record schema"),
];

/// Groups whose subcommands are the commands.
const GROUPS: &[&str] = &["suite", "mpi", "dsm", "model"];

fn argv(e: &Experiment, tail: &[&str]) -> Vec<String> {
    e.command
        .iter()
        .chain(e.dry_run)
        .chain(tail)
        .map(|s| s.to_string())
        .collect()
}

fn run(args: &[String]) -> std::process::Output {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    // A dry run launches nothing, but an MPI command that did would hang a test: the
    // MPI tests' timeout (common::mpi::LIMIT) turns that into a failure naming it.
    common::mpi::mpi_run(&a, &[])
}

/// The kinds of a dry run's records: plans, and records of parts that will not run
/// here saying why; none measured anything.
fn plan_kinds(v: &serde_json::Value, what: &str) -> Vec<String> {
    let recs = v.as_array().unwrap_or_else(|| panic!("{what}: not a list"));
    let kinds: Vec<String> = recs
        .iter()
        .map(|r| {
            let kind = r["kind"].as_str().unwrap_or("").to_string();
            let unavailable = r["unavailable"].as_array().is_some_and(|u| !u.is_empty());
            assert!(
                kind.ends_with("-plan") || unavailable,
                "{what}: kind {kind} is neither a plan nor says what is unavailable"
            );
            assert_eq!(
                r["stats"],
                serde_json::json!([]),
                "{what}: a plan measured something"
            );
            kind
        })
        .collect();
    assert!(
        kinds.iter().any(|k| k.ends_with("-plan")),
        "{what}: no plan records in {kinds:?}"
    );
    kinds
}

#[test]
fn every_experiment_dry_runs_to_plan_records_on_stdout_and_in_a_file() {
    let dir = tmpdir("experiments");
    for (i, e) in ALL.iter().enumerate() {
        let what = argv(e, &[]).join(" ");
        let out = run(&argv(e, &["--dry-run", "--json"]));
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let kinds = plan_kinds(&validate(&out.stdout), &what);
        let file = dir.join(format!("{i}.json"));
        let f = file.display().to_string();
        let out = run(&argv(e, &["--dry-run", "-o", &f]));
        assert!(
            out.status.success(),
            "{what} -o: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let written = validate(&std::fs::read(&file).expect("the plan file is written"));
        assert_eq!(
            plan_kinds(&written, &what),
            kinds,
            "{what}: -o wrote other records"
        );
    }
}

#[test]
fn a_dry_runs_text_is_its_records_rendered_by_the_registry() {
    for e in ALL {
        let what = argv(e, &[]).join(" ");
        let text = run(&argv(e, &["--dry-run"]));
        let json = run(&argv(e, &["--dry-run", "--json"]));
        assert!(text.status.success() && json.status.success(), "{what}");
        let records: Vec<numalab_results::Record> =
            serde_json::from_slice(&json.stdout).expect("records");
        let from_records = numalab_answers::registry::text(&records);
        let printed = String::from_utf8_lossy(&text.stdout);
        assert!(!printed.trim().is_empty(), "{what}: no text");
        let mut wording = common::wording::problems(&printed);
        wording.extend(common::wording::long_cells(&printed));
        assert!(wording.is_empty(), "{what}: {wording:#?}");
        assert_eq!(
            printed, from_records,
            "{what}: printed text is not its records' text"
        );
    }
}

/// Dry runs whose counts are 1 (one pair, one round, one pass, one block line) read in
/// the singular, and their lists carry no Debug brackets: the wording check would find
/// "1 pairs" or "blocks of [1] lines" if a format went back to a bare "{} <plural>".
#[test]
fn dry_runs_that_count_one_say_it_in_the_singular() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "cluster",
                "--hosts",
                "2",
                "--mem-iterations",
                "1",
                "--lat-iterations",
                "1",
            ],
            "1 pair in 1 round of disjoint pairs, 8 B ping-pong, 1 round trip each",
        ),
        (
            &[
                "cluster",
                "--hosts",
                "2",
                "--bw-iterations",
                "1",
                "--coll-iterations",
                "1",
            ],
            "1 shift step,",
        ),
        (
            &[
                "suite",
                "collectives",
                "--mpi",
                "--ranks",
                "2",
                "--sizes",
                "64",
                "--iterations",
                "1",
            ],
            "P = 2; blocks of 1 line of 64 B",
        ),
        (&["suite", "collectives", "--iterations", "1"], "; 1 pass\n"),
        (
            &["suite", "placement", "--iterations", "1"],
            "1 pass per point",
        ),
        (&["suite", "earth", "--iterations", "1"], "; 1 pass,"),
        (
            &["latency", "--iterations", "1", "--window", "1"],
            "window 1 page, seed 1; 1 pass each",
        ),
        (
            &["mpi", "matrix", "--ranks", "2", "--iterations", "1"],
            "1 pair one at a time",
        ),
    ];
    for (args, said) in cases {
        let argv: Vec<String> = args
            .iter()
            .chain(&["--dry-run"])
            .map(|a| a.to_string())
            .collect();
        let out = run(&argv);
        let what = args.join(" ");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains(said), "{what}: no '{said}' in:\n{text}");
        let wording = common::wording::problems(&text);
        assert!(wording.is_empty(), "{what}: {wording:#?}");
    }
}

/// The subcommands a help text lists under "Commands:", less `help`.
fn commands_in(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect()
}

fn help_of(args: &[&str]) -> String {
    let out = numalab(&[args, &["--help"]].concat());
    assert!(out.status.success(), "{args:?} --help");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_command_is_an_experiment_or_says_why_not() {
    let mut leaves = Vec::new();
    for c in commands_in(&help_of(&[])) {
        if GROUPS.contains(&c.as_str()) {
            for s in commands_in(&help_of(&[&c])) {
                leaves.push(format!("{c} {s}"));
            }
        } else {
            leaves.push(c);
        }
    }
    let listed: Vec<String> = ALL.iter().map(|e| e.command.join(" ")).collect();
    for l in &leaves {
        // `matrix latency|bandwidth` takes its experiment as an argument, not a subcommand.
        let known = listed
            .iter()
            .any(|c| c == l || c.starts_with(&format!("{l} ")))
            || NOT_EXPERIMENTS.iter().any(|(c, _)| c == l);
        assert!(
            known,
            "`numalab {l}` is neither in experiments::ALL nor in NOT_EXPERIMENTS"
        );
    }
    for c in &listed {
        let first = c.split(' ').next().unwrap_or("");
        assert!(
            leaves.iter().any(|l| l == c) || leaves.iter().any(|l| l == first),
            "experiments::ALL lists `{c}`, which the binary does not offer"
        );
    }
}
