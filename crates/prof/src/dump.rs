//! `numalab dump` (sndump) as text: a trace's metric time series (or its raw sampled
//! fields) by time, as a table or JSON lines.

use crate::metrics::{self, catalogue, series, Index};
use crate::trace::{ObjKind, Trace};

/// What to dump.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Only these metrics (all derivable ones when empty).
    pub metrics: Vec<String>,
    /// Only these objects and their children (all when empty).
    pub objects: Vec<String>,
    /// The raw sampled fields instead of derived metrics.
    pub raw: bool,
    /// JSON lines instead of a table.
    pub json: bool,
}

impl Query {
    /// Check the metrics and objects against the trace; the error is one line naming
    /// the bad value and what is valid.
    pub fn check(&self, t: &Trace) -> Result<(), String> {
        let names = metrics::names();
        for m in &self.metrics {
            if self.raw {
                return Err(format!(
                    "invalid --metric '{m}' with --raw: --raw prints every sampled field"
                ));
            }
            if !names.contains(&m.as_str()) {
                return Err(format!(
                    "invalid --metric '{m}': valid metrics are {}",
                    names.join(", ")
                ));
            }
        }
        let ids: Vec<&str> = t.objects.iter().map(|o| o.id.as_str()).collect();
        match self.objects.iter().find(|o| !ids.contains(&o.as_str())) {
            Some(o) => Err(format!(
                "invalid --object '{o}': objects in this trace are {}",
                ids.join(", ")
            )),
            None => Ok(()),
        }
    }

    fn keeps(&self, obj: &str) -> bool {
        self.objects.is_empty()
            || self
                .objects
                .iter()
                .any(|o| obj == o || obj.starts_with(&format!("{o}/")))
    }
}

/// One value: time, object, metric or field, value, unit.
type Row = (u64, String, String, f64, String);

/// A raw field's unit, from the trace's header (counters by their field's stem:
/// "cas_read.uncore_imc_0" is "cas_read"); "-" when the header does not say.
fn field_unit(t: &Trace, obj_kind: &str, field: &str) -> String {
    let h = &t.header;
    h.fields
        .iter()
        .find(|f| f.name == field && f.object == obj_kind)
        .or_else(|| h.fields.iter().find(|f| f.name == field))
        .map(|f| f.unit.clone())
        .or_else(|| {
            h.counters
                .iter()
                .find(|c| c.field == field || field.starts_with(&format!("{}.", c.field)))
                .map(|c| c.unit.clone())
        })
        .unwrap_or_else(|| "-".into())
}

/// A value as text: an integer without decimals, anything else to 4 places.
fn value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}

/// The rows the query asks for, by time, and notes on metrics it cannot derive.
fn rows(t: &Trace, q: &Query) -> (Vec<Row>, Vec<String>) {
    let mut rows: Vec<Row> = vec![];
    let mut notes = vec![];
    if q.raw {
        for s in t.samples.iter().filter(|s| q.keeps(&s.obj)) {
            let kind = t
                .objects
                .iter()
                .find(|o| o.id == s.obj)
                .map(|o| match o.kind {
                    ObjKind::System => "system",
                    ObjKind::Node => "node",
                    ObjKind::Process => "process",
                    ObjKind::Thread => "thread",
                })
                .unwrap_or("");
            for (k, v) in &s.v {
                rows.push((s.t_ns, s.obj.clone(), k.clone(), *v, field_unit(t, kind, k)));
            }
        }
    } else {
        let ix = Index::new(t);
        for m in catalogue(&ix)
            .iter()
            .filter(|m| q.metrics.is_empty() || q.metrics.iter().any(|x| x == m.name))
        {
            if let Some(w) = &m.missing {
                notes.push(format!("# {}: not derivable from this trace: {w}", m.name));
                continue;
            }
            for p in series(&ix, m.name).into_iter().filter(|p| q.keeps(&p.obj)) {
                rows.push((
                    p.t_ns,
                    p.obj,
                    m.name.to_string(),
                    p.value,
                    m.unit.to_string(),
                ));
            }
        }
    }
    rows.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    (rows, notes)
}

/// The dump of `t` as the query asks: JSON lines, or notes and a table.
pub fn text(t: &Trace, q: &Query) -> String {
    let (rows, notes) = rows(t, q);
    let mut s = String::new();
    if q.json {
        for (t_ns, obj, m, v, unit) in rows {
            s.push_str(&serde_json::json!({"t_s": t_ns as f64 / 1e9, "object": obj, "metric": m, "value": v, "unit": unit}).to_string());
            s.push('\n');
        }
        return s;
    }
    for n in notes {
        s.push_str(&n);
        s.push('\n');
    }
    s.push_str(&format!(
        "{:>10} {:<14} {:<28} {:>16} {}\n",
        "t (s)",
        "object",
        if q.raw { "field" } else { "metric" },
        "value",
        "unit"
    ));
    for (t_ns, obj, m, v, unit) in rows {
        s.push_str(&format!(
            "{:>10.3} {:<14} {:<28} {:>16} {unit}\n",
            t_ns as f64 / 1e9,
            obj,
            m,
            value(v)
        ));
    }
    s
}
