//! The summary block's HTML: the paragraph, the first screen's answer blocks, then
//! one row of cards per group, each explanation beside the figure it explains.

use super::{describe, Block, Card, Group};
use crate::report::esc;
use std::collections::BTreeSet;
use std::fmt::Write;

const CARD_STYLE: &str =
    ".summary{margin:.6em 0 1em}.summary p.shape{max-width:70em;margin:.3em 0 .6em}\
.cardrow{display:flex;flex-wrap:wrap;gap:.5em;align-items:flex-start;margin:.2em 0 .5em}\
.cardrow h3{flex:0 0 9em;font-size:.9em;margin:.4em 0;color:#555}\
.card{border:1px solid #bbb;border-radius:5px;padding:.3em .6em;min-width:9em;background:#fafafa}\
.card .t{font-weight:bold;font-size:.9em}.card .d{color:#666;font-size:.75em}\
.card .fig{display:block;color:#123;text-decoration:none;margin-top:.15em}\
.card .v{font-size:1.15em;font-weight:bold}.card .l{font-size:.75em;color:#555}\
.card .s{font-size:.7em;color:#777}.card .n{font-size:.7em;color:#555;max-width:26em}";

/// The summary block's HTML: the paragraph, the answer blocks, then one row of cards
/// per group. Every figure links to its section and shows its spread; an empty list
/// says so.
pub fn html(cards: &[Card], blocks: &[Block]) -> String {
    html_with(cards, blocks, true)
}

/// The summary block, with figures linked to their sections or not (a page without
/// the sections, like compare's, has nothing to link to).
pub fn html_with(cards: &[Card], blocks: &[Block], links: bool) -> String {
    let id = if links { " id=\"summary\"" } else { "" };
    let mut s = format!("<style>{CARD_STYLE}</style><div class=\"summary\"{id}>");
    if cards.is_empty() && blocks.is_empty() {
        s.push_str("<p class=\"absent\">No headline figures in these records.</p></div>");
        return s;
    }
    if !cards.is_empty() {
        let _ = write!(s, "<p class=\"shape\">{}</p>", esc(&describe(cards)));
    }
    for b in blocks {
        s.push_str(&b.html);
    }
    let mut said: BTreeSet<&str> = BTreeSet::new();
    let mut group: Option<Group> = None;
    for c in cards {
        if group != Some(c.group) {
            if group.is_some() {
                s.push_str("</div>");
            }
            let _ = write!(
                s,
                "<div class=\"cardrow\" data-group=\"{:?}\"><h3>{}</h3>",
                c.group,
                c.group.title()
            );
            group = Some(c.group);
        }
        card(&mut s, c, links, &mut said);
    }
    if group.is_some() {
        s.push_str("</div>");
    }
    s.push_str("</div>");
    s
}

/// One card: title, detail, figures, and its explanation when not said already.
fn card<'a>(s: &mut String, c: &'a Card, links: bool, said: &mut BTreeSet<&'a str>) {
    let _ = write!(
        s,
        "<div class=\"card\"><div class=\"t\">{}</div>",
        esc(&c.title)
    );
    if let Some(d) = &c.detail {
        let _ = write!(s, "<div class=\"d\">{}</div>", esc(d));
    }
    for f in &c.figures {
        let spread = f
            .spread
            .as_ref()
            .map(|sp| {
                format!(
                    "<span class=\"s\" title=\"{}\"> {}</span>",
                    esc(&sp.what),
                    esc(&f.spread_text())
                )
            })
            .unwrap_or_default();
        let (open, close) = if links {
            (
                format!("<a class=\"fig\" href=\"#{}\">", esc(&f.section)),
                "</a>",
            )
        } else {
            ("<span class=\"fig\">".to_string(), "</span>")
        };
        let _ = write!(
            s,
            "{open}<span class=\"v\">{}</span>{spread}<br><span class=\"l\">{}</span>{close}",
            esc(&f.value_text()),
            esc(&f.label)
        );
    }
    // A machine card's remark is in the paragraph; the others explain this card.
    if let Some(r) = c.remark.as_deref().filter(|_| c.group != Group::Machine) {
        if said.insert(r) {
            let _ = write!(s, "<div class=\"n\">{}</div>", esc(r));
        }
    }
    s.push_str("</div>");
}
