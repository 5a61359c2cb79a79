//! The tables `info` prints and the trace report shows: one builder each, so the
//! text and the HTML always carry the same rows.

use crate::metrics::{catalogue, findings, Index};
use crate::trace::Header;

/// A table: its column names and rows.
pub struct Rows {
    /// Column names.
    pub header: &'static [&'static str],
    /// Cells.
    pub rows: Vec<Vec<String>>,
}

/// Every source with whether it works here, and what it is or why not.
pub fn sources(h: &Header) -> Rows {
    Rows {
        header: &["source", "available", "what, or why not"],
        rows: h
            .sources
            .iter()
            .map(|x| {
                let ok = if x.available { "yes" } else { "no" };
                vec![x.source.clone(), ok.into(), x.detail.clone()]
            })
            .collect(),
    }
}

/// Every hardware counter with its encoding, opened or why not.
pub fn counters(h: &Header) -> Rows {
    Rows {
        header: &["field", "event", "PMU", "encoding", "status"],
        rows: h
            .counters
            .iter()
            .map(|c| {
                vec![
                    c.field.clone(),
                    c.event.clone(),
                    c.pmu.clone(),
                    c.encoding.clone(),
                    c.error.clone().unwrap_or_else(|| "opened".into()),
                ]
            })
            .collect(),
    }
}

/// Every metric with its unit, scope, source and whether this trace gives it.
pub fn metrics(ix: &Index) -> Rows {
    Rows {
        header: &["metric", "unit", "per", "source", "derivable"],
        rows: catalogue(ix)
            .into_iter()
            .map(|m| {
                vec![
                    m.name.into(),
                    m.unit.into(),
                    m.scope.into(),
                    m.source.into(),
                    m.missing.map_or("yes".into(), |w| format!("no: {w}")),
                ]
            })
            .collect(),
    }
}

/// The findings.
pub fn found(ix: &Index) -> Rows {
    Rows {
        header: &["finding", "object", "value", "source"],
        rows: findings(ix)
            .into_iter()
            .map(|f| vec![f.what, f.obj, f.value, f.source])
            .collect(),
    }
}
