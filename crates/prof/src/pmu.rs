//! PMUs as sysfs describes them (bus/event_source/devices/*: type, cpumask, format/,
//! events/) and the vendor events numalab wants from them.
//!
//! Written by hand: perf-event2's DynamicBuilder reads one format range per field,
//! but AMD's core PMU spreads `event` over two ("config:0-7,32-35"), and the
//! vendor's local/remote DRAM events are not sysfs aliases at all (they live in
//! perf's compiled-in pmu-events tables), so the few needed are listed here with
//! their public encodings.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Bits of one format range: destination word (0 config, 1 config1, 2 config2), lo..=hi.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bits {
    /// 0 = config, 1 = config1, 2 = config2.
    pub word: usize,
    /// Lowest bit.
    pub lo: u32,
    /// Highest bit, inclusive.
    pub hi: u32,
}

/// One PMU from sysfs.
#[derive(Debug, Clone)]
pub struct Pmu {
    /// Directory name ("cpu", "uncore_imc_0", "amd_umc_0").
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// perf_event_attr.type.
    pub ty: u32,
    /// Field name → ranges.
    pub formats: BTreeMap<String, Vec<Bits>>,
    /// CPUs to open it on (uncore: one per socket or die), empty for core PMUs.
    pub cpumask: Vec<u32>,
}

/// Parse one format file ("config:0-7,32-35", "config1:0-63", "config:21").
pub fn parse_format(s: &str) -> Result<Vec<Bits>, String> {
    let s = s.trim();
    let (dest, ranges) = s
        .split_once(':')
        .ok_or_else(|| format!("format '{s}' has no ':'"))?;
    let word = match dest {
        "config" => 0,
        "config1" => 1,
        "config2" => 2,
        _ => return Err(format!("format '{s}': unknown word '{dest}'")),
    };
    ranges
        .split(',')
        .map(|r| {
            let (lo, hi) = r.split_once('-').unwrap_or((r, r));
            let lo: u32 = lo.trim().parse().map_err(|_| format!("format '{s}'"))?;
            let hi: u32 = hi.trim().parse().map_err(|_| format!("format '{s}'"))?;
            if lo > hi || hi > 63 {
                return Err(format!("format '{s}': bad range {r}"));
            }
            Ok(Bits { word, lo, hi })
        })
        .collect()
}

/// Parse event terms ("event=0x04,umask=0x03", "event=0xff" or a bare flag "edge").
pub fn parse_terms(s: &str) -> Result<Vec<(String, u64)>, String> {
    s.trim()
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            let (k, v) = t.split_once('=').unwrap_or((t, "1"));
            let v = v.trim();
            let n = if let Some(h) = v.strip_prefix("0x") {
                u64::from_str_radix(h, 16)
            } else {
                v.parse()
            }
            .map_err(|_| format!("term '{t}' has no numeric value"))?;
            Ok((k.trim().to_string(), n))
        })
        .collect()
}

impl Pmu {
    /// Read a PMU directory.
    pub fn load(dir: &Path) -> Result<Pmu, String> {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let ty = fs::read_to_string(dir.join("type"))
            .map_err(|e| format!("{name}/type: {e}"))?
            .trim()
            .parse()
            .map_err(|_| format!("{name}/type is not a number"))?;
        let mut formats = BTreeMap::new();
        if let Ok(d) = fs::read_dir(dir.join("format")) {
            for e in d.flatten() {
                let f = e.file_name().to_string_lossy().to_string();
                let text = fs::read_to_string(e.path()).map_err(|e| format!("{name}: {e}"))?;
                formats.insert(f, parse_format(&text).map_err(|e| format!("{name}: {e}"))?);
            }
        }
        let cpumask = fs::read_to_string(dir.join("cpumask"))
            .ok()
            .and_then(|s| numalab_topo::cpulist::parse("cpumask", s.trim()).ok())
            .unwrap_or_default();
        Ok(Pmu {
            name,
            dir: dir.to_path_buf(),
            ty,
            formats,
            cpumask,
        })
    }

    /// config, config1, config2 for these terms.
    pub fn encode(&self, terms: &[(String, u64)]) -> Result<[u64; 3], String> {
        let mut w = [0u64; 3];
        for (k, v) in terms {
            let ranges = self
                .formats
                .get(k)
                .ok_or_else(|| format!("PMU {} has no field '{k}'", self.name))?;
            let mut rest = *v;
            for b in ranges {
                let width = b.hi - b.lo + 1;
                let mask = if width == 64 {
                    u64::MAX
                } else {
                    (1u64 << width) - 1
                };
                w[b.word] |= (rest & mask) << b.lo;
                rest = if width == 64 { 0 } else { rest >> width };
            }
            if rest != 0 {
                return Err(format!(
                    "value {v:#x} does not fit field '{k}' of PMU {}",
                    self.name
                ));
            }
        }
        Ok(w)
    }

    /// A sysfs event alias: its terms, scale and unit.
    pub fn alias(&self, event: &str) -> Option<(String, f64, String)> {
        let ev = self.dir.join("events");
        let terms = fs::read_to_string(ev.join(event)).ok()?.trim().to_string();
        let scale = fs::read_to_string(ev.join(format!("{event}.scale")))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(1.0);
        let unit = fs::read_to_string(ev.join(format!("{event}.unit")))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "count".into());
        Some((terms, scale, unit))
    }
}

/// Every PMU under SYS/bus/event_source/devices, by name.
pub fn pmus(sys: &Path) -> Vec<Pmu> {
    let mut v: Vec<Pmu> = fs::read_dir(sys.join("bus/event_source/devices"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| Pmu::load(&e.path()).ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// The CPU's vendor, family and model (from /proc/cpuinfo).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuId {
    /// "GenuineIntel", "AuthenticAMD", …
    pub vendor: String,
    /// Family number.
    pub family: u32,
    /// Model number.
    pub model: u32,
}

/// Parse the first processor block of /proc/cpuinfo.
pub fn parse_cpuinfo(s: &str) -> Option<CpuId> {
    let get = |k: &str| {
        s.lines().find_map(|l| {
            let (a, b) = l.split_once(':')?;
            (a.trim() == k).then(|| b.trim().to_string())
        })
    };
    Some(CpuId {
        vendor: get("vendor_id")?,
        family: get("cpu family")?.parse().ok()?,
        model: get("model")?.parse().ok()?,
    })
}

/// A counter wanted: trace field, vendor event name, PMU, terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    /// Field name in samples.
    pub field: &'static str,
    /// Vendor event name.
    pub event: String,
    /// PMU name (or prefix for uncore instances).
    pub pmu: String,
    /// Terms.
    pub terms: String,
    /// Scale to `unit`.
    pub scale: f64,
    /// Unit after scaling.
    pub unit: String,
}

/// Local and remote DRAM fill events for this CPU, or why none is known.
pub fn dram_events(id: &CpuId) -> Result<Vec<Wanted>, String> {
    let mk = |field, event: &str, terms: &str| Wanted {
        field,
        event: event.into(),
        pmu: "cpu".into(),
        terms: terms.into(),
        scale: 1.0,
        unit: "count".into(),
    };
    match (id.vendor.as_str(), id.family) {
        // Server parts with MEM_LOAD_L3_MISS_RETIRED.{LOCAL,REMOTE}_DRAM (EventCode 0xd3):
        // Skylake/Cascade Lake-SP, Ice Lake-SP, Sapphire/Emerald Rapids, Granite Rapids.
        ("GenuineIntel", 6) if [0x55, 0x6a, 0x6c, 0x8f, 0xcf, 0xad, 0xae].contains(&id.model) => {
            Ok(vec![
                mk(
                    "dram_local",
                    "MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM",
                    "event=0xd3,umask=0x01",
                ),
                mk(
                    "dram_remote",
                    "MEM_LOAD_L3_MISS_RETIRED.REMOTE_DRAM",
                    "event=0xd3,umask=0x02",
                ),
            ])
        }
        // Zen 1/2: ls_refills_from_sys (0x43), local and remote DRAM unit masks.
        ("AuthenticAMD", 0x17) => Ok(vec![
            mk(
                "dram_local",
                "ls_refills_from_sys.ls_mabresp_lcl_dram",
                "event=0x43,umask=0x08",
            ),
            mk(
                "dram_remote",
                "ls_refills_from_sys.ls_mabresp_rmt_dram",
                "event=0x43,umask=0x40",
            ),
        ]),
        // Zen 3/4/5: ls_any_fills_from_sys (0x44), near and far DRAM/IO.
        ("AuthenticAMD", 0x19 | 0x1a) => Ok(vec![
            mk(
                "dram_local",
                "ls_any_fills_from_sys.dram_io_near",
                "event=0x44,umask=0x08",
            ),
            mk(
                "dram_remote",
                "ls_any_fills_from_sys.dram_io_far",
                "event=0x44,umask=0x40",
            ),
        ]),
        _ => Err(format!(
            "no local/remote DRAM fill event known for {} family {:#x} model {:#x}",
            id.vendor, id.family, id.model
        )),
    }
}

/// Memory-controller read/write counters for the uncore PMUs present.
pub fn uncore_events(pmus: &[Pmu]) -> Vec<(Pmu, Wanted)> {
    let mut out = vec![];
    for p in pmus {
        let pairs: &[(&'static str, &str, &str)] =
            if p.name.starts_with("uncore_imc_") && !p.name.contains("free_running") {
                &[
                    ("cas_read", "cas_count_read", ""),
                    ("cas_write", "cas_count_write", ""),
                ]
            } else if p.name.starts_with("amd_umc_") {
                // Zen 4+ UMC: CAS commands, reads and writes (64 B each).
                &[
                    ("cas_read", "umc_cas_cmd.rd", "event=0x0a,rdwrmask=0x1"),
                    ("cas_write", "umc_cas_cmd.wr", "event=0x0a,rdwrmask=0x2"),
                ]
            } else {
                continue;
            };
        for (field, event, fallback) in pairs {
            let (terms, scale, unit) = match p.alias(event) {
                Some(a) => a,
                None if !fallback.is_empty() => {
                    (fallback.to_string(), 64.0 / 1048576.0, "MiB".into())
                }
                None => continue,
            };
            out.push((
                p.clone(),
                Wanted {
                    field,
                    event: (*event).into(),
                    pmu: p.name.clone(),
                    terms,
                    scale,
                    unit,
                },
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_fields_are_spread_over_their_ranges() {
        let r = parse_format("config:0-7,32-35\n").unwrap();
        assert_eq!(r.len(), 2);
        let p = Pmu {
            name: "cpu".into(),
            dir: "/nonexistent".into(),
            ty: 4,
            formats: [
                ("event".to_string(), r),
                ("umask".to_string(), parse_format("config:8-15").unwrap()),
            ]
            .into(),
            cpumask: vec![],
        };
        // Event 0x144: low byte 0x44 in bits 0-7, the 0x1 in bits 32-35.
        let w = p
            .encode(&parse_terms("event=0x144,umask=0x08").unwrap())
            .unwrap();
        assert_eq!(w[0], 0x44 | (0x08 << 8) | (1u64 << 32));
        assert!(p.encode(&parse_terms("event=0x1000").unwrap()).is_err());
        assert!(p.encode(&parse_terms("cmask=1").unwrap()).is_err());
    }

    #[test]
    fn terms_and_formats_reject_garbage() {
        assert_eq!(
            parse_terms("event=0x04,umask=3,edge").unwrap()[2],
            ("edge".into(), 1)
        );
        assert!(parse_terms("event=?").is_err());
        assert!(parse_format("config3:0-1").is_err());
        assert!(parse_format("config:9-2").is_err());
    }

    #[test]
    fn dram_events_by_vendor() {
        let zen5 = CpuId {
            vendor: "AuthenticAMD".into(),
            family: 0x1a,
            model: 2,
        };
        assert_eq!(
            dram_events(&zen5).unwrap()[1].terms,
            "event=0x44,umask=0x40"
        );
        let spr = CpuId {
            vendor: "GenuineIntel".into(),
            family: 6,
            model: 0x8f,
        };
        assert_eq!(
            dram_events(&spr).unwrap()[0].event,
            "MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM"
        );
        let laptop = CpuId {
            vendor: "GenuineIntel".into(),
            family: 6,
            model: 0x8c,
        };
        assert!(dram_events(&laptop).unwrap_err().contains("0x8c"));
    }
}
