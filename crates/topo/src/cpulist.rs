//! Linux-style CPU and node lists ("0-3,8"): parsing and compact formatting.

use crate::error::{Error, Result};

/// Parse a list such as `0-3,8,10-11` into indices, keeping the order given; an index
/// given twice (`0-3,2`) is refused, as in every list flag (`crate::lists::once`).
pub fn parse(what: &'static str, s: &str) -> Result<Vec<u32>> {
    let valid = "a list of indices and ranges such as 0-3,8";
    let mut ranges = Vec::new();
    if s.trim().is_empty() {
        return Err(Error::bad(what, s, valid));
    }
    for part in s.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        // A number too large for an index is named as such, not as "not a list".
        let index = |x: &str| {
            x.trim()
                .parse::<u32>()
                .map_err(|_| match x.trim().parse::<u64>() {
                    Ok(big) => Error::bad(
                        what,
                        s,
                        format!(
                            "{valid} (index {big} is beyond any machine's: at most 4294967295)"
                        ),
                    ),
                    Err(_) => Error::bad(what, s, valid),
                })
        };
        let (a, b) = (index(a)?, index(b)?);
        if b < a {
            return Err(Error::bad(
                what,
                s,
                format!("{valid} (range {a}-{b} runs backwards)"),
            ));
        }
        // Guard against absurd ranges before allocating (e.g. 0-4000000000).
        if b - a > 1 << 20 {
            return Err(Error::bad(
                what,
                s,
                format!("{valid} (range {a}-{b} is too large)"),
            ));
        }
        ranges.push(a..=b);
    }
    let indices = || ranges.iter().cloned().flatten();
    crate::lists::once(what, s, indices(), u32::to_string)?;
    Ok(indices().collect())
}

/// A record's JSON array of CPU or node numbers as a list ("0-3,8"); what is not a
/// number is left out.
pub fn format_json(v: &serde_json::Value) -> String {
    let ids: Vec<u32> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_u64().map(|x| x as u32))
        .collect();
    format(&ids)
}

/// Format indices compactly: sorted, consecutive runs as ranges ("0-3,8").
pub fn format(ids: &[u32]) -> String {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_beyond_u32_is_named_as_such() {
        let e = parse("thread spec", "4294967296").unwrap_err().to_string();
        assert!(
            e.contains("index 4294967296 is beyond any machine's"),
            "{e}"
        );
        let e = crate::ThreadSpec::parse("pu:4294967296")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("index 4294967296 is beyond") && !e.contains("needs an index"),
            "{e}"
        );
    }

    #[test]
    fn parses_ranges_in_order() {
        assert_eq!(parse("cpu list", "8,0-2").unwrap(), vec![8, 0, 1, 2]);
        for (twice, which) in [("3,3,3", "3"), ("0-3,2", "2"), ("1-2,0-1", "1")] {
            let e = parse("--cpu", twice).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("invalid --cpu '{twice}': {which} is given twice; give each value once")
            );
        }
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "a", "1-", "-1", "3-1", "1,,2", "0-99999999"] {
            assert!(parse("cpu list", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formats_runs() {
        assert_eq!(format(&[8, 0, 1, 2, 3]), "0-3,8");
        assert_eq!(format(&[]), "");
        assert_eq!(format(&[5]), "5");
    }
}
