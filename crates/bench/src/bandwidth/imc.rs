//! Memory-controller counters around a mixed measurement (uncore_imc CAS counts on
//! Intel, amd_umc on Zen 4+): where they open, the bytes they saw on the target nodes
//! go beside the traffic estimate, labelled with their source; where they do not,
//! the record says why (never a zero).

use numalab_prof::counters::{open_uncore, read, scaled_delta, Reading, Uncore};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

/// What the counters saw over one measurement, or why there is no figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterFigure {
    /// The counters read ("uncore_imc_0..5 cas_count_read/cas_count_write (perf)").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Bytes read from memory on the target nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes: Option<u64>,
    /// Bytes written to memory on the target nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes: Option<u64>,
    /// Read + write bytes over the window's wall time, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gbps: Option<f64>,
    /// What the window spans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<String>,
    /// Why there is no figure ("counters unavailable: …").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl CounterFigure {
    /// No figure, and why.
    pub fn unavailable(why: impl Into<String>) -> CounterFigure {
        CounterFigure {
            source: None,
            read_bytes: None,
            write_bytes: None,
            gbps: None,
            span: None,
            unavailable: Some(format!("counters unavailable: {}", why.into())),
        }
    }
}

/// Open memory-controller counters on `nodes`, read at start.
pub struct Window {
    counters: Vec<(Uncore, Reading)>,
    start: Instant,
}

/// Bytes one count stands for: the sysfs scale to MiB, or a 64-byte CAS.
fn bytes_per_count(u: &Uncore) -> f64 {
    match u.desc.unit.as_str() {
        "MiB" => u.desc.scale * (1u64 << 20) as f64,
        "B" | "bytes" => u.desc.scale,
        _ => 64.0,
    }
}

impl Window {
    /// Open the counters of `nodes` (`node_of` maps a CPU to its node), or say why not.
    pub fn open(
        nodes: &[u32],
        node_of: impl Fn(u32) -> Option<u32>,
    ) -> Result<Window, CounterFigure> {
        let all = open_uncore(Path::new("/sys"), node_of);
        if all.is_empty() {
            return Err(CounterFigure::unavailable(
                "no memory-controller PMU (uncore_imc_*, amd_umc_*) under /sys/bus/event_source/devices",
            ));
        }
        let mut errors = Vec::new();
        let mut counters = Vec::new();
        for mut u in all {
            if !u.desc.node.is_some_and(|n| nodes.contains(&n)) {
                continue;
            }
            match u.counter.as_mut().map(read) {
                Some(Ok(r)) => counters.push((u, r)),
                Some(Err(e)) => errors.push(format!("{}: {e}", u.desc.pmu)),
                None => errors.push(format!(
                    "{}: {}",
                    u.desc.pmu,
                    u.desc.error.clone().unwrap_or_default()
                )),
            }
        }
        if counters.is_empty() {
            let why = errors.first().cloned().unwrap_or_else(|| {
                "no memory-controller counter belongs to the target node".into()
            });
            return Err(CounterFigure::unavailable(why));
        }
        Ok(Window {
            counters,
            start: Instant::now(),
        })
    }

    /// Read again and sum the bytes since [`Window::open`].
    pub fn close(mut self, span: &str) -> CounterFigure {
        let secs = self.start.elapsed().as_secs_f64();
        let (mut rd, mut wr) = (0.0, 0.0);
        let mut pmus: Vec<String> = Vec::new();
        for (u, r0) in &mut self.counters {
            let per = bytes_per_count(u);
            let Some(Ok(r1)) = u.counter.as_mut().map(read) else {
                return CounterFigure::unavailable(format!("{}: read failed", u.desc.pmu));
            };
            let Some(d) = scaled_delta(r0, &r1) else {
                return CounterFigure::unavailable(format!("{}: never scheduled", u.desc.pmu));
            };
            if u.desc.field.starts_with("cas_write") {
                wr += d * per;
            } else {
                rd += d * per;
            }
            if !pmus.contains(&u.desc.pmu) {
                pmus.push(u.desc.pmu.clone());
            }
        }
        let mut ev: Vec<&str> = self
            .counters
            .iter()
            .map(|(u, _)| u.desc.event.as_str())
            .collect();
        ev.sort();
        ev.dedup();
        CounterFigure {
            source: Some(format!("{} {} (perf)", pmus.join(","), ev.join("/"))),
            read_bytes: Some(rd as u64),
            write_bytes: Some(wr as u64),
            gbps: Some((rd + wr) / secs / 1e9),
            span: Some(span.into()),
            unavailable: None,
        }
    }
}
