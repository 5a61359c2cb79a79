//! numalab-results: the result record, provenance, statistics and export
//! (readable tables, JSON, CSV) shared by every numalab command.

pub mod compare;
pub mod journal;
pub mod linfit;
pub mod model;
pub mod output;
pub mod plot;
pub mod provenance;
pub mod record;
pub mod report;
mod report_sections;
mod report_suites;
pub mod runlock;
pub mod stats;

pub use output::{write_records, OutputError, OutputFormat};
pub use provenance::Provenance;
pub use record::{Record, Stat, Unavailable, SCHEMA_ID, SCHEMA_JSON};
pub use stats::Summary;
