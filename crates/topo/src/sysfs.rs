//! Live facts from Linux sysfs that hwloc does not keep: free memory and huge pages per node.

use crate::model::{Node, PagePool};
use std::fs;

fn read_u64(path: &str) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Free bytes on a node from its meminfo ("Node 0 MemFree: 123 kB").
pub fn node_free_bytes(node: u32) -> Option<u64> {
    let text = fs::read_to_string(format!("/sys/devices/system/node/node{node}/meminfo")).ok()?;
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let _ = (it.next(), it.next());
        (it.next()? == "MemFree:").then(|| it.next()?.parse::<u64>().ok().map(|kb| kb * 1024))?
    })
}

/// Huge page pools of a node: (page size, reserved, free).
pub fn node_hugepages(node: u32) -> Vec<PagePool> {
    let dir = format!("/sys/devices/system/node/node{node}/hugepages");
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut pools: Vec<PagePool> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let kb: u64 = name
                .strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse()
                .ok()?;
            Some(PagePool {
                size: kb * 1024,
                count: read_u64(&format!("{dir}/{name}/nr_hugepages"))?,
                free: read_u64(&format!("{dir}/{name}/free_hugepages")),
            })
        })
        .collect();
    pools.sort_by_key(|p| p.size);
    pools
}

/// Update a node of this machine with live free memory and huge-page pools.
pub fn refresh_node(node: &mut Node) {
    node.free_bytes = node_free_bytes(node.os);
    let huge = node_hugepages(node.os);
    if !huge.is_empty() {
        // Keep hwloc's base-page entry, replace the huge-page entries with live counts.
        let base = node.pages.iter().min_by_key(|p| p.size).cloned();
        node.pages = base.into_iter().filter(|b| b.size < 1 << 20).collect();
        node.pages.extend(huge);
    }
}

/// System-wide MemTotal and MemAvailable from /proc/meminfo, in bytes.
pub fn system_memory() -> Option<(u64, u64)> {
    let text = fs::read_to_string("/proc/meminfo").ok()?;
    let field = |key: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
    };
    Some((field("MemTotal:")?, field("MemAvailable:")?))
}
