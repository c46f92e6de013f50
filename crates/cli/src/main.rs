//! `probity`: reliability testing for LLM-based systems.
//!
//! Exit codes: 0 every verdict passes, 1 a verdict fails, 2 bad usage or
//! configuration, 3 the run could not complete.

mod plan;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Reliability testing for LLM-based systems, with error bars.
#[derive(Parser)]
#[command(name = "probity", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Plan retries: attempts needed for an output to pass every check (paper §4.2).
    Plan(plan::PlanArgs),
}

/// A failure that ends the command, with its exit code.
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plan(args) => plan::run(&args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}
