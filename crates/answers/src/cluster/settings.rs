//! A host's settings as the cluster compares them: the provenance's CPU, microcode
//! and kernel, the topology's nodes and memory, and the sysfs/procfs settings (THP,
//! NUMA balancing, governor, huge pages) read under a root folder, "/" unless
//! `NUMALAB_CLUSTER_ROOT` names a recorded or fake tree (a test's per-host setting);
//! and the CPU quota of the rank's own cgroup (read where it is mounted, never under
//! the root folder: a quota is the process's, not the machine's).

use super::data::Setting;
use numalab_results::provenance::bracketed;
use numalab_results::Provenance;
use numalab_topo::{fmt_bytes, Machine};
use std::path::Path;

/// The variable naming the folder the settings are read under.
pub const ROOT_VAR: &str = "NUMALAB_CLUSTER_ROOT";

/// The folder settings are read under: `NUMALAB_CLUSTER_ROOT`, else "/".
pub fn root() -> String {
    std::env::var(ROOT_VAR)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/".into())
}

fn read(root: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(root.join(rel))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn thp(root: &Path) -> String {
    match read(root, "sys/kernel/mm/transparent_hugepage/enabled") {
        Some(s) => bracketed(&s).unwrap_or(s),
        None => "unavailable (no transparent_hugepage in sysfs)".into(),
    }
}

fn numa_balancing(root: &Path) -> String {
    match read(root, "proc/sys/kernel/numa_balancing").as_deref() {
        Some("0") => "off".into(),
        Some("1") => "on".into(),
        Some(other) => format!("mode {other}"),
        None => "unavailable (kernel without NUMA balancing)".into(),
    }
}

fn governor(root: &Path, m: &Machine) -> String {
    let mut govs: Vec<String> = m
        .pus
        .iter()
        .filter_map(|p| {
            read(
                root,
                &format!(
                    "sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor",
                    p.os
                ),
            )
        })
        .collect();
    govs.sort();
    govs.dedup();
    if govs.is_empty() {
        "unavailable (no cpufreq driver)".into()
    } else {
        govs.join(",")
    }
}

fn huge_pages(root: &Path) -> String {
    let Some(info) = read(root, "proc/meminfo") else {
        return "unavailable (no meminfo)".into();
    };
    let field = |k: &str| {
        info.lines().find_map(|l| {
            l.strip_prefix(k)?
                .split_whitespace()
                .next()
                .map(String::from)
        })
    };
    match (field("HugePages_Total:"), field("Hugepagesize:")) {
        (Some(n), Some(kb)) => format!("{n} x {kb} kB"),
        _ => "unavailable (meminfo without HugePages_Total)".into(),
    }
}

fn nodes(m: &Machine) -> String {
    let per: Vec<String> = m
        .nodes
        .iter()
        .map(|n| format!("{}: {}", n.os, fmt_bytes(n.total_bytes)))
        .collect();
    format!("{} ({})", m.nodes.len(), per.join(", "))
}

/// This host's settings, in a fixed order; `mpi_library` is the MPI library's version
/// line.
pub fn settings(prov: &Provenance, m: &Machine, mpi_library: &str, root: &str) -> Vec<Setting> {
    let r = Path::new(root);
    let unknown = || "unknown".to_string();
    let s = |name: &str, value: String| Setting {
        name: name.into(),
        value,
    };
    vec![
        s("CPU model", prov.cpu_model.clone().unwrap_or_else(unknown)),
        s("microcode", prov.microcode.clone().unwrap_or_else(unknown)),
        s("kernel", prov.kernel.clone()),
        s("NUMA nodes and memory", nodes(m)),
        s("THP", thp(r)),
        s("NUMA balancing", numa_balancing(r)),
        s("governor", governor(r, m)),
        s("huge pages", huge_pages(r)),
        s(
            "CPU quota",
            numalab_results::disturb::cpu_quota().map_or("none found".into(), |q| q.words()),
        ),
        s(
            "MPI library",
            mpi_library.lines().next().unwrap_or("").trim().to_string(),
        ),
        s("numalab", prov.tool_version.clone()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_read_under_a_fake_root() {
        let dir = std::env::temp_dir().join(format!("nl-cluster-root-{}", std::process::id()));
        let thp_dir = dir.join("sys/kernel/mm/transparent_hugepage");
        std::fs::create_dir_all(&thp_dir).unwrap();
        std::fs::create_dir_all(dir.join("proc/sys/kernel")).unwrap();
        std::fs::write(thp_dir.join("enabled"), "always madvise [never]\n").unwrap();
        std::fs::write(dir.join("proc/sys/kernel/numa_balancing"), "1\n").unwrap();
        std::fs::write(
            dir.join("proc/meminfo"),
            "HugePages_Total:      16\nHugepagesize:       2048 kB\n",
        )
        .unwrap();
        let host = numalab_topo::Host::load(&numalab_topo::TopologySource::Synthetic(
            "numa:2 core:2 pu:1".into(),
        ))
        .unwrap();
        let prov = Provenance::collect("t", "s");
        let s = settings(
            &prov,
            &host.machine,
            "Open MPI v4.1.4\nmore",
            dir.to_str().unwrap(),
        );
        let v = |n: &str| s.iter().find(|x| x.name == n).unwrap().value.clone();
        assert_eq!(v("THP"), "never");
        assert_eq!(v("NUMA balancing"), "on");
        assert_eq!(v("huge pages"), "16 x 2048 kB");
        assert!(v("governor").starts_with("unavailable"));
        assert_eq!(v("MPI library"), "Open MPI v4.1.4");
        assert!(
            v("NUMA nodes and memory").starts_with("2 ("),
            "{}",
            v("NUMA nodes and memory")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
