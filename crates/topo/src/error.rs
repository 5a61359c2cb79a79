//! Errors of the topology and placement layer.

use thiserror::Error;

/// Everything that can go wrong while reading a topology, planning or binding.
///
/// `is_user_error` tells the CLI which ones are the user's input (exit 2).
#[derive(Debug, Error)]
pub enum Error {
    /// A placement, size or page-size specification that does not parse.
    #[error("invalid {what} '{value}': {valid}")]
    BadSpec {
        /// Which argument was bad ("thread spec", "memory spec", ...).
        what: &'static str,
        /// The bad value as given.
        value: String,
        /// What would have been valid.
        valid: String,
    },
    /// A well-formed request that this machine cannot satisfy (CPU, node, size, pages).
    #[error("{0}")]
    Unsatisfiable(String),
    /// An hwloc XML or synthetic description that could not be loaded.
    #[error("cannot load topology from '{source_name}': {reason}")]
    BadTopology {
        /// The file or string given.
        source_name: String,
        /// Why it failed.
        reason: String,
    },
    /// Bad user input, with its whole one-line message (the value and what is valid).
    #[error("{0}")]
    Input(String),
    /// A system call or hwloc call that failed at run time.
    #[error("{0}")]
    System(String),
    /// Placement verification found memory or a thread somewhere else than asked.
    #[error("placement verification failed: {0}")]
    Verification(String),
}

impl Error {
    /// True when the error comes from the user's input (CLI exit status 2).
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            Error::BadSpec { .. }
                | Error::Unsatisfiable(_)
                | Error::BadTopology { .. }
                | Error::Input(_)
        )
    }

    /// Shorthand for an [`Error::Input`].
    pub fn input(msg: impl Into<String>) -> Self {
        Error::Input(msg.into())
    }

    /// Shorthand for a [`Error::BadSpec`].
    pub fn bad(what: &'static str, value: impl Into<String>, valid: impl Into<String>) -> Self {
        Error::BadSpec {
            what,
            value: value.into(),
            valid: valid.into(),
        }
    }
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, Error>;
