//! `numalab suite earth`: a small live run with checked data, and bad input.

mod common;

use common::{assert_sane, bad_input, claim, ensure, numalab, run_json, stat};

#[test]
fn the_earth_suite_runs_here_with_small_sizes() {
    let v = run_json(
        "suite",
        &[
            "earth",
            "--groups",
            "1,8",
            "--chunks",
            "64,1024",
            "--multipliers",
            "1,4",
            "--loop-n",
            "1024",
            "--mlp-size",
            "8M",
            "--accesses",
            "4096",
            "--iterations",
            "2",
        ],
    );
    let recs = v.as_array().unwrap();
    let get = |name: &str| {
        recs.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no record {name}"))
    };
    // Every local operation has both modes, as the seed's Table 1, and every figure is
    // a possible time. How these figures compare (pipelined helper calls against
    // sequential ones, G=8 against G=1, the switch floor against G=1 coroutines) is
    // closer than a noisy 2-core VM keeps: compare/timing-claims reports it.
    for op in ["call function", "spawn coroutine", "spawn OS thread"] {
        for mode in ["sequential", "pipelined"] {
            let name = format!("ops: {op}, local, {mode}");
            assert_sane(&name, stat(get(&name), "time", "median"), 1e9);
        }
    }
    for name in [
        "ops: call function, helper, sequential",
        "ops: call function, helper, pipelined",
    ] {
        assert_sane(name, stat(get(name), "time", "min"), 1e9);
    }
    for name in [
        "mlp: G=1 interleaved",
        "mlp: G=8 interleaved",
        "mlp: G=1 coroutines",
        "mlp: G=8 coroutines",
        "mlp: G=8 coroutines, chains in L1",
    ] {
        assert_sane(name, stat(get(name), "access_time", "median"), 1e9);
    }
    // Two orderings that hold by more than 5× (even in a debug build): a coroutine
    // switch costs less than a kernel context switch on one CPU, and a word from
    // memory costs more than an L1-resident call. Minima, since preemption only adds.
    claim(
        "earth switch and ops",
        v.clone(),
        || {
            run_json(
                "suite",
                &["earth", "--parts", "ops,switch", "--iterations", "5"],
            )
        },
        |v| {
            let get = |name: &str| v.as_array().unwrap().iter().find(|r| r["name"] == name);
            let min = |name: &str| stat(get(name).expect(name), "time", "min");
            let co = min("switch: coroutine switch, local, sequential");
            let os = min("switch: OS thread switch, local, sequential");
            ensure(co < os, || format!("coroutine {co} ns, OS {os} ns"))?;
            let call = min("ops: call function, local, sequential");
            let load = min("ops: load word, local, sequential");
            ensure(load > call, || format!("load {load} ns, call {call} ns"))
        },
    );
    // The summary names a measured G for each mode's best and agrees with its points.
    let sum = &get("mlp: summary")["data"];
    let bi = sum["best_interleaved"]["g"].as_u64().unwrap();
    assert!(bi == 1 || bi == 8, "{sum}");
    let best = stat(
        get(&format!("mlp: G={bi} interleaved")),
        "access_time",
        "median",
    );
    assert_eq!(
        sum["best_interleaved"]["ns_per_access"].as_f64(),
        Some(best)
    );
    for ratio in [
        "coroutine_over_interleaved_throughput",
        "stackless_over_interleaved_throughput",
    ] {
        assert!(sum[ratio].as_f64().unwrap() > 0.0, "{ratio}: {sum}");
    }
    // Every G has a stackless point beside its coroutine point.
    get(&format!("mlp: G={bi} stackless"));
    // Loop 7 results were checked against the plain loop; every T is there.
    for name in [
        "mask: ×1 T=64",
        "mask: ×4 T=1024",
        "mask: ×4 baseline",
        "mask (memory): ×1 T=64",
        "mask (memory): ×4 baseline",
    ] {
        let r = get(name);
        assert!(!r["stats"].as_array().unwrap().is_empty(), "{name}");
    }
    assert_eq!(get("mask: ×1 T=64")["data"]["data_checked"], true);
    // Without a second memory node the memory variant says u stayed local.
    let via = get("mask (memory): ×1 T=64")["parameters"]["u_via"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(via.starts_with("node "), "{via}");
    // The threads table has 1…5 threads for each kind of work.
    for k in 1..=5 {
        for w in ["computation", "communication", "both"] {
            get(&format!("threads: {k} × {w}"));
        }
    }
    // The remote-node cells are measured or said to be unavailable.
    let nodes = run_json("topo", &[])[0]["data"]["nodes"]
        .as_array()
        .map(|n| n.len())
        .unwrap_or(1);
    if nodes == 1 {
        let r = get("ops: load/store word, remote node");
        assert!(r["unavailable"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("one NUMA node"));
    }
}

/// Every sized record of a small mask and threads run: its `data.noise`.
fn sized(budget: &str) -> Vec<(String, serde_json::Value, f64)> {
    let v = run_json(
        "suite",
        &[
            "earth",
            "--parts",
            "mask,threads",
            "--chunks",
            "64,1024",
            "--multipliers",
            "1",
            "--loop-n",
            "1024",
            "--iterations",
            "3",
            "--noise-budget",
            budget,
        ],
    );
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let name = r["name"].as_str().unwrap().to_string();
            let metric = if name.contains("baseline") {
                "communication_time"
            } else {
                "time"
            };
            (name, r["data"]["noise"].clone(), stat(r, metric, "n"))
        })
        .collect()
}

#[test]
fn mask_and_threads_points_record_how_their_passes_were_sized() {
    let recs = sized("30ms");
    // Two ways u travels × (baseline + 2 T) and 5 threads rows × 3 kinds of work.
    assert_eq!(recs.len(), 2 * 3 + 15, "{recs:?}");
    for (name, noise, n) in &recs {
        let passes = noise["passes"]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: {noise}"));
        assert_eq!(noise["initial"], 3, "{name}");
        assert!(passes >= 3, "{name}: {noise}");
        // The record's samples are the passes taken.
        assert_eq!(*n, passes as f64, "{name}: {noise}");
        let converged = noise["converged"].as_bool().expect("converged");
        match noise["interval_pct"].as_array() {
            Some(iv) => {
                let (lo, hi) = (iv[0].as_f64().unwrap(), iv[1].as_f64().unwrap());
                assert!(lo <= hi, "{name}: {noise}");
            }
            // Only a figure that cannot be formed has no interval, and it never settles.
            None => assert!(!converged, "{name}: {noise}"),
        }
    }
    // A budget the first passes spend: exactly the initial passes, the fixed count
    // of before (0 is refused like every command's: see below).
    for (name, noise, n) in sized("1ns") {
        assert_eq!((noise["passes"].as_u64(), n), (Some(3), 3.0), "{name}");
    }
}

#[test]
fn the_dry_run_shows_the_noise_budget_and_its_bound() {
    let out = numalab(&["suite", "earth", "--dry-run", "--noise-budget", "40ms"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // 2 ways × 5 multipliers × (13 T + baseline) + 5 threads rows = 145 points × 40 ms.
    assert!(
        text.contains("up to 40 ms a point, at most 5.8 s more in all"),
        "{text}"
    );
    let v = run_json("suite", &["earth", "--dry-run", "--noise-budget", "1ns"]);
    assert!(v[0]["data"]["noise_bound_s"].as_f64().unwrap() < 1e-6);
}

#[test]
fn bad_earth_input_exits_2_naming_the_value() {
    for (args, want) in [
        (vec!["--groups", "0"], "--groups '0'"),
        (vec!["--groups", "65"], "--groups '65'"),
        (
            vec!["--chunks", "5000", "--loop-n", "4096"],
            "--chunks '5000'",
        ),
        (vec!["--helper", "0"], "--helper '0'"),
        (vec!["--parts", "fft"], "'fft'"),
        (vec!["--multipliers", "x"], "'x'"),
        (
            vec!["--mlp-size", "1M", "--accesses", "20000"],
            "--accesses '20000'",
        ),
        (vec!["--noise-budget", "5"], "--noise-budget '5'"),
        (vec!["--noise-budget", "2min"], "--noise-budget '2min'"),
        (vec!["--noise-budget", "61s"], "--noise-budget '61s'"),
        (vec!["--noise-budget", "0"], "--noise-budget '0'"),
        (vec!["--noise-budget", "-5ms"], "--noise-budget '-5ms'"),
        (vec!["--noise-budget", "NaNms"], "--noise-budget 'NaNms'"),
    ] {
        let mut a = vec!["suite", "earth"];
        a.extend(args.iter().copied());
        bad_input(&numalab(&a), &[want], &format!("{args:?}"));
    }
}
