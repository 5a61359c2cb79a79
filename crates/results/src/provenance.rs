//! Provenance: who, where, when and under which system settings a record was made.

use serde::{Deserialize, Serialize};
use std::fs;

/// Virtualisation and containment as far as the guest can tell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Virtualization {
    /// True when the CPU reports a hypervisor (cpuinfo `hypervisor` flag).
    pub hypervisor: bool,
    /// The hypervisor's CPUID signature ("KVMKVMKVM", "Microsoft Hv", ...), x86 only.
    pub signature: Option<String>,
    /// DMI system vendor and product (e.g. "QEMU Standard PC").
    pub dmi: Option<String>,
    /// Container marker found ("docker", "podman"), if any.
    pub container: Option<String>,
    /// The hypervisor takes freed guest memory back (a virtio balloon that negotiated
    /// free page reporting): a buffer's first touch may then cost a host fault too, so
    /// setup times vary from step to step though the figures do not.
    #[serde(default)]
    pub free_page_reporting: bool,
}

/// Where and how a record was produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// numalab version.
    pub tool_version: String,
    /// The command line, as given.
    pub command_line: Vec<String>,
    /// UTC time in RFC 3339.
    pub timestamp: String,
    /// Host name.
    pub hostname: String,
    /// Kernel release and version (uname).
    pub kernel: String,
    /// CPU architecture.
    pub arch: String,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Microcode revision.
    pub microcode: Option<String>,
    /// Topology summary of the machine measured or planned against.
    pub topology: String,
    /// Where the topology came from ("this machine" or a file).
    pub topology_source: String,
    /// THP mode ("always", "madvise", "never") or why unknown.
    pub thp: String,
    /// NUMA balancing ("on", "off") or why unknown.
    pub numa_balancing: String,
    /// Frequency governors in use, or why unknown.
    pub governor: String,
    /// Virtualisation detected.
    pub virtualization: Virtualization,
    /// Other numalab measurements found running on this machine while the record
    /// was made (absent when there were none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub concurrent_runs: Vec<crate::runlock::OtherRun>,
    /// The step of the timer the figures were read with, ns (its smallest non-zero
    /// difference between two reads); absent where no timer was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_step_ns: Option<f64>,
}

fn read(path: &str) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn cpuinfo_field(key: &str) -> Option<String> {
    let text = fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// The bracketed choice in a sysfs mode file ("always [madvise] never" → "madvise").
pub fn bracketed(s: &str) -> Option<String> {
    let start = s.find('[')?;
    let end = s[start..].find(']')?;
    Some(s[start + 1..start + end].to_string())
}

/// THP mode of this machine.
pub fn thp_mode() -> String {
    match read("/sys/kernel/mm/transparent_hugepage/enabled") {
        Some(s) => bracketed(&s).unwrap_or(s),
        None => "unavailable (no transparent_hugepage in sysfs)".into(),
    }
}

/// NUMA balancing state of this machine.
pub fn numa_balancing() -> String {
    match read("/proc/sys/kernel/numa_balancing").as_deref() {
        Some("0") => "off".into(),
        Some("1") => "on".into(),
        Some(other) => format!("mode {other}"),
        None => "unavailable (kernel without NUMA balancing)".into(),
    }
}

fn governors() -> String {
    let mut govs: Vec<String> = (0..4096)
        .map_while(|c| {
            let dir = format!("/sys/devices/system/cpu/cpu{c}");
            fs::metadata(&dir).ok()?;
            Some(read(&format!("{dir}/cpufreq/scaling_governor")))
        })
        .flatten()
        .collect();
    govs.sort();
    govs.dedup();
    if govs.is_empty() {
        "unavailable (no cpufreq driver)".into()
    } else {
        govs.join(",")
    }
}

#[cfg(target_arch = "x86_64")]
// __cpuid became safe in newer Rust; the unsafe keeps older toolchains (MSRV) building.
#[allow(unused_unsafe)]
fn hypervisor_signature() -> Option<String> {
    // SAFETY: CPUID is always available on x86_64.
    let leaf1 = unsafe { std::arch::x86_64::__cpuid(1) };
    if leaf1.ecx & (1 << 31) == 0 {
        return None;
    }
    // SAFETY: as above; leaf 0x4000_0000 is reserved for hypervisors.
    let r = unsafe { std::arch::x86_64::__cpuid(0x4000_0000) };
    let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .filter(|b| *b != 0)
        .collect();
    Some(String::from_utf8_lossy(&bytes).trim().to_string())
}

#[cfg(not(target_arch = "x86_64"))]
fn hypervisor_signature() -> Option<String> {
    None
}

fn virtualization() -> Virtualization {
    let flags = cpuinfo_field("flags").unwrap_or_default();
    let dmi = match (
        read("/sys/class/dmi/id/sys_vendor"),
        read("/sys/class/dmi/id/product_name"),
    ) {
        (Some(v), Some(p)) => Some(format!("{v} {p}")),
        (v, p) => v.or(p),
    };
    let container = if fs::metadata("/.dockerenv").is_ok() {
        Some("docker".into())
    } else if fs::metadata("/run/.containerenv").is_ok() {
        Some("podman".into())
    } else {
        None
    };
    Virtualization {
        hypervisor: flags.split_whitespace().any(|f| f == "hypervisor"),
        signature: hypervisor_signature(),
        dmi,
        container,
        free_page_reporting: free_page_reporting(),
    }
}

/// Whether a virtio balloon (device 5) negotiated free page reporting (feature bit 5,
/// VIRTIO_BALLOON_F_REPORTING): sysfs lists a device's negotiated features as one
/// character per bit, bit 0 first.
pub fn free_page_reporting() -> bool {
    let Ok(devices) = fs::read_dir("/sys/bus/virtio/devices") else {
        return false;
    };
    devices.flatten().any(|d| {
        let p = d.path();
        let field = |f: &str| fs::read_to_string(p.join(f)).ok();
        balloon_reports(field("device").as_deref(), field("features").as_deref())
    })
}

/// Whether a virtio device's `device` and `features` sysfs files say: a balloon that
/// reports free pages.
fn balloon_reports(device: Option<&str>, features: Option<&str>) -> bool {
    let balloon = device.is_some_and(|d| d.trim() == "0x0005");
    balloon && features.is_some_and(|f| f.trim().as_bytes().get(5) == Some(&b'1'))
}

/// The time now, UTC, RFC 3339.
pub fn now_utc() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "unknown".into())
}

impl Provenance {
    /// Collect provenance for this run; `topology` is the summary line of the
    /// topology used and `source` where it came from.
    pub fn collect(topology: &str, source: &str) -> Provenance {
        // SAFETY: uname fills the zeroed struct.
        let mut u: libc::utsname = unsafe { std::mem::zeroed() };
        let field = |f: &[libc::c_char]| {
            // SAFETY: uname NUL-terminates each field.
            unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        };
        // SAFETY: u is a valid out pointer.
        let ok = unsafe { libc::uname(&mut u) } == 0;
        let timestamp = now_utc();
        Provenance {
            tool_version: env!("CARGO_PKG_VERSION").into(),
            command_line: std::env::args().collect(),
            timestamp,
            hostname: if ok {
                field(&u.nodename)
            } else {
                "unknown".into()
            },
            kernel: if ok {
                format!("{} {}", field(&u.release), field(&u.version))
            } else {
                "unknown".into()
            },
            arch: std::env::consts::ARCH.into(),
            cpu_model: cpuinfo_field("model name").or_else(|| cpuinfo_field("CPU part")),
            microcode: cpuinfo_field("microcode"),
            topology: topology.into(),
            topology_source: source.into(),
            thp: thp_mode(),
            numa_balancing: numa_balancing(),
            governor: governors(),
            virtualization: virtualization(),
            concurrent_runs: crate::runlock::others(),
            timer_step_ns: None,
        }
    }

    /// The warnings of a command that measures nothing (`topo`, `tiers`, `plan`): the
    /// guest topology may not be the host's; nothing about timings or disturbance.
    pub fn describing_warnings(&self) -> Vec<String> {
        let v = &self.virtualization;
        match v.hypervisor {
            true => vec![format!(
                "running under a hypervisor ({}): the guest topology may not match the host",
                v.signature
                    .as_deref()
                    .map(hypervisor_name)
                    .or(v.dmi.clone())
                    .unwrap_or_else(|| "unknown".into())
            )],
            false => Vec::new(),
        }
    }

    /// Human-readable warnings implied by the provenance (VM, THP off, ...).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        let v = &self.virtualization;
        if v.hypervisor {
            w.push(format!(
                "running under a hypervisor ({}): timings include virtualisation effects and the guest topology may not match the host",
                v.signature
                    .as_deref()
                    .map(hypervisor_name)
                    .or(v.dmi.clone())
                    .unwrap_or_else(|| "unknown".into())
            ));
        }
        if self.numa_balancing == "on" {
            w.push("NUMA balancing is on: the kernel may migrate pages during measurements".into());
        }
        for o in &self.concurrent_runs {
            w.push(crate::runlock::describe(o));
        }
        if self.thp == "always" {
            w.push("THP is 'always': numalab refuses THP on 4k buffers with madvise".into());
        }
        w
    }
}

/// A CPUID hypervisor signature as a name: the 12 bytes repeat a short name to fill
/// the registers ("KVMKVMKVM" is KVM), so the shortest repeating unit is kept.
pub fn hypervisor_name(sig: &str) -> String {
    let sig = sig.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    let n = sig.chars().count();
    (1..n)
        .filter(|k| n % k == 0)
        .map(|k| sig.chars().take(k).collect::<String>())
        .find(|unit| unit.repeat(n / unit.chars().count()) == sig)
        .unwrap_or_else(|| sig.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bracketed_modes() {
        assert_eq!(
            bracketed("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(bracketed("never"), None);
    }

    #[test]
    fn a_balloon_reports_free_pages_only_with_feature_bit_5() {
        // This guest's balloon: bits 1, 2, 5 and 7 negotiated.
        let f = "0110010100000000000000000000000010000000\n";
        assert!(balloon_reports(Some("0x0005\n"), Some(f)));
        // Another device with the same bits, or a balloon without bit 5: no.
        assert!(!balloon_reports(Some("0x0002"), Some(f)));
        assert!(!balloon_reports(Some("0x0005"), Some("0110000100")));
        assert!(!balloon_reports(Some("0x0005"), Some("01100")));
        assert!(!balloon_reports(None, Some(f)));
        assert!(!balloon_reports(Some("0x0005"), None));
    }

    #[test]
    fn collects_on_this_machine() {
        let p = Provenance::collect("1 node", "this machine");
        assert!(!p.hostname.is_empty());
        assert!(!p.kernel.is_empty());
        assert!(p.timestamp.ends_with('Z'), "{}", p.timestamp);
    }

    #[test]
    fn a_command_that_measures_nothing_names_the_hypervisor_but_no_disturbance() {
        let mut p = Provenance::collect("1 node", "this machine");
        p.virtualization.hypervisor = true;
        p.virtualization.signature = Some("KVMKVMKVM".into());
        p.numa_balancing = "on".into();
        p.concurrent_runs = vec![crate::runlock::OtherRun {
            pid: 7,
            command: "numalab latency".into(),
            started: "2026-11-27T09:00:00Z".into(),
        }];
        let measuring = p.warnings().join("\n");
        assert!(measuring.contains("timings") && measuring.contains("disturbed"));
        let describing = p.describing_warnings();
        assert_eq!(describing.len(), 1, "{describing:?}");
        assert!(describing[0].contains("(KVM)"), "{describing:?}");
        for word in ["timing", "disturb", "measurement", "KVMKVM"] {
            assert!(!describing[0].contains(word), "{word}: {describing:?}");
        }
    }
}
