//! A run's identity: the hash under which it is stored, resumed and
//! compared, and the check that every request renders before the run
//! starts.

use crate::provider::template::TemplateError;
use crate::run::experiment::Experiment;
use sha2::{Digest, Sha256};

/// The hash of `experiment`: its configuration's for one loaded from a
/// file (every request rendered first, keeping none: a template error
/// stops the run before it starts), else [`content_hash`].
pub(super) fn run_hash(
    experiment: &Experiment,
    fingerprint: &str,
) -> Result<String, TemplateError> {
    match &experiment.source {
        Some(s) => {
            for input in experiment.inputs.iter() {
                experiment.prompt.render(input)?;
            }
            Ok(s.hash.clone())
        }
        None => content_hash(experiment, fingerprint),
    }
}

/// The identity of an experiment built in code (one loaded from a file has
/// its configuration's hash): SHA-256 over what it asks — the system's
/// fingerprint, every rendered request, M, the checks' settings, the retry
/// policy and the analysis settings.
///
/// Every request is rendered here, one at a time; the hash is of the JSON
/// array of all of them.
fn content_hash(experiment: &Experiment, fingerprint: &str) -> Result<String, TemplateError> {
    let mut h = Sha256::new();
    h.update(fingerprint.as_bytes());
    h.update(b"[");
    for (i, input) in experiment.inputs.iter().enumerate() {
        if i > 0 {
            h.update(b",");
        }
        let messages = experiment.prompt.render(input)?;
        h.update(serde_json::to_vec(&messages).unwrap_or_default());
    }
    h.update(b"]");
    h.update((experiment.outputs_per_input as u64).to_le_bytes());
    h.update(serde_json::to_vec(&experiment.check_infos()).unwrap_or_default());
    h.update(serde_json::to_vec(&experiment.stored_settings()).unwrap_or_default());
    Ok(hex::encode(h.finalize()))
}
