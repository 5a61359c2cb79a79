//! The survey's battery, chosen from the topology: each step is an experiment's
//! `Options` value with a time estimate and, where the machine cannot do it, the
//! reason it is skipped.

pub use super::cpus::c2c_cpus;
use super::estimate;
use super::experiment::{argv, Experiment};
use numalab_bench::{bandwidth, c2c, intervene, invalidate, latency, loaded, matrix};
use numalab_suites::{collectives, earth, placement};
use numalab_topo::{Level, Machine};
use serde::Serialize;

/// One step of the survey.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Report section the records feed.
    pub section: &'static str,
    /// What it measures, in words.
    pub title: String,
    /// numalab arguments (without --json), built from the experiment by `argv`.
    pub args: Vec<String>,
    /// Duration in seconds at the reference pace (`survey::estimate`); a run scales
    /// it by the pace it measures (`survey::pace`).
    pub estimate_s: f64,
    /// Bytes its buffers map and touch for the first time (`survey::touch`), which the
    /// pace charges at the first-touch cost measured at start.
    pub touch_bytes: u64,
    /// Why it is skipped here, if it is.
    pub skip: Option<String>,
    /// The experiment (None when skipped).
    #[serde(skip)]
    pub experiment: Option<Experiment>,
}

fn step(section: &'static str, title: &str, e: Experiment, estimate_s: f64) -> Step {
    Step {
        section,
        title: title.into(),
        args: argv(&e),
        estimate_s,
        touch_bytes: 0,
        skip: None,
        experiment: Some(e),
    }
}

fn skipped(section: &'static str, title: &str, why: String) -> Step {
    Step {
        section,
        title: title.into(),
        args: Vec::new(),
        estimate_s: 0.0,
        touch_bytes: 0,
        skip: Some(why),
        experiment: None,
    }
}

/// What the battery is chosen from: the machine's shape and the pass count.
struct Shape {
    cores: usize,
    pus: usize,
    nodes: usize,
    l3s: usize,
    iters: usize,
    scale: estimate::Scale,
}

impl Shape {
    fn of(m: &Machine, quick: bool) -> Shape {
        let mut c: Vec<u32> = m.pus.iter().map(|p| p.core).collect();
        c.sort_unstable();
        c.dedup();
        Shape {
            cores: c.len(),
            pus: m.pus.len(),
            nodes: m.nodes.iter().filter(|n| !n.local_cpus.is_empty()).count(),
            l3s: m.domains(Level::L3).map_or(0, |d| d.len()),
            iters: if quick { 3 } else { 7 },
            scale: estimate::Scale::of(m),
        }
    }
}

/// The seed studies `--studies` adds: (section, title).
pub const STUDIES: [(&str, &str); 4] = [
    ("placement", "thread placement suite (KSR1)"),
    ("collectives", "collective communication suite (KSR)"),
    (
        "earth",
        "remote operations and latency hiding suite (EARTH)",
    ),
    ("mpi", "MPI rank-to-rank latency matrix"),
];

/// The battery for this machine; `quick` keeps it within a minute or two on a small
/// machine; `studies` adds the seed studies (KSR, EARTH, MPI) after the machine's.
pub fn plan(m: &Machine, quick: bool, studies: bool) -> Vec<Step> {
    let sh = Shape::of(m, quick);
    let mut v = vec![step(
        "machine",
        "topology",
        Experiment::Topo,
        estimate::TOPOLOGY,
    )];
    hierarchy(&sh, quick, &mut v);
    bandwidths(&sh, &mut v);
    scaling(m, &sh, &mut v);
    sharing(m, quick, sh.iters, sh.cores, sh.nodes, &mut v);
    matrices(m, &sh, &mut v);
    intervention(&sh, &mut v);
    if sh.nodes <= 1 {
        v.push(skipped("model", "latency model fit", "one NUMA node: every latency is local, so no remote penalty or per-hop delay can be fitted".into()));
    }
    if studies {
        suites(m, quick, sh.cores, sh.pus, &mut v);
        v.push(mpi_matrix(quick, sh.cores));
    } else {
        for (section, title) in STUDIES {
            v.push(skipped(
                section,
                title,
                "a seed study: give --studies to run it".into(),
            ));
        }
    }
    v
}

/// The memory-hierarchy sweep and the latency of lines in each state.
fn hierarchy(sh: &Shape, quick: bool, v: &mut Vec<Step>) {
    v.push(step(
        "hierarchy",
        "memory-hierarchy sweep",
        Experiment::Latency(latency::Options {
            sweep: Some(estimate::sweep_range(quick).into()),
            iterations: sh.iters,
            ..Default::default()
        }),
        estimate::sweep(quick, sh.scale),
    ));
    let one_core = || {
        format!(
            "one core ({}): helper threads need a second core",
            numalab_results::words::count(sh.pus as u64, "CPU")
        )
    };
    let states: &[&str] = if sh.cores >= 3 {
        &["uown", "shrd:2", "cexh", "cexm", "dexd", "dext"]
    } else {
        &["uown", "cexh", "cexm", "dexd", "dext"]
    };
    for s in states {
        let title = format!("latency, lines {s}");
        if sh.cores < 2 && *s != "uown" {
            v.push(skipped("states", &title, one_core()));
        } else {
            let o = latency::Options {
                state: s.to_string(),
                iterations: sh.iters,
                ..Default::default()
            };
            let secs = estimate::state(s, quick, sh.scale);
            v.push(step("states", &title, Experiment::Latency(o), secs));
        }
    }
}

/// The bandwidth kernels on one thread and, with several CPUs, on all of them.
fn bandwidths(sh: &Shape, v: &mut Vec<Step>) {
    let secs = estimate::bandwidth_one(sh.scale) * estimate::passes(sh.iters);
    let one = bandwidth::Options {
        kernel: "all".into(),
        iterations: sh.iters,
        ..Default::default()
    };
    v.push(step(
        "bandwidth",
        "bandwidth kernels, 1 thread",
        Experiment::Bandwidth(one),
        secs,
    ));
    // MLC's injection table (all reads, 3:1, 2:1, 1:1, writes, triad) against each
    // memory node: the first screen's mix columns.
    v.push(step(
        "bandwidth-mix",
        "injection table, all cores per memory node",
        Experiment::Bandwidth(bandwidth::Options {
            injection: true,
            iterations: sh.iters,
            ..Default::default()
        }),
        estimate::injection(sh.nodes, sh.scale) * estimate::passes(sh.iters),
    ));
    if sh.pus > 1 {
        let all = bandwidth::Options {
            kernel: "readv,rdsh,zero,nt,copy".into(),
            crew: numalab_bench::crew::CrewOptions {
                count: Some(sh.pus),
                ..Default::default()
            },
            mp: true,
            iterations: sh.iters,
            ..Default::default()
        };
        v.push(step(
            "bandwidth",
            "bandwidth kernels, all threads",
            Experiment::Bandwidth(all),
            estimate::bandwidth_all(sh.pus, sh.scale) * estimate::passes(sh.iters),
        ));
    }
}

/// Thread counts of the scaling table on a node of `cores` cores: 1, 2, 4 … and all.
fn scaling_counts(cores: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1), |k| Some(k * 2))
        .take_while(|k| *k < cores)
        .collect();
    v.push(cores.max(1));
    v
}

/// The thread-scaling table: `readv` from each node's own memory with 1, 2, 4 … and
/// all of its cores (one thread per core, compact), all threads' bytes summed.
fn scaling(m: &Machine, sh: &Shape, v: &mut Vec<Step>) {
    for n in m.nodes.iter().filter(|n| !n.local_cpus.is_empty()) {
        let mut cores: Vec<u32> = m
            .pus
            .iter()
            .filter(|p| p.node == Some(n.os))
            .map(|p| p.core)
            .collect();
        cores.sort_unstable();
        cores.dedup();
        for k in scaling_counts(cores.len()) {
            let o = bandwidth::Options {
                kernel: "readv".into(),
                crew: numalab_bench::crew::CrewOptions {
                    cpu: format!("node:{}", n.os),
                    count: Some(k),
                    mem_node: format!("node:{}", n.os),
                    ..Default::default()
                },
                mp: true,
                iterations: sh.iters,
                ..Default::default()
            };
            let title = format!(
                "bandwidth scaling, node {}, {k} thread{}",
                n.os,
                if k == 1 { "" } else { "s" }
            );
            v.push(step(
                "bandwidth",
                &title,
                Experiment::Bandwidth(o),
                estimate::scaling(k, sh.scale) * estimate::passes(sh.iters),
            ));
        }
    }
}

/// The initiator × memory matrices per node (or L3), or why there is none.
fn matrices(m: &Machine, sh: &Shape, v: &mut Vec<Step>) {
    let level = if sh.nodes > 1 {
        "node"
    } else if sh.l3s > 1 {
        "l3"
    } else {
        let why = "one NUMA node and one L3 domain: there is no initiator × memory matrix to draw"
            .to_string();
        v.push(skipped("matrix", "latency and bandwidth matrices", why));
        return;
    };
    let cells = (sh.nodes.max(sh.l3s) * m.memory_nodes().len()) as f64;
    for what in ["latency", "bandwidth"] {
        let o = matrix::Options {
            what: what.into(),
            level: level.into(),
            iterations: sh.iters,
            ..Default::default()
        };
        let title = format!("{what} matrix per {level}");
        v.push(step(
            "matrix",
            &title,
            Experiment::Matrix(o),
            estimate::matrix(cells),
        ));
    }
}

/// The intervention placements, which need two nodes and two cores.
fn intervention(sh: &Shape, v: &mut Vec<Step>) {
    if sh.nodes > 1 && sh.cores >= 2 {
        let o = intervene::Options {
            iterations: sh.iters,
            ..Default::default()
        };
        v.push(step(
            "intervene",
            "intervention placements",
            Experiment::Intervene(o),
            estimate::intervene(sh.nodes),
        ));
    } else {
        v.push(skipped(
            "intervene",
            "intervention placements",
            "one NUMA node: the placements need owner, requestor and home on two nodes".into(),
        ));
    }
}

/// The rank × rank matrix with one rank per core (at least two), small messages; a
/// step marked unavailable, with the reason, where mpirun cannot be found.
fn mpi_matrix(quick: bool, cores: usize) -> Step {
    let title = "MPI rank-to-rank latency matrix";
    match numalab_mpi::launch::find_mpirun() {
        Ok(_) => {
            let ranks = cores.max(2);
            let o = numalab_mpi::matrix::Options {
                size: 8,
                iterations: if quick { 500 } else { 5000 },
                warmup: 50,
                ..Default::default()
            };
            let pairs = (ranks * (ranks - 1) / 2) as f64;
            step(
                "mpi",
                title,
                Experiment::MpiMatrix(ranks, o),
                estimate::mpi(pairs, quick),
            )
        }
        Err(e) => skipped("mpi", title, e.to_string()),
    }
}

/// Steps between cores: core-to-core pairs, the invalidation sweep, loaded latency.
fn sharing(m: &Machine, quick: bool, iters: usize, cores: usize, nodes: usize, v: &mut Vec<Step>) {
    let pus = m.pus.len();
    let one_core = || {
        format!(
            "one core ({}): helper threads need a second core",
            numalab_results::words::count(pus as u64, "CPU")
        )
    };
    let cpus = c2c_cpus(m, if quick { 8 } else { 16 });
    if cpus.len() >= 2 {
        let list = numalab_topo::cpulist::format(&cpus);
        v.push(step(
            "c2c",
            &format!("core-to-core pairs of CPUs {list}"),
            Experiment::C2c(c2c::Options {
                cpus: Some(list.clone()),
                round_trips: if quick { 5000 } else { 20000 },
                iterations: iters,
                ..Default::default()
            }),
            estimate::c2c(cpus.len()),
        ));
    } else {
        v.push(skipped("c2c", "core to core", "one CPU: no pairs".into()));
    }
    if cores >= 2 {
        v.push(step(
            "invalidate",
            "invalidation sweep",
            Experiment::Invalidate(invalidate::Options {
                iterations: iters,
                ..Default::default()
            }),
            estimate::invalidate(nodes),
        ));
        // Mess's family, compact: reads only, 50/50 and writes only, seven paces from
        // near idle to unthrottled, against every memory node from its nearest CPUs.
        for node in m.memory_nodes() {
            // The chase on the node's own first CPU; a CPU-less node's is the nearest one's.
            let cpu = m.pus.iter().find(|p| p.node == Some(node));
            let (writes, delays) = ("0,50,100", "5000,1000,400,150,50,10,0");
            let points = 1 + writes.split(',').count() * delays.split(',').count();
            let loaded = loaded::Options {
                cpu: cpu.map_or("compact".into(), |p| p.os.to_string()),
                mem_node: node.to_string(),
                writes: Some(writes.into()),
                delays: Some(delays.into()),
                iterations: iters,
                size: quick.then(|| "64M".into()),
                ..Default::default()
            };
            v.push(step(
                "loaded",
                &format!("loaded latency family, memory node {node}"),
                Experiment::Loaded(loaded),
                estimate::loaded(points, quick, estimate::Scale::of(m)),
            ));
        }
    } else {
        v.push(skipped("invalidate", "invalidation sweep", one_core()));
        v.push(skipped(
            "loaded",
            "loaded latency",
            "one core: injectors need a second core".into(),
        ));
    }
}

/// The seed suites as steps: placement, collectives and earth.
fn suites(m: &Machine, quick: bool, cores: usize, pus: usize, v: &mut Vec<Step>) {
    let _ = m;
    if pus >= 2 {
        v.push(step(
            "placement",
            "thread placement suite (KSR1)",
            Experiment::Placement(placement::Options {
                size: quick.then(|| "64K".into()),
                iterations: if quick { 3 } else { 7 },
                ..Default::default()
            }),
            estimate::placement(pus, quick),
        ));
        v.push(step(
            "collectives",
            "collective communication suite (KSR)",
            Experiment::Collectives(collectives::Options {
                sizes: if quick { "1K,4K" } else { "1K,4K,16K,64K" }.into(),
                iterations: if quick { 3 } else { 9 },
                ..Default::default()
            }),
            estimate::collectives(pus, quick),
        ));
    } else {
        let why = || "one CPU: readers and threads need a second CPU".to_string();
        v.push(skipped("placement", "thread placement suite (KSR1)", why()));
        v.push(skipped(
            "collectives",
            "collective communication suite (KSR)",
            why(),
        ));
    }
    if cores >= 2 {
        let o = if quick {
            earth::Options {
                groups: "1,8".into(),
                chunks: Some("64,1024".into()),
                multipliers: "1,4".into(),
                loop_n: 1024,
                mlp_size: Some("8M".into()),
                accesses: Some(4096),
                iterations: 2,
                ..Default::default()
            }
        } else {
            earth::Options::default()
        };
        v.push(step(
            "earth",
            "remote operations and latency hiding suite (EARTH)",
            Experiment::Earth(o),
            estimate::earth(quick),
        ));
    } else {
        v.push(skipped(
            "earth",
            "remote operations and latency hiding suite (EARTH)",
            "one core: the helper thread needs a second core".into(),
        ));
    }
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
        let p = plan(&big, false, true);
        for s in ["matrix", "intervene", "c2c", "invalidate"] {
            assert!(p.iter().any(|x| x.section == s && x.skip.is_none()), "{s}");
        }
        // Representative CPUs: bounded, not every core.
        let c = c2c_cpus(&big, 16);
        assert!(c.len() <= 16 && c.len() >= 8);
        let one = machine("16em64t-4s2c2t.xml");
        let p = plan(&one, true, true);
        // One node: matrices come from the L3 domains if there are several, else skip.
        assert!(p
            .iter()
            .any(|x| x.section == "intervene" && x.skip.is_some()));
        assert!(p.iter().any(|x| x.section == "model" && x.skip.is_some()));
        // The seed suites are steps with their own sections.
        for s in ["placement", "collectives", "earth"] {
            assert!(p.iter().any(|x| x.section == s && x.skip.is_none()), "{s}");
        }
        // One MPI matrix step: a rank per core where mpirun is found, else the reason.
        let mpi: Vec<&Step> = p.iter().filter(|x| x.section == "mpi").collect();
        assert_eq!(mpi.len(), 1);
        match &mpi[0].skip {
            None => assert_eq!(mpi[0].args[..4], ["mpi", "matrix", "--ranks", "8"]),
            Some(why) => assert!(why.contains("mpirun"), "{why}"),
        }
    }

    #[test]
    fn seed_studies_run_only_when_asked() {
        let big = machine("64amd64-4s2n4ca2co.xml");
        let without = plan(&big, true, false);
        for (section, _) in STUDIES {
            let s = without.iter().find(|x| x.section == section).unwrap();
            assert!(
                s.skip.as_deref().unwrap().contains("--studies"),
                "{section}"
            );
        }
        // The memory answer's steps do not depend on it.
        let with = plan(&big, true, true);
        for x in without.iter().filter(|x| x.skip.is_none()) {
            assert!(with.iter().any(|y| y.args == x.args), "{:?}", x.args);
        }
        assert!(with
            .iter()
            .any(|x| x.section == "earth" && x.skip.is_none()));
        assert!(without
            .iter()
            .any(|x| x.args.contains(&"--injection".to_string())));
    }

    #[test]
    fn bandwidth_scales_from_one_to_all_cores_on_every_node() {
        assert_eq!(scaling_counts(1), [1]);
        assert_eq!(scaling_counts(2), [1, 2]);
        assert_eq!(scaling_counts(6), [1, 2, 4, 6]);
        assert_eq!(scaling_counts(8), [1, 2, 4, 8]);
        let big = machine("64amd64-4s2n4ca2co.xml");
        let p = plan(&big, true, false);
        for n in big.nodes.iter().filter(|n| !n.local_cpus.is_empty()) {
            let on = format!("node:{}", n.os);
            let steps: Vec<&Step> = p
                .iter()
                .filter(|x| {
                    x.title
                        .starts_with(&format!("bandwidth scaling, node {},", n.os))
                })
                .collect();
            assert!(steps.len() >= 2, "node {}", n.os);
            for s in steps {
                assert_eq!(
                    s.args.iter().filter(|a| **a == on).count(),
                    2,
                    "{:?}",
                    s.args
                );
            }
        }
    }

    #[test]
    fn argv_names_only_what_differs_from_the_defaults() {
        let e = Experiment::Latency(latency::Options {
            sweep: Some("4K-1G".into()),
            iterations: 7,
            ..Default::default()
        });
        assert_eq!(argv(&e), ["latency", "--sweep", "--iterations", "7"]);
        let e = Experiment::Bandwidth(bandwidth::Options {
            kernel: "readv,nt".into(),
            crew: numalab_bench::crew::CrewOptions {
                count: Some(4),
                ..Default::default()
            },
            mp: true,
            iterations: 3,
            ..Default::default()
        });
        assert_eq!(
            argv(&e),
            [
                "bandwidth",
                "--kernel",
                "readv,nt",
                "-n",
                "4",
                "--mp",
                "--iterations",
                "3"
            ]
        );
        let e = Experiment::Matrix(matrix::Options::default());
        assert_eq!(argv(&e), ["matrix", "latency", "--level", "node"]);
        assert_eq!(
            argv(&Experiment::Earth(earth::Options {
                loop_n: 1024,
                ..Default::default()
            })),
            ["suite", "earth", "--loop-n", "1024"]
        );
    }
}
