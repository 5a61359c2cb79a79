//! Headless Chromium for the report tests: render a report and read back what a script
//! run in the real page (layout included) found. The report itself has no scripts;
//! the test appends one to a copy, so what is checked is the browser's rendering of
//! the file numalab wrote, not a parse of its text.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Chromium binary on PATH, or None (then the caller panics unless
/// NUMALAB_SKIP_BROWSER is set: `make test` installs chromium).
pub fn browser() -> Option<String> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|b| {
            Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {b}"))
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(|b| b.to_string())
}

/// The browser, or None when the test may be skipped (NUMALAB_SKIP_BROWSER set);
/// panics otherwise, naming how to get one.
pub fn browser_or_skip() -> Option<String> {
    match browser() {
        Some(b) => Some(b),
        None if std::env::var_os("NUMALAB_SKIP_BROWSER").is_some() => {
            eprintln!("skipped: no chromium (NUMALAB_SKIP_BROWSER set)");
            None
        }
        None => panic!(
            "no chromium on PATH: `make test` installs it (Debian package chromium); set NUMALAB_SKIP_BROWSER=1 to skip this check"
        ),
    }
}

/// Flags every headless run takes.
pub const HEADLESS: [&str; 6] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
];

/// Render `html` at `width`×`height` with `script` appended to a copy of it, and return
/// the JSON the script left: the script must set
/// `document.getElementById('numalab-test').textContent` to a JSON string (the element
/// is added before the script). None when no browser and NUMALAB_SKIP_BROWSER is set.
pub fn eval_in_page(
    html: &Path,
    width: u32,
    height: u32,
    script: &str,
) -> Option<serde_json::Value> {
    let b = browser_or_skip()?;
    let page = std::fs::read_to_string(html).expect("read report");
    let copy: PathBuf = html.with_extension("probe.html");
    let injected = page.replacen(
        "</body>",
        &format!("<pre id=\"numalab-test\"></pre><script>{script}</script></body>"),
        1,
    );
    assert!(injected != page, "report has no </body>");
    std::fs::write(&copy, injected).expect("write probe copy");
    let out = Command::new(&b)
        .args(HEADLESS)
        .arg(format!("--window-size={width},{height}"))
        .arg("--dump-dom")
        .arg(format!("file://{}", copy.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom
        .find("<pre id=\"numalab-test\">")
        .expect("probe element in the DOM")
        + "<pre id=\"numalab-test\">".len();
    let end = dom[start..].find("</pre>").expect("probe element closed") + start;
    let text = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    Some(serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "the page's script left no JSON ({e}): {text:?}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    }))
}

/// A screenshot of the first `width`×`height` of `html` into `png`; true when written.
pub fn screenshot(html: &Path, width: u32, height: u32, png: &Path) -> bool {
    let Some(b) = browser_or_skip() else {
        return false;
    };
    let out = Command::new(&b)
        .args(HEADLESS)
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("run chromium");
    out.status.success() && std::fs::metadata(png).is_ok_and(|m| m.len() > 10_000)
}
