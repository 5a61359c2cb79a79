//! Where a bandwidth record's data lives when its passes start (a cache level or a
//! memory node) and how many threads moved it: the report draws one chart per group,
//! so an in-cache kernel never shares a scale with memory-bound ones.

use numalab_probe::LineState;
use numalab_results::Record;
use numalab_topo::CacheInfo;

/// Where the data lives: a cache level or memory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// A cache level (1, 2, 3 …) and its size.
    Cache(u32, u64),
    /// Memory on these nodes (empty: the nodes are not recorded).
    Memory(Vec<u32>),
    /// The topology is not among the records: only the buffer size is known.
    Unknown(u64),
}

/// A chart's group: where the data lives and the thread count.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Group {
    /// Where the data lives.
    pub place: Place,
    /// Threads moving it.
    pub threads: u64,
}

impl Group {
    /// "L2 (512K), 1 thread", "memory (node 0), 2 threads".
    pub fn label(&self) -> String {
        let place = match &self.place {
            Place::Cache(l, b) => format!("L{l} ({})", numalab_topo::fmt_bytes(*b)),
            Place::Memory(n) if n.is_empty() => "memory".into(),
            Place::Memory(n) => format!(
                "memory (node{} {})",
                if n.len() > 1 { "s" } else { "" },
                numalab_topo::cpulist::format(n)
            ),
            Place::Unknown(b) => format!(
                "{} buffers (no topology record to place them)",
                numalab_topo::fmt_bytes(*b)
            ),
        };
        let s = if self.threads == 1 { "" } else { "s" };
        format!("{place}, {} thread{s}", self.threads)
    }
}

/// The caches of the records' topology record, if they hold one.
pub fn caches(records: &[Record]) -> Option<Vec<CacheInfo>> {
    let t = records.iter().find(|r| r.kind == "topo")?;
    serde_json::from_value(t.data.as_ref()?.get("caches")?.clone()).ok()
}

fn nodes_in(r: &Record) -> Option<Vec<u32>> {
    let n = r.placement.as_ref()?.pointer("/resolved/memory/nodes")?;
    serde_json::from_value(n.clone()).ok()
}

/// The memory nodes of `r`, or of a record of the same run (an aggregate record has
/// no placement of its own; its requestors' records do).
pub fn nodes(r: &Record, all: &[Record]) -> Vec<u32> {
    let same = |o: &&Record| {
        ["kernel", "state", "size_bytes", "requestors", "mp"]
            .iter()
            .all(|k| o.parameters[k] == r.parameters[k])
    };
    nodes_in(r)
        .or_else(|| {
            all.iter()
                .filter(|o| o.kind == r.kind)
                .filter(same)
                .find_map(nodes_in)
        })
        .unwrap_or_default()
}

/// Where `r`'s lines are when a pass starts, from its parameters (buffer size per
/// requestor, state, requestors) against the topology's caches.
pub fn group_of(r: &Record, all: &[Record], caches: Option<&[CacheInfo]>) -> Group {
    let p = &r.parameters;
    let threads = p["requestors"].as_u64().unwrap_or(1);
    let size = p["size_bytes"].as_u64().unwrap_or(0);
    let state = p["state"]
        .as_str()
        .and_then(|s| LineState::parse(s).ok())
        .unwrap_or(LineState::Warm);
    let memory = || Place::Memory(nodes(r, all));
    let place = match caches {
        None => Place::Unknown(size),
        // Flushed from every cache before each pass: the data comes from memory.
        Some(_) if state == LineState::Uown => memory(),
        Some(cs) => {
            let mut cs: Vec<&CacheInfo> = cs.iter().collect();
            cs.sort_by_key(|c| c.level);
            cs.into_iter()
                // cexm evicts the lines from the helper's private caches.
                .filter(|c| state != LineState::Cexm || c.shared_by > 1)
                .find(|c| {
                    // The requestors that share one instance all put their buffers in it.
                    let sharing = threads.min(u64::from(c.shared_by.max(1)));
                    size.saturating_mul(sharing) <= c.bytes
                })
                .map_or_else(memory, |c| Place::Cache(c.level, c.bytes))
        }
    };
    Group { place, threads }
}

/// Whether a group is a cache level (for ordering and for tests).
pub fn is_cache(g: &Group) -> bool {
    matches!(g.place, Place::Cache(..))
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::Provenance;
    use serde_json::json;

    fn cache(level: u32, bytes: u64, shared_by: u32) -> CacheInfo {
        CacheInfo {
            level,
            bytes,
            line_bytes: Some(64),
            shared_by,
        }
    }

    fn rec(kernel: &str, state: &str, size: u64, n: u64, node: Option<u32>) -> Record {
        let mut r = Record::new(
            "bandwidth",
            kernel,
            Provenance::collect("test", "synthetic"),
            json!({"kernel": kernel, "state": state, "size_bytes": size, "requestors": n, "mp": n > 1}),
        );
        r.placement = node.map(|n| json!({"resolved": {"memory": {"nodes": [n]}}}));
        r
    }

    #[test]
    fn records_group_by_where_their_data_lives_and_threads() {
        let cs = [
            cache(1, 32 << 10, 1),
            cache(2, 512 << 10, 1),
            cache(3, 8 << 20, 2),
        ];
        let all = vec![
            rec("upgrade", "shrd:1", 256 << 10, 1, Some(0)),
            rec("rdex", "uown", 256 << 10, 1, Some(0)),
            rec("read", "warm", 64 << 20, 1, Some(0)),
            rec("readv", "warm", 64 << 20, 2, Some(1)),
            rec("readv", "warm", 64 << 20, 2, None),
            rec("read", "warm", 16 << 10, 1, Some(0)),
            rec("read", "warm", 6 << 20, 2, Some(0)),
        ];
        let g: Vec<String> = all
            .iter()
            .map(|r| group_of(r, &all, Some(&cs)).label())
            .collect();
        assert_eq!(
            g,
            [
                "L2 (512 KiB), 1 thread",
                "memory (node 0), 1 thread",
                "memory (node 0), 1 thread",
                "memory (node 1), 2 threads",
                // The aggregate takes its requestors' node.
                "memory (node 1), 2 threads",
                "L1 (32 KiB), 1 thread",
                // Two threads' 6 MiB buffers share one 8 MiB L3: memory.
                "memory (node 0), 2 threads",
            ]
        );
        assert!(is_cache(&group_of(&all[0], &all, Some(&cs))));
        assert_eq!(
            group_of(&all[2], &all, None).label(),
            "64 MiB buffers (no topology record to place them), 1 thread"
        );
    }
}
