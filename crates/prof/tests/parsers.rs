//! Property tests of every prof parser: /proc and sysfs text, PMU format and
//! event terms, and trace files. Arbitrary input never panics (in particular no
//! arithmetic overflow on absurd counts), refusals name what they refuse, and
//! well-formed input parses to the values it holds.

use numalab_prof::{pmu, procfs, trace};
use proptest::prelude::*;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn proc_text_never_panics(s in "\\PC{0,200}", n in any::<u64>(), m in any::<u64>()) {
        // Random text, and text shaped like each file with absurd numbers in it.
        for text in [
            s.clone(),
            format!("N0={n} N1={m} kernelpagesize_kB={m}\n{s}"),
            format!("cpu0 {n} {m} {n} {m} {n} {m} {n} {m}\ncpu1 1 2 3\n{s}"),
            format!("Node 0 MemTotal: {n} kB\nNode 0 MemFree: {m} kB\n"),
            format!("voluntary_ctxt_switches: {n}\nnonvoluntary_ctxt_switches: {s}\n"),
            format!("se.nr_migrations : {n}\n{s}"),
            format!("{n} {m} 3\n"),
            format!("nr_x {n}\n{s} {m}\n"),
        ] {
            let _ = procfs::parse_stat(&text);
            let _ = procfs::parse_schedstat(&text);
            let _ = procfs::parse_ctxt(&text);
            let _ = procfs::parse_migrations(&text);
            let _ = procfs::parse_numa_maps(&text);
            let _ = procfs::parse_kv(&text);
            let _ = procfs::parse_node_meminfo(&text);
            for (busy, total) in procfs::parse_cpu_times(&text).values() {
                prop_assert!(busy <= total);
            }
            let _ = pmu::parse_cpuinfo(&text);
        }
    }

    #[test]
    fn stat_lines_keep_any_command_name(comm in "[ -~]{0,16}", fields in prop::collection::vec(0u64..1 << 40, 50)) {
        // proc(5): "pid (comm) state f4 f5 …"; comm may hold spaces and parentheses.
        let rest: Vec<String> = fields.iter().map(u64::to_string).collect();
        let line = format!("42 ({comm}) S {}", rest.join(" "));
        let parsed = procfs::parse_stat(&line);
        if fields[39 - 4] > u64::from(u32::MAX) {
            // No CPU has such a number: refused, not truncated.
            prop_assert!(parsed.is_none());
            return Ok(());
        }
        let st = parsed.unwrap();
        prop_assert_eq!(&st.comm, &comm);
        prop_assert_eq!(st.state, 'S');
        // Field n (numbered from 3 = state) sits at fields[n - 4].
        prop_assert_eq!(st.minflt, fields[10 - 4]);
        prop_assert_eq!(st.utime, fields[14 - 4]);
        prop_assert_eq!(st.cpu as u64, fields[39 - 4]);
    }

    #[test]
    fn pmu_formats(s in "(config|config1|config2|cfg)?:?[0-9,\\-]{0,12}|\\PC{0,16}") {
        match pmu::parse_format(&s) {
            Ok(bits) => {
                for b in bits {
                    prop_assert!(b.lo <= b.hi && b.hi <= 63 && b.word <= 2);
                }
            }
            Err(e) => prop_assert!(e.contains(s.trim()), "{} does not name {}", e, s),
        }
    }

    #[test]
    fn pmu_terms(s in "([a-z]{1,6}(=(0x)?[0-9a-f]{0,17})?,?){0,4}|\\PC{0,16}") {
        match pmu::parse_terms(&s) {
            Ok(terms) => prop_assert!(terms.iter().all(|(k, _)| !k.contains(','))),
            Err(e) => prop_assert!(
                s.split(',').any(|t| !t.trim().is_empty() && e.contains(t.trim())),
                "{} names no term of {}", e, s
            ),
        }
    }

    #[test]
    fn traces_never_panic(cut in 0usize..100_000, at in 0usize..100_000, byte in any::<u8>(), junk in prop::collection::vec(any::<u8>(), 0..64)) {
        let good = fixture("two-socket.trace");
        // Truncated anywhere: a torn tail is read (and flagged), never a panic.
        let _ = trace::parse(&good[..cut.min(good.len())]);
        // One byte changed anywhere.
        let mut bad = good.clone();
        let i = at % bad.len();
        bad[i] = byte;
        let _ = trace::parse(&bad);
        // Garbage, and garbage after a valid prefix.
        let _ = trace::parse(&junk);
        let mut tail = good[..cut.min(good.len())].to_vec();
        tail.extend_from_slice(&junk);
        let _ = trace::parse(&tail);
    }
}

#[test]
fn the_fixture_trace_parses() {
    assert!(trace::parse(&fixture("two-socket.trace")).is_ok());
}
