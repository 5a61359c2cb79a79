//! `numalab loaded-latency`: plan, bad input, and the curve's ordering on this machine.

mod common;

use common::{ensure, measured_claim, numalab, run_json, stat, topology};

#[test]
fn injectors_default_to_every_other_core() {
    let topo = topology("16amd64-4distances.xml");
    let v = run_json("loaded-latency", &["--dry-run", "--topology", &topo]);
    let inj = v[0]["placement"]["resolved"]["injectors"]
        .as_array()
        .unwrap();
    assert_eq!(inj.len(), 15);
    assert!(inj.iter().all(|t| t["os"] != 0));
    assert_eq!(v[0]["data"]["delays"][0], 20000);
    assert_eq!(
        v[0]["data"]["delays"].as_array().unwrap().last().unwrap(),
        0
    );
    let v = run_json(
        "loaded-latency",
        &[
            "--dry-run",
            "--topology",
            &topo,
            "--injectors",
            "8-11",
            "--delays",
            "500,0",
        ],
    );
    assert_eq!(v[0]["parameters"]["injector_cpus"], "8-11");
}

#[test]
fn bad_input_is_named() {
    let topo = topology("16amd64-4distances.xml");
    for (flag, value) in [
        ("--traffic", "rw"),
        ("--delays", "fast"),
        ("--injectors", "0"),
        ("--size", "4K"),
        ("--iterations", "0"),
    ] {
        let out = numalab(&[
            "loaded-latency",
            "--dry-run",
            "--topology",
            &topo,
            flag,
            value,
        ]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        assert!(out.stdout.is_empty());
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(value), "{flag}: {e}");
    }
}

#[test]
fn less_delay_injects_more_traffic() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: injectors need a second core");
        return;
    }
    // Injectors spinning 2000 times after each line inject ~20× less than ones that do
    // not spin: the best pass of each (preemption only lowers a rate).
    let measure = || {
        run_json(
            "loaded-latency",
            &[
                "--delays",
                "2000,0",
                "--iterations",
                "2",
                "--size",
                "32M",
                "--inject-size",
                "32M",
            ],
        )
    };
    measured_claim("injected bandwidth", measure, |v| {
        let recs = v.as_array().unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[0]["name"], "unloaded");
        assert!(recs[0]["stats"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["metric"] != "injected_bandwidth"));
        // The fastest pass, below 1 ms per load whatever the scheduling.
        for r in recs {
            let l = stat(r, "latency", "min");
            assert!(l > 0.0 && l < 1e6, "{l}");
        }
        let slow = stat(&recs[1], "injected_bandwidth", "max");
        let fast = stat(&recs[2], "injected_bandwidth", "max");
        assert!(slow > 0.0 && fast < 5_000.0, "{slow} {fast}");
        ensure(fast > slow, || {
            format!("delay 0: {fast} GB/s, delay 2000: {slow} GB/s")
        })
    });
}
