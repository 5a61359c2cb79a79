//! Traffic mixes: how many read and write streams a requestor interleaves (MLC's
//! "3:1", Mess's write percentage), how its stores are issued, and what memory traffic
//! the issued bytes imply.
//!
//! A mix R:W means each requestor walks R read buffers and W write buffers together,
//! one line of each per step, so the issued read share is exactly R / (R + W).

use serde::{Deserialize, Serialize};
use std::fmt;

/// Most streams (reads + writes) one requestor interleaves; hardware prefetchers
/// track a few dozen streams per core, so more would measure the prefetcher.
pub const MAX_STREAMS: u32 = 20;

/// Read and write streams per requestor, e.g. 3:1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Mix {
    /// Read streams.
    pub reads: u32,
    /// Write streams.
    pub writes: u32,
}

impl Mix {
    /// All reads (1:0).
    pub const READS: Mix = Mix {
        reads: 1,
        writes: 0,
    };
    /// All writes (0:1).
    pub const WRITES: Mix = Mix {
        reads: 0,
        writes: 1,
    };

    /// Parse "R:W" ("3:1", "1:0", "0:1").
    pub fn parse(s: &str) -> Result<Mix, String> {
        let valid = format!(
            "expected READS:WRITES stream counts such as 1:0, 3:1, 1:1 or 0:1 \
             (whole numbers, not both 0, at most {MAX_STREAMS} streams in all)"
        );
        let bad = |why: &str| format!("invalid mix '{s}': {why}{valid}");
        let (r, w) = s.trim().split_once(':').ok_or_else(|| bad(""))?;
        let num = |t: &str| t.trim().parse::<u32>().map_err(|_| bad(""));
        let mix = Mix {
            reads: num(r)?,
            writes: num(w)?,
        };
        if mix.streams() == 0 {
            return Err(bad("neither reads nor writes; "));
        }
        if mix.streams() > MAX_STREAMS {
            return Err(bad("too many streams; "));
        }
        Ok(mix)
    }

    /// The mix nearest a write percentage (Mess's terms): 25 → 3:1, 0 → 1:0,
    /// 100 → 0:1, 10 → 9:1. Among ratios of at most [`MAX_STREAMS`] streams the
    /// nearest read share wins, then the fewest streams; the recorded read share
    /// says what was actually issued (Mess's `rd_percentage_actual`).
    pub fn from_write_pct(pct: f64) -> Result<Mix, String> {
        if !pct.is_finite() || !(0.0..=100.0).contains(&pct) {
            return Err(format!(
                "invalid write percentage '{pct}': expected a number from 0 to 100"
            ));
        }
        let want = pct / 100.0;
        let mut best = Mix::READS;
        for n in 1..=MAX_STREAMS {
            for w in 0..=n {
                let m = Mix {
                    reads: n - w,
                    writes: w,
                };
                let err = (m.write_share() - want).abs();
                // Strictly nearer only, so the fewest streams win ties.
                if err + 1e-12 < (best.write_share() - want).abs() {
                    best = m;
                }
            }
        }
        Ok(best)
    }

    /// Parse a comma-separated list of mixes ("1:0,3:1,0:1").
    pub fn parse_list(s: &str) -> Result<Vec<Mix>, String> {
        let v = s
            .split(',')
            .map(Mix::parse)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(v)
    }

    /// Streams in all.
    pub fn streams(&self) -> u32 {
        self.reads + self.writes
    }

    /// Issued read bytes over issued bytes (every stream issues one line per step).
    pub fn read_share(&self) -> f64 {
        self.reads as f64 / self.streams().max(1) as f64
    }

    /// Issued write bytes over issued bytes.
    pub fn write_share(&self) -> f64 {
        1.0 - self.read_share()
    }

    /// The mix in lowest terms (6:2 → 3:1).
    pub fn reduced(&self) -> Mix {
        let g = gcd(self.reads, self.writes).max(1);
        Mix {
            reads: self.reads / g,
            writes: self.writes / g,
        }
    }

    /// "3:1", "reads only", "writes only".
    pub fn label(&self) -> String {
        match (self.reads, self.writes) {
            (_, 0) => "reads only".into(),
            (0, _) => "writes only".into(),
            (r, w) => format!("{r}:{w}"),
        }
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.reads, self.writes)
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// How stores are issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Store {
    /// Ordinary stores: the line is read for ownership first (write-allocate).
    #[default]
    Regular,
    /// Non-temporal (streaming) stores: full lines go to memory without a read.
    Nt,
}

impl Store {
    /// Parse "regular" or "nt".
    pub fn parse(s: &str) -> Result<Store, String> {
        match s {
            "regular" => Ok(Store::Regular),
            "nt" => Ok(Store::Nt),
            _ => Err(format!(
                "invalid store '{s}': expected regular or nt (non-temporal)"
            )),
        }
    }

    /// Name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            Store::Regular => "regular",
            Store::Nt => "nt",
        }
    }

    /// Whether this CPU can issue this kind of store; Err names what it lacks.
    pub fn check(self) -> Result<(), String> {
        if self == Store::Nt && !nt_available() {
            return Err(format!(
                "--store nt: this CPU ({}) has no non-temporal stores; expected --store regular",
                std::env::consts::ARCH
            ));
        }
        Ok(())
    }
}

/// Whether this CPU has non-temporal stores the mixed kernels use (x86-64: SSE2
/// `movntdq`, part of the base ISA; other architectures: none used here).
pub fn nt_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("sse2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Memory traffic (read, write bytes) that issued bytes imply: a regular store
/// reads its line for ownership first (write-allocate) and writes it back later; a
/// non-temporal store writes the line only. An estimate: caches, prefetchers and
/// partial lines can move more or less.
pub fn traffic_estimate(mix: Mix, store: Store, issued_read: u64, issued_write: u64) -> (u64, u64) {
    // The mix is in the signature so callers need not split bytes themselves in future
    // forms (e.g. an update kernel); today the issued split already carries it.
    let _ = mix;
    match store {
        Store::Regular => (issued_read + issued_write, issued_write),
        Store::Nt => (issued_read, issued_write),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(reads: u32, writes: u32) -> Mix {
        Mix { reads, writes }
    }

    #[test]
    fn parses_ratios_and_names_bad_ones() {
        assert_eq!(Mix::parse("3:1"), Ok(m(3, 1)));
        assert_eq!(Mix::parse("1:0"), Ok(m(1, 0)));
        assert_eq!(Mix::parse("0:1"), Ok(m(0, 1)));
        assert_eq!(Mix::parse(" 2 : 1 "), Ok(m(2, 1)));
        for bad in ["0:0", "3", "a:1", "3:1:1", "-1:2", "", "1.5:1", "30:1"] {
            let e = Mix::parse(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
            assert!(e.contains("1:0, 3:1"), "{e}");
            assert!(!e.contains('\n'));
        }
        assert!(Mix::parse("0:0").unwrap_err().contains("neither"));
        assert_eq!(Mix::parse_list("1:0,3:1,0:1").unwrap().len(), 3);
        assert!(Mix::parse_list("1:0,,0:1").unwrap_err().contains("''"));
    }

    #[test]
    fn write_percentages_map_to_reduced_ratios() {
        assert_eq!(Mix::from_write_pct(25.0), Ok(m(3, 1)));
        assert_eq!(Mix::from_write_pct(0.0), Ok(m(1, 0)));
        assert_eq!(Mix::from_write_pct(100.0), Ok(m(0, 1)));
        assert_eq!(Mix::from_write_pct(10.0), Ok(m(9, 1)));
        assert_eq!(Mix::from_write_pct(50.0), Ok(m(1, 1)));
        assert_eq!(Mix::from_write_pct(75.0), Ok(m(1, 3)));
        assert_eq!(Mix::from_write_pct(33.0), Ok(m(2, 1)));
        for bad in [-1.0, 100.5, f64::NAN, f64::INFINITY] {
            let e = Mix::from_write_pct(bad).unwrap_err();
            assert!(e.contains("0 to 100"), "{e}");
        }
    }

    #[test]
    fn shares_labels_and_traffic() {
        assert_eq!(m(3, 1).read_share(), 0.75);
        assert_eq!(m(0, 1).read_share(), 0.0);
        assert_eq!(m(1, 0).read_share(), 1.0);
        assert_eq!(m(6, 2).reduced(), m(3, 1));
        assert_eq!(m(3, 1).label(), "3:1");
        assert_eq!(m(2, 0).label(), "reads only");
        assert_eq!(m(0, 1).label(), "writes only");
        assert_eq!(
            traffic_estimate(m(1, 1), Store::Regular, 100, 100),
            (200, 100)
        );
        assert_eq!(traffic_estimate(m(1, 1), Store::Nt, 100, 100), (100, 100));
        assert_eq!(Store::parse("nt"), Ok(Store::Nt));
        assert!(Store::parse("fast").unwrap_err().contains("'fast'"));
        assert_eq!(Store::Regular.check(), Ok(()));
    }
}
