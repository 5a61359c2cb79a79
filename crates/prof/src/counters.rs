//! Hardware counters through perf_event_open (perf-event2): per-thread core
//! counters and per-socket uncore counters, read with time_enabled/time_running so
//! multiplexed counts can be scaled.

use crate::pmu::{self, CpuId, Pmu, Wanted};
use crate::trace::CounterDesc;
use perf_event::events::{Event, Hardware};
use perf_event::{Builder, Counter, ReadFormat};
use perf_event_open_sys::bindings::perf_event_attr;
use std::path::Path;

/// A PMU event by type and config words.
#[derive(Debug, Clone, Copy)]
pub struct PmuEvent {
    /// perf_event_attr.type.
    pub ty: u32,
    /// config, config1, config2.
    pub config: [u64; 3],
}

impl Event for PmuEvent {
    fn update_attrs(self, attr: &mut perf_event_attr) {
        attr.type_ = self.ty;
        attr.config = self.config[0];
        attr.config1 = self.config[1];
        attr.config2 = self.config[2];
    }
}

/// One reading: raw count and the times the kernel reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// Raw count.
    pub count: u64,
    /// ns the counter was enabled.
    pub enabled_ns: u64,
    /// ns it actually counted (less when multiplexed).
    pub running_ns: u64,
}

/// Difference of two readings, scaled for multiplexing: Δcount · Δenabled / Δrunning.
/// None when the counter never ran in the interval (no estimate is possible).
pub fn scaled_delta(a: &Reading, b: &Reading) -> Option<f64> {
    let dc = b.count.checked_sub(a.count)? as f64;
    let de = b.enabled_ns.checked_sub(a.enabled_ns)? as f64;
    let dr = b.running_ns.checked_sub(a.running_ns)? as f64;
    if dr <= 0.0 {
        return (de <= 0.0 && dc == 0.0).then_some(0.0);
    }
    Some(dc * de / dr)
}

/// Read a counter with its times.
pub fn read(c: &mut Counter) -> std::io::Result<Reading> {
    let d = c.read_full()?;
    Ok(Reading {
        count: d.count(),
        enabled_ns: d.time_enabled().map_or(0, |t| t.as_nanos() as u64),
        running_ns: d.time_running().map_or(0, |t| t.as_nanos() as u64),
    })
}

fn times() -> ReadFormat {
    ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING
}

/// What a thread's core counters are: generic events plus the vendor's DRAM fills.
#[derive(Debug, Clone)]
pub struct CoreSet {
    /// Descriptors (error set when the event cannot be opened here).
    pub descs: Vec<CounterDesc>,
    events: Vec<Option<PmuEvent>>,
}

fn desc(field: &str, event: &str, pmu: &str, encoding: &str, ev: Option<PmuEvent>) -> CounterDesc {
    CounterDesc {
        field: field.into(),
        event: event.into(),
        pmu: pmu.into(),
        encoding: encoding.into(),
        perf_type: ev.map_or(0, |e| e.ty),
        config: ev.map_or(0, |e| e.config[0]),
        scale: 1.0,
        unit: "count".into(),
        scope: "thread".into(),
        node: None,
        error: None,
    }
}

impl CoreSet {
    /// Resolve the core events for this CPU against the sysfs PMUs under `sys`.
    pub fn resolve(sys: &Path, id: Option<&CpuId>) -> CoreSet {
        let hw = |h: Hardware| PmuEvent {
            ty: 0, // PERF_TYPE_HARDWARE
            config: [h.0, 0, 0],
        };
        let mut descs = vec![];
        let mut events = vec![];
        for (field, name, h) in [
            ("cycles", "cycles", Hardware::CPU_CYCLES),
            ("instructions", "instructions", Hardware::INSTRUCTIONS),
            ("llc_misses", "cache-misses (LLC)", Hardware::CACHE_MISSES),
        ] {
            let e = hw(h);
            descs.push(desc(
                field,
                name,
                "generic",
                &format!("hardware:{}", h.0),
                Some(e),
            ));
            events.push(Some(e));
        }
        let cpu = Pmu::load(&sys.join("bus/event_source/devices/cpu")).map_err(|_| {
            "no core PMU 'cpu' in sysfs (bus/event_source/devices/cpu): no hardware counters here, e.g. a VM without a virtual PMU".to_string()
        });
        match id
            .ok_or_else(|| "CPU vendor unknown".to_string())
            .and_then(pmu::dram_events)
        {
            Ok(wanted) => {
                for w in wanted {
                    let enc = cpu.clone().and_then(|p| {
                        let c = p.encode(&pmu::parse_terms(&w.terms)?)?;
                        Ok(PmuEvent {
                            ty: p.ty,
                            config: c,
                        })
                    });
                    let mut d = desc(
                        w.field,
                        &w.event,
                        "cpu",
                        &w.terms,
                        enc.as_ref().ok().copied(),
                    );
                    d.error = enc.as_ref().err().cloned();
                    descs.push(d);
                    events.push(enc.ok());
                }
            }
            Err(why) => {
                for f in ["dram_local", "dram_remote"] {
                    let mut d = desc(f, "-", "cpu", "", None);
                    d.error = Some(why.clone());
                    descs.push(d);
                    events.push(None);
                }
            }
        }
        CoreSet { descs, events }
    }

    /// Try every event on the calling thread; record why each fails. Returns true
    /// when any hardware counter works here.
    pub fn probe(&mut self) -> bool {
        let mut any = false;
        for (d, e) in self.descs.iter_mut().zip(&self.events) {
            let Some(e) = e else { continue };
            match Builder::new(*e).observe_self().any_cpu().build() {
                Ok(_) => any = true,
                Err(err) => d.error = Some(open_error(&err)),
            }
        }
        any
    }

    /// Open the working events on one thread: (field, counter) pairs.
    pub fn open(&self, tid: i32) -> (Vec<(String, Counter)>, Vec<String>) {
        let mut ok = vec![];
        let mut failed = vec![];
        for (d, e) in self.descs.iter().zip(&self.events) {
            let (Some(e), None) = (e, &d.error) else {
                continue;
            };
            let r = Builder::new(*e)
                .observe_pid(tid)
                .any_cpu()
                .read_format(times())
                .enabled(true)
                .build();
            match r {
                Ok(c) => ok.push((d.field.clone(), c)),
                Err(err) => failed.push(format!("{}: {}", d.field, open_error(&err))),
            }
        }
        (ok, failed)
    }
}

/// An uncore counter opened on one CPU, attributed to that CPU's node.
pub struct Uncore {
    /// Descriptor.
    pub desc: CounterDesc,
    /// The open counter, when it could be opened.
    pub counter: Option<Counter>,
}

/// Open the memory-controller counters found under `sys` (one per cpumask CPU).
pub fn open_uncore(sys: &Path, node_of: impl Fn(u32) -> Option<u32>) -> Vec<Uncore> {
    let mut out = vec![];
    for (p, w) in pmu::uncore_events(&pmu::pmus(sys)) {
        for &cpu in &p.cpumask {
            out.push(open_one(&p, &w, cpu, node_of(cpu)));
        }
    }
    out
}

fn open_one(p: &Pmu, w: &Wanted, cpu: u32, node: Option<u32>) -> Uncore {
    let enc = pmu::parse_terms(&w.terms).and_then(|t| p.encode(&t));
    let mut d = CounterDesc {
        field: format!("{}.{}", w.field, p.name),
        event: w.event.clone(),
        pmu: p.name.clone(),
        encoding: w.terms.clone(),
        perf_type: p.ty,
        config: enc.as_ref().map_or(0, |c| c[0]),
        scale: w.scale,
        unit: w.unit.clone(),
        scope: "node".into(),
        node,
        error: None,
    };
    let counter = match enc {
        Err(e) => {
            d.error = Some(e);
            None
        }
        Ok(c) => {
            let ev = PmuEvent {
                ty: p.ty,
                config: c,
            };
            match Builder::new(ev)
                .any_pid()
                .one_cpu(cpu as usize)
                .read_format(times())
                .enabled(true)
                .build()
            {
                Ok(c) => Some(c),
                Err(e) => {
                    d.error = Some(open_error(&e));
                    None
                }
            }
        }
    };
    Uncore { desc: d, counter }
}

/// perf_event_open errors in words a user can act on.
pub fn open_error(e: &std::io::Error) -> String {
    let hint = match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
            " (no such hardware event here: no PMU, or a VM without a virtual PMU)"
        }
        Some(libc::EACCES) | Some(libc::EPERM) => {
            " (not permitted: lower /proc/sys/kernel/perf_event_paranoid or grant CAP_PERFMON)"
        }
        Some(libc::EINVAL) => " (the kernel rejects this encoding on this CPU)",
        _ => "",
    };
    format!("perf_event_open failed: {e}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiplexed_counts_are_scaled_by_enabled_over_running() {
        let a = Reading {
            count: 100,
            enabled_ns: 1000,
            running_ns: 1000,
        };
        let b = Reading {
            count: 600,
            enabled_ns: 3000,
            running_ns: 2000,
        };
        // 500 counted in 1000 ns of running over 2000 ns enabled → 1000.
        assert_eq!(scaled_delta(&a, &b), Some(1000.0));
        let never = Reading {
            count: 100,
            enabled_ns: 5000,
            running_ns: 1000,
        };
        assert_eq!(scaled_delta(&a, &never), None);
        assert_eq!(scaled_delta(&b, &a), None, "counters do not run backwards");
    }

    #[test]
    fn probing_names_each_failure() {
        let mut s = CoreSet::resolve(Path::new("/sys"), None);
        let any = s.probe();
        for d in &s.descs {
            // Either it opened, or the descriptor says why not.
            assert!(any || d.error.is_some(), "{d:?}");
        }
        assert!(s.descs.iter().any(|d| d.field == "dram_local"));
    }
}
