//! numalab-results: the result record, provenance, statistics and export
//! (readable tables, JSON, CSV) shared by every numalab command.

pub mod announce;
pub mod compare;
pub mod journal;
pub mod linfit;
pub mod model;
pub mod model_present;
pub mod output;
pub mod plot;
pub mod present;
pub mod provenance;
pub mod record;
pub mod report;
pub mod runlock;
pub mod stats;
pub mod summary;

pub use output::{write_records, OutputError, OutputFormat};
pub use present::Presenter;
pub use provenance::Provenance;
pub use record::{DataError, Record, Stat, Unavailable, SCHEMA_ID, SCHEMA_JSON};
pub use stats::Summary;
