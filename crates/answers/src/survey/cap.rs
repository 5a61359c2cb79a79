//! `survey --max-size`: every buffer meant to go beyond the caches capped, for
//! machines where the defaults take too long (an emulated guest) or too much memory.

use super::experiment::{argv, Experiment};
use super::plan::Step;
use numalab_bench::latency::parse_sweep_range;
use numalab_bench::sweep::{DEFAULT_MAX, DEFAULT_MIN};
use numalab_bench::{bandwidth, sizing};
use numalab_topo::spec::parse_size;
use numalab_topo::Machine;

/// The bandwidth kernels `--kernel all` runs.
pub(super) const ALL_KERNELS: [&str; 8] = [
    "read", "readv", "rdsh", "rdex", "zero", "upgrade", "nt", "copy",
];

/// A size as the command line writes it: the largest binary unit that divides it.
fn size_text(bytes: u64) -> String {
    match bytes {
        b if b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

/// A step's size as given, or `default` when the experiment picks its own.
pub(super) fn given(size: &Option<String>, default: u64) -> u64 {
    size.as_deref()
        .map(|s| parse_size(s).unwrap_or(u64::MAX))
        .unwrap_or(default)
}

/// Caps every step's beyond-cache buffer at `max` bytes. A step whose size is already no
/// larger keeps it; lines held in a helper's cache (half a private cache) keep theirs
/// unless the cap is smaller still; a bandwidth step whose kernels have different
/// defaults is split so the in-cache kernels keep theirs.
pub fn cap_sizes(m: &Machine, steps: Vec<Step>, max: u64) -> Vec<Step> {
    let mut out = Vec::with_capacity(steps.len());
    for mut s in steps {
        let Some(mut e) = s.experiment.take() else {
            out.push(s);
            continue;
        };
        let extra = cap(m, &mut e, max, &s.title);
        s.args = argv(&e);
        s.experiment = Some(e);
        let section = s.section;
        out.push(s);
        if let Some((title, rest)) = extra {
            let e = Experiment::Bandwidth(rest);
            // The first half keeps the estimate made for the whole step.
            out.push(Step {
                section,
                title,
                args: argv(&e),
                estimate_s: 0.0,
                touch_bytes: 0,
                skip: None,
                experiment: Some(e),
            });
        }
    }
    out
}

/// Cap one experiment's buffers at `max`; a bandwidth step split in two returns its
/// in-cache half (title, options).
fn cap(
    m: &Machine,
    e: &mut Experiment,
    max: u64,
    title: &str,
) -> Option<(String, bandwidth::Options)> {
    let half_l2 = sizing::half_private_cache(m);
    let cap = Some(size_text(max));
    match e {
        Experiment::Latency(o) => cap_latency(m, o, max, half_l2),
        Experiment::Bandwidth(o) => return cap_bandwidth(m, o, max, title),
        Experiment::Matrix(o) => {
            let default = if o.what == "latency" {
                256 << 20
            } else {
                64 << 20
            };
            if max < given(&o.size, default) {
                o.size = cap;
            }
        }
        Experiment::Loaded(o) => {
            if max < given(&o.size, sizing::streaming(m, 1)) {
                o.size = cap.clone();
            }
            // The injectors' buffers too: together they are sized beyond the caches,
            // which on a small node (a guest's 512 MiB) leaves no room for them.
            if max < given(&o.inject_size, sizing::streaming(m, 1)) {
                o.inject_size = cap;
            }
        }
        Experiment::Invalidate(o) if max < given(&o.size, half_l2) => o.size = cap,
        Experiment::Intervene(o) if max < given(&o.size, half_l2) => o.size = cap,
        _ => {}
    }
    None
}

/// A sweep ends at `max`; a chase beyond the caches is capped at it.
fn cap_latency(m: &Machine, o: &mut numalab_bench::latency::Options, max: u64, half_l2: u64) {
    if let Some(sweep) = &o.sweep {
        let (lo, top) = parse_sweep_range(sweep).unwrap_or((DEFAULT_MIN, DEFAULT_MAX));
        if max < top {
            o.sweep = Some(format!("{}-{}", size_text(lo), size_text(max)));
        }
    } else {
        let default = match o.state.as_str() {
            "uown" => sizing::flushed_chase(m),
            "warm" => sizing::beyond_caches(m),
            _ => half_l2,
        };
        if max < given(&o.size, default) {
            o.size = Some(size_text(max));
        }
    }
}

/// Streaming kernels are capped; in-cache ones keep their size, split off into a step
/// of their own (returned) when the step has both.
fn cap_bandwidth(
    m: &Machine,
    o: &mut bandwidth::Options,
    max: u64,
    title: &str,
) -> Option<(String, bandwidth::Options)> {
    let n = o.crew.count.unwrap_or(1).max(1);
    let kernels: Vec<String> = if o.kernel == "all" {
        ALL_KERNELS.map(String::from).to_vec()
    } else {
        o.kernel.split(',').map(String::from).collect()
    };
    let (big, keep): (Vec<String>, Vec<String>) = kernels
        .into_iter()
        .partition(|k| bandwidth::default_size_of(m, k, n).is_none_or(|d| max < given(&o.size, d)));
    let mut extra = None;
    if !keep.is_empty() && !big.is_empty() {
        let mut rest = o.clone();
        rest.kernel = keep.join(",");
        extra = Some((format!("{title} (kernels within the caches)"), rest));
        o.kernel = big.join(",");
    }
    if !big.is_empty() {
        o.size = Some(size_text(max));
    }
    extra
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::survey::plan;
    use numalab_topo::{Host, TopologySource};

    fn machine(file: &str) -> Machine {
        Host::load(&TopologySource::Xml(numalab_fixtures::topology(file)))
            .unwrap()
            .machine
    }

    fn size_of(s: &Step) -> Option<u64> {
        s.args
            .iter()
            .position(|a| a == "--size")
            .map(|i| parse_size(&s.args[i + 1]).unwrap())
    }

    #[test]
    fn max_size_caps_every_beyond_cache_buffer_and_keeps_smaller_ones() {
        let big = machine("64amd64-4s2n4ca2co.xml");
        let capped = cap_sizes(&big, plan(&big, true, true), 4 << 20);
        for s in capped.iter().filter(|s| s.skip.is_none()) {
            let line = s.args.join(" ");
            assert!(size_of(s).is_none_or(|b| b <= 4 << 20), "{line}");
            if let Some(i) = s.args.iter().position(|a| a.starts_with("--sweep")) {
                let sweep = if s.args[i].contains('=') {
                    s.args[i].clone()
                } else {
                    format!("{}={}", s.args[i], s.args[i + 1])
                };
                assert!(sweep.ends_with("-4M"), "{line}");
            }
            if ["matrix", "loaded-latency"].contains(&s.args[0].as_str())
                || line.contains("--state uown")
            {
                assert_eq!(size_of(s), Some(4 << 20), "{line}");
            }
            // The injectors' buffers are capped with the chase's.
            if s.args[0] == "loaded-latency" {
                assert!(line.contains("--inject-size 4M"), "{line}");
            }
            // Lines held in a helper's cache (half an L2 here) keep their default.
            if line.contains("--state cexh") || s.args[0] == "intervene" {
                assert_eq!(size_of(s), None, "{line}");
            }
        }
        // The one-thread `all` step splits: streaming kernels capped, rdex and upgrade not.
        let bw: Vec<&Step> = capped
            .iter()
            .filter(|s| s.section == "bandwidth" && !s.args.contains(&"-n".to_string()))
            .collect();
        assert_eq!(bw.len(), 2, "{bw:?}");
        assert!(
            bw[1].args.join(" ").contains("rdex,upgrade"),
            "{:?}",
            bw[1].args
        );
        assert_eq!(size_of(bw[1]), None);
        // A cap above every default changes nothing.
        let before: Vec<Vec<String>> = plan(&big, true, true).into_iter().map(|s| s.args).collect();
        let after: Vec<Vec<String>> = cap_sizes(&big, plan(&big, true, true), 1 << 40)
            .into_iter()
            .map(|s| s.args)
            .collect();
        assert_eq!(before, after);
    }
}
