//! `probity traces import`: OTLP JSON files as the file exporters write
//! them — one `ExportTraceServiceRequest` per line — into a trace run.
//! Every file is read and decoded once before the run is created
//! ([`validate`]), so a bad line is named (file, line, field) and nothing
//! is stored; then each line's spans are mapped, checked and recorded
//! ([`super::ingest`]), [`LINES`] lines in memory at a time, decoded in
//! parallel.

use super::run::TraceRun;
use super::span::{from_json, Span};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Lines decoded (in parallel) and checked at once: a few exports' worth
/// of spans in memory, enough to keep every core busy.
const LINES: usize = 16;

/// Each chunk of up to [`LINES`] non-blank lines of `path`, decoded: the
/// spans of each line, or an error naming the file and line.
fn chunks(
    path: &Path,
) -> Result<impl Iterator<Item = Result<Vec<Vec<Span>>, String>> + '_, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let at = move |n: usize, m: String| format!("{} line {}: {m}", path.display(), n + 1);
    let mut reader = std::io::BufReader::new(file);
    // The lines' buffers, kept from one chunk to the next: a line of an
    // export is often a megabyte, and a fresh one each time cost more in
    // page faults than its decoding.
    let mut bufs: Vec<(usize, String)> = Vec::new();
    let (mut next, mut done) = (0, false);
    Ok(std::iter::from_fn(move || {
        let mut filled = 0;
        while !done && filled < LINES {
            if bufs.len() == filled {
                bufs.push((0, String::new()));
            }
            let (n, read) = {
                let (number, buf) = &mut bufs[filled];
                buf.clear();
                *number = next;
                (next, reader.read_line(buf))
            };
            next += 1;
            match read {
                Ok(0) => done = true,
                Ok(_) => {
                    let line = &bufs[filled].1;
                    if !line.trim_start_matches('\u{feff}').trim().is_empty() {
                        filled += 1;
                    }
                }
                Err(e) => {
                    done = true;
                    // A bad line before it is told first, as it comes first.
                    let before = decode(&bufs[..filled], at);
                    return Some(before.and(Err(at(n, format!("cannot read: {e}")))));
                }
            }
        }
        (filled > 0).then(|| decode(&bufs[..filled], at))
    }))
}

/// The spans of each of `lines` (number, text), decoded in parallel; the
/// first error in file order.
fn decode(
    lines: &[(usize, String)],
    at: impl Fn(usize, String) -> String + Sync,
) -> Result<Vec<Vec<Span>>, String> {
    use rayon::prelude::*;
    crate::checks::check::off_async_workers(|| {
        lines
            .par_iter()
            .map(|(n, l)| {
                let line = l.trim_start_matches('\u{feff}').trim();
                serde_json::from_str::<serde_json::Value>(line)
                    .map_err(|e| {
                        at(
                            *n,
                            format!(
                            "not JSON ({e}); expected one OTLP ExportTraceServiceRequest per line"
                        ),
                        )
                    })
                    .and_then(|v| from_json(&v).map_err(|m| at(*n, m)))
            })
            .collect::<Vec<_>>()
    })
    .into_iter()
    .collect()
}

/// Check that every line of `files` decodes; the number of spans they hold.
pub fn validate(files: &[PathBuf]) -> Result<u64, String> {
    let mut spans = 0;
    for f in files {
        for chunk in chunks(f)? {
            spans += chunk?.iter().map(|l| l.len() as u64).sum::<u64>();
        }
    }
    Ok(spans)
}

/// Import `files` into `run` (to be [`validate`]d first).
pub async fn import(run: &TraceRun, files: &[PathBuf]) -> Result<(), String> {
    for f in files {
        for chunk in chunks(f)? {
            let spans: Vec<Span> = chunk?.into_iter().flatten().collect();
            run.ingest.spans(&spans).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{validate, LINES};

    /// One export of one span, as a line of an OTLP JSON file.
    fn line(i: usize) -> String {
        format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"{i:032x}","spanId":"{i:016x}"}}]}}]}}]}}"#
        )
    }

    #[test]
    fn lines_across_chunks_are_counted_and_the_first_bad_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spans.jsonl");
        // Blank lines and a BOM among more lines than one chunk holds.
        let mut text = String::from("\u{feff}");
        let n = 2 * LINES + 3;
        for i in 0..n {
            text.push_str(&line(i));
            text.push_str(if i % 5 == 0 { "\n\n  \r\n" } else { "\n" });
        }
        std::fs::write(&path, &text).unwrap();
        assert_eq!(validate(std::slice::from_ref(&path)).unwrap(), n as u64);

        // Two bad lines in the second chunk: the earlier is named, by its
        // line number in the file (blank lines counted).
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let first_bad = lines.len() - 9;
        lines[first_bad] = "{not json".into();
        lines[first_bad + 3] = r#"{"resourceSpans": 3}"#.into();
        std::fs::write(&path, lines.join("\n")).unwrap();
        let err = validate(std::slice::from_ref(&path)).unwrap_err();
        assert!(
            err.contains(&format!("spans.jsonl line {}: not JSON", first_bad + 1)),
            "{err}"
        );
    }
}
