//! `numalab survey`, `report` and `compare` end to end, and the report in a real browser.

mod common;

use common::{bad_input, browser, numalab, run_json, tmpdir, topology, validate};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The sections the report has, and the record kinds that fill them.
const SECTIONS: [(&str, &[&str]); 10] = [
    ("machine", &["topo"]),
    ("hierarchy", &["latency-sweep"]),
    ("states", &["latency"]),
    ("bandwidth", &["bandwidth"]),
    ("c2c", &["c2c-matrix"]),
    ("matrix", &["matrix-latency", "matrix-bandwidth"]),
    ("invalidate", &["invalidate"]),
    ("intervene", &["intervene"]),
    ("loaded", &["loaded-latency"]),
    ("model", &["model"]),
];

fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\""))
        .unwrap_or_else(|| panic!("no section {id}"));
    let end = html[start..].find("</section>").unwrap() + start;
    &html[start..end]
}

/// Render in headless Chromium: the DOM has non-empty SVG charts and the console no errors.
fn check_in_browser(html: &Path, shot: &Path) {
    let Some(b) = browser::browser_or_skip() else {
        return;
    };
    let url = format!("file://{}", html.display());
    let dom = Command::new(&b)
        .args(browser::HEADLESS)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("run chromium");
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let text = String::from_utf8_lossy(&dom.stdout);
    let svgs = text.matches("<svg").count();
    assert!(svgs >= 4, "rendered DOM has {svgs} charts");
    assert!(
        text.contains("<rect") && text.contains("<text"),
        "charts are empty"
    );
    let log = String::from_utf8_lossy(&dom.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    assert!(browser::screenshot(html, 1400, 5000, shot), "no screenshot");
    eprintln!("screenshot: {}", shot.display());
}

/// What a script in the rendered page finds in the summary: where its rows sit on a
/// 1366×768 screen, whether every figure's link reaches a section, and spreads.
const SUMMARY_PROBE: &str = r#"
const out = {rows: [], figs: 0, dead: [], spreads: 0, paragraph: ""};
const sum = document.getElementById('summary');
if (sum) {
  out.paragraph = sum.querySelector('p.shape') ? sum.querySelector('p.shape').textContent : "";
  for (const row of sum.querySelectorAll('.cardrow')) {
    const r = row.getBoundingClientRect();
    out.rows.push({group: row.dataset.group, top: r.top, bottom: r.bottom,
                   cards: row.querySelectorAll('.card').length});
  }
  for (const a of sum.querySelectorAll('a.fig')) {
    out.figs += 1;
    const id = a.getAttribute('href').slice(1);
    const target = document.getElementById(id);
    if (!target || !target.querySelector('table, svg')) out.dead.push(id);
    if (a.querySelector('.s')) out.spreads += 1;
  }
}
document.getElementById('numalab-test').textContent = JSON.stringify(out);
"#;

/// The summary follows the per-node answer: its hierarchy row starts within two 1366×768 screens,
/// every figure links to a section holding data, and figures carry spreads.
fn check_summary_in_browser(html: &Path) {
    let Some(v) = browser::eval_in_page(html, 1366, 768, SUMMARY_PROBE) else {
        return;
    };
    let rows = v["rows"].as_array().expect("rows");
    let hier = rows
        .iter()
        .find(|r| r["group"] == "Hierarchy")
        .unwrap_or_else(|| panic!("no hierarchy row: {v}"));
    assert!(hier["cards"].as_u64().unwrap() >= 2, "{v}");
    // The first screen holds the per-node answer (first_screen.rs checks it); the
    // cards follow it, within the next screen.
    assert!(
        hier["top"].as_f64().unwrap() <= 2.0 * 768.0,
        "the hierarchy cards start past the second screen: {v}"
    );
    assert!(rows.iter().any(|r| r["group"] == "Cores"), "{v}");
    let figs = v["figs"].as_u64().unwrap();
    assert!(figs >= 4, "{v}");
    assert!(
        v["dead"].as_array().unwrap().is_empty(),
        "links to sections with no data: {v}"
    );
    // Every sampled figure has a spread; only model coefficients have none.
    assert!(v["spreads"].as_u64().unwrap() >= figs - 3, "{v}");
    assert!(
        v["paragraph"].as_str().unwrap().contains("A load takes"),
        "{v}"
    );
}

#[test]
fn two_socket_records_summarise_as_local_and_remote_cards() {
    let dir = tmpdir("summary-2s");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/advise/two-socket.json"
    );
    let html = dir.join("r.html");
    let out = numalab(&["report", fixture, "-o", html.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The terminal wraps the paragraph; compare words.
    let text = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    // 90 ns local, 150 ns remote; 100 and 40 GB/s (the fixture's README).
    assert!(
        text.contains("Memory 1 hop away is 1.7× slower than local (150 ns against 90 ns) and gives 0.40× its bandwidth."),
        "{text}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    let summary = &page[page.find("id=\"summary\"").unwrap()..page.find("<nav>").unwrap()];
    for card in [">local<", ">1 hop<"] {
        assert!(summary.contains(card), "{card} missing: {summary}");
    }
    assert!(summary.contains("href=\"#matrix\""));
    let Some(v) = browser::eval_in_page(&html, 1366, 768, SUMMARY_PROBE) else {
        return;
    };
    let mem = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["group"] == "Memory")
        .unwrap_or_else(|| panic!("no memory row: {v}"));
    assert_eq!(mem["cards"], 2, "{v}");
    assert!(mem["bottom"].as_f64().unwrap() <= 768.0, "{v}");
    assert!(v["dead"].as_array().unwrap().is_empty(), "{v}");
}

#[test]
fn quick_survey_writes_valid_records_and_a_complete_report() {
    let dir = tmpdir("survey");
    let out = numalab(&["survey", "--quick", "-o", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Summary (medians"), "{stdout}");
    // A finished survey's folder holds its results, not the writer's lock (issue 42).
    assert!(
        !dir.join(".numalab-survey.lock").exists(),
        "the lock file was left behind"
    );
    let json = std::fs::read(dir.join("results.json")).unwrap();
    let records = validate(&json);
    let kinds: Vec<&str> = records
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"topo") && kinds.contains(&"latency-sweep"));
    assert!(
        std::fs::read_to_string(dir.join("results.csv"))
            .unwrap()
            .lines()
            .count()
            > 10
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    // Self-contained: nothing fetched (the SVG namespace URI is a name, not a fetch).
    for external in [
        "src=\"http",
        "href=\"http",
        "<link",
        "<script",
        "@import",
        "url(",
    ] {
        assert!(
            !html.contains(external),
            "report refers outside itself: {external}"
        );
    }
    // Every section with records has a chart or table; every other is not drawn, and
    // one line says why.
    let not_drawn = html
        .find("id=\"not-drawn\"")
        .map(|i| &html[i..i + html[i..].find("</p>").unwrap()])
        .unwrap_or("");
    for (id, ks) in SECTIONS {
        if ks.iter().any(|k| kinds.contains(k)) {
            let s = section(&html, id);
            assert!(s.contains("<table"), "{id} has data but no table");
            // A quick run may measure one sharer count, one intervention or one loaded
            // point: one point is a table, not a chart (issue 20).
            // A c2c matrix whose every pair is unsettled (one pair on a busy 2-CPU
            // machine) draws no blank heatmap: its table marks each cell unsettled.
            let all_unsettled = id == "c2c" && !s.contains("<svg") && s.contains("unsettled");
            if !["machine", "model", "invalidate", "intervene", "loaded"].contains(&id)
                && !all_unsettled
            {
                assert!(s.contains("<svg"), "{id} has data but no chart");
            }
        } else {
            assert!(
                !html.contains(&format!("<section id=\"{id}\"")),
                "{id} drawn empty"
            );
            assert!(!not_drawn.is_empty(), "{id} has no data and no reason");
        }
    }
    assert!(!html.contains("Absent"), "a section reads Absent");
    // The skipped steps' reasons reach the report; no seed study ran without --studies.
    if !kinds.contains(&"matrix-latency") {
        assert!(not_drawn.contains("NUMA node"), "{not_drawn}");
    }
    assert!(not_drawn.contains("give --studies"), "{not_drawn}");
    for k in [
        "suite-earth",
        "suite-placement",
        "suite-collectives",
        "mpi-matrix",
    ] {
        assert!(!kinds.contains(&k), "{k} measured without --studies");
    }
    check_in_browser(&dir.join("report.html"), &dir.join("report.png"));
    check_summary_in_browser(&dir.join("report.html"));
    // report re-renders the same file from the records.
    let again = dir.join("again.html");
    let out = numalab(&[
        "report",
        dir.join("results.json").to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(std::fs::read_to_string(&again).unwrap().contains("<svg"));
}

#[test]
fn report_of_dsm_and_mpi_records_renders_their_sections_in_a_browser() {
    let dir = tmpdir("report-dsm-mpi");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../answers/tests/fixtures/dsm-mpi-records.json");
    let html_path = dir.join("report.html");
    let out = numalab(&[
        "report",
        fixture.to_str().unwrap(),
        "-o",
        html_path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    for id in ["cvm", "mpi", "collectives-mpi", "earth-mpi"] {
        let s = section(&html, id);
        // The fixture's MPI collectives ran at one P only: a table, no one-point curves.
        let chart = id == "collectives-mpi" || s.contains("<svg");
        assert!(s.contains("<table") && chart, "{id}: {s}");
        // Seed studies: after the memory answer, collapsed until opened.
        // (`mpi latency` is a command of its own, not a seed study.)
        let study = id != "mpi";
        assert_eq!(s.contains("class=\"study\"><details>"), study, "{id}");
    }
    assert!(!section(&html, "collectives-mpi").contains("<svg"));
    check_in_browser(&html_path, &dir.join("report.png"));
}

#[test]
fn survey_plan_grows_with_domains_and_bad_input_is_refused() {
    let out = numalab(&[
        "survey",
        "--dry-run",
        "--json",
        "--topology",
        &topology("64amd64-4s2n4ca2co.xml"),
    ]);
    assert!(out.status.success());
    let steps: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c2c = steps
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["section"] == "c2c")
        .unwrap();
    let cpus = c2c["args"][2].as_str().unwrap();
    // Representative CPUs, not all 64.
    assert!(cpus.split(',').count() <= 16, "{cpus}");
    assert!(steps
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["section"] == "matrix" && s["skip"].is_null()));
    let out = numalab(&["survey", "--topology", &topology("64amd64-4s2n4ca2co.xml")]);
    bad_input(&out, &["'--topology'", "--dry-run"], "survey --topology");
    let out = numalab(&["report", "/nonexistent.json"]);
    bad_input(&out, &["/nonexistent.json"], "report of a missing file");
}

#[test]
fn compare_gives_the_ratios_of_matching_measurements() {
    let dir = tmpdir("compare");
    let csv = dir.join("pts.csv");
    std::fs::write(&csv, "hops,latency_ns\n0,100\n1,150\n2,190\n").unwrap();
    let mut a = run_json("model", &["fit", csv.to_str().unwrap()]);
    // Synthetic stats: A has 100 and 40; B has 150 and 10 for the same metrics.
    let stat = |metric: &str, m: f64| {
        serde_json::json!({ "metric": metric, "unit": "ns", "min": m, "p5": m, "median": m,
            "mean": m, "p95": m, "max": m, "stdev": 0.0, "n": 1 })
    };
    a[0]["stats"] = serde_json::json!([stat("latency", 100.0), stat("other", 40.0)]);
    let mut b = a.clone();
    b[0]["stats"] = serde_json::json!([stat("latency", 150.0), stat("other", 10.0)]);
    let (fa, fb) = (dir.join("a.json"), dir.join("b.json"));
    std::fs::write(&fa, a.to_string()).unwrap();
    std::fs::write(&fb, b.to_string()).unwrap();
    let out = numalab(&[
        "compare",
        fa.to_str().unwrap(),
        fb.to_str().unwrap(),
        "--json",
        "-o",
        dir.join("c.html").to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = &c["rows"];
    let ratio = |m: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["metric"] == m)
            .unwrap()["ratio"]
            .as_f64()
            .unwrap()
    };
    assert!((ratio("latency") - 1.5).abs() < 1e-9);
    assert!((ratio("other") - 0.25).abs() < 1e-9);
    // One sample per run: no interval to judge the change by, and the JSON says so.
    assert!(rows
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["change"] == "not comparable (A 1 sample)"));
    assert!(std::fs::read_to_string(dir.join("c.html"))
        .unwrap()
        .contains("1.500"));
    let out = numalab(&[
        "compare",
        fa.to_str().unwrap(),
        fb.to_str().unwrap(),
        "-o",
        "c.txt",
    ]);
    bad_input(&out, &["c.txt"], "compare -o c.txt");
}

#[test]
fn compare_takes_survey_folders_opens_with_its_verdict_and_drops_derived_metrics() {
    let dir = tmpdir("compare-dirs");
    let csv = dir.join("pts.csv");
    std::fs::write(&csv, "hops,latency_ns\n0,100\n1,150\n2,190\n").unwrap();
    let mut a = run_json("model", &["fit", csv.to_str().unwrap()]);
    let stat = |metric: &str, unit: &str, m: f64| {
        serde_json::json!({ "metric": metric, "unit": unit, "min": m * 0.99, "p5": m * 0.99,
            "median": m, "mean": m, "p95": m * 1.01, "max": m * 1.01, "stdev": 0.5, "n": 9 })
    };
    a[0]["stats"] = serde_json::json!([
        stat("latency", "ns", 100.0),
        stat("latency_tsc", "cycles", 260.0)
    ]);
    let mut b = a.clone();
    b[0]["stats"] = serde_json::json!([
        stat("latency", "ns", 150.0),
        stat("latency_tsc", "cycles", 390.0)
    ]);
    // A survey folder holds results.json; the other side is a plain file.
    let (da, fb) = (dir.join("run-a"), dir.join("b.json"));
    std::fs::create_dir_all(&da).unwrap();
    std::fs::write(da.join("results.json"), a.to_string()).unwrap();
    std::fs::write(&fb, b.to_string()).unwrap();
    let out = numalab(&["compare", da.to_str().unwrap(), fb.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = text.lines().next().unwrap_or("");
    assert!(
        first.starts_with("1 of 1 comparable figures changed beyond their spread (100.0 %): ")
            && first.contains("latency +50 %")
            && first.contains("0 not comparable"),
        "{text}"
    );
    assert!(!text.contains("latency_tsc"), "{text}");
    let out = numalab(&[
        "compare",
        da.to_str().unwrap(),
        fb.to_str().unwrap(),
        "--all-metrics",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("2 of 2 comparable") && text.contains("latency_tsc"),
        "{text}"
    );
}
