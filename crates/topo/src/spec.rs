//! The placement language: thread specs, memory specs, page sizes and byte sizes.
//!
//! Threads: OS CPU ids and ranges (`0-3,8`), objects (`node:1`, `pkg:0`, `l3:2`,
//! `core:5`, `pu:7`; node and pu use OS numbers, the others hwloc logical indices
//! as `numalab topo` lists them), or a policy laying out N threads: `compact`,
//! `scatter[:LEVEL]`, `batch:N[:LEVEL]`.
//! Memory: `N`/`node:N`, `local`, `hops:K`, `farthest`, `interleave[:LIST]`.

use crate::cpulist;
use crate::error::{Error, Result};
use crate::model::Level;
use serde::{Deserialize, Serialize};
use std::fmt;

const THREAD_VALID: &str = "use CPU ids and ranges (0-3,8), objects (node:1, pkg:0, l3:2, core:5, pu:7), or a policy: compact, scatter[:LEVEL], batch:N[:LEVEL]";
const MEM_VALID: &str =
    "use a node number (0 or node:0), local, hops:K, farthest, interleave or interleave:LIST";

/// One element of an explicit thread list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Item {
    /// OS CPU numbers.
    Cpus(Vec<u32>),
    /// Every usable CPU of these objects at a level.
    Objects(Level, Vec<u32>),
}

/// Where requestor threads go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThreadSpec {
    /// Explicit CPUs and objects, in the order given.
    List(Vec<Item>),
    /// Fill cores in topology order (SMT siblings last).
    Compact,
    /// Round-robin over the domains of a level (default: the most informative level).
    Scatter(Option<Level>),
    /// N threads on domain A, N on domain B, ... (KSR1 Suite III).
    Batch(u32, Option<Level>),
}

impl ThreadSpec {
    /// Parse a thread spec.
    pub fn parse(s: &str) -> Result<ThreadSpec> {
        let bad = |why: &str| {
            let valid = if why.is_empty() {
                THREAD_VALID.to_string()
            } else {
                format!("{why}; {THREAD_VALID}")
            };
            Error::bad("thread spec", s, valid)
        };
        let t = s.trim().to_ascii_lowercase();
        let parts: Vec<&str> = t.split(':').collect();
        let level = |name: &str| {
            Level::parse(name).ok_or_else(|| {
                bad(&format!(
                    "unknown level '{name}' (levels: {})",
                    Level::valid_names()
                ))
            })
        };
        match parts.as_slice() {
            ["compact"] => return Ok(ThreadSpec::Compact),
            ["scatter"] => return Ok(ThreadSpec::Scatter(None)),
            ["scatter", l] => return Ok(ThreadSpec::Scatter(Some(level(l)?))),
            ["batch", rest @ ..] => {
                let (n, l) = match rest {
                    [n] => (n, None),
                    [n, l] => (n, Some(level(l)?)),
                    _ => return Err(bad("batch takes batch:N or batch:N:LEVEL")),
                };
                let n: u32 = n
                    .parse()
                    .map_err(|_| bad(&format!("batch size '{n}' is not a number")))?;
                if n == 0 {
                    return Err(bad("batch size must be at least 1"));
                }
                return Ok(ThreadSpec::Batch(n, l));
            }
            _ => {}
        }
        let mut items = Vec::new();
        for tok in t.split(',') {
            let tok = tok.trim();
            if let Some((l, idx)) = tok.split_once(':') {
                let lv = level(l)?;
                let ids = cpulist::parse("thread spec", idx).map_err(|e| match e {
                    Error::BadSpec { valid, .. } if valid.contains("beyond any machine") => {
                        bad(&format!(
                            "'{tok}': {}",
                            valid.rsplit('(').next().unwrap_or("").trim_end_matches(')')
                        ))
                    }
                    _ => bad(&format!("'{tok}' needs an index or range after the colon")),
                })?;
                items.push(Item::Objects(lv, ids));
            } else {
                let ids = cpulist::parse("thread spec", tok).map_err(|_| bad(""))?;
                match items.last_mut() {
                    Some(Item::Cpus(v)) => v.extend(ids),
                    _ => items.push(Item::Cpus(ids)),
                }
            }
        }
        // A CPU given twice is refused, as in every list (`crate::lists::once`).
        let cpus = items.iter().flat_map(|i| match i {
            Item::Cpus(v) => v.as_slice(),
            Item::Objects(..) => &[],
        });
        crate::lists::once("thread spec", s.trim(), cpus, |c| format!("CPU {c}"))?;
        Ok(ThreadSpec::List(items))
    }
}

impl fmt::Display for ThreadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThreadSpec::Compact => write!(f, "compact"),
            ThreadSpec::Scatter(None) => write!(f, "scatter"),
            ThreadSpec::Scatter(Some(l)) => write!(f, "scatter:{l}"),
            ThreadSpec::Batch(n, None) => write!(f, "batch:{n}"),
            ThreadSpec::Batch(n, Some(l)) => write!(f, "batch:{n}:{l}"),
            ThreadSpec::List(items) => {
                let parts: Vec<String> = items
                    .iter()
                    .map(|i| match i {
                        Item::Cpus(c) => cpulist::format(c),
                        Item::Objects(l, ids) => format!("{l}:{}", cpulist::format(ids)),
                    })
                    .collect();
                write!(f, "{}", parts.join(","))
            }
        }
    }
}

/// How SMT siblings are used when laying out threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Smt {
    /// One thread per core first; second hardware threads only when cores run out.
    #[default]
    Last,
    /// Fill both hardware threads of a core before moving on.
    Together,
}

/// Which kind of core hybrid machines use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CoreKind {
    /// Most performant kind first, then the others, then SMT siblings.
    #[default]
    Any,
    /// Only the most performant kind (P-cores).
    Big,
    /// Only the most efficient kind (E-cores).
    Little,
}

/// Where a buffer's memory goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemSpec {
    /// Bind to this node.
    Node(u32),
    /// The node local to the first requestor thread.
    Local,
    /// A node exactly K hops from the first requestor's node.
    Hops(u32),
    /// The node farthest from the first requestor's node.
    Farthest,
    /// Interleave pages over these nodes (all nodes with memory when None).
    Interleave(Option<Vec<u32>>),
}

impl MemSpec {
    /// Parse a memory spec.
    pub fn parse(s: &str) -> Result<MemSpec> {
        let bad = |extra: &str| Error::bad("memory spec", s, format!("{extra}{MEM_VALID}"));
        let t = s.trim().to_ascii_lowercase();
        let num = |v: &str| v.parse::<u32>().map_err(|_| bad(""));
        match t.split_once(':') {
            None => match t.as_str() {
                "local" => Ok(MemSpec::Local),
                "farthest" => Ok(MemSpec::Farthest),
                "interleave" => Ok(MemSpec::Interleave(None)),
                _ => Ok(MemSpec::Node(num(&t)?)),
            },
            Some(("node" | "numa", v)) => Ok(MemSpec::Node(num(v)?)),
            Some(("hops", v)) => Ok(MemSpec::Hops(num(v)?)),
            Some(("interleave", v)) => Ok(MemSpec::Interleave(Some(
                cpulist::parse("memory spec", v)
                    .map_err(|_| bad("interleave needs a node list; "))?,
            ))),
            Some(_) => Err(bad("")),
        }
    }
}

impl fmt::Display for MemSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemSpec::Node(n) => write!(f, "node:{n}"),
            MemSpec::Local => write!(f, "local"),
            MemSpec::Hops(k) => write!(f, "hops:{k}"),
            MemSpec::Farthest => write!(f, "farthest"),
            MemSpec::Interleave(None) => write!(f, "interleave"),
            MemSpec::Interleave(Some(v)) => write!(f, "interleave:{}", cpulist::format(v)),
        }
    }
}

/// Page size of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum PageSize {
    /// Base 4 KiB pages (THP explicitly refused with MADV_NOHUGEPAGE).
    #[default]
    #[serde(rename = "4k")]
    Base,
    /// Transparent huge pages (MADV_HUGEPAGE), verified afterwards.
    #[serde(rename = "thp")]
    Thp,
    /// 2 MiB hugetlb pages (must be reserved).
    #[serde(rename = "2m")]
    Huge2M,
    /// 1 GiB hugetlb pages (must be reserved).
    #[serde(rename = "1g")]
    Huge1G,
}

impl PageSize {
    /// Parse `4k|thp|2m|1g`.
    pub fn parse(s: &str) -> Result<PageSize> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "4k" | "4kib" | "base" => PageSize::Base,
            "thp" => PageSize::Thp,
            "2m" | "2mib" => PageSize::Huge2M,
            "1g" | "1gib" => PageSize::Huge1G,
            _ => return Err(Error::bad("page size", s, "use 4k, thp, 2m or 1g")),
        })
    }

    /// Bytes per page of the mapping (THP regions are 2 MiB aligned).
    pub fn bytes(self) -> u64 {
        match self {
            PageSize::Base => 4096,
            PageSize::Thp | PageSize::Huge2M => 2 << 20,
            PageSize::Huge1G => 1 << 30,
        }
    }

    /// The spec name.
    pub fn name(self) -> &'static str {
        match self {
            PageSize::Base => "4k",
            PageSize::Thp => "thp",
            PageSize::Huge2M => "2m",
            PageSize::Huge1G => "1g",
        }
    }
}

/// Parse a byte size: a number with an optional binary suffix (K, M, G, T; KiB, KB and k mean the same).
pub fn parse_size(s: &str) -> Result<u64> {
    let valid =
        "use a positive number of bytes with an optional suffix K, M, G or T (binary: 1K = 1024)";
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| Error::bad("size", s, valid))?;
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(Error::bad("size", s, valid)),
    };
    let bytes = n
        .checked_mul(1u64 << shift)
        .ok_or_else(|| Error::bad("size", s, valid))?;
    if bytes == 0 {
        return Err(Error::bad("size", s, "the size must be larger than 0"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_specs() {
        assert_eq!(ThreadSpec::parse("compact").unwrap(), ThreadSpec::Compact);
        assert_eq!(
            ThreadSpec::parse("scatter:node").unwrap(),
            ThreadSpec::Scatter(Some(Level::Node))
        );
        assert_eq!(
            ThreadSpec::parse("batch:4:package").unwrap(),
            ThreadSpec::Batch(4, Some(Level::Package))
        );
        assert_eq!(
            ThreadSpec::parse("0-3,8,node:1").unwrap(),
            ThreadSpec::List(vec![
                Item::Cpus(vec![0, 1, 2, 3, 8]),
                Item::Objects(Level::Node, vec![1])
            ])
        );
        for bad in [
            "batch:0",
            "batch:x",
            "scatter:foo",
            "l9:1",
            "node:",
            "",
            "compact:3",
            "1-",
        ] {
            let e = ThreadSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "compact",
            "scatter:l3",
            "batch:2:node",
            "0-3,8",
            "node:1,l3:0-1",
        ] {
            let spec = ThreadSpec::parse(s).unwrap();
            assert_eq!(ThreadSpec::parse(&spec.to_string()).unwrap(), spec);
        }
    }

    #[test]
    fn mem_specs() {
        assert_eq!(MemSpec::parse("1").unwrap(), MemSpec::Node(1));
        assert_eq!(MemSpec::parse("node:2").unwrap(), MemSpec::Node(2));
        assert_eq!(MemSpec::parse("hops:2").unwrap(), MemSpec::Hops(2));
        assert_eq!(
            MemSpec::parse("interleave:0-1").unwrap(),
            MemSpec::Interleave(Some(vec![0, 1]))
        );
        assert!(MemSpec::parse("near").is_err());
        assert!(MemSpec::parse("hops:x").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64K").unwrap(), 65536);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        for bad in ["0", "", "12Q", "-1", "99999999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn page_sizes() {
        assert_eq!(PageSize::parse("THP").unwrap(), PageSize::Thp);
        assert!(PageSize::parse("3m").is_err());
    }
}
