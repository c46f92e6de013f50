//! Cache keys: what identifies a request, so an identical request is
//! recognised in the store. Every key is a SHA-256 in hex; none includes a
//! secret (provider fingerprints never do).

use crate::provider::types::Message;
use probity_core::Input;
use sha2::{Digest, Sha256};

/// The key of one sample's request: SHA-256 over the provider's fingerprint
/// (kind, model, sampling parameters — never secrets), the rendered
/// messages and the repetition index `j`.
pub fn sample_key(fingerprint: &str, messages: &[Message], repetition: usize) -> String {
    request_key(fingerprint, messages, repetition, None)
}

/// The key of one attempt of a guarded request (§4.1, §4.2.6): the
/// [`sample_key`] of the attempt's own messages (with the feedback when
/// there is any), with the 0-based attempt index appended after the
/// repetition. The first attempt (index 0) is the plain request, so its key
/// is the sample's.
pub fn attempt_key(
    fingerprint: &str,
    messages: &[Message],
    repetition: usize,
    attempt: u32,
) -> String {
    request_key(
        fingerprint,
        messages,
        repetition,
        Some(attempt).filter(|&a| a > 0),
    )
}

fn request_key(
    fingerprint: &str,
    messages: &[Message],
    repetition: usize,
    attempt: Option<u32>,
) -> String {
    let mut h = Sha256::new();
    h.update(fingerprint.as_bytes());
    h.update([0]);
    h.update(serde_json::to_vec(messages).unwrap_or_default());
    h.update([0]);
    h.update((repetition as u64).to_le_bytes());
    if let Some(a) = attempt {
        h.update([0]);
        h.update(u64::from(a).to_le_bytes());
    }
    hex::encode(h.finalize())
}

/// What a judge is asked, besides the input and output: see
/// [`judgement_key`].
pub struct JudgeQuestion<'a> {
    /// The judge provider's fingerprint (kind, model, sampling parameters,
    /// seed — never secrets).
    pub fingerprint: &'a str,
    /// The judge prompt's fixed preamble.
    pub preamble: &'a str,
    /// The verifier's instructions.
    pub instructions: &'a str,
    /// How structured output is asked for, by name.
    pub structured: &'a str,
}

/// The key of one judgement: SHA-256 over the [`JudgeQuestion`], the
/// input's fields, the output, and the repetition and attempt the request
/// carries (a seeded judge such as the sim judge draws from them, as a
/// sampled system does: the same request asks the same question of the
/// same draw). Parts are length-prefixed, so no two questions collide by
/// concatenation.
pub fn judgement_key(
    question: &JudgeQuestion<'_>,
    input: &Input,
    output: &str,
    repetition: u32,
    attempt: u32,
) -> String {
    let mut h = Sha256::new();
    for part in [
        "probity-judgement|v1",
        question.fingerprint,
        question.preamble,
        question.instructions,
        question.structured,
        input.fields.as_json(),
        output,
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.update(u64::from(repetition).to_le_bytes());
    h.update(u64::from(attempt).to_le_bytes());
    hex::encode(h.finalize())
}
