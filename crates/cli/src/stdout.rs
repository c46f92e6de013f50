//! Standard output that a reader may close early (`probity runs | head`):
//! `println!` panics on a broken pipe; here the rest is dropped quietly and
//! the command keeps its exit code (a failing verdict stays exit 1).

use std::io::{ErrorKind, Write};

/// Write `text` to standard output. A reader that went away is not an
/// error; any other write error is reported once on standard error.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if e.kind() != ErrorKind::BrokenPipe {
            eprintln!("warning: cannot write to standard output: {e}");
        }
    }
}

/// [`out`] with a newline.
pub fn line(text: &str) {
    out(&format!("{text}\n"));
}
