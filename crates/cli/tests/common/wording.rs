//! Wording a reader objects to in any command's text (issue 42 item 4): a count with
//! a hedged plural ("1 injector(s)"), a singular count with a plural noun ("1
//! threads"), and sizes in decimal units ("32KB", "23.5 GB" where numalab prints
//! KiB/MiB/GiB; rates such as GB/s are decimal on purpose, as STREAM's and likwid's).

/// Nouns numalab counts in its text, in their plural.
const COUNTED: &[&str] = &[
    "threads",
    "passes",
    "injectors",
    "records",
    "ranks",
    "steps",
    "CPUs",
    "nodes",
    "pages",
    "pairs",
    "figures",
    "hosts",
    "sizes",
    "runs",
    "helpers",
    "readers",
    "sharers",
    "lines",
    "intervals",
    "faults",
    "measurements",
    "cores",
    "rounds",
    "rows",
    "cells",
    "samples",
    "iterations",
    "operations",
    "points",
    "curves",
    "locks",
    "loads",
    "observations",
    "requests",
    "migrations",
    "configurations",
    "PUs",
    "columns",
];

/// Counted nouns of two words, in their plural ("1 round trips" names no one-word noun).
const COUNTED_TWO: &[&str] = &[
    "round trips",
    "shift steps",
    "sampling rounds",
    "bulk prefetches",
    "remote faults",
    "node changes",
];

/// Every wording problem in `out`, one string per line that has any.
pub fn problems(out: &str) -> Vec<String> {
    let mut v = Vec::new();
    for line in out.lines() {
        let mut bad = Vec::new();
        // "t (s)" is a column in seconds; "CPU(s)" hedges a plural.
        let hedged = |t: &str| {
            line.match_indices(t)
                .any(|(i, _)| line[..i].chars().last().is_some_and(char::is_alphabetic))
        };
        if hedged("(s)") || hedged("(es)") {
            bad.push("a hedged plural '(s)'".to_string());
        }
        let ws: Vec<&str> = line.split_whitespace().collect();
        for w in ws.windows(2) {
            let noun = w[1].trim_end_matches([',', ';', ':', '.', ')']);
            if w[0].trim_start_matches('(') == "1" && COUNTED.contains(&noun) {
                bad.push(format!("'1 {noun}'"));
            }
        }
        for w in ws.windows(3) {
            let two = format!(
                "{} {}",
                w[1],
                w[2].trim_end_matches([',', ';', ':', '.', ')'])
            );
            if w[0].trim_start_matches('(') == "1" && COUNTED_TWO.contains(&two.as_str()) {
                bad.push(format!("'1 {two}'"));
            }
        }
        for (i, w) in ws.iter().enumerate() {
            let next = ws.get(i + 1).copied().unwrap_or("");
            let word = w.trim_matches(|c: char| "(),;:".contains(c));
            if decimal_size(word) || (number(word) && ["KB", "MB", "GB", "TB"].contains(&next)) {
                bad.push(format!("a decimal size '{word}'"));
            }
        }
        // Debug output: an empty list, a list of numbers ("[2, 4]"; a lone "[1]" is a
        // footnote mark), an Option.
        let list = |w: &&str| {
            let w = w.trim_start_matches('(');
            w.starts_with("[]")
                || (w.starts_with('[')
                    && w.ends_with(',')
                    && !w.contains(']')
                    && w[1..].chars().next().is_some_and(|c| c.is_ascii_digit()))
        };
        if ws.iter().any(list) || line.contains("Some(") {
            bad.push("Debug output".to_string());
        }
        if !bad.is_empty() {
            v.push(format!("{} in line: {}", bad.join(", "), line.trim()));
        }
    }
    v
}

fn number(w: &str) -> bool {
    !w.is_empty() && w.parse::<f64>().is_ok()
}

/// `32KB`, `23.5GB`: a number glued to a decimal byte unit (not a rate: no `/s`).
fn decimal_size(w: &str) -> bool {
    ["KB", "MB", "GB", "TB"]
        .iter()
        .any(|u| w.strip_suffix(u).is_some_and(number))
}

#[test]
fn the_wording_checks_find_each_case_and_pass_good_text() {
    let bad = "1 injector(s) on CPU 1\nSTREAM layout, 1 threads\nL1 32KB, L3 23.5 GB\n(1 passes)\n8 B ping-pong, 1 round trips each\nP = [2, 4]; blocks of []\nhops Some(1)";
    assert_eq!(problems(bad).len(), 7, "{:#?}", problems(bad));
    let good = "t (s)  value\n1 injector, 2 threads, 1 pass, 12.5 GB/s, 32 KiB, 1 MiB, 2 nodes\nreaders B[1] to B[3], a note [1], 1 round trip each";
    assert!(problems(good).is_empty(), "{:#?}", problems(good));
}

/// Table cells longer than a reader takes in at a glance (issue 42: ~100 characters;
/// a longer note belongs under the table, said once). A table row is an indented line
/// whose cells stand two or more spaces apart.
pub fn long_cells(out: &str) -> Vec<String> {
    const MOST: usize = 100;
    out.lines()
        .filter(|l| l.starts_with(' ') && l.trim_start().contains("  "))
        .flat_map(|l| l.split("  ").map(str::trim).filter(|c| !c.is_empty()))
        .filter(|c| c.chars().count() > MOST)
        .map(|c| format!("a cell of {} characters: {c}", c.chars().count()))
        .collect()
}

#[test]
fn a_long_cell_is_found_and_a_long_sentence_is_not() {
    let row = format!(" name  {}  12.5\n", "x".repeat(101));
    assert_eq!(long_cells(&row).len(), 1);
    let prose = format!("A sentence {} ends here.\n", "word ".repeat(40));
    assert!(long_cells(&prose).is_empty());
}
