//! The walk of docs/studies.md (issue 34): every command the page names, run exactly as
//! written in its one list of commands ("Walking the studies"), with the checks a reader
//! makes of what comes out. The page's tables and that list are checked against each
//! other, so the list is the one place the commands live.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The page and the marker before its fenced list of commands.
const PAGE: &str = "docs/studies.md";
const MARKER: &str = "<!-- the walk: tests run these commands exactly as written -->";

/// Seconds one command of the walk may take before it counts as hung.
const LIMIT_S: &str = "300";

fn page() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(PAGE)).expect("read docs/studies.md")
}

/// The commands of the page's walk: the fenced block after [`MARKER`], one a line,
/// `#` comments and blank lines left out.
fn walk(page: &str) -> Vec<String> {
    let after = page
        .split(MARKER)
        .nth(1)
        .expect("the walk's marker in docs/studies.md");
    let block = after
        .split("```")
        .nth(1)
        .expect("a fenced block after the marker");
    block
        .lines()
        .skip(1) // the fence's language tag
        .map(|l| l.split(" #").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// Every `numalab …` code span of the page outside the walk's block.
fn spans(page: &str) -> Vec<String> {
    let text = page.split(MARKER).next().unwrap_or("");
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("numalab "))
        .map(|s| s.replace("\\|", "|"))
        .collect()
}

/// The command words a span names: its leading words up to the first option or
/// placeholder (APP, FILE), each alternative (`latency|bandwidth`) spelled out.
fn command_words(span: &str) -> Vec<String> {
    let mut out = vec![String::from("numalab")];
    for w in span.split_whitespace().skip(1) {
        let placeholder = w.chars().all(|c| c.is_ascii_uppercase() || c == '_');
        if w.starts_with('-') || placeholder || w.contains('…') {
            break;
        }
        out = out
            .iter()
            .flat_map(|o| w.split('|').map(move |alt| format!("{o} {alt}")))
            .collect();
    }
    out
}

/// Whether a span is one runnable command to run as written: it has options, and no
/// alternatives, placeholders or ellipses (a span of command words alone, such as
/// `numalab monitor`, names the command, which the walk runs in some form).
fn concrete(span: &str) -> bool {
    span.split_whitespace().any(|w| w.starts_with('-'))
        && !span.contains('|')
        && !span.contains('…')
        && !span
            .split_whitespace()
            .any(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
}

#[test]
fn the_pages_tables_and_its_walk_name_the_same_commands() {
    let page = page();
    let walk = walk(&page);
    assert!(walk.len() >= 20, "{walk:?}");
    for c in &walk {
        assert!(c.starts_with("numalab "), "not a numalab command: {c}");
        assert!(
            !c.contains(['\'', '"', '$', '*']),
            "quoting is not read: {c}"
        );
    }
    let mut missing = Vec::new();
    for s in spans(&page) {
        if concrete(&s) {
            if !walk.contains(&s) {
                missing.push(format!("{s} (run as written)"));
            }
            continue;
        }
        for words in command_words(&s) {
            let hit = walk
                .iter()
                .any(|c| c == &words || c.starts_with(&format!("{words} ")));
            if !hit {
                missing.push(format!("{words} (from `{s}`)"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/studies.md names commands its walk does not run: {missing:#?}"
    );
}

/// What one command printed, and what a reader would object to in it.
struct Ran {
    command: String,
    out: String,
}

fn run(dir: &Path, command: &str) -> Result<Ran, String> {
    let words: Vec<&str> = command.split_whitespace().skip(1).collect();
    let out = Command::new("timeout")
        .args(["-k", "10", LIMIT_S, env!("CARGO_BIN_EXE_numalab")])
        .args(&words)
        .current_dir(dir)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .map_err(|e| format!("{command}: cannot start: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match out.status.code() {
        Some(0) => Ok(Ran {
            command: command.into(),
            out: text,
        }),
        Some(124) | Some(137) => Err(format!("{command}: hung past {LIMIT_S} s")),
        code => Err(format!("{command}: exit {code:?}:\n{text}")),
    }
}

#[test]
fn every_documented_study_runs_cleanly_as_written() {
    let walk = walk(&page());
    let dir: PathBuf = common::tmpdir("studies-walk");
    let mut problems = Vec::new();
    for command in &walk {
        eprintln!("walk: {command}");
        let t = std::time::Instant::now();
        match run(&dir, command) {
            Ok(ran) => {
                for (_check, what) in walk_checks::all(&ran.out) {
                    problems.push(format!("{}: {what}", ran.command));
                }
                // Warnings depend on what else the machine did (their wording is
                // unit-tested where they are made).
                let steady: Vec<&str> = ran
                    .out
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("warning:"))
                    .collect();
                for what in common::wording::problems(&steady.join("\n")) {
                    problems.push(format!("{}: {what}", ran.command));
                }
            }
            Err(e) => problems.push(e),
        }
        eprintln!("walk: {command}: {:.1} s", t.elapsed().as_secs_f64());
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[path = "studies/checks.rs"]
mod walk_checks;
