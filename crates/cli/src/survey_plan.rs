//! The survey's battery, chosen from the topology: each step is a numalab command
//! line (so any step can be rerun alone), with a time estimate and, where the
//! machine cannot do it, the reason it is skipped.

use numalab_topo::{Level, Machine};
use serde::Serialize;

/// One step of the survey.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Report section the records feed.
    pub section: &'static str,
    /// What it measures, in words.
    pub title: String,
    /// numalab arguments (without --json).
    pub args: Vec<String>,
    /// Rough duration on a small machine, seconds (for the plan and the ETA).
    pub estimate_s: f64,
    /// Why it is skipped here, if it is.
    pub skip: Option<String>,
}

fn step(section: &'static str, title: &str, args: &[&str], estimate_s: f64) -> Step {
    Step {
        section,
        title: title.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        estimate_s,
        skip: None,
    }
}

fn skipped(section: &'static str, title: &str, why: String) -> Step {
    Step {
        section,
        title: title.into(),
        args: Vec::new(),
        estimate_s: 0.0,
        skip: Some(why),
    }
}

/// Up to `cap` CPUs that stand for the machine's kinds of pairs: the first CPU of
/// every L3 domain (or node, or package), the first CPU's SMT sibling and another
/// core beside it, so the c2c matrix grows with domains, not with cores squared.
pub fn c2c_cpus(m: &Machine, cap: usize) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    let push = |c: u32, out: &mut Vec<u32>| {
        if !out.contains(&c) && out.len() < cap {
            out.push(c);
        }
    };
    let Some(first) = m.pus.first() else {
        return out;
    };
    push(first.os, &mut out);
    if let Some(sib) = m
        .pus
        .iter()
        .find(|p| p.core == first.core && p.os != first.os)
    {
        push(sib.os, &mut out);
    }
    if let Some(next) = m
        .pus
        .iter()
        .find(|p| p.core != first.core && p.l3 == first.l3 && p.node == first.node)
    {
        push(next.os, &mut out);
    }
    for level in [Level::L3, Level::Node, Level::Package] {
        for d in m.domains(level).into_iter().flatten() {
            if let Some(c) = d.cpus.first() {
                push(*c, &mut out);
            }
        }
    }
    out
}

/// The battery for this machine; `quick` keeps it within a minute on a small machine.
pub fn plan(m: &Machine, quick: bool) -> Vec<Step> {
    let cores = {
        let mut c: Vec<u32> = m.pus.iter().map(|p| p.core).collect();
        c.sort_unstable();
        c.dedup();
        c.len()
    };
    let pus = m.pus.len();
    let nodes = m.nodes.iter().filter(|n| !n.local_cpus.is_empty()).count();
    let l3s = m.domains(Level::L3).map_or(0, |d| d.len());
    let iters = if quick { "3" } else { "7" };
    let mut v = vec![step("machine", "topology", &["topo"], 0.5)];
    let sweep = if quick { "--sweep=4K-64M" } else { "--sweep" };
    v.push(step(
        "hierarchy",
        "memory-hierarchy sweep",
        &["latency", sweep, "--iterations", iters],
        if quick { 4.0 } else { 15.0 },
    ));
    let one_core = || format!("one core ({pus} CPU(s)): helper threads need a second core");
    let states: &[&str] = if cores >= 3 {
        &["uown", "shrd:2", "cexh", "cexm", "dexd", "dext"]
    } else {
        &["uown", "cexh", "cexm", "dexd", "dext"]
    };
    for s in states {
        let title = format!("latency, lines {s}");
        if cores < 2 && *s != "uown" {
            v.push(skipped("states", &title, one_core()));
        } else {
            v.push(step(
                "states",
                &title,
                &["latency", "--state", s, "--iterations", iters],
                0.5,
            ));
        }
    }
    v.push(step(
        "bandwidth",
        "bandwidth kernels, 1 thread",
        &["bandwidth", "--kernel", "all", "--iterations", iters],
        if quick { 2.0 } else { 4.0 },
    ));
    let all = pus.to_string();
    if pus > 1 {
        v.push(step(
            "bandwidth",
            "bandwidth kernels, all threads",
            &[
                "bandwidth",
                "--kernel",
                "readv,rdsh,zero,nt,copy",
                "-n",
                &all,
                "--mp",
                "--iterations",
                iters,
            ],
            if quick { 2.0 } else { 4.0 },
        ));
    }
    let cpus = c2c_cpus(m, if quick { 8 } else { 16 });
    if cpus.len() >= 2 {
        let list = numalab_topo::cpulist::format(&cpus);
        let rt = if quick { "5000" } else { "20000" };
        v.push(step(
            "c2c",
            &format!("core-to-core pairs of CPUs {list}"),
            &[
                "c2c",
                "--cpus",
                &list,
                "--round-trips",
                rt,
                "--iterations",
                iters,
            ],
            0.05 * (cpus.len() * cpus.len()) as f64 + 0.5,
        ));
    } else {
        v.push(skipped("c2c", "core to core", "one CPU: no pairs".into()));
    }
    if cores >= 2 {
        v.push(step(
            "invalidate",
            "invalidation sweep",
            &["invalidate", "--iterations", iters],
            0.5 * nodes.max(1) as f64 + 0.5,
        ));
        let loaded: Vec<&str> = if quick {
            vec![
                "loaded-latency",
                "--delays",
                "1000,100,0",
                "--iterations",
                iters,
                "--size",
                "64M",
            ]
        } else {
            vec!["loaded-latency", "--iterations", iters]
        };
        v.push(step(
            "loaded",
            "loaded latency",
            &loaded,
            if quick { 2.0 } else { 6.0 },
        ));
    } else {
        v.push(skipped("invalidate", "invalidation sweep", one_core()));
        v.push(skipped(
            "loaded",
            "loaded latency",
            "one core: injectors need a second core".into(),
        ));
    }
    let level = if nodes > 1 {
        Some("node")
    } else if l3s > 1 {
        Some("l3")
    } else {
        None
    };
    match level {
        Some(l) => {
            let cells = (nodes.max(l3s) * m.memory_nodes().len()) as f64;
            v.push(step(
                "matrix",
                &format!("latency matrix per {l}"),
                &["matrix", "latency", "--level", l, "--iterations", iters],
                cells * 0.6,
            ));
            v.push(step(
                "matrix",
                &format!("bandwidth matrix per {l}"),
                &["matrix", "bandwidth", "--level", l, "--iterations", iters],
                cells * 0.6,
            ));
        }
        None => {
            let why =
                "one NUMA node and one L3 domain: there is no initiator × memory matrix to draw"
                    .to_string();
            v.push(skipped("matrix", "latency and bandwidth matrices", why));
        }
    }
    if nodes > 1 && cores >= 2 {
        v.push(step(
            "intervene",
            "intervention placements",
            &["intervene", "--iterations", iters],
            2.0 * nodes as f64,
        ));
    } else {
        v.push(skipped(
            "intervene",
            "intervention placements",
            "one NUMA node: the placements need owner, requestor and home on two nodes".into(),
        ));
    }
    if nodes <= 1 {
        v.push(skipped("model", "latency model fit", "one NUMA node: every latency is local, so no remote penalty or per-hop delay can be fitted".into()));
    }
    v
}

/// A size as numalab's options take it (K/M/G suffixes where exact).
fn size_arg(b: u64) -> String {
    match b {
        b if b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

/// Set `flag value` in a step's arguments, replacing the flag's value if it has one.
fn set_arg(args: &mut Vec<String>, flag: &str, value: String) {
    match args.iter().position(|a| a == flag) {
        Some(i) if i + 1 < args.len() => args[i + 1] = value,
        _ => args.extend([flag.to_string(), value]),
    }
}

fn arg_after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).map(String::as_str)
}

/// Cap every step's buffer at `max` bytes (`survey --max-size`), for machines where the
/// default beyond-cache buffers take too long (an emulated guest) or too much memory.
/// A step whose default is already no larger keeps it; a bandwidth step whose kernels
/// have different defaults is split so the in-cache kernels keep theirs.
pub fn cap_sizes(m: &Machine, steps: Vec<Step>, max: u64) -> Vec<Step> {
    let half_l2 = numalab_bench::bandwidth::half_private_cache(m);
    let mut out = Vec::with_capacity(steps.len());
    for mut s in steps {
        if s.skip.is_some() || s.args.is_empty() {
            out.push(s);
            continue;
        }
        let cmd = s.args[0].clone();
        let cap = size_arg(max);
        match cmd.as_str() {
            "latency" => {
                if let Some(i) = s.args.iter().position(|a| a.starts_with("--sweep")) {
                    let top = if s.args[i].contains('=') {
                        64 << 20
                    } else {
                        1 << 30
                    };
                    if max < top {
                        s.args[i] = format!("--sweep=4K-{cap}");
                    }
                } else {
                    let default = match arg_after(&s.args, "--state") {
                        Some("uown") | Some("warm") | None => {
                            numalab_suites::memory::beyond_caches(m)
                        }
                        Some(_) => half_l2,
                    };
                    if max < default {
                        set_arg(&mut s.args, "--size", cap);
                    }
                }
            }
            "bandwidth" => {
                let n: usize = arg_after(&s.args, "-n")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1);
                let kernels: Vec<String> = match arg_after(&s.args, "--kernel") {
                    Some("all") | None => [
                        "read", "readv", "rdsh", "rdex", "zero", "upgrade", "nt", "copy",
                    ]
                    .map(String::from)
                    .to_vec(),
                    Some(list) => list.split(',').map(String::from).collect(),
                };
                let (big, keep): (Vec<String>, Vec<String>) = kernels.into_iter().partition(|k| {
                    numalab_bench::bandwidth::default_size_of(m, k, n).is_none_or(|d| max < d)
                });
                if !keep.is_empty() && !big.is_empty() {
                    let mut rest = s.clone();
                    set_arg(&mut rest.args, "--kernel", keep.join(","));
                    rest.title = format!("{} (kernels within the caches)", s.title);
                    set_arg(&mut s.args, "--kernel", big.join(","));
                    set_arg(&mut s.args, "--size", cap);
                    out.push(s);
                    out.push(rest);
                    continue;
                }
                if keep.is_empty() {
                    set_arg(&mut s.args, "--size", cap);
                }
            }
            "loaded-latency" | "matrix" => {
                // The defaults matrix_cmd and loaded_cmd use when no --size is given.
                let default = match arg_after(&s.args, "--size") {
                    Some(v) => numalab_topo::spec::parse_size(v).unwrap_or(u64::MAX),
                    None if s.args.get(1).is_some_and(|a| a == "latency") => 256 << 20,
                    None if cmd == "matrix" => 64 << 20,
                    None => {
                        numalab_bench::bandwidth::default_size_of(m, "read", 1).unwrap_or(64 << 20)
                    }
                };
                if max < default {
                    set_arg(&mut s.args, "--size", cap);
                }
            }
            "invalidate" | "intervene" if max < half_l2 => {
                set_arg(&mut s.args, "--size", cap);
            }
            "c2c" if max < 64 << 10 => set_arg(&mut s.args, "--read-size", cap),
            _ => {}
        }
        out.push(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::{Host, TopologySource};

    fn machine(file: &str) -> Machine {
        let p = numalab_fixtures::topology(file);
        Host::load(&TopologySource::Xml(p)).unwrap().machine
    }

    #[test]
    fn battery_follows_the_topology() {
        let big = machine("64amd64-4s2n4ca2co.xml");
        let p = plan(&big, false);
        for s in ["matrix", "intervene", "c2c", "invalidate"] {
            assert!(p.iter().any(|x| x.section == s && x.skip.is_none()), "{s}");
        }
        // Representative CPUs: bounded, not every core.
        let c = c2c_cpus(&big, 16);
        assert!(c.len() <= 16 && c.len() >= 8);
        let one = machine("16em64t-4s2c2t.xml");
        let p = plan(&one, true);
        // One node: matrices come from the L3 domains if there are several, else skip.
        assert!(p
            .iter()
            .any(|x| x.section == "intervene" && x.skip.is_some()));
        assert!(p.iter().any(|x| x.section == "model" && x.skip.is_some()));
    }

    #[test]
    fn max_size_caps_every_beyond_cache_buffer_and_keeps_smaller_ones() {
        let big = machine("64amd64-4s2n4ca2co.xml");
        let capped = cap_sizes(&big, plan(&big, true), 4 << 20);
        let size_of = |s: &Step| {
            s.args
                .iter()
                .position(|a| a == "--size")
                .map(|i| numalab_topo::spec::parse_size(&s.args[i + 1]).unwrap())
        };
        for s in capped.iter().filter(|s| s.skip.is_none()) {
            let line = s.args.join(" ");
            assert!(size_of(s).is_none_or(|b| b <= 4 << 20), "{line}");
            if let Some(sweep) = s.args.iter().find(|a| a.starts_with("--sweep")) {
                assert_eq!(sweep, "--sweep=4K-4M");
            }
            if ["matrix", "loaded-latency"].contains(&s.args[0].as_str())
                || line.contains("--state uown")
            {
                assert_eq!(size_of(s), Some(4 << 20), "{line}");
            }
            // Lines held in a helper's cache (half an L2 here) keep their default.
            if line.contains("--state cexh") || s.args[0] == "intervene" {
                assert_eq!(size_of(s), None, "{line}");
            }
        }
        // The one-thread `all` step splits: streaming kernels capped, rdex and upgrade not.
        let bw: Vec<&Step> = capped
            .iter()
            .filter(|s| {
                s.args.first().is_some_and(|a| a == "bandwidth")
                    && !s.args.contains(&"-n".to_string())
            })
            .collect();
        assert_eq!(bw.len(), 2, "{bw:?}");
        assert_eq!(bw[1].args[2], "rdex,upgrade");
        assert_eq!(size_of(bw[1]), None);
        // A cap above every default changes nothing.
        let same = cap_sizes(&big, plan(&big, true), 1 << 40);
        let before: Vec<Vec<String>> = plan(&big, true).into_iter().map(|s| s.args).collect();
        let after: Vec<Vec<String>> = same.into_iter().map(|s| s.args).collect();
        assert_eq!(before, after);
    }
}
