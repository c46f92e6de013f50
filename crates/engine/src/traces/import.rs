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
    let mut raw = std::io::BufReader::new(file).lines().enumerate();
    Ok(std::iter::from_fn(move || {
        let mut chunk = Vec::with_capacity(LINES);
        for (n, line) in raw.by_ref() {
            match line {
                Ok(l) => {
                    let trimmed = l.trim_start_matches('\u{feff}').trim();
                    if !trimmed.is_empty() {
                        chunk.push((n, l));
                    }
                }
                Err(e) => {
                    // A bad line before it is told first, as it comes first.
                    let before = decode(&chunk, at);
                    return Some(before.and(Err(at(n, format!("cannot read: {e}")))));
                }
            }
            if chunk.len() == LINES {
                break;
            }
        }
        (!chunk.is_empty()).then(|| decode(&chunk, at))
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
