//! MPI runs beyond the basics in `mpi.rs`: EARTH's Table 4 between ranks, the commands
//! on four ranks (oversubscribed on a 2-core machine), and an operation the MPI library
//! cannot provide. Every run has a hard timeout; nothing here compares timings.

mod common;

use common::validate;
use std::process::Output;

/// Seconds any one MPI run may take before the test fails (a hang is a defect).
const LIMIT: &str = "300";

fn mpi_run(args: &[&str], env: &[(&str, &str)]) -> Output {
    common::mpi::run(LIMIT, args, env)
}

fn ok_json(args: &[&str]) -> serde_json::Value {
    common::mpi::ok_json(LIMIT, args)
}

fn metrics(r: &serde_json::Value) -> Vec<String> {
    r["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["metric"].as_str().unwrap().to_string())
        .collect()
}

fn median(r: &serde_json::Value, metric: &str) -> f64 {
    r["stats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["metric"] == metric)
        .unwrap_or_else(|| panic!("{metric} in {r}"))["median"]
        .as_f64()
        .unwrap()
}

#[test]
fn table_4_breaks_one_remote_load_into_stamped_stages_beside_the_seed() {
    let v = ok_json(&[
        "suite",
        "earth",
        "--mpi",
        "--ranks",
        "2",
        "--parts",
        "breakdown",
        "--iterations",
        "1",
        "--json",
    ]);
    let recs = v.as_array().unwrap();
    let am = recs
        .iter()
        .find(|r| r["parameters"]["form"] == "active message")
        .expect("the active-message breakdown");
    let m = metrics(am);
    for stage in [
        "issuer_send",
        "server_read",
        "server_get",
        "server_send",
        "issuer_read",
        "issuer_store",
        "issuer_resume",
        "total",
    ] {
        assert!(m.contains(&stage.to_string()), "{stage} in {m:?}");
    }
    // The transfers are either stamped on both ranks or derived, and then say why.
    let stamped =
        m.contains(&"request_transfer".to_string()) && m.contains(&"reply_transfer".into());
    assert!(
        stamped
            || (m.contains(&"transfers_derived".to_string())
                && am["unavailable"].as_array().unwrap().len() == 2),
        "{am}"
    );
    // Stages are parts of the whole: none exceeds the measured total's largest sample
    // by construction, and the total is a real, positive time.
    let total = median(am, "total");
    assert!(total > 0.0 && total < 1e9, "total {total}");
    for s in am["stats"].as_array().unwrap() {
        if s["metric"] != "total" {
            assert!(s["median"].as_f64().unwrap() <= s["max"].as_f64().unwrap());
        }
    }
    let stages = am["data"]["stages"].as_array().unwrap();
    let seed_rows: usize = stages
        .iter()
        .map(|s| s["seed"].as_array().unwrap().len())
        .sum();
    assert_eq!(
        seed_rows, 12,
        "every row of the seed's Table 4 is beside a stage"
    );
    assert_eq!(am["data"]["seed_total_ns"], 7100.0);
    let get = recs
        .iter()
        .find(|r| r["parameters"]["form"] == "MPI_Get")
        .expect("the one-sided breakdown");
    assert!(median(get, "get_call") > 0.0 && median(get, "flush") >= 0.0);
    // The text view prints the seed's layout.
    let out = mpi_run(
        &[
            "suite",
            "earth",
            "--mpi",
            "--ranks",
            "2",
            "--parts",
            "breakdown",
            "--iterations",
            "1",
        ],
        &[],
    );
    let text = common::ok_text(&out);
    assert!(
        text.contains("EARTH Table 4") && text.contains("Remote SU perform GET operation"),
        "{text}"
    );
    assert!(!text.contains("EARTH Table 1"), "no empty Table 1: {text}");
}

#[test]
fn collectives_between_ranks_take_the_settle_flags_and_each_figure_says_how_it_settled() {
    let args = [
        "suite",
        "collectives",
        "--mpi",
        "--ranks",
        "2",
        "--sizes",
        "128",
        "--only",
        "broadcast",
        "--iterations",
        "4",
        "--tolerance",
        "20",
        "--noise-budget",
        "1s",
    ];
    let v = ok_json(&[&args[..], &["--json"]].concat());
    let runs: Vec<&serde_json::Value> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "collective-mpi")
        .collect();
    assert!(!runs.is_empty());
    for r in &runs {
        let s = &r["settle"];
        assert_eq!(
            (s["metric"].as_str(), s["tolerance_pct"].as_f64()),
            (Some("time"), Some(20.0)),
            "{r}"
        );
        // The 4 planned passes, then more only while the figure is unsettled.
        let passes = s["passes"].as_u64().unwrap();
        assert_eq!(r["parameters"]["passes"], passes, "{r}");
        assert!(
            r["parameters"]["settling"]
                .as_str()
                .unwrap()
                .contains("rank 0 decides"),
            "{r}"
        );
        assert_eq!(s["budget_ms"], 1000.0, "{r}");
        match s["settled"].as_bool() {
            Some(true) => assert!(s["why"].is_null() && passes >= 4, "{r}"),
            Some(false) => {
                let why = s["why"].as_str().unwrap();
                assert!(passes > 4, "passes were added before it gave up: {r}");
                assert!(why.starts_with("machine busy: its interval"), "{why}");
            }
            None => panic!("no settle entry: {r}"),
        }
    }
    // The text marks an unsettled figure and says why under the table (a run whose
    // figures all settled shows neither).
    let out = mpi_run(&args, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let unsettled = text.contains("unsettled*");
    let why = text.contains("not within ±20 % in its 1000 ms budget");
    assert_eq!(unsettled, why, "{text}");
}

#[test]
fn latency_and_earth_run_on_four_ranks() {
    let v = ok_json(&[
        "mpi",
        "latency",
        "--ranks",
        "4",
        "--pair",
        "2,3",
        "--ops",
        "pingpong,get",
        "--sizes",
        "8",
        "--iterations",
        "20",
        "--warmup",
        "2",
        "--json",
    ]);
    let recs = v.as_array().unwrap();
    assert!(!recs.is_empty());
    for r in recs {
        assert!(r["kind"].as_str().unwrap().starts_with("mpi-"), "{r}");
        assert!(r["stats"][0]["median"].as_f64().unwrap() > 0.0, "{r}");
    }
    let v = ok_json(&[
        "suite",
        "earth",
        "--mpi",
        "--ranks",
        "4",
        "--parts",
        "breakdown",
        "--iterations",
        "1",
        "--json",
    ]);
    // Four ranks on two CPUs: every message waits for the scheduler, so one part only.
    let recs = v.as_array().unwrap();
    let parts = recs
        .iter()
        .filter(|r| r["kind"] == "suite-earth-mpi-breakdown")
        .count();
    assert_eq!(parts, 2, "the active-message and MPI_Get forms");
}

#[test]
fn an_operation_needing_thread_multiple_is_one_line_exit_2_without_it() {
    // NUMALAB_MPI_THREAD_CAP pretends the library provided less, as an MPI built
    // without thread support would.
    let out = mpi_run(
        &["dsm", "run", "sor", "--ranks", "2", "--threads", "1"],
        &[("NUMALAB_MPI_THREAD_CAP", "serialized")],
    );
    common::bad_input(
        &out,
        &["MPI_THREAD_MULTIPLE", "MPI_THREAD_SERIALIZED"],
        "a capped thread level",
    );
}

#[test]
fn two_separate_mpi_jobs_see_each_other_but_a_job_never_counts_its_own_ranks() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = common::tmpdir("mpi-runs");
    let under_mpirun = |args: &[&str]| {
        let mut c = Command::new("timeout");
        c.args(["-k", "10", LIMIT, "mpirun", "-n", "2", "--oversubscribe"])
            .arg(env!("CARGO_BIN_EXE_numalab"))
            .args(args)
            .env("NUMALAB_RUN_DIR", &dir)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env_remove("NUMALAB_PARENT_RUN");
        c
    };
    // Job A, under the user's own mpirun: both ranks register, naming their job.
    let mut a = under_mpirun(&[
        "mpi",
        "latency",
        "--ops",
        "pingpong",
        "--sizes",
        "1M",
        "--iterations",
        "1000000",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let registered = || {
        std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "run"))
                    .count()
            })
            .unwrap_or(0)
    };
    let t = Instant::now();
    while registered() < 2 {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "job A never registered"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Job B, another user-launched job: its records name A's two ranks, not its own.
    let b = under_mpirun(&[
        "mpi",
        "latency",
        "--ops",
        "pingpong",
        "--sizes",
        "8",
        "--iterations",
        "10",
        "--json",
    ])
    .output()
    .unwrap();
    // SAFETY: signalling our own child (timeout, which passes SIGTERM on to mpirun).
    unsafe { libc::kill(a.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    while a.try_wait().unwrap().is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "job A did not end on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let v = validate(&b.stdout);
    let runs = v[0]["provenance"]["concurrent_runs"]
        .as_array()
        .unwrap_or_else(|| panic!("no concurrent runs recorded: {}", v[0]["provenance"]));
    let commands: Vec<&str> = runs
        .iter()
        .map(|r| r["command"].as_str().unwrap())
        .collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert!(
        commands.iter().all(|c| c.contains("--iterations 1000000")),
        "only job A's ranks: {commands:?}"
    );
}

fn one_line_usage_error(args: &[&str], needle: &str) {
    common::mpi::usage_error(&mpi_run(args, &[]), needle)
}

#[test]
fn sizes_of_zero_or_beyond_memory_are_one_line_errors_in_every_mpi_command() {
    for (args, needle) in [
        (&["mpi", "bandwidth", "--sizes", "0"][..], "'0'"),
        (
            &["mpi", "bandwidth", "--sizes", "1T"][..],
            "--sizes item '1 TiB'",
        ),
        (&["mpi", "matrix", "--size", "0"][..], "'0'"),
        (
            &["mpi", "matrix", "--size", "1T"][..],
            "--size item '1 TiB'",
        ),
        (
            &["suite", "collectives", "--mpi", "--sizes", "0"][..],
            "'0'",
        ),
        (
            &["suite", "collectives", "--mpi", "--sizes", "1T"][..],
            "available",
        ),
        (
            &["suite", "earth", "--mpi", "--ranks", "100000"][..],
            "'100000'",
        ),
        (&["dsm", "run", "sor", "--ranks", "100000"][..], "'100000'"),
    ] {
        one_line_usage_error(args, needle);
    }
}
