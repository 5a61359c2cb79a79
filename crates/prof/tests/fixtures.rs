//! Derived-metric arithmetic and PMU encoding on checked-in fixtures.

use numalab_prof::metrics::{catalogue, findings, series, Index};
use numalab_prof::pmu::{self, parse_terms, Pmu};
use numalab_prof::trace;
use std::path::{Path, PathBuf};

fn fx(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(p)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

fn at(ix: &Index, m: &str, obj: &str, t_s: u64) -> f64 {
    series(ix, m)
        .into_iter()
        .find(|p| p.obj == obj && p.t_ns == t_s * 1_000_000_000)
        .unwrap_or_else(|| panic!("{m} {obj} at {t_s}s"))
        .value
}

#[test]
fn counter_metrics_scale_for_multiplexing_and_weight_by_run_time() {
    let t = trace::read(&fx("two-socket.trace")).unwrap();
    let ix = Index::new(&t);
    // t100: 1000 local, 0 remote; then 500 local counted over half the enabled time
    // (→ 1000) against 500 remote.
    assert!(close(at(&ix, "thread.local_access_ratio", "t100", 1), 1.0));
    assert!(close(
        at(&ix, "thread.local_access_ratio", "t100", 2),
        1000.0 / 1500.0
    ));
    assert!(close(at(&ix, "thread.local_access_ratio", "t101", 2), 0.25));
    // 163840 CAS reads × 6.103515625e-5 MiB = 10 MiB in 1 s = 10.48576 MB/s.
    assert!(close(at(&ix, "node.read_bw", "n0", 1), 10.48576));
    assert!(close(at(&ix, "node.read_bw", "n1", 2), 1.048576));
    assert!(close(at(&ix, "node.cpu_busy", "n0", 2), 25.0));
    assert!(close(at(&ix, "node.alloc_rate", "n0", 2), 2000.0));
    assert!(close(at(&ix, "system.hint_local_ratio", "sys", 2), 0.75));
    // 3 of 4 MiB on node 0: a thread on node 0 sees 0.75, one on node 1 sees 0.25.
    assert!(close(at(&ix, "thread.page_locality", "t100", 1), 0.75));
    assert!(close(at(&ix, "thread.page_locality", "t101", 1), 0.25));
    assert!(close(at(&ix, "thread.node", "t101", 0), 1.0));
    assert!(close(at(&ix, "thread.migrations", "t100", 2), 1.0));
    let f = findings(&ix);
    let get = |what: &str, obj: &str| {
        f.iter()
            .find(|x| x.what.starts_with(what) && x.obj == obj)
            .map(|x| x.value.clone())
            .unwrap_or_else(|| panic!("finding {what} {obj}: {f:?}"))
    };
    // Run-time weights: t100 0.5 s then 1 s, t101 1 s and 1 s.
    assert_eq!(get("local memory access ratio", "t100"), "0.778");
    assert_eq!(get("local memory access ratio", "all threads"), "0.476");
    assert_eq!(get("page locality", "all threads"), "0.464");
    assert!(get("hot node by bandwidth", "all nodes").contains("n0 serves 91%"));
    assert!(get("hot node by pages", "p100").starts_with("none"));
    assert!(get("NUMA-balancing", "sys").starts_with("0.667"));
    assert!(catalogue(&ix)
        .iter()
        .filter(|m| m.name != "node.write_bw")
        .all(|m| m.missing.is_none()));
}

#[test]
fn sysfs_aliases_and_split_fields_encode_as_the_kernel_expects() {
    let spr = fx("sysfs-spr");
    let p = Pmu::load(&spr.join("bus/event_source/devices/uncore_imc_0")).unwrap();
    assert_eq!((p.ty, p.cpumask.clone()), (24, vec![0, 56]));
    let (terms, scale, unit) = p.alias("cas_count_read").unwrap();
    assert_eq!(p.encode(&parse_terms(&terms).unwrap()).unwrap()[0], 0xcf05);
    assert_eq!((scale, unit.as_str()), (6.103515625e-5, "MiB"));
    let un = pmu::uncore_events(&pmu::pmus(&spr));
    // Two IMCs × reads and writes; the free-running PMU is not a CAS source.
    assert_eq!(un.len(), 4);
    assert!(un.iter().all(|(p, _)| !p.name.contains("free_running")));
    let cpu = Pmu::load(&spr.join("bus/event_source/devices/cpu")).unwrap();
    assert_eq!(
        cpu.encode(&parse_terms("event=0xd3,umask=0x02").unwrap())
            .unwrap()[0],
        0x02d3
    );

    let zen = fx("sysfs-zen4");
    let cpu = Pmu::load(&zen.join("bus/event_source/devices/cpu")).unwrap();
    // Zen 4's far DRAM fills: event 0x44 in bits 0-7, unit mask 0x40 in bits 8-15.
    let id = pmu::CpuId {
        vendor: "AuthenticAMD".into(),
        family: 0x19,
        model: 0x11,
    };
    let far = &pmu::dram_events(&id).unwrap()[1];
    assert_eq!(
        cpu.encode(&parse_terms(&far.terms).unwrap()).unwrap()[0],
        0x4044
    );
    // A 12-bit event reaches bits 32-35.
    assert_eq!(
        cpu.encode(&parse_terms("event=0x1c0").unwrap()).unwrap()[0],
        0xc0 | (1 << 32)
    );
    let un = pmu::uncore_events(&pmu::pmus(&zen));
    assert_eq!(
        un.len(),
        2,
        "amd_umc_0 reads and writes from the known encodings"
    );
    assert_eq!(un[0].1.terms, "event=0x0a,rdwrmask=0x1");
    let df = Pmu::load(&zen.join("bus/event_source/devices/amd_df")).unwrap();
    let w = df
        .encode(&parse_terms("event=0x3fff,umask=0xfff").unwrap())
        .unwrap()[0];
    assert_eq!(
        w,
        0xff | (0xf << 32) | (0x3 << 59) | (0xff << 8) | (0xf << 24)
    );
}
