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
            probity_engine::stderr_line!("warning: cannot write to standard output: {e}");
        }
    }
}

/// Write to standard output as `write` produces it, buffered (a large
/// JSON report is never held whole); a reader that went away is not an
/// error, as for [`out`].
pub fn stream(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    if let Err(e) = write(&mut w).and_then(|()| w.flush()) {
        if e.kind() != ErrorKind::BrokenPipe {
            probity_engine::stderr_line!("warning: cannot write to standard output: {e}");
        }
    }
}

/// [`out`] with a newline.
pub fn line(text: &str) {
    out(&format!("{text}\n"));
}
