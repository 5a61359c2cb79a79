//! The survey's own step records: no section of their own; the report reads them for
//! why a section is absent, and the first screen says where single-CPU steps measured
//! when their default CPU was busy.

use super::quiet::CpuChoice;
use numalab_results::present::Presenter;
use numalab_results::summary::Block;
use numalab_results::Record;

/// The survey's step records.
pub struct SurveyPresenter;

impl Presenter for SurveyPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["survey"]
    }

    fn answer(&self, answers: &[Record]) -> Option<Block> {
        let lines = placed(answers);
        if lines.is_empty() {
            return None;
        }
        let esc = numalab_results::report::esc;
        Some(Block {
            html: lines
                .iter()
                .map(|l| format!("<p class=\"cpu-choice\">{}</p>", esc(l)))
                .collect(),
            text: lines.iter().map(|l| format!("{l}\n")).collect(),
        })
    }
}

/// One line per (CPU, default CPU) the survey's single-CPU steps measured on whose
/// default was busy: the first step's figures, and how many steps measured there.
fn placed(records: &[Record]) -> Vec<String> {
    let mut seen: Vec<(u32, u32, String, usize)> = Vec::new();
    let choices = records
        .iter()
        .filter(|r| r.kind == "survey")
        .filter_map(|r| {
            serde_json::from_value::<CpuChoice>(r.parameters["cpu_choice"].clone()).ok()
        });
    for c in choices {
        let Some(line) = c.words() else { continue };
        match seen.iter_mut().find(|s| (s.0, s.1) == (c.cpu, c.default)) {
            Some(s) => s.3 += 1,
            None => seen.push((c.cpu, c.default, line, 1)),
        }
    }
    seen.into_iter()
        .map(|(cpu, _, line, n)| {
            let steps = numalab_results::words::count(n as u64, "single-CPU step");
            let at = format!("measured on CPU {cpu}");
            format!("{}.", line.replacen(&at, &format!("{at} ({steps})"), 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::disturb::CpuBusy;
    use numalab_results::Provenance;

    fn step(c: Option<CpuChoice>) -> Record {
        let mut r = Record::new(
            "survey",
            "latency",
            Provenance::collect("t", "none"),
            serde_json::json!({ "section": "states" }),
        );
        if let Some(c) = c {
            r.parameters["cpu_choice"] = serde_json::to_value(c).unwrap();
        }
        r
    }

    fn choice(cpu: u32, busy0: f64) -> CpuChoice {
        let b = |cpu, busy| CpuBusy {
            cpu,
            busy,
            niced: 0.0,
            steal: 0.0,
            niced_competes: false,
            running: vec![],
        };
        CpuChoice {
            cpu,
            default: 0,
            margin: 0.1,
            busy: vec![b(0, busy0), b(1, 0.01)],
        }
    }

    #[test]
    fn the_first_screen_says_once_where_steps_left_a_busy_cpu() {
        let recs = [
            step(Some(choice(1, 0.98))),
            step(None),
            step(Some(choice(1, 0.97))),
            step(Some(choice(0, 0.02))),
        ];
        let b = SurveyPresenter.answer(&recs).unwrap();
        assert_eq!(
            b.text,
            "measured on CPU 1 (2 single-CPU steps): CPU 0 was 98 % busy with other work.\n"
        );
        assert!(b.html.contains("class=\"cpu-choice\""), "{}", b.html);
        // Quiet defaults: nothing to say.
        assert!(SurveyPresenter.answer(&recs[1..2]).is_none());
        assert!(SurveyPresenter.answer(&recs[3..]).is_none());
    }
}
