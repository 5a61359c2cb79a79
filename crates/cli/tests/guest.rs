//! numalab on real multi-node kernels: QEMU guests (TCG) booted from the layouts in
//! tests/guests/*.layout by tests/guests/run, running tests/guests/guest.sh. The guest
//! prints each command's output between marker lines; here it is parsed and held against
//! what the layout implies: placement, verification and records, never a timing (TCG
//! models none). Needs qemu-system-x86_64, cpio, a static busybox and Debian's kernel
//! package (fetched by the runner); without them the test fails unless
//! NUMALAB_SKIP_GUEST=1 is set (which skips them in any case).

mod common;
mod guest_checks;

use guest_checks::{Checks, Layout, Section};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a guest may run (the runner's own timeout is a little shorter).
const GUEST_LIMIT: Duration = Duration::from_secs(900);
/// The line tests/guests/run prints before booting a guest the emulator killed again.
const REBOOT: &str = "@@@ GUEST-REBOOT\n";
/// One guest at a time: a TCG guest's vCPUs each want a host CPU, so two guests on a
/// 2-CPU host each ran half as fast (four-socket 440 s beside cxl-like, 250 s alone),
/// and the slower CI host took it past GUEST_LIMIT.
static ONE_GUEST: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Why this host cannot boot guests, if it cannot.
fn missing_tools() -> Option<String> {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return Some("the guests are x86-64 Linux".into());
    }
    let have = |t: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {t}"))
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let mut missing: Vec<&str> = ["qemu-system-x86_64", "cpio", "busybox", "timeout"]
        .into_iter()
        .filter(|t| !have(t))
        .collect();
    if !have("apt-get") && !root().join("target/guest/vmlinuz").exists() {
        missing.push("apt-get (to fetch Debian's kernel)");
    }
    (!missing.is_empty()).then(|| format!("missing {}", missing.join(", ")))
}

/// The release binary, built now if the sources changed (cargo does nothing otherwise):
/// TCG runs a debug build too slowly.
fn release_binary() -> PathBuf {
    let out = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "numalab"])
        .current_dir(root())
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo build --release: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let debug = PathBuf::from(env!("CARGO_BIN_EXE_numalab"));
    let bin = debug
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join("release/numalab");
    assert!(bin.exists(), "no {}", bin.display());
    bin
}

/// Boot `layout`, run every command of the guest script, and return the console (None
/// when skipped).
fn boot(layout: &str) -> Option<String> {
    boot_with(layout, "")
}

/// Boot `layout` and run the guest script's commands named in `only` (all when empty).
fn boot_with(layout: &str, only: &str) -> Option<String> {
    // Re-check the console a previous run kept, without booting (for work on the checks).
    if std::env::var_os("NUMALAB_GUEST_REUSE").is_some() {
        let kept = root().join(format!("target/guest/{layout}.console"));
        return Some(std::fs::read_to_string(&kept).unwrap_or_else(|e| panic!("{kept:?}: {e}")));
    }
    if std::env::var_os("NUMALAB_SKIP_GUEST").is_some() {
        eprintln!("skipped: multi-node guest {layout} (NUMALAB_SKIP_GUEST set)");
        return None;
    }
    if let Some(why) = missing_tools() {
        panic!("cannot boot the multi-node guests: {why}; `make test` installs qemu-system-x86, cpio and busybox-static (set NUMALAB_SKIP_GUEST=1 to skip)");
    }
    let bin = release_binary();
    // A guest test that failed holding the lock poisoned it; the next still boots.
    let _one = ONE_GUEST.lock().unwrap_or_else(|e| e.into_inner());
    let t0 = Instant::now();
    let mut child = Command::new(root().join("tests/guests/run"))
        .arg(layout)
        .env("NUMALAB_BIN", &bin)
        .env("NUMALAB_GUEST_ARGS", only)
        .env(
            "NUMALAB_GUEST_TIMEOUT",
            (GUEST_LIMIT.as_secs() - 20).to_string(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tests/guests/run");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait for the guest") {
            break Some(st);
        }
        if t0.elapsed() > GUEST_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let console = String::from_utf8_lossy(&out.join().unwrap()).replace('\r', "");
    let err = err.join().unwrap();
    // A guest the emulator killed was booted again (see tests/guests/run): the checks
    // read the last boot's console only.
    let console = match console.rfind(REBOOT) {
        Some(i) => {
            eprintln!("guest {layout}: booted twice: {}", err.trim());
            console[i + REBOOT.len()..].to_string()
        }
        None => console,
    };
    // Keep the console for a look after a failure.
    let keep = root().join(format!("target/guest/{layout}.console"));
    let _ = std::fs::write(&keep, &console);
    eprintln!(
        "guest {layout}: {:.0} s wall, console in {}",
        t0.elapsed().as_secs_f64(),
        keep.display()
    );
    match status {
        None => panic!(
            "guest {layout} ran past {GUEST_LIMIT:?}: {err}\n{}",
            tail(&console)
        ),
        Some(st) if !st.success() => {
            panic!("guest {layout} failed ({st}): {err}\n{}", tail(&console))
        }
        Some(_) => Some(console),
    }
}

fn tail(s: &str) -> &str {
    let mut i = s.len().saturating_sub(4000);
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

/// The console's marked sections: `@@@ BEGIN name`, stdout, `@@@ STDERR name`, stderr,
/// `@@@ END name rc=N secs=S`.
fn sections(console: &str) -> BTreeMap<String, Section> {
    let mut out = BTreeMap::new();
    let mut cur: Option<(String, String, Option<String>)> = None;
    for line in console.lines() {
        if let Some(name) = line.strip_prefix("@@@ BEGIN ") {
            cur = Some((name.trim().to_string(), String::new(), None));
        } else if line.starts_with("@@@ STDERR ") {
            if let Some(c) = cur.as_mut() {
                c.2 = Some(String::new());
            }
        } else if let Some(rest) = line.strip_prefix("@@@ END ") {
            if let Some((name, o, e)) = cur.take() {
                let field = |k: &str| -> Option<i64> {
                    rest.split_whitespace()
                        .find_map(|w| w.strip_prefix(k))
                        .and_then(|v| v.parse().ok())
                };
                out.insert(
                    name,
                    Section {
                        out: o,
                        err: e.unwrap_or_default(),
                        rc: field("rc=").unwrap_or(-1) as i32,
                        secs: field("secs=").unwrap_or(0) as u64,
                    },
                );
            }
        } else if let Some((_, o, e)) = cur.as_mut() {
            let buf = e.as_mut().unwrap_or(o);
            buf.push_str(line);
            buf.push('\n');
        }
    }
    out
}

fn run_layout(name: &str) {
    let layout = Layout::load(&root().join(format!("tests/guests/{name}.layout")));
    let Some(console) = boot(name) else {
        return;
    };
    let secs = sections(&console);
    let mut c = Checks::new(name, &layout, &secs);
    c.all();
    c.finish();
}

#[test]
fn cxl_like_guest() {
    run_layout("cxl-like");
}

#[test]
fn four_socket_guest() {
    run_layout("four-socket");
}

/// The layouts whose HMAT Debian's 6.12 kernel turns into memory tiers.
const TIERS_LAYOUTS: [&str; 3] = ["tiers", "tiers-two-socket", "tiers-partial-hmat"];

/// Debian's 6.12 kernel forms memory tiers from the layout's HMAT values; `numalab tiers`
/// must read the kernel's tier of every node and predict the same from the HMAT, and
/// both must be the layout's `expect.tiers`. A node the layout gives no hmat-lb entry
/// has no HMAT values to read.
fn tiers_layout(name: &str) {
    let layout = Layout::load(&root().join(format!("tests/guests/{name}.layout")));
    let Some(console) = boot_with(name, "topo tiers") else {
        return;
    };
    let secs = sections(&console);
    let s = secs.get("tiers").expect("the guest ran numalab tiers");
    assert_eq!(s.rc, 0, "{}", s.err);
    let v = common::validate(s.out.as_bytes());
    let mut seen = BTreeMap::new();
    for r in v
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "tiers")
    {
        let d = &r["data"];
        let node = d["node"].as_u64().unwrap() as u32;
        assert_eq!(
            d["kernel_tier"], d["firmware_tier"],
            "{name} node {node}: {d}"
        );
        if layout.qemu.contains(&format!("target={node},")) {
            assert!(
                d["access1"]["read_latency"].as_u64().is_some_and(|l| l > 0),
                "{name} node {node}: HMAT read: {d}"
            );
        }
        seen.insert(node, d["kernel_tier"].as_u64().unwrap());
    }
    assert_eq!(seen, layout.tiers, "{name}");
    interleave_split(name, &secs);
}

/// The guest set weights 3 and 1 on nodes 0 and 1 and allocated 64 MiB under weighted
/// interleave over every memory node: each node holds its weight's share of the pages,
/// exact on whole rounds of the weights, the rest off by at most the node's weight.
fn interleave_split(name: &str, secs: &BTreeMap<String, Section>) {
    let s = secs
        .get("tiers/interleave")
        .expect("the guest ran numalab tiers --verify-interleave");
    assert_eq!(s.rc, 0, "{name}: {}", s.err);
    let v = common::validate(s.out.as_bytes());
    let sys = v
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "tiers-system")
        .expect("a tiers-system record");
    let c = &sys["data"]["interleave"];
    let num = |x: &serde_json::Value| x.as_u64().unwrap();
    let weights: BTreeMap<String, u64> = c["weights"]
        .as_object()
        .unwrap_or_else(|| panic!("{name}: no interleave check: {sys}"))
        .iter()
        .map(|(k, x)| (k.clone(), num(x)))
        .collect();
    assert_eq!((weights["0"], weights["1"]), (3, 1), "{name}: {c}");
    let pages = num(&c["pages"]);
    assert_eq!(pages, 64 << 20 >> 12, "{name}: 4 KiB pages: {c}");
    assert_eq!(num(&c["pages_missing"]), 0, "{name}: {c}");
    let total: u64 = weights.values().sum();
    let mut sum = 0;
    for (n, w) in &weights {
        let got = c["pages_per_node"][n].as_u64().unwrap_or(0);
        let whole = pages / total * w;
        assert!(
            got >= whole && got <= whole + w,
            "{name}: node {n} holds {got} pages; weight {w} of {total} gives {whole} on whole rounds: {c}"
        );
        sum += got;
    }
    assert_eq!(sum, pages, "{name}: {c}");
    assert_eq!(c["matches"], true, "{name}: {c}");
}

#[test]
fn tiers_guest() {
    tiers_layout("tiers");
}

#[test]
fn tiers_two_socket_guest() {
    tiers_layout("tiers-two-socket");
}

#[test]
fn tiers_partial_hmat_guest() {
    tiers_layout("tiers-partial-hmat");
}

#[test]
fn layouts_parse_and_agree_with_their_qemu_arguments() {
    let names = ["cxl-like", "four-socket"].into_iter().chain(TIERS_LAYOUTS);
    for name in names {
        let l = Layout::load(&root().join(format!("tests/guests/{name}.layout")));
        let n = l.cpus.len();
        assert_eq!(l.distances.len(), n, "{name}");
        assert_eq!(l.hops.len(), n, "{name}");
        for i in 0..n {
            assert_eq!(l.distances[i][i], 10, "{name}");
            for j in 0..n {
                assert_eq!(l.distances[i][j], l.distances[j][i], "{name}: symmetric");
                // Hops are the rank of the distance among the distinct values.
                let mut d: Vec<u64> = l.distances.iter().flatten().copied().collect();
                d.sort_unstable();
                d.dedup();
                let rank = d.iter().position(|&v| v == l.distances[i][j]).unwrap();
                assert_eq!(l.hops[i][j] as usize, rank, "{name} {i}->{j}");
                if i < j && l.distances[i][j] != 10 {
                    let arg = format!("-numa dist,src={i},dst={j},val={}", l.distances[i][j]);
                    assert!(l.qemu.contains(&arg), "{name}: {arg}");
                }
            }
        }
    }
}
