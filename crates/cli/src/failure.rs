//! How a command ends: a verdict's exit code, or a failure with its code
//! and message (docs/architecture.md, exit codes).

/// A failure that ends the command, with its exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    /// Bad usage or configuration: exit code 2.
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: 2,
            message: message.into(),
        }
    }

    /// The run could not complete: exit code 3.
    pub fn incomplete(message: impl Into<String>) -> Self {
        Failure {
            code: 3,
            message: message.into(),
        }
    }
}

/// Exit code of a finished test: 0 when every verdict passes, 1 otherwise.
pub fn verdict_code(passed: bool) -> u8 {
    if passed {
        0
    } else {
        1
    }
}

pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::incomplete(format!("cannot start the async runtime: {e}")))
}
