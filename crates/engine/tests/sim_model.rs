//! The simulator's contract: determinism and known true rates.

use probity_engine::provider::{Message, Provider, Role};
use probity_engine::sim::{SimConfig, SimModel};
use probity_engine::system::ProviderConfig;

fn user(text: &str) -> Vec<Message> {
    vec![
        Message::text(
            Role::System,
            "You are a polite assistant. Never use contractions.",
        ),
        Message::text(Role::User, text),
    ]
}

fn apostrophes(s: &str) -> usize {
    s.matches('\'').count()
}

/// The simulator pinned at seed 0 (as `f` leaves it), so tests repeat.
fn model(f: impl FnOnce(&mut SimConfig)) -> SimModel {
    let mut c = SimConfig {
        seed: Some(0),
        ..SimConfig::default()
    };
    f(&mut c);
    SimModel::new(c).unwrap()
}

/// |observed − p| ≤ 4 standard errors of a binomial proportion over n.
fn assert_rate(hits: usize, n: usize, p: f64, what: &str) {
    let observed = hits as f64 / n as f64;
    let se = (p * (1.0 - p) / n as f64).sqrt().max(1e-9);
    assert!(
        (observed - p).abs() <= 4.0 * se,
        "{what}: observed {observed} ({hits}/{n}), configured {p}, 4·SE = {}",
        4.0 * se
    );
}

#[test]
fn output_is_a_pure_function_of_seed_messages_repetition_attempt() {
    let m = model(|c| c.seed = Some(11));
    let msgs = user("Thank you! How do I bake bread?");
    let a = m.generate(&msgs, 3, 0).unwrap();
    let b = m.generate(&msgs, 3, 0).unwrap();
    assert_eq!(a, b);
    // Another instance with the same config agrees too.
    assert_eq!(
        model(|c| c.seed = Some(11)).generate(&msgs, 3, 0).unwrap(),
        a
    );
    // Repetitions, attempts and seeds vary the output.
    let reps: std::collections::HashSet<String> = (0..50)
        .map(|r| m.generate(&msgs, r, 0).unwrap().text)
        .collect();
    assert!(reps.len() > 5, "only {} distinct outputs", reps.len());
    let attempts: std::collections::HashSet<String> = (0..50)
        .map(|a| m.generate(&msgs, 3, a).unwrap().text)
        .collect();
    assert!(attempts.len() > 5);
    let seeds: std::collections::HashSet<String> = (0..50)
        .map(|s| {
            model(|c| c.seed = Some(s))
                .generate(&msgs, 3, 0)
                .unwrap()
                .text
        })
        .collect();
    assert!(seeds.len() > 5);
}

#[test]
fn replies_echo_the_topic() {
    let m = model(|_| {});
    let out = m.generate(&user("How do tides work?"), 0, 0).unwrap();
    assert!(out.text.contains("how do tides work"), "{}", out.text);
    assert!(!out.text.contains("You're welcome"));
}

#[test]
fn contraction_rate_matches_configuration_and_events_match_the_validator() {
    for p in [0.1, 0.35] {
        let m = model(|c| {
            c.seed = Some(5);
            c.contractions = p;
        });
        let n = 4000;
        let mut hits = 0;
        for i in 0..n {
            // Many inputs, some thanked (their welcome line adds an apostrophe).
            let text = if i % 3 == 0 {
                format!("Thank you! Tell me about topic {}", i % 40)
            } else {
                format!("Tell me about topic {}", i % 40)
            };
            let out = m.generate(&user(&text), (i / 40) as u64, 0).unwrap();
            let fails = apostrophes(&out.text) > 3;
            assert_eq!(fails, out.events.contractions, "{}", out.text);
            hits += fails as usize;
        }
        assert_rate(hits, n, p, "contractions");
    }
}

#[test]
fn omit_welcome_rate_matches_on_thanked_inputs_only() {
    let p = 0.15;
    let m = model(|c| c.seed = Some(9));
    let n = 4000;
    let mut omitted = 0;
    for i in 0..n {
        let msgs = user(&format!("Thank you for the help with item {}.", i % 100));
        let out = m.generate(&msgs, (i / 100) as u64, 0).unwrap();
        let missing = !out.text.contains("You're welcome");
        assert_eq!(missing, out.events.omitted_welcome);
        omitted += missing as usize;
    }
    assert_rate(omitted, n, p, "omit_welcome");
    // Not thanked: never says "You're welcome", never fires.
    for r in 0..500 {
        let out = m.generate(&user("thanks, what is 2+2?"), r, 0).unwrap();
        assert!(!out.text.contains("You're welcome"));
        assert!(!out.events.omitted_welcome);
    }
}

#[test]
fn invalid_json_rate_matches_on_json_requests() {
    for p in [0.05, 0.3] {
        let m = model(|c| {
            c.seed = Some(1);
            c.invalid_json = p;
            c.contractions = 0.5;
        });
        let n = 4000;
        let mut invalid = 0;
        for i in 0..n {
            let thanked = if i % 2 == 0 { "Thank you! " } else { "" };
            let msgs = user(&format!(
                "{thanked}Answer in JSON: what is \"item\" {}?",
                i % 50
            ));
            let out = m.generate(&msgs, (i / 50) as u64, 0).unwrap();
            let parsed = serde_json::from_str::<serde_json::Value>(&out.text);
            assert_eq!(parsed.is_err(), out.events.invalid_json, "{}", out.text);
            if let Ok(v) = &parsed {
                assert!(v["answer"].is_string() && v["topic"].is_string(), "{v}");
            }
            // Truncation never hides the other events.
            assert_eq!(
                apostrophes(&out.text) > 3,
                out.events.contractions,
                "{}",
                out.text
            );
            if i % 2 == 0 {
                assert_eq!(
                    !out.text.contains("You're welcome"),
                    out.events.omitted_welcome
                );
            }
            invalid += parsed.is_err() as usize;
        }
        assert_rate(invalid, n, p, "invalid_json");
    }
    // Without a JSON request the output is prose.
    let out = model(|_| {}).generate(&user("Say hi"), 0, 0).unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&out.text).is_err());
}

#[test]
fn error_rate_matches() {
    let m = model(|c| c.error_rate = 0.2);
    let n = 4000;
    let errors = (0..n)
        .filter(|&r| m.generate(&user("Hello"), r as u64, 0).is_err())
        .count();
    assert_rate(errors, n, 0.2, "error_rate");
    let e = m.generate(&user("Hello"), 0, 0).err();
    if let Some(e) = e {
        assert!(e.is_retryable());
    }
}

#[test]
fn spread_gives_per_input_rates_with_the_configured_mean() {
    let m = model(|c| {
        c.seed = Some(3);
        c.contractions = 0.2;
        c.input_spread = 0.3;
    });
    // Per-input truth differs between inputs, is stable for one input.
    let rates: Vec<f64> = (0..3000)
        .map(|i| m.true_rates(&user(&format!("question {i}"))).contractions)
        .collect();
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    let var = rates.iter().map(|r| (r - mean) * (r - mean)).sum::<f64>() / rates.len() as f64;
    // Beta with mean 0.2, ρ = 0.3: variance ρ·μ(1−μ) = 0.048, SE of the mean ≈ 0.004.
    assert!((mean - 0.2).abs() < 0.016, "mean {mean}");
    assert!((var - 0.048).abs() < 0.01, "var {var}");
    assert_eq!(
        m.true_rates(&user("question 7")),
        m.true_rates(&user("question 7"))
    );
    // Outputs follow the input's own rate.
    let msgs = (0..3000)
        .map(|i| user(&format!("question {i}")))
        .find(|msgs| {
            let r = m.true_rates(msgs).contractions;
            r > 0.4 && r < 0.9
        })
        .unwrap();
    let p = m.true_rates(&msgs).contractions;
    let n = 3000;
    let hits = (0..n)
        .filter(|&r| m.generate(&msgs, r as u64, 0).unwrap().events.contractions)
        .count();
    assert_rate(hits, n, p, "per-input contractions");
    // Spread 0: exactly the configured rates, flags from the last user message.
    let flat = model(|_| {});
    let t = flat.true_rates(&user("Thank you, in JSON please"));
    assert_eq!(
        (t.contractions, t.omit_welcome, t.invalid_json),
        (0.1, 0.15, 0.05)
    );
    assert!(t.thanked && t.json_requested);
    assert!((t.pass_politeness() - 0.85).abs() < 1e-12);
    let t = flat.true_rates(&user("thank you"));
    assert!(!t.thanked && !t.json_requested);
    assert_eq!(t.pass_politeness(), 1.0);
}

#[test]
fn config_defaults_validation_and_toml() {
    let c: SimConfig = toml::from_str("").unwrap();
    assert_eq!(c, SimConfig::default());
    let c: SimConfig = toml::from_str("seed = 4\ncontractions = 0.3\ninput_spread = 0.1").unwrap();
    assert_eq!(
        (c.seed, c.contractions, c.omit_welcome),
        (Some(4), 0.3, 0.15)
    );
    assert!(toml::from_str::<SimConfig>("contraction = 0.3").is_err());
    let bad = SimConfig {
        contractions: 1.5,
        ..SimConfig::default()
    };
    assert!(SimModel::new(bad)
        .unwrap_err()
        .to_string()
        .contains("contractions"));
    let bad = SimConfig {
        input_spread: 1.0,
        ..SimConfig::default()
    };
    assert!(SimModel::new(bad).is_err());
    // The provider table defaults to the simulator.
    let p: ProviderConfig = toml::from_str("seed = 2").unwrap();
    match p {
        ProviderConfig::Sim(c) => assert_eq!(c.seed, Some(2)),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn sim_provider_uses_repetition_and_latency() {
    use probity_engine::provider::{Provider, Request};
    let m = model(|c| {
        c.latency_ms = 30;
        c.latency_jitter_ms = 10;
    });
    let req = Request {
        messages: user("Hello there"),
        repetition: 4,
        attempt: 0,
        input: probity_core::Input::text("a", "Hello there"),
    };
    let t0 = std::time::Instant::now();
    let c = m.complete(&req).await.unwrap();
    let took = t0.elapsed();
    assert!(took >= std::time::Duration::from_millis(19), "{took:?}");
    assert_eq!(c.text, m.generate(&req.messages, 4, 0).unwrap().text);
    assert!(c.output_tokens.unwrap() > 0);
    let fp = m.fingerprint();
    assert!(fp.starts_with("sim|"));
    assert_eq!(fp, model(|c| c.latency_ms = 0).fingerprint());
    assert_ne!(fp, model(|c| c.seed = Some(1)).fingerprint());
}

/// A pinned seed repeats every output to the digit; without one every
/// model (every run) draws afresh, like a real system, while its
/// fingerprint (the run's config hash and system label) stays the same.
#[test]
fn unpinned_simulator_samples_afresh_pinned_repeats() {
    let msgs = |i: usize| user(&format!("Thank you for question {i}!"));
    let outputs = |m: &SimModel| -> Vec<String> {
        (0..50)
            .flat_map(|i| (0..4).map(move |j| (i, j)))
            .map(|(i, j)| m.generate(&msgs(i), j, 0).unwrap().text)
            .collect()
    };
    let pinned = SimConfig {
        seed: Some(7),
        ..SimConfig::default()
    };
    let a = SimModel::new(pinned.clone()).unwrap();
    let b = SimModel::new(pinned).unwrap();
    assert_eq!(outputs(&a), outputs(&b));
    let c = SimModel::new(SimConfig::default()).unwrap();
    let d = SimModel::new(SimConfig::default()).unwrap();
    let (oc, od) = (outputs(&c), outputs(&d));
    // 200 calls, each event drawn independently: two fresh seeds giving
    // the same 200 outputs has probability far below 1e-9.
    assert_ne!(oc, od);
    assert_eq!(c.fingerprint(), d.fingerprint());
    assert!(
        c.fingerprint().contains("\"seed\":null"),
        "{}",
        c.fingerprint()
    );
    assert_ne!(a.fingerprint(), c.fingerprint());
}

mod retries {
    //! The simulator's errors behind a real [`Caller`]: independent across
    //! retries (a transient error), sticky when asked, and 429s with
    //! `Retry-After` that the backoff honours.
    use super::*;
    use probity_engine::provider::limits::{Backoff, RateLimiter};
    use probity_engine::provider::{ProviderError, Request};
    use probity_engine::Caller;
    use std::sync::Arc;
    use std::time::Duration;

    fn request(i: u32) -> Request {
        let text = format!("Question {i}: how do I bake bread?");
        Request {
            messages: user(&text),
            repetition: 0,
            attempt: 0,
            input: probity_core::Input::text(i.to_string(), text),
        }
    }

    /// A caller of 4 tries per call; `wait` false: its backoff does not wait.
    fn caller(wait: bool) -> Caller {
        let mut c = Caller::new(Arc::new(RateLimiter::default()), Duration::from_secs(60), 4);
        if !wait {
            c.backoff = Backoff {
                base: Duration::ZERO,
                cap: Duration::ZERO,
            };
        }
        c
    }

    /// Calls 400 requests; the failures and the tries each answer took.
    async fn calls(m: &SimModel, c: &Caller) -> (usize, Vec<u32>) {
        let (mut failed, mut tries) = (0, Vec::new());
        for i in 0..400 {
            match c.call(m, &request(i)).await {
                Ok(a) => tries.push(a.attempts),
                Err((_, n)) => {
                    assert_eq!(n, 4, "a failure used every try");
                    failed += 1
                }
            }
        }
        (failed, tries)
    }

    #[tokio::test]
    async fn errors_are_independent_across_retries_unless_sticky() {
        let p = 0.3;
        let free = model(|c| c.error_rate = p);
        let (failed, tries) = calls(&free, &caller(false)).await;
        // Independent: a call fails for good with p^4 = 0.0081.
        assert_rate(failed, 400, p.powi(4), "failures after 4 independent tries");
        // The tries of a call that answered: geometric, P(k) = p^(k−1)(1−p).
        let once = tries.iter().filter(|&&k| k == 1).count();
        let twice = tries.iter().filter(|&&k| k == 2).count();
        assert_rate(once, 400, 1.0 - p, "answered on the first try");
        assert_rate(twice, 400, p * (1.0 - p), "answered on the second try");
        assert!(
            twice > 40,
            "retries must have answered: {twice} on the 2nd try"
        );

        // Sticky: a failed request fails again, so retries never help.
        let sticky = model(|c| {
            c.error_rate = p;
            c.sticky_errors = true
        });
        let (failed_sticky, tries_sticky) = calls(&sticky, &caller(false)).await;
        assert_rate(failed_sticky, 400, p, "failures with sticky errors");
        assert!(tries_sticky.iter().all(|&k| k == 1), "{tries_sticky:?}");

        // A request's first try draws as the sticky one does, and an
        // answer never depends on the try that got it.
        for i in 0..50 {
            let msgs = request(i).messages;
            let first = free.generate_try(&msgs, 0, 0, 0).map(|o| o.text).ok();
            assert_eq!(
                first,
                sticky.generate_try(&msgs, 0, 0, 0).map(|o| o.text).ok()
            );
            if let (Ok(a), Ok(b)) = (
                free.generate_try(&msgs, 0, 0, 3),
                sticky.generate(&msgs, 0, 0),
            ) {
                assert_eq!(a.text, b.text);
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_says_retry_after_and_the_backoff_waits_it() {
        let m = model(|c| {
            c.rate_limit = 0.5;
            c.retry_after_s = 2.0
        });
        // About half the first tries are 429s, each with its Retry-After.
        let limited: Vec<Option<Duration>> = (0..200)
            .filter_map(|i| match m.generate_try(&request(i).messages, 0, 0, 0) {
                Err(ProviderError::RateLimited { retry_after, .. }) => Some(retry_after),
                Err(e) => panic!("{e}"),
                Ok(_) => None,
            })
            .collect();
        assert_rate(limited.len(), 200, 0.5, "429s");
        assert!(limited.iter().all(|r| *r == Some(Duration::from_secs(2))));
        // Through a caller with its real backoff (250 ms base, below the
        // 2 s asked): each retry waits the server's Retry-After. Time is
        // tokio's paused clock: the waits are counted, not slept.
        let c = caller(true);
        let (mut waited_tries, mut answered) = (0u32, 0);
        for i in 0..40 {
            let start = tokio::time::Instant::now();
            let got = c.call(&m, &request(i)).await;
            let tries = match &got {
                Ok(a) => {
                    answered += 1;
                    a.attempts
                }
                Err((_, n)) => *n,
            };
            let retries = tries - 1;
            let elapsed = start.elapsed();
            assert!(
                elapsed >= Duration::from_secs(2) * retries,
                "request {i}: {retries} retries in {elapsed:?}, each should wait 2 s"
            );
            assert!(elapsed < Duration::from_secs(2) * retries + Duration::from_millis(100));
            waited_tries += retries;
        }
        assert!(waited_tries > 10, "only {waited_tries} retries");
        // P(4 429s in a row) = 1/16: most calls answer.
        assert!(answered >= 30, "{answered} of 40 answered");
    }
}
