//! The checks, command by command.

use super::Checks;
use serde_json::Value;
use std::collections::BTreeSet;

fn u(v: &Value) -> u32 {
    v.as_u64().map(|x| x as u32).unwrap_or(u32::MAX)
}

fn list(v: &Value) -> Vec<u32> {
    v.as_array()
        .map(|a| a.iter().map(u).collect())
        .unwrap_or_default()
}

/// Every page of a verified buffer is on `node` and none is missing.
fn all_pages_on(mem: &Value, node: u32) -> bool {
    let per = mem["pages_per_node"].as_object();
    per.is_some_and(|p| p.len() == 1 && p.contains_key(&node.to_string()))
        && mem["pages_missing"] == 0
        && mem["pages_checked"].as_u64().unwrap_or(0) > 0
        && mem["pages_per_node"][node.to_string()] == mem["pages_checked"]
}

/// Every verified thread ran where it was bound.
fn threads_ran_bound(threads: &Value) -> bool {
    threads
        .as_array()
        .is_some_and(|t| !t.is_empty() && t.iter().all(|x| x["cpu"] == x["observed_cpu"]))
}

/// A set as "1,2,3".
pub(super) fn fmt(v: &BTreeSet<u32>) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

impl Checks<'_> {
    pub(super) fn topo(&mut self) {
        let Some(r) = self.records("topo") else {
            return;
        };
        let d = &r[0]["data"];
        let l = self.l;
        let nodes: Vec<u32> = d["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| u(&n["os"]))
            .collect();
        self.expect("topo", nodes == l.nodes(), || {
            format!("nodes {nodes:?}, layout {:?}", l.nodes())
        });
        let mut cpu_less = BTreeSet::new();
        for n in d["nodes"].as_array().unwrap() {
            let os = u(&n["os"]);
            let want = l.cpus.get(&os).cloned().unwrap_or_default();
            if n["cpu_less"] == true {
                cpu_less.insert(os);
            }
            self.expect("topo", (n["cpu_less"] == true) == want.is_empty(), || {
                format!(
                    "node {os} cpu_less={} but the layout gives it CPUs {want:?}",
                    n["cpu_less"]
                )
            });
            if !want.is_empty() {
                self.expect("topo", list(&n["local_cpus"]) == want, || {
                    format!("node {os} CPUs {}, layout {want:?}", n["local_cpus"])
                });
            }
        }
        let dist: Vec<Vec<u64>> =
            serde_json::from_value(d["distances"]["values"].clone()).unwrap_or_default();
        let hops: Vec<Vec<u32>> =
            serde_json::from_value(d["distances"]["hops"].clone()).unwrap_or_default();
        self.expect("topo", dist == l.distances, || {
            format!("distances {dist:?}")
        });
        self.expect("topo", hops == l.hops, || format!("hops {hops:?}"));
        // Memory attributes: every one the layout names, with its value, and no others.
        let mut seen = 0;
        let names: BTreeSet<&str> = l.attrs.iter().map(|a| a.0.as_str()).collect();
        for attr in d["memattrs"].as_array().into_iter().flatten() {
            let name = attr["name"].as_str().unwrap_or("");
            if !names.contains(name) {
                continue;
            }
            for v in attr["values"].as_array().into_iter().flatten() {
                seen += 1;
                let init = v["initiator"].as_str().unwrap_or("");
                let found = l.attrs.iter().any(|(n, i, t, val)| {
                    n == name
                        && l.cpus[i] == super::cpu_list(init)
                        && *t == u(&v["node"])
                        && *val == v["value"].as_u64().unwrap_or(0)
                });
                self.expect("topo", found, || {
                    format!("memory attribute {name} {v} is not in the layout")
                });
            }
        }
        self.expect("topo", seen == l.attrs.len(), || {
            format!(
                "{seen} memory attribute values, layout has {}",
                l.attrs.len()
            )
        });
        self.said(
            "topo",
            format!(
                "{} nodes, CPU-less {{{}}}, distances and hops as the layout, {seen} memory attribute values as the layout",
                nodes.len(),
                fmt(&cpu_less)
            ),
        );
    }

    pub(super) fn plans(&mut self) {
        let l = self.l;
        for n in l.nodes() {
            let name = format!("plan-mem/{n}");
            let Some(r) = self.records(&name) else {
                continue;
            };
            let p = &r[0]["placement"];
            let ok = all_pages_on(&p["verified"]["memory"], n)
                && threads_ran_bound(&p["verified"]["threads"]);
            let tnodes: BTreeSet<u32> = p["resolved"]["threads"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| u(&t["node"]))
                .collect();
            self.expect(&name, ok, || format!("not proved: {}", p["verified"]));
            self.expect(&name, tnodes == l.cpu_nodes().into_iter().collect(), || {
                format!("threads on nodes {tnodes:?}")
            });
            let pages = &p["verified"]["memory"]["pages_checked"];
            self.said(
                &name,
                format!(
                    "{pages} pages all on node {n}, threads on nodes {{{}}} ran where bound",
                    fmt(&tnodes)
                ),
            );
        }
        let max_hops = l.hops[0].iter().copied().max().unwrap_or(0);
        for k in 1..=5u32 {
            let name = format!("plan-hops/{k}");
            match l.at_hops(0, k) {
                Some(want) => {
                    let Some(r) = self.records(&name) else {
                        continue;
                    };
                    let p = &r[0]["placement"];
                    let got = list(&p["resolved"]["memory"]["nodes"]);
                    self.expect(&name, got == [want], || {
                        format!("picked {got:?}, layout implies node {want}")
                    });
                    self.expect(&name, all_pages_on(&p["verified"]["memory"], want), || {
                        format!("pages not all on {want}: {}", p["verified"]["memory"])
                    });
                    self.said(&name, format!("node {want}, every page proved there"));
                }
                None => {
                    let Some(s) = self.section(&name, 2) else {
                        continue;
                    };
                    let line = s.err.trim().to_string();
                    self.expect(
                        &name,
                        line.contains(&format!("no node with memory is {k} hops")),
                        || line.clone(),
                    );
                    self.said(&name, format!("exit 2 (0..{max_hops} hops exist): {line}"));
                }
            }
        }
        let far = l
            .nodes()
            .into_iter()
            .max_by_key(|&n| (l.hop(0, n), l.dist(0, n), std::cmp::Reverse(n)))
            .unwrap();
        if let Some(r) = self.records("plan-farthest") {
            let p = &r[0]["placement"];
            let got = list(&p["resolved"]["memory"]["nodes"]);
            let ok = got == [far] && all_pages_on(&p["verified"]["memory"], far);
            self.expect("plan-farthest", ok, || {
                format!("picked {got:?}, layout implies {far}")
            });
            self.said(
                "plan-farthest",
                format!("node {far}, every page proved there"),
            );
        }
        if let Some(r) = self.records("plan-interleave") {
            let m = &r[0]["placement"]["verified"]["memory"];
            let per: BTreeSet<u32> = m["pages_per_node"]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, v)| v.as_u64().unwrap_or(0) > 0)
                .map(|(k, _)| k.parse().unwrap())
                .collect();
            let all: BTreeSet<u32> = l.nodes().into_iter().collect();
            self.expect(
                "plan-interleave",
                per == all && m["pages_missing"] == 0,
                || format!("pages on {m}"),
            );
            self.said(
                "plan-interleave",
                format!("pages per node {}", m["pages_per_node"]),
            );
        }
        if let Some(r) = self.records("plan-scatter") {
            let threads = r[0]["placement"]["resolved"]["threads"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let tn: Vec<u32> = threads.iter().map(|t| u(&t["node"])).collect();
            let cpu_nodes = l.cpu_nodes();
            let idle: Vec<u32> = l
                .nodes()
                .into_iter()
                .filter(|n| !cpu_nodes.contains(n))
                .collect();
            // Round-robin over the nodes with CPUs, wrapping round.
            let want: Vec<u32> = (0..l.nodes().len())
                .map(|i| cpu_nodes[i % cpu_nodes.len()])
                .collect();
            self.expect("plan-scatter", tn == want, || {
                format!("threads on nodes {tn:?}, expected {want:?}")
            });
            let note = r[0]["warnings"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|w| w.as_str())
                .find(|w| w.contains("skips"))
                .map(String::from);
            if idle.is_empty() {
                self.expect("plan-scatter", note.is_none(), || {
                    format!("note without idle nodes: {note:?}")
                });
            } else {
                let names = idle.iter().map(|n| n.to_string()).collect::<Vec<_>>();
                let ok = note
                    .as_deref()
                    .is_some_and(|n| names.iter().all(|x| n.contains(x.as_str())));
                self.expect("plan-scatter", ok, || {
                    format!("no note naming nodes {idle:?}: {note:?}")
                });
            }
            self.said(
                "plan-scatter",
                format!(
                    "threads on nodes {tn:?}{}",
                    note.map(|n| format!("; {n}")).unwrap_or_default()
                ),
            );
        }
    }

    pub(super) fn matrices(&mut self) {
        let l = self.l;
        let want: BTreeSet<(u32, u32)> = l
            .cpu_nodes()
            .iter()
            .flat_map(|&i| l.nodes().into_iter().map(move |n| (i, n)))
            .collect();
        for kind in ["matrix-latency", "matrix-bandwidth"] {
            let Some(r) = self.records(kind) else {
                continue;
            };
            let mut cells = BTreeSet::new();
            let mut groups = BTreeSet::new();
            for x in &r {
                let p = &x["parameters"];
                let (i, n) = (u(&p["domain"]), u(&p["mem_node"]));
                cells.insert((i, n));
                groups.insert(u(&p["hops"]));
                let name = format!("{kind} {i}->{n}");
                self.expect(&name, u(&p["hops"]) == l.hop(i, n), || {
                    format!("hops {}, layout {}", p["hops"], l.hop(i, n))
                });
                let v = &x["placement"]["verified"];
                let mems: Vec<Value> = match &v["memory"] {
                    Value::Array(a) => a.clone(),
                    m => vec![m.clone()],
                };
                let ok =
                    mems.iter().all(|m| all_pages_on(m, n)) && threads_ran_bound(&v["threads"]);
                self.expect(&name, ok, || format!("not proved: {v}"));
                let cpus_ok = list(&p["initiator_cpus"])
                    .iter()
                    .all(|&c| l.node_of(c) == Some(i));
                self.expect(&name, cpus_ok, || {
                    format!("initiator CPUs {} not on node {i}", p["initiator_cpus"])
                });
                let has_stat = x["stats"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|s| s["n"].as_u64().unwrap_or(0) > 0));
                self.expect(&name, has_stat, || "no statistic".into());
            }
            self.expect(kind, cells == want, || {
                format!("cells {cells:?}, expected {want:?}")
            });
            let hop_groups: BTreeSet<u32> = want.iter().map(|&(i, n)| l.hop(i, n)).collect();
            self.expect(kind, groups == hop_groups, || {
                format!("hop groups {groups:?}")
            });
            self.said(
                kind,
                format!(
                    "{} cells (initiators {:?} x nodes {:?}), every page proved, hop groups {{{}}}",
                    cells.len(),
                    l.cpu_nodes(),
                    l.nodes(),
                    fmt(&groups)
                ),
            );
        }
        if let Some(r) = self.records("model-fit") {
            let f = &r[0]["data"]["fit"];
            let seen: BTreeSet<u32> = list(&f["hops_seen"]).into_iter().collect();
            let hop_groups: BTreeSet<u32> = want.iter().map(|&(i, n)| l.hop(i, n)).collect();
            let ok = f["n"].as_u64() == Some(want.len() as u64) && seen == hop_groups;
            self.expect("model-fit", ok, || format!("fit {f}"));
            self.said(
                "model-fit",
                format!(
                    "fitted {} points over hops {{{}}}: {}",
                    f["n"],
                    fmt(&seen),
                    f["note"]
                ),
            );
        }
    }

    pub(super) fn intervene(&mut self) {
        let l = self.l;
        let Some(r) = self.records("intervene") else {
            return;
        };
        let req_node = 0;
        let distances = l.hop_set(req_node, &l.nodes());
        let (mut measured, mut absent) = (0, 0);
        let mut at = BTreeSet::new();
        for x in r.iter().filter(|x| x["kind"] == "intervene") {
            let p = &x["parameters"];
            let name = format!("intervene {}", x["name"].as_str().unwrap_or("?"));
            let k = u(&p["hops"]);
            let placement = p["placement"].as_str().unwrap_or("");
            if x["unavailable"].as_array().is_some_and(|a| !a.is_empty()) {
                absent += 1;
                // Only where no node with CPUs lies at that distance.
                let possible = l
                    .cpu_nodes()
                    .iter()
                    .any(|&n| n != req_node && l.hop(req_node, n) == k);
                let needs_remote_cpu = placement == "xhops=0" || placement == "yhops=0";
                self.expect(&name, needs_remote_cpu && !possible, || {
                    format!("not measured: {}", x["unavailable"])
                });
                continue;
            }
            measured += 1;
            at.insert(k);
            let (rq, ow, home) = (
                u(&p["requestor_node"]),
                u(&p["owner_node"]),
                u(&p["home_node"]),
            );
            let ok = l.node_of(u(&p["requestor_cpu"])) == Some(rq)
                && l.node_of(u(&p["owner_cpu"])) == Some(ow)
                && u(&p["requestor_cpu"]) != u(&p["owner_cpu"])
                && match placement {
                    "local" => rq == ow && ow == home && k == 0,
                    "xhops=0" => rq == home && l.hop(rq, ow) == k,
                    "yhops=0" => ow == home && l.hop(rq, home) == k,
                    "zhops=0" => rq == ow && l.hop(rq, home) == k,
                    _ => false,
                };
            self.expect(&name, ok, || {
                format!("placement does not match the layout: {p}")
            });
            let v = &x["placement"]["verified"]["threads"];
            self.expect(&name, threads_ran_bound(v), || {
                format!("threads not proved: {v}")
            });
        }
        self.expect("intervene", at == distances, || {
            format!("measured at hops {at:?}, layout has {distances:?}")
        });
        if l.cpu_nodes().len() == l.nodes().len() {
            self.expect("intervene", absent == 0, || {
                format!("{absent} placements not measured")
            });
        }
        self.said("intervene", format!("{measured} placements measured at hops {{{}}} where the layout puts them, {absent} listed as unavailable (no CPU on such a node)", fmt(&at)));
    }

    pub(super) fn invalidate(&mut self) {
        let l = self.l;
        let Some(r) = self.records("invalidate") else {
            return;
        };
        let home = u(&r[0]["parameters"]["home_node"]);
        let newest: Vec<u32> = r
            .iter()
            .map(|x| u(&x["parameters"]["newest_node"]))
            .collect();
        // Nearest first from the home node, one sharer per node with CPUs.
        let mut want = l.cpu_nodes();
        want.sort_by_key(|&n| (l.dist(home, n), n));
        self.expect("invalidate", newest == want, || {
            format!("sharer nodes {newest:?}, expected {want:?}")
        });
        for x in &r {
            let p = &x["parameters"];
            let ok = u(&p["hops"]) == l.hop(home, u(&p["newest_node"]));
            self.expect("invalidate", ok, || {
                format!("hops {} to node {}", p["hops"], p["newest_node"])
            });
            let pins = &x["data"]["samples"]["pins"];
            self.expect("invalidate", threads_ran_bound(pins), || {
                format!("pins {pins}")
            });
        }
        self.said("invalidate", format!("{} sharer counts, newest sharer on nodes {newest:?} (nearest first from node {home})", r.len()));
    }

    pub(super) fn suites(&mut self) {
        let l = self.l;
        if let Some(r) = self.records("suite-placement") {
            let parts: BTreeSet<String> = r
                .iter()
                .filter_map(|x| x["name"].as_str())
                .filter_map(|n| n.split_whitespace().next())
                .filter(|p| *p != "not")
                .map(String::from)
                .collect();
            for p in ["exp0", "suite1", "suite2", "suite3", "suite4"] {
                self.expect("suite-placement", parts.contains(p), || {
                    format!("no {p} records: {parts:?}")
                });
            }
            let measured: Vec<&Value> = r.iter().filter(|x| x["placement"].is_object()).collect();
            let domains = measured
                .first()
                .map(|x| x["placement"]["domains"].as_array().map_or(0, |d| d.len()))
                .unwrap_or(0);
            self.expect("suite-placement", domains == l.cpu_nodes().len(), || {
                format!("{domains} domains")
            });
            for x in &measured {
                let ok = x["data"]["data_checked"] == true
                    && threads_ran_bound(&x["placement"]["verified"]["threads"])
                    && x["placement"]["verified"]["memory"]["pages_missing"] == 0;
                self.expect("suite-placement", ok, || {
                    format!("{} not checked or proved", x["name"])
                });
            }
            let not_run: Vec<String> = r
                .iter()
                .flat_map(|x| x["unavailable"].as_array().cloned().unwrap_or_default())
                .map(|u| format!("{}: {}", u["feature"], u["reason"]))
                .collect();
            self.said("suite-placement", format!("parts {parts:?} over {domains} domains, {} curves' points checked and proved; not run: {not_run:?}", measured.len()));
        }
        if let Some(r) = self.records("suite-collectives") {
            let mut at = BTreeSet::new();
            for x in r
                .iter()
                .filter(|x| x["parameters"]["collective"] == "remote-read")
            {
                let p = &x["parameters"];
                let (root, reader) = (u(&p["root_cpu"]), u(&p["reader_cpu"]));
                let want = l.hop(l.node_of(root).unwrap_or(0), l.node_of(reader).unwrap_or(0));
                at.insert(u(&p["hops"]));
                self.expect("suite-collectives", u(&p["hops"]) == want, || {
                    format!("reader {reader}: hops {}, layout {want}", p["hops"])
                });
            }
            let want = l.hop_set(0, &l.cpu_nodes());
            self.expect("suite-collectives", at == want, || {
                format!("remote read at hops {at:?}, layout {want:?}")
            });
            self.said(
                "suite-collectives",
                format!(
                    "remote read from CPU 0 by every other CPU, at hops {{{}}}",
                    fmt(&at)
                ),
            );
        }
        if let Some(r) = self.records("suite-earth") {
            let mem: Vec<&Value> = r
                .iter()
                .filter(|x| {
                    x["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("mask (memory)"))
                })
                .collect();
            let worker = mem
                .first()
                .map(|x| u(&x["parameters"]["worker_node"]))
                .unwrap_or(0);
            let near = l
                .nodes()
                .into_iter()
                .filter(|&n| n != worker)
                .min_by_key(|&n| (l.dist(worker, n), n))
                .unwrap();
            let via = format!("node {near}");
            let ok =
                !mem.is_empty() && mem.iter().all(|x| x["parameters"]["u_via"] == via.as_str());
            self.expect("suite-earth", ok, || {
                format!(
                    "u not homed on {via}: {:?}",
                    mem.iter()
                        .map(|x| &x["parameters"]["u_via"])
                        .collect::<Vec<_>>()
                )
            });
            let proved = mem
                .iter()
                .all(|x| all_pages_on(&x["placement"]["verified"]["memory"], near));
            self.expect("suite-earth", proved, || {
                format!(
                    "u's pages not proved on node {near}: {}",
                    mem[0]["placement"]
                )
            });
            let checked = r
                .iter()
                .filter(|x| x["data"]["data_checked"] == true)
                .count();
            let runs = r
                .iter()
                .filter(|x| x["parameters"]["chunk"].is_number())
                .count();
            self.expect("suite-earth", checked == runs && runs > 0, || {
                format!("{checked} of {runs} runs checked")
            });
            self.said("suite-earth", format!("Loop 7 with u homed on node {near} (worker on node {worker}), its pages proved there: {} records, every run's x checked", mem.len()));
        }
    }
}
