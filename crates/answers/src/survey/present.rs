//! The survey's own step records: no section of their own; the report reads them for
//! why a section is absent.

use numalab_results::present::Presenter;

/// The survey's step records.
pub struct SurveyPresenter;

impl Presenter for SurveyPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["survey"]
    }
}
