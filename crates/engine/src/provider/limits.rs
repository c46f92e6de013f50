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
    fn new(per_minute: f64) -> Self {
        Bucket {
            rate_per_s: per_minute / 60.0,
            capacity: per_minute,
            tokens: per_minute,
            last: Instant::now(),
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + dt * self.rate_per_s).min(self.capacity);
        self.last = now;
    }

    /// Take `n` now, or say how long until `n` are available.
    fn try_take(&mut self, n: f64) -> Result<(), Duration> {
        self.refill(Instant::now());
        let n = n.min(self.capacity);
        if self.tokens >= n {
            self.tokens -= n;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((n - self.tokens) / self.rate_per_s))
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
            requests: requests_per_minute.map(|r| Mutex::new(Bucket::new(r))),
            tokens: tokens_per_minute.map(|t| Mutex::new(Bucket::new(t))),
        }
    }

    /// Wait until one request, expected to use `estimated_tokens`, may go.
    pub async fn acquire(&self, estimated_tokens: f64) {
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

    /// Correct the token bucket once the real use of a call is known.
    pub async fn settle(&self, estimated_tokens: f64, actual_tokens: f64) {
        if let Some(bucket) = &self.tokens {
            let mut b = bucket.lock().await;
            b.tokens -= actual_tokens - estimated_tokens;
        }
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
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

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
