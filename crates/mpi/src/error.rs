//! Errors of the MPI layer: the user's input (exit 2) or the system's (exit 1).

use std::fmt;

/// What went wrong, as one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Bad input or an unsatisfiable request: the message names the value and what is valid.
    Usage(String),
    /// MPI, the launcher or the system failed.
    System(String),
    /// A step's moved data failed its check: that step is not measured, the rest go
    /// on. The message is the failure on the rank that saw it, empty on the others.
    Check(String),
}

/// Result with this crate's error.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// True for errors the user can fix by changing the command (exit status 2).
    pub fn is_user_error(&self) -> bool {
        matches!(self, Error::Usage(_))
    }

    /// The exit status for this error.
    pub fn exit_code(&self) -> i32 {
        if self.is_user_error() {
            2
        } else {
            1
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::System(m) | Error::Check(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl From<numalab_topo::Error> for Error {
    fn from(e: numalab_topo::Error) -> Self {
        if e.is_user_error() {
            Error::Usage(e.to_string())
        } else {
            Error::System(e.to_string())
        }
    }
}
