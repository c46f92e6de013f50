//! The simulated assistant's replies.
//!
//! Invariants the rate tests rely on (and check):
//! * no sentence here, and no echoed topic, contains "You're welcome" except
//!   the welcome lines, which are only used when thanked and not omitted;
//! * plain replies contain at most one apostrophe besides the welcome line's;
//! * contracted replies contain at least four apostrophes besides it;
//! * the echoed topic never contains an apostrophe.

use super::rates::{SimEvents, TrueRates};
use super::rng::SplitMix64;

const WELCOME: &[&str] = &[
    "You're welcome!",
    "You're welcome, happy to help.",
    "You're welcome. Glad to be of use.",
];

const THANKED_NO_WELCOME: &[&str] = &["Glad to help.", "Happy to assist.", "Noted with thanks."];

const OPENERS: &[&str] = &[
    "You asked about {topic}.",
    "Here is a short answer about {topic}.",
    "Regarding {topic}, here is what matters.",
    "Let me address {topic}.",
];

const PLAIN: &[&str] = &[
    "It is a common question, and the answer depends on the details.",
    "The short version is that the basics cover most cases.",
    "I would start with the simplest approach and refine it from there.",
    "There is more to say, but these are the main points.",
    "In most situations the standard approach works well.",
];

/// Sentences with exactly one apostrophe each, used at most once per plain reply.
const LIGHT: &[&str] = &["I'm glad to help.", "That is the gist of it, I'd say."];

const CLOSERS: &[&str] = &[
    "I hope this helps.",
    "Please ask if you would like more detail.",
    "Let me know if anything is unclear.",
];

/// Sentences with two contractions each.
const CONTRACTED: &[&str] = &[
    "I'm happy to help, and it's a common question.",
    "It isn't always simple, but it's manageable.",
    "I don't have every detail, but I can't leave you without the main points.",
    "You won't need much, and you'll get there quickly.",
    "That's the short version, and there's more to it.",
    "We're close, and it doesn't take long.",
];

/// A reply to `last` (the last user message) given the fired `events`.
pub(super) fn reply(
    last: &str,
    rates: &TrueRates,
    events: &SimEvents,
    rng: &mut SplitMix64,
) -> String {
    let topic = topic(last);
    let mut parts: Vec<String> = Vec::with_capacity(6);
    if rates.thanked {
        let pool = if events.omitted_welcome {
            THANKED_NO_WELCOME
        } else {
            WELCOME
        };
        parts.push(rng.pick(pool).to_string());
    }
    parts.push(rng.pick(OPENERS).replace("{topic}", &topic));
    if events.contractions {
        // Two or three distinct two-contraction sentences: at least four apostrophes.
        let n = 2 + rng.below(2);
        let start = rng.below(CONTRACTED.len());
        for k in 0..n {
            parts.push(CONTRACTED[(start + k) % CONTRACTED.len()].to_string());
        }
    } else {
        parts.push(rng.pick(PLAIN).to_string());
        if rng.chance(0.25) {
            parts.push(rng.pick(LIGHT).to_string());
        }
    }
    parts.push(rng.pick(CLOSERS).to_string());
    let answer = parts.join(" ");
    if !rates.json_requested {
        return answer;
    }
    let confidence = 0.5 + 0.49 * rng.next_f64();
    let head = format!("{{\"answer\": {}, ", serde_json::Value::String(answer));
    let tail = format!(
        "\"topic\": {}, \"confidence\": {:.2}}}",
        serde_json::Value::String(topic),
        confidence
    );
    let mut json = head.clone() + tail.as_str();
    if events.invalid_json {
        // Any proper prefix of a JSON object is invalid; cut inside the tail
        // so the answer (and what it says) stays intact.
        let mut cut = head.len() + rng.below(tail.len());
        while !json.is_char_boundary(cut) {
            cut -= 1;
        }
        json.truncate(cut);
    }
    json
}

/// The first words of the message, without thanks, apostrophes or
/// punctuation: what the reply "is about".
fn topic(last: &str) -> String {
    let cleaned: String = last
        .replace("Thank you", " ")
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' {
                c
            } else {
                ' '
            }
        })
        .collect();
    let words: Vec<&str> = cleaned.split_whitespace().take(8).collect();
    if words.is_empty() {
        return "your question".to_string();
    }
    let mut topic = words.join(" ");
    if let Some(first) = topic.chars().next() {
        if words[0] != "I" && !words[0].chars().all(|c| c.is_uppercase()) {
            let lower: String = first.to_lowercase().collect();
            topic.replace_range(..first.len_utf8(), &lower);
        }
    }
    topic
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(s: &str) -> usize {
        s.matches('\'').count()
    }

    #[test]
    fn pools_keep_their_apostrophe_counts() {
        for s in OPENERS
            .iter()
            .chain(PLAIN)
            .chain(CLOSERS)
            .chain(THANKED_NO_WELCOME)
        {
            assert_eq!(count(s), 0, "{s}");
            assert!(!s.contains("You're welcome"));
        }
        for s in LIGHT {
            assert_eq!(count(s), 1, "{s}");
        }
        for s in CONTRACTED {
            assert_eq!(count(s), 2, "{s}");
            assert!(!s.contains("You're welcome"));
        }
        for s in WELCOME {
            assert_eq!(count(s), 1, "{s}");
        }
    }

    #[test]
    fn topic_is_clean() {
        assert_eq!(
            topic("Thank you! What's the capital of France?"),
            "what s the capital of France"
        );
        assert_eq!(topic("You're welcome"), "you re welcome");
        assert_eq!(topic("  ?! "), "your question");
        assert_eq!(topic("JSON please"), "JSON please");
    }
}
