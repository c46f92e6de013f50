//! Lines for a person on standard error: warnings, progress, the guard's
//! alarms. `eprintln!` panics when standard error is closed (`probity
//! monitor NAME 2>&1 | head`, a log collector that went away), and under
//! `probity serve` that panic drops the request being answered. Here a
//! line that cannot be written is dropped; the work goes on.

/// [`line`] with `format!` arguments: `stderr_line!("warning: {x}")`, for
/// the crates above. Inside the engine, `crate::stderr::line(format_args!(…))`
/// names this module rather than the crate root (no file imports lib.rs:
/// `scripts/import_graph.py`).
#[macro_export]
macro_rules! stderr_line {
    ($($arg:tt)*) => {
        $crate::stderr::line(format_args!($($arg)*))
    };
}

/// Write `args` and a newline to standard error; a write that fails is
/// dropped (standard error is where a failure would be reported).
pub fn line(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}
