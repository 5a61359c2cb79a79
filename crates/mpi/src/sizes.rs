//! Message sizes and rank pairs: parsing `--sizes` and checking what a job can hold,
//! shared by every experiment that sends messages between ranks.

use crate::error::{Error, Result};

/// Time to start a job's ranks, generously: counted once in a plan's estimate.
pub const JOB_START: std::time::Duration = std::time::Duration::from_secs(5);

/// A generous estimate of how long `messages` messages of `size` bytes take between
/// two ranks of a small shared machine (5 µs and 1 GB/s each, slower than this 2-core
/// VM's shared-memory transport), with `crowding` ranks per CPU: each message then
/// also waits for its peer to get a CPU from the others (200 µs a rank per CPU; 32
/// ranks on 2 CPUs took 1.35 ms a message here). What a plan's estimate, the base of a
/// launch's default bound ([`crate::liveness::default_bound`]), is made of.
pub fn transfer_estimate(messages: u64, size: u64, crowding: f64) -> std::time::Duration {
    let wait = if crowding > 1.0 {
        crowding * 200e-6
    } else {
        0.0
    };
    std::time::Duration::from_secs_f64(messages as f64 * (5e-6 + size as f64 / 1e9 + wait))
}

/// Check sizes: none 0, none beyond what memory holds for every rank's buffers;
/// errors name `flag` (`--sizes`, or `--size` for a command that takes one).
pub fn check_sizes(flag: &str, sizes: &[u64], ranks: usize, buffers_per_rank: u64) -> Result<()> {
    check_nonzero(flag, sizes)?;
    if let Some((_, avail)) = numalab_topo::sysfs::system_memory() {
        let max = sizes.iter().max().copied().unwrap_or(0);
        let need = max
            .saturating_mul(buffers_per_rank)
            .saturating_mul(ranks as u64);
        if need > avail / 2 {
            return Err(Error::Usage(format!(
                "invalid {flag} item '{}': {ranks} ranks would need {} of buffers, more than half of the {} available",
                numalab_topo::fmt_bytes(max),
                numalab_topo::fmt_bytes(need),
                numalab_topo::fmt_bytes(avail)
            )));
        }
    }
    if let Some(s) = sizes.iter().find(|&&s| s > i32::MAX as u64) {
        return Err(Error::Usage(format!(
            "invalid {flag} item '{}': one MPI message holds at most 2147483647 bytes (2 GiB - 1)",
            numalab_topo::fmt_bytes(*s)
        )));
    }
    Ok(())
}

/// Memory one send in flight holds beyond its payload: measured with Open MPI 4.1's
/// shared-memory transport, 8-byte sends, windows of 64 and 100000 (maxrss grew from
/// 18 MB to 96 MB a rank, about 0.8 KB a send); rounded up.
const PER_SEND_BYTES: u64 = 1024;
/// Payload an eager send copies into the transport's buffers (larger sends rendezvous
/// and share the one buffer).
const EAGER_COPY_BYTES: u64 = 64 << 10;

/// Check a streaming window against memory before any rank starts: a window of 10^8
/// sends grew each rank past 12 GiB until the kernel killed it.
pub fn check_window(window: usize, largest: u64) -> Result<()> {
    let Some((_, avail)) = numalab_topo::sysfs::system_memory() else {
        return Ok(());
    };
    let per = PER_SEND_BYTES + largest.min(EAGER_COPY_BYTES);
    let need = (window as u64).saturating_mul(per).saturating_mul(2);
    if need > avail / 2 {
        return Err(Error::Usage(format!(
            "invalid --window '{window}': that many sends in flight need about {} on the pair's ranks (about {} each), more than half of the {} available",
            numalab_topo::fmt_bytes(need),
            numalab_topo::fmt_bytes(per),
            numalab_topo::fmt_bytes(avail)
        )));
    }
    Ok(())
}

/// Check sizes without a job: at least one, none 0; what memory holds is checked
/// with the job ([`check_sizes`]).
pub fn check_nonzero(flag: &str, sizes: &[u64]) -> Result<()> {
    if sizes.is_empty() {
        return Err(Error::Usage(format!(
            "invalid {flag} '': give at least one size"
        )));
    }
    if sizes.contains(&0) {
        return Err(Error::Usage(format!(
            "invalid {flag} item '0': sizes are at least 1 byte"
        )));
    }
    Ok(())
}

/// Check a pair of ranks against the job's size.
pub fn check_pair(pair: (usize, usize), ranks: usize) -> Result<()> {
    let (a, b) = pair;
    if a >= ranks || b >= ranks || a == b {
        return Err(Error::Usage(format!(
            "invalid --pair '{a},{b}': two different ranks below {ranks}"
        )));
    }
    Ok(())
}

/// Parse `--sizes`: comma-separated sizes (64, 4K, 1M) and ranges `A:B` of the powers
/// of two from A to B.
pub fn parse_sizes(s: &str) -> Result<Vec<u64>> {
    let bad = |item: &str| {
        Error::Usage(format!(
            "invalid --sizes item '{item}': sizes of at least 1 byte (8, 4K, 1M) or ranges A:B of powers of two (1:4M)"
        ))
    };
    let size = |t: &str| match numalab_topo::spec::parse_size(t.trim()) {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(bad(t.trim())),
    };
    let mut out = Vec::new();
    for item in s.split(',') {
        if let Some((lo, hi)) = item.split_once(':') {
            let (lo, hi) = (size(lo)?, size(hi)?);
            if lo > hi {
                return Err(bad(item.trim()));
            }
            let mut v = lo.next_power_of_two();
            if v != lo {
                out.push(lo);
            }
            while v <= hi {
                out.push(v);
                v *= 2;
            }
        } else {
            out.push(size(item)?);
        }
    }
    // A size given twice (in a range and alone, or in two spellings) is refused.
    numalab_topo::lists::once_by(
        "--sizes",
        s,
        &out,
        |b| **b,
        |b| numalab_topo::fmt_bytes(**b),
    )
    .map_err(|e| Error::Usage(e.to_string()))?;
    Ok(out)
}

/// A comma-separated list of names; "" is the empty list (which a `check` refuses
/// naming the flag), and an empty item ("1,,2") is refused as `--sizes` refuses it.
pub fn parse_list(flag: &str, s: &str) -> Result<Vec<String>> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    let v: Vec<String> = s
        .split(',')
        .map(|x| match x.trim() {
            "" => Err(Error::Usage(format!(
                "invalid {flag} item '': an empty item in '{s}'"
            ))),
            t => Ok(t.to_string()),
        })
        .collect::<Result<_>>()?;
    numalab_topo::lists::once(flag, s, &v, |x| format!("'{x}'"))
        .map_err(|e| Error::Usage(e.to_string()))?;
    Ok(v)
}

/// A comma-separated list of whole numbers (thread or rank counts).
pub fn parse_counts(flag: &str, s: &str) -> Result<Vec<usize>> {
    let v: Vec<usize> = parse_list(flag, s)?
        .iter()
        .map(|t| {
            t.parse::<usize>().map_err(|_| {
                Error::Usage(format!("invalid {flag} item '{t}': counts such as 1,2,4,8"))
            })
        })
        .collect::<Result<_>>()?;
    // 2 and 02 are one count.
    numalab_topo::lists::once(flag, s, &v, |n| format!("'{n}'"))
        .map_err(|e| Error::Usage(e.to_string()))?;
    Ok(v)
}

/// `--pair A,B`: the timing rank and its peer.
pub fn parse_pair(s: &str) -> Result<(usize, usize)> {
    let bad = || {
        Error::Usage(format!(
            "invalid --pair '{s}': two rank numbers such as 0,1"
        ))
    };
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    Ok((
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    ))
}

#[cfg(test)]
mod size_tests {
    use super::parse_sizes;

    #[test]
    fn size_lists_and_power_of_two_ranges_parse_and_zero_does_not() {
        assert_eq!(parse_sizes("1:8").unwrap(), [1, 2, 4, 8]);
        assert_eq!(parse_sizes("8,4K").unwrap(), [8, 4096]);
        assert_eq!(parse_sizes("3:8").unwrap(), [3, 4, 8]);
        for bad in ["0", "1:0", "8:1", "x", "", "8,8", "1:8,4", "4K,4096"] {
            let e = parse_sizes(bad).unwrap_err().to_string();
            assert!(e.contains("--sizes"), "{bad}: {e}");
        }
        let e = parse_sizes("1:8,4").unwrap_err().to_string();
        assert!(e.contains("4 B is given twice"), "{e}");
    }

    use super::{parse_counts, parse_list, parse_pair};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn pairs_never_panic_and_name_what_they_refuse(s in prop_oneof!["[0-9 ,-]{0,12}", "\\PC{0,16}"]) {
            if let Err(e) = parse_pair(&s) {
                let e = e.to_string();
                prop_assert!(e.contains(&format!("'{s}'")), "{}", e);
                if !s.contains(|c: char| c.is_control()) {
                    prop_assert_eq!(e.lines().count(), 1);
                }
            }
        }

        #[test]
        fn printed_pairs_parse_back(a in 0usize..100_000, b in 0usize..100_000) {
            prop_assert_eq!(parse_pair(&format!("{a},{b}")).unwrap(), (a, b));
            prop_assert_eq!(parse_pair(&format!(" {a} , {b} ")).unwrap(), (a, b));
        }

        #[test]
        fn lists_never_panic_and_hold_no_blanks(s in "\\PC{0,24}") {
            if let Ok(v) = parse_list("--apps", &s) {
                prop_assert!(v.iter().all(|x| !x.is_empty() && x.trim() == x));
                prop_assert_eq!(parse_list("--apps", &v.join(",")).ok(), Some(v));
            } else {
                let items: Vec<&str> = s.split(',').map(str::trim).collect();
                let repeat = items.iter().enumerate().any(|(i, x)| items[..i].contains(x));
                prop_assert!(items.iter().any(|x| x.is_empty()) || repeat);
            }
        }

        #[test]
        fn counts_name_what_they_refuse(s in prop_oneof!["[0-9, x-]{0,16}", "\\PC{0,16}"]) {
            match parse_counts("--threads", &s) {
                Ok(v) => {
                    let again = v.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(",");
                    prop_assert_eq!(parse_counts("--threads", &again).unwrap(), v);
                }
                Err(e) => {
                    let e = e.to_string();
                    prop_assert!(s.split(',').any(|t| e.contains(&format!("'{}'", t.trim()))), "{}", e);
                    if !s.contains(|c: char| c.is_control()) {
                        prop_assert_eq!(e.lines().count(), 1);
                    }
                }
            }
        }
    }
}
