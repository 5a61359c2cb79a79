//! The one registry of presentations: every record kind numalab emits, and how it is
//! shown, one line per presenter. `numalab report`, the survey's report and its
//! summary all go through this list; adding an experiment adds one line here.
//! The order is the report's section order.

use numalab_results::present::{self, Presenter};
use numalab_results::Record;

/// Every presenter, in report order.
pub static REGISTRY: &[&dyn Presenter] = &[
    &numalab_bench::machine_present::MachinePresenter,
    &numalab_bench::answer::AnswerPresenter,
    &numalab_bench::latency::StatesPresenter,
    &numalab_bench::latency::SweepPresenter,
    &numalab_bench::bandwidth::BandwidthPresenter,
    &numalab_bench::bandwidth::MixPresenter,
    &numalab_bench::c2c::C2cPresenter,
    &numalab_bench::matrix::MatrixPresenter,
    &numalab_bench::invalidate::InvalidatePresenter,
    &numalab_bench::intervene::IntervenePresenter,
    &numalab_bench::loaded::LoadedPresenter,
    &numalab_results::model_present::ModelPresenter,
    &numalab_suites::placement::PlacementPresenter,
    &numalab_suites::collectives::CollectivesPresenter,
    &numalab_suites::collectives::mpi::CollectivesMpiPresenter,
    &numalab_suites::earth::EarthPresenter,
    &numalab_suites::earth::mpi::EarthMpiPresenter,
    &numalab_dsm::present::DsmPresenter,
    &crate::advise::AdvicePresenter,
    &crate::tiers::TiersPresenter,
    &crate::cluster::ClusterPresenter,
    &numalab_mpi::p2p::P2pPresenter,
    &numalab_mpi::matrix::MatrixPresenter,
    &numalab_mpi::ranks::RanksPresenter,
    &numalab_bench::machine_present::PlanPresenter,
    &crate::survey::SurveyPresenter,
];

/// The self-contained HTML report of `records`.
pub fn render(records: &[Record], title: &str) -> String {
    present::render(REGISTRY, records, title)
}

/// The report of an unfinished run, with the steps not measured listed first.
pub fn render_partial(records: &[Record], title: &str, missing: &[String]) -> String {
    present::render_partial(REGISTRY, records, title, missing)
}

/// `records` as readable text: each presenter's text, in registry order.
pub fn text(records: &[Record]) -> String {
    present::text(REGISTRY, records)
}

/// The summary of `records` as terminal text: the paragraph and every card's figures.
pub fn summary(records: &[Record]) -> String {
    present::summary_text(REGISTRY, records)
}

/// The summary cards of `records`, merged across presenters.
pub fn cards(records: &[Record]) -> Vec<numalab_results::summary::Card> {
    present::cards(REGISTRY, records)
}

/// The presenter of `kind`, if numalab emits it.
pub fn presenter(kind: &str) -> Option<&'static dyn Presenter> {
    present::find(REGISTRY, kind)
}

#[cfg(test)]
mod tests;
