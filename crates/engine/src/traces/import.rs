//! `probity traces import`: OTLP JSON files as the file exporters write
//! them — one `ExportTraceServiceRequest` per line — into a trace run.
//! Every file is read and decoded once before the run is created
//! ([`validate`]), so a bad line is named (file, line, field) and nothing
//! is stored; then each line's spans are mapped, checked and recorded
//! ([`super::ingest`]), one line in memory at a time.

use super::ingest::Ingest;
use super::run::TraceRun;
use super::span::{from_json, Span};
use futures_util::StreamExt;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Spans checked at once (judges' calls overlap; validators are local).
const CONCURRENCY: usize = 16;

/// The spans of each non-blank line of `path`; an error names the file
/// and line.
fn lines(path: &Path) -> Result<impl Iterator<Item = Result<Vec<Span>, String>> + '_, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(std::io::BufReader::new(file)
        .lines()
        .enumerate()
        .filter_map(move |(n, line)| {
            let at = |m: String| format!("{} line {}: {m}", path.display(), n + 1);
            let line = match line {
                Ok(l) => l,
                Err(e) => return Some(Err(at(format!("cannot read: {e}")))),
            };
            let line = line.trim_start_matches('\u{feff}').trim();
            if line.is_empty() {
                return None;
            }
            Some(
                serde_json::from_str::<serde_json::Value>(line)
                    .map_err(|e| {
                        at(format!(
                            "not JSON ({e}); expected one OTLP ExportTraceServiceRequest per line"
                        ))
                    })
                    .and_then(|v| from_json(&v).map_err(at)),
            )
        }))
}

/// Check that every line of `files` decodes; the number of spans they hold.
pub fn validate(files: &[PathBuf]) -> Result<u64, String> {
    let mut spans = 0;
    for f in files {
        for line in lines(f)? {
            spans += line?.len() as u64;
        }
    }
    Ok(spans)
}

/// Import `files` into `run` (to be [`validate`]d first).
pub async fn import(run: &TraceRun, files: &[PathBuf]) -> Result<(), String> {
    for f in files {
        for line in lines(f)? {
            check_all(&run.ingest, &line?).await;
        }
    }
    Ok(())
}

/// Check `spans`, up to [`CONCURRENCY`] at once.
pub(crate) async fn check_all(ingest: &Ingest, spans: &[Span]) {
    futures_util::stream::iter(spans)
        .for_each_concurrent(CONCURRENCY, |s| async move {
            let _ = ingest.span(s).await;
        })
        .await;
}
