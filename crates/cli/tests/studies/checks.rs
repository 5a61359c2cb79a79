//! What a reader objects to in a command's output: internal formatting (NaN, inf,
//! `Some(`, `..=`, Debug-formatted enums, raw floats), normalised figures and speedups
//! printed as 0.00, breakdown parts that add up to more than their total, and values
//! whose unit is not their column's. Tables are read as numalab prints them: a title
//! line, then a header and rows indented by one space, columns two spaces apart.

/// CamelCase words numalab may print that are not Debug-formatted enums.
const CAMEL_OK: &[&str] = &[
    "OpenMPI",
    "OpenMP",
    "McCalpin",
    "AuthenticAMD",
    "GenuineIntel",
    "MemFree",
    "MemTotal",
    "MemAvailable",
];

/// Every problem in `out`: (check, what), check one of "tokens", "zero", "parts", "units".
pub fn all(out: &str) -> Vec<(&'static str, String)> {
    let mut v: Vec<(&'static str, String)> =
        tokens(out).into_iter().map(|w| ("tokens", w)).collect();
    for line in out.lines().filter(|l| zero_speedup(l)) {
        v.push(("zero", format!("a speedup of 0.00 in: {}", line.trim())));
    }
    for t in tables(out) {
        v.extend(zeros(&t).into_iter().map(|w| ("zero", w)));
        v.extend(parts(&t).into_iter().map(|w| ("parts", w)));
        v.extend(units(&t).into_iter().map(|w| ("units", w)));
    }
    v
}

/// A line that prints a speedup rounded to nothing ("speedup 0.00"); "speedup 0.0012"
/// keeps its significant digits and is an honest figure.
fn zero_speedup(line: &str) -> bool {
    line.match_indices("speedup ").any(|(i, m)| {
        let num: String = line[i + m.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        num.contains('.') && num.chars().all(|c| c == '0' || c == '.')
    })
}

/// Internal formatting leaking into a line.
pub fn tokens(out: &str) -> Vec<String> {
    let mut v = Vec::new();
    for line in out.lines() {
        let mut bad: Vec<String> = ["Some(", "..="]
            .iter()
            .filter(|t| line.contains(*t))
            .map(|t| t.to_string())
            .collect();
        // An option's value as Debug prints an enum (`--input Small`): options take
        // lower-case values.
        let ws: Vec<&str> = line.split_whitespace().collect();
        for w in ws.windows(2) {
            let cap = w[1].chars().next().is_some_and(|c| c.is_ascii_uppercase());
            let word = w[1].trim_end_matches([':', ',', ';']);
            if w[0].starts_with("--")
                && w[0].len() > 2
                && cap
                && word.chars().all(|c| c.is_ascii_alphabetic())
                && word.chars().skip(1).any(|c| c.is_ascii_lowercase())
            {
                bad.push(format!("{} {word} (a Debug-formatted value?)", w[0]));
            }
        }
        let words = line.split(|c: char| {
            !(c.is_alphanumeric() || c == '_' || c == '.' || c == '-' || c == '(')
        });
        for w in words {
            let w = w.trim_matches(|c: char| c == '.' || c == '-');
            let bare = w.trim_end_matches('(');
            let lower = bare.to_ascii_lowercase();
            if ["nan", "inf", "infinity", "-inf"].contains(&lower.as_str()) {
                bad.push(bare.to_string());
            } else if camel(bare) && !CAMEL_OK.contains(&bare) {
                bad.push(format!("{bare} (a Debug-formatted enum?)"));
            } else if raw_float(bare) {
                bad.push(format!("{bare} (an unformatted float)"));
            }
        }
        if !bad.is_empty() {
            v.push(format!("{} in line: {}", bad.join(", "), line.trim()));
        }
    }
    v
}

/// A word like `BiStream` or `PingPong`: letters only, capital first, and a capital
/// after a small letter.
fn camel(w: &str) -> bool {
    let c: Vec<char> = w.chars().collect();
    c.len() > 3
        && c.iter().all(|c| c.is_ascii_alphabetic())
        && c[0].is_ascii_uppercase()
        && c.windows(2)
            .any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase())
}

/// A float as Rust's `{}` prints it: more than 6 decimals, before an exponent or not
/// (`1.8e-15` is formatted, `1.810144488315823e-15` is not).
fn raw_float(w: &str) -> bool {
    if w.parse::<f64>().is_err() || !w.contains('.') {
        return false;
    }
    let (_, frac) = w.split_once('.').unwrap_or(("", ""));
    frac.split(['e', 'E']).next().unwrap_or("").len() > 6
}

/// One printed table: the line above it, its header and rows as cells.
#[derive(Debug)]
pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The tables of `out`: runs of at least two lines indented by one space.
pub fn tables(out: &str) -> Vec<Table> {
    let lines: Vec<&str> = out.lines().collect();
    let row = |l: &str| l.starts_with(' ') && !l.trim().is_empty();
    let mut v = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !row(lines[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && row(lines[i]) {
            i += 1;
        }
        if i - start >= 2 {
            let title = lines[..start].iter().rev().find(|l| !l.trim().is_empty());
            v.push(split(title.copied().unwrap_or(""), &lines[start..i]));
        }
    }
    v
}

/// Cut lines into columns where every line has two or more spaces.
fn split(title: &str, lines: &[&str]) -> Table {
    let chars: Vec<Vec<char>> = lines.iter().map(|l| l.chars().collect()).collect();
    let width = chars.iter().map(Vec::len).max().unwrap_or(0);
    let blank = |x: usize| chars.iter().all(|l| l.get(x).is_none_or(|c| *c == ' '));
    let mut cols: Vec<(usize, usize)> = Vec::new();
    let mut x = 0;
    while x < width {
        if blank(x) {
            x += 1;
            continue;
        }
        let from = x;
        while x < width && !(blank(x) && (x + 1 >= width || blank(x + 1))) {
            x += 1;
        }
        cols.push((from, x));
    }
    let cells = |l: &Vec<char>| -> Vec<String> {
        cols.iter()
            .map(|&(a, b)| {
                let s: String = l.iter().skip(a).take(b - a).collect();
                s.trim().to_string()
            })
            .collect()
    };
    Table {
        title: title.trim().to_string(),
        header: cells(&chars[0]),
        rows: chars[1..].iter().map(cells).collect(),
    }
}

fn col(t: &Table, f: impl Fn(&str) -> bool) -> Vec<usize> {
    (0..t.header.len()).filter(|&i| f(&t.header[i])).collect()
}

/// Normalised times (a table titled "normalised") and speedups printed as zero.
pub fn zeros(t: &Table) -> Vec<String> {
    let title = t.title.to_lowercase();
    let normalised = title.contains("normalised") || title.contains("normalized");
    let cols = col(t, |h| h.contains("speedup") || (normalised && h == "time"));
    let mut v = Vec::new();
    for r in &t.rows {
        for &c in &cols {
            if r.get(c).and_then(|s| s.parse::<f64>().ok()) == Some(0.0) {
                v.push(format!(
                    "{} {} in row {:?} of \"{}\"",
                    t.header[c], r[c], r, t.title
                ));
            }
        }
    }
    v
}

/// A breakdown (a table titled "…parts…" with a `time` column and parts after it)
/// whose parts add to more than the time. Parts marked as overlapping (a header or
/// title saying "overlap", a cell marked `*`) are not stacked and not added.
pub fn parts(t: &Table) -> Vec<String> {
    let Some(time) = t.header.iter().position(|h| h == "time") else {
        return Vec::new();
    };
    if !t.title.contains("parts") || t.title.contains("overlap") {
        return Vec::new();
    }
    let added: Vec<usize> = (time + 1..t.header.len())
        .filter(|&c| !t.header[c].contains("overlap") && !t.header[c].contains('*'))
        .collect();
    let mut v = Vec::new();
    for r in &t.rows {
        if r.iter().any(|c| c.contains('*')) {
            continue;
        }
        let (Some(total), Some(sum)) = (
            r.get(time).and_then(|s| s.parse::<f64>().ok()),
            added
                .iter()
                .map(|&c| r.get(c).and_then(|s| s.parse::<f64>().ok()))
                .sum::<Option<f64>>(),
        ) else {
            continue;
        };
        // Each part is rounded to two decimals: half a step each.
        if sum > total + 0.005 * added.len() as f64 + 1e-9 {
            v.push(format!(
                "parts add to {sum:.2} of a total {total:.2} in row {r:?} of \"{}\"",
                t.title
            ));
        }
    }
    v
}

/// The time unit a header or cell names, if exactly one.
fn time_unit(s: &str) -> Option<&'static str> {
    let units = [("ns", "ns"), ("µs", "µs"), ("us", "µs"), ("ms", "ms")];
    let found: Vec<&str> = s
        .split(|c: char| !(c.is_alphanumeric() || c == 'µ'))
        .filter_map(|w| units.iter().find(|u| u.0 == w).map(|u| u.1))
        .collect();
    match found.as_slice() {
        [one, rest @ ..] if rest.iter().all(|u| u == one) => Some(one),
        _ => None,
    }
}

/// Values printed with a time unit other than their column's.
pub fn units(t: &Table) -> Vec<String> {
    let mut v = Vec::new();
    for (c, h) in t.header.iter().enumerate() {
        let Some(unit) = time_unit(h) else { continue };
        for r in &t.rows {
            let cell = r.get(c).map(String::as_str).unwrap_or("");
            if let Some(u) = time_unit(cell).filter(|u| *u != unit) {
                v.push(format!(
                    "{cell} in column \"{h}\" of \"{}\" ({u}, not {unit})",
                    t.title
                ));
            }
        }
    }
    v
}

#[test]
fn the_checks_find_what_a_reader_objects_to() {
    let t = tokens("hops from requestors [Some(0)]\nk = 3..=33\nmedian NaN ns, inf\nop PingPong\n6.92943728683302e-16\nfine 0.25 ns, NUMANode P#0, info\ndsm sor --input Small: 520 KiB");
    assert_eq!(t.len(), 6, "{t:#?}");
    let fine = tokens("L2 1 MiB, 12.5 GB/s, MPI_Get, x86-64, 1.8e-15, --level L3");
    assert!(fine.is_empty(), "{fine:?}");
    let out = "Figures 3/5/6: execution time normalised to T=1, and its parts\n app  protocol  T  time  app   barrier  IO\n sor  seq       1  1.00  0.60  0.30     0.20\n sor  seq       2  0.00  0.00  0.00     0.00\n\nspeedups\n app  speedup\n sor  0.00\n\nops\n op    ns (median)\n load  12.5 µs\n";
    let found = all(out);
    let checks: Vec<&str> = found.iter().map(|f| f.0).collect();
    assert_eq!(checks, ["zero", "parts", "zero", "units"], "{found:#?}");
    assert_eq!(all("sequential 0.97 ms, speedup 0.00")[0].0, "zero");
    assert_eq!(all("sor seq T=1: speedup 0.0 < 1")[0].0, "zero");
    // A small speedup printed with its significant digits is a figure, not a zero.
    assert!(all("sor seq T=1: speedup 0.0012 < 1: per interval").is_empty());
    let ts = tables(out);
    assert_eq!(ts.len(), 3);
    assert_eq!(
        ts[0].header,
        ["app", "protocol", "T", "time", "app", "barrier", "IO"]
    );
    assert_eq!(ts[2].rows[0], ["load", "12.5 µs"]);
    // Marked overlapping parts are not added.
    let marked = out.replace("barrier  IO", "barrier  IO*");
    assert!(all(&marked).iter().all(|f| f.0 != "parts"));
}
