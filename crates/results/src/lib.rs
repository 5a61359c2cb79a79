//! numalab-results: what every numalab command shares about results — the record
//! (typed statistics through `Record::stat` and `Record::median`, typed `data`),
//! provenance, statistics, model fitting, reading and writing records (tables, JSON,
//! CSV, the survey's journal), the run lock and its announcements, SVG plots, and the
//! `Presenter` trait with the HTML report and summary it renders. It sits below the
//! experiments and never names one's types.

pub mod announce;
pub mod compare;
pub mod distance;
pub mod disturb;
pub mod envvars;
mod fingerprint;
pub mod interrupt;
pub mod interval;
pub mod journal;
pub mod linfit;
pub mod model;
pub mod model_present;
pub mod outpath;
pub mod output;
pub mod partial;
pub mod plausible;
pub mod plot;
pub mod present;
pub mod provenance;
pub mod record;
pub mod report;
pub mod rescue;
pub mod runlock;
pub mod settle;
pub mod stats;
pub mod summary;
pub mod words;

pub use output::{write_records, OutputError, OutputFormat};
pub use present::Presenter;
pub use provenance::Provenance;
pub use record::{DataError, Record, Settle, Stat, Unavailable, SCHEMA_ID, SCHEMA_JSON};
pub use stats::Summary;
