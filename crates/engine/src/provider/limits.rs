//! Client-side rate limits and retry backoff.
//!
//! Hand-written rather than taken from `governor`/`backon`: the token limit
//! must be debited with the *actual* token use reported after a call (which
//! may drive the bucket below zero and make later calls wait), and the
//! backoff must give way to a server's `Retry-After`. Both fit in a few lines
//! here and would need adapters around those crates.

use rand::Rng;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// A token bucket refilled continuously at `per_minute / 60` per second,
/// holding at most one minute's allowance.
#[derive(Debug)]
struct Bucket {
    rate_per_s: f64,
    capacity: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    /// A full bucket of one minute's allowance, and never less than `least`
    /// (one whole request for the requests bucket: a rate below one per
    /// minute then spaces calls by `60 / per_minute` seconds, rather than
    /// by the one minute a fraction of a request would refill in).
    fn new(per_minute: f64, least: f64) -> Self {
        let capacity = per_minute.max(least);
        Bucket {
            rate_per_s: per_minute / 60.0,
            capacity,
            tokens: capacity,
            last: Instant::now(),
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + dt * self.rate_per_s).min(self.capacity);
        self.last = now;
    }

    /// Take `n` now, or say how long until they may be taken. More than
    /// the bucket holds are taken once it is full, leaving it in debt: a
    /// large request waits no longer than a full bucket, and what follows
    /// it pays for all of it.
    fn try_take(&mut self, n: f64) -> Result<(), Duration> {
        self.refill(Instant::now());
        let needed = n.min(self.capacity);
        if self.tokens >= needed {
            self.tokens -= n;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (needed - self.tokens) / self.rate_per_s,
            ))
        }
    }
}

/// Requests-per-minute and tokens-per-minute limits shared by all workers.
#[derive(Debug, Default)]
pub struct RateLimiter {
    requests: Option<Mutex<Bucket>>,
    tokens: Option<Mutex<Bucket>>,
}

impl RateLimiter {
    pub fn new(requests_per_minute: Option<f64>, tokens_per_minute: Option<f64>) -> Self {
        RateLimiter {
            requests: requests_per_minute.map(|r| Mutex::new(Bucket::new(r, 1.0))),
            tokens: tokens_per_minute.map(|t| Mutex::new(Bucket::new(t, 0.0))),
        }
    }

    /// Wait until one request, expected to use `estimated_tokens`, may go.
    pub(crate) async fn acquire(&self, estimated_tokens: f64) {
        for (bucket, n) in [(&self.requests, 1.0), (&self.tokens, estimated_tokens)] {
            let Some(bucket) = bucket else { continue };
            loop {
                let wait = bucket.lock().await.try_take(n);
                match wait {
                    Ok(()) => break,
                    Err(d) => tokio::time::sleep(d).await,
                }
            }
        }
    }

    /// Wait until one request may go, but no longer than `max_wait` in
    /// all: `Err(wait)` — the wait still ahead — when it would take longer
    /// (nothing is taken then). Without a requests limit, at once.
    pub(crate) async fn acquire_request_within(&self, max_wait: Duration) -> Result<(), Duration> {
        let Some(bucket) = &self.requests else {
            return Ok(());
        };
        let started = Instant::now();
        loop {
            let wait = bucket.lock().await.try_take(1.0);
            match wait {
                Ok(()) => return Ok(()),
                Err(d) if started.elapsed() + d > max_wait => return Err(d),
                Err(d) => tokio::time::sleep(d).await,
            }
        }
    }

    /// Correct the token bucket once the real use of a call is known.
    pub async fn settle(&self, estimated_tokens: f64, actual_tokens: f64) {
        if let Some(bucket) = &self.tokens {
            let mut b = bucket.lock().await;
            b.tokens -= actual_tokens - estimated_tokens;
        }
    }
}

/// The least time `amount` (calls, or tokens) can be taken from a bucket
/// refilled at `per_minute` that starts full with `capacity`: in seconds,
/// 0 when the first fill covers it.
pub(crate) fn least_seconds(amount: f64, per_minute: f64, capacity: f64) -> f64 {
    if per_minute > 0.0 {
        (amount - capacity).max(0.0) * 60.0 / per_minute
    } else {
        f64::INFINITY
    }
}

/// One client-side limit as it bears on a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    /// The configuration key: `requests_per_minute` or `tokens_per_minute`.
    pub key: &'static str,
    /// Its value.
    pub per_minute: f64,
    /// What the run takes from it: calls, or (estimated prompt) tokens.
    pub amount: f64,
    /// The least time taking `amount` can take, in seconds.
    pub seconds: f64,
}

/// What the client-side rate limits make of a run's calls: the least time
/// they can take under each limit that is set. A lower bound: every call
/// is counted once (no failed try, no retried answer) and the token limit
/// counts prompts only, as the limiter estimates them before a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Pace {
    /// Calls the run makes when each succeeds at its first try.
    pub calls: u64,
    pub limits: Vec<Limit>,
}

/// A run is called long, and its least duration printed, past this.
pub const LONG_RUN_S: f64 = 60.0;
/// A limit that makes a run take longer than this (10 years) is a mistake
/// in the configuration, refused naming the key.
pub const ABSURD_RUN_S: f64 = 10.0 * 365.25 * 24.0 * 3600.0;

impl Pace {
    /// The pace of `calls` calls whose prompts come to `prompt_tokens`
    /// under these limits.
    pub fn new(
        calls: u64,
        prompt_tokens: f64,
        requests_per_minute: Option<f64>,
        tokens_per_minute: Option<f64>,
    ) -> Pace {
        let mut limits = Vec::new();
        if let Some(r) = requests_per_minute {
            let amount = calls as f64;
            limits.push(Limit {
                key: "requests_per_minute",
                per_minute: r,
                amount,
                seconds: least_seconds(amount, r, r.max(1.0)),
            });
        }
        if let Some(t) = tokens_per_minute {
            limits.push(Limit {
                key: "tokens_per_minute",
                per_minute: t,
                amount: prompt_tokens,
                seconds: least_seconds(prompt_tokens, t, t),
            });
        }
        Pace { calls, limits }
    }

    /// The limit that takes longest, if any limit is set.
    pub fn slowest(&self) -> Option<&Limit> {
        self.limits
            .iter()
            .max_by(|a, b| a.seconds.total_cmp(&b.seconds))
    }

    /// "400 calls at requests_per_minute = 1.5 take at least 4 h 25 min"
    /// for `limit`; the tokens are named for the token limit.
    pub fn describe(&self, limit: &Limit) -> String {
        let calls = if self.calls == 1 { "call" } else { "calls" };
        let what = match limit.key {
            "tokens_per_minute" => format!(
                "{} {calls} (about {:.0} prompt tokens)",
                self.calls, limit.amount
            ),
            _ => format!("{} {calls}", self.calls),
        };
        format!(
            "{what} at {} = {} take at least {}",
            limit.key,
            probity_core::number::written(limit.per_minute),
            human_duration(limit.seconds)
        )
    }
}

/// `seconds` as a person reads it: "45 s", "4 min 10 s", "4 h 27 min",
/// "3 days 4 h", "12 years", "7.6e5 years".
pub(crate) fn human_duration(seconds: f64) -> String {
    const MIN: f64 = 60.0;
    const HOUR: f64 = 3600.0;
    const DAY: f64 = 86_400.0;
    const YEAR: f64 = 365.25 * DAY;
    let s = seconds.max(0.0);
    if !s.is_finite() {
        "for ever".to_string()
    } else if s < MIN {
        format!("{s:.0} s")
    } else if s < HOUR {
        format!("{:.0} min {:.0} s", (s / MIN).floor(), s % MIN)
    } else if s < DAY {
        format!(
            "{:.0} h {:.0} min",
            (s / HOUR).floor(),
            (s % HOUR / MIN).floor()
        )
    } else if s < YEAR {
        format!(
            "{:.0} days {:.0} h",
            (s / DAY).floor(),
            (s % DAY / HOUR).floor()
        )
    } else if s < 1000.0 * YEAR {
        format!("{:.0} years", (s / YEAR).floor())
    } else {
        format!("{:.1e} years", s / YEAR)
    }
}

/// Exponential backoff with jitter: attempt `a` (0-based) waits a uniform
/// draw from `[d/2, d]` with `d = min(cap, base · 2^a)`; a server's
/// `Retry-After` replaces the draw when it is longer.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_millis(250),
            cap: Duration::from_secs(30),
        }
    }
}

/// The longest `Retry-After` honoured: 5 minutes.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

impl Backoff {
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let d = self
            .base
            .saturating_mul(1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX))
            .min(self.cap);
        let jittered = d.mul_f64(rand::thread_rng().gen_range(0.5..=1.0));
        match retry_after {
            // A server cannot park a call for longer than this.
            Some(r) if r > jittered => r.min(MAX_RETRY_AFTER),
            _ => jittered,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_caps_and_yields_to_retry_after() {
        let b = Backoff {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(1),
        };
        for a in 0..8 {
            let d = b.delay(a, None);
            let full = Duration::from_millis(100 * (1 << a)).min(Duration::from_secs(1));
            assert!(d >= full / 2 && d <= full, "attempt {a}: {d:?}");
        }
        assert_eq!(
            b.delay(0, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert!(b.delay(40, None) <= Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn requests_per_minute_spaces_calls() {
        let limiter = RateLimiter::new(Some(60.0), None);
        let start = Instant::now();
        // The first minute's allowance is available at once…
        for _ in 0..60 {
            limiter.acquire(0.0).await;
        }
        assert!(start.elapsed() < Duration::from_millis(10));
        // …then one request per second.
        limiter.acquire(0.0).await;
        limiter.acquire(0.0).await;
        let e = start.elapsed();
        assert!(
            e >= Duration::from_millis(1990) && e <= Duration::from_millis(2100),
            "{e:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_below_one_a_minute_spaces_calls_by_its_period() {
        // 0.5 a minute: one call every 2 minutes, not one a minute.
        let limiter = RateLimiter::new(Some(0.5), None);
        let start = Instant::now();
        limiter.acquire(0.0).await;
        assert!(start.elapsed() < Duration::from_millis(10));
        limiter.acquire(0.0).await;
        let e = start.elapsed();
        assert!(
            e >= Duration::from_secs(119) && e <= Duration::from_secs(121),
            "{e:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_larger_than_the_bucket_leaves_it_in_debt() {
        // 60 tokens a minute; a 600-token prompt goes at once (the bucket
        // is full) and the next call pays for it: 540 + 60 tokens at 1/s.
        let limiter = RateLimiter::new(None, Some(60.0));
        let start = Instant::now();
        limiter.acquire(600.0).await;
        assert!(start.elapsed() < Duration::from_millis(10));
        limiter.acquire(60.0).await;
        let e = start.elapsed();
        assert!(
            e >= Duration::from_secs(599) && e <= Duration::from_secs(601),
            "{e:?}"
        );
    }

    #[test]
    fn pace_is_the_bucket_arithmetic() {
        // 400 calls at 1.5 a minute: 1.5 at once, then 398.5 / 1.5 minutes.
        let p = Pace::new(400, 0.0, Some(1.5), None);
        let slow = p.slowest().unwrap();
        assert_eq!(slow.key, "requests_per_minute");
        assert!((slow.seconds - 398.5 / 1.5 * 60.0).abs() < 1e-6);
        assert_eq!(
            p.describe(slow),
            "400 calls at requests_per_minute = 1.5 take at least 4 h 25 min"
        );
        // Within the first minute's allowance: no wait.
        assert_eq!(
            Pace::new(400, 0.0, Some(500.0), None).limits[0].seconds,
            0.0
        );
        // Below one a minute the first call is free, the rest wait.
        let p = Pace::new(3, 0.0, Some(0.5), None);
        assert!((p.limits[0].seconds - 240.0).abs() < 1e-9);
        // The slower of the two limits.
        let p = Pace::new(10, 100_000.0, Some(600.0), Some(1_000.0));
        let slow = p.slowest().unwrap();
        assert_eq!(slow.key, "tokens_per_minute");
        assert!((slow.seconds - 99.0 * 60.0).abs() < 1e-6);
        assert!(p.describe(slow).contains("about 100000 prompt tokens"));
        assert!(Pace::new(10, 0.0, None, None).slowest().is_none());
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human_duration(45.0), "45 s");
        assert_eq!(human_duration(250.0), "4 min 10 s");
        assert_eq!(
            human_duration(4.0 * 3600.0 + 27.0 * 60.0 + 5.0),
            "4 h 27 min"
        );
        assert_eq!(human_duration(3.0 * 86_400.0 + 4.0 * 3600.0), "3 days 4 h");
        assert_eq!(human_duration(12.5 * 365.25 * 86_400.0), "12 years");
        assert_eq!(human_duration(7.6e5 * 365.25 * 86_400.0), "7.6e5 years");
        assert_eq!(human_duration(f64::INFINITY), "for ever");
    }

    #[tokio::test(start_paused = true)]
    async fn token_debt_delays_the_next_call() {
        let limiter = RateLimiter::new(None, Some(600.0));
        limiter.acquire(100.0).await;
        // The call used 700 tokens, not 100: 600 − 700 = 100 in debt.
        limiter.settle(100.0, 700.0).await;
        let start = Instant::now();
        limiter.acquire(100.0).await;
        // Back to 100 from −100: 200 tokens at 10/s = 20 s.
        let e = start.elapsed();
        assert!(
            e >= Duration::from_secs(19) && e <= Duration::from_secs(21),
            "{e:?}"
        );
    }
}
