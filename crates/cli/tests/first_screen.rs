//! The survey report's first screen, rendered in headless Chromium at 1280×900 from a
//! fixture quick survey (this VM's records, trimmed): the per-node answer is on it,
//! the summary paragraph is short and says nothing twice, no section reads "Absent"
//! and no Debug text shows anywhere on the page.

mod common;

use common::{browser, numalab, tmpdir};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/report/quick-survey.json"
);

/// What the page shows: the answer block's place and cells, the paragraph's lines,
/// repeated sentences, and text that looks like Debug output.
const PROBE: &str = r#"
const out = {answer: null, cells: [], lines: 0, repeats: [], debug: [], absent: false, c2c: null, held: null};
const hb = document.getElementById('held-back');
if (hb) out.held = {text: hb.textContent, bottom: hb.getBoundingClientRect().bottom};
const a = document.getElementById('answer');
if (a) {
  const r = a.querySelector('table').getBoundingClientRect();
  out.answer = {top: r.top, bottom: r.bottom};
  out.cells = [...a.querySelectorAll('tbody tr:first-child td')].map(td => td.textContent);
  const c = a.querySelector('p.c2c');
  if (c) out.c2c = {text: c.textContent, bottom: c.getBoundingClientRect().bottom};
}
const p = document.querySelector('#summary p.shape');
if (p) {
  const lh = parseFloat(getComputedStyle(p).lineHeight) || 18;
  out.lines = Math.round(p.getBoundingClientRect().height / lh);
}
const text = document.body.innerText;
const seen = {};
// Sentences are prose: paragraphs, list items and notes (a table's header row or a
// chart's title repeated under it is a layout, not a sentence said twice).
const prose = [...document.querySelectorAll('p, li, .n')].map(e => e.innerText).join('\n');
for (const s of prose.split(/(?<=[.!?])\s+|\n/)) {
  const t = s.trim();
  if (t.length < 40) continue;
  seen[t] = (seen[t] || 0) + 1;
  if (seen[t] === 2) out.repeats.push(t);
}
for (const re of [/Some\(/, /\bNone\b/, /\[\]/, /\{"/, /KVMKVM/]) {
  const m = text.match(re);
  if (m) out.debug.push(text.slice(Math.max(0, m.index - 60), m.index + 60));
}
out.absent = /Absent/.test(text);
document.getElementById('numalab-test').textContent = JSON.stringify(out);
"#;

#[test]
fn the_first_screen_answers_and_the_page_reads_well() {
    let dir = tmpdir("first-screen");
    let html = dir.join("report.html");
    let out = numalab(&["report", FIXTURE, "-o", html.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let Some(v) = browser::eval_in_page(&html, 1280, 900, PROBE) else {
        return;
    };
    let answer = &v["answer"];
    assert!(answer.is_object(), "no per-node answer: {v}");
    assert!(
        answer["bottom"].as_f64().unwrap() <= 900.0,
        "the answer ends below the first screen: {v}"
    );
    let cells: Vec<&str> = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(cells.first(), Some(&"node 0"), "{v}");
    // Idle latency, read 1 core, read all cores and the five mixes: each a figure, or
    // "-" only where the first screen says, on screen, which figures it held back and
    // why. (This fixture's 2 cores read 2.5× one core: the pair is held back as
    // implausible, rule bandwidth-scaling; the idle latency and the mixes stand.)
    let held = v["held"]["text"].as_str().unwrap_or("");
    for (i, what) in [
        "idle latency",
        "read 1 core",
        "read all cores",
        "all reads",
        "3:1",
        "2:1",
        "1:1",
        "writes",
    ]
    .iter()
    .enumerate()
    {
        let cell = cells[i + 1].split_whitespace().next().unwrap_or("");
        let figure = cell.parse::<f64>().is_ok_and(|x| x > 0.0);
        let explained = cell == "-"
            && held.contains("rule")
            && v["held"]["bottom"].as_f64().is_some_and(|b| b <= 900.0);
        assert!(figure || explained, "{what}: {cell:?} in {v}");
        if ["idle latency", "all reads", "writes"].contains(what) {
            assert!(figure, "{what}: {cell:?} in {v}");
        }
    }
    // The loaded-latency curve is drawn in its cell.
    assert!(cells[9].contains("ns idle"), "{v}");
    let c2c = &v["c2c"];
    assert!(c2c["text"].as_str().unwrap().contains("median"), "{v}");
    assert!(c2c["bottom"].as_f64().unwrap() <= 900.0, "{v}");
    assert!(
        v["lines"].as_u64().unwrap() <= 6,
        "summary paragraph too long: {v}"
    );
    assert!(
        v["repeats"].as_array().unwrap().is_empty(),
        "repeated sentences: {v}"
    );
    assert!(v["debug"].as_array().unwrap().is_empty(), "Debug text: {v}");
    assert_eq!(v["absent"], false, "a section reads Absent: {v}");
    let shot = dir.join("first-screen.png");
    assert!(
        browser::screenshot(&html, 1280, 900, &shot),
        "no screenshot"
    );
    eprintln!("screenshot: {}", shot.display());
}
