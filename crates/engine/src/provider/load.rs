//! How an upstream's latency grows with the calls in flight (issue 39,
//! item 3).
//!
//! A server on a laptop (llama.cpp, llama-cpp-python, Ollama with one
//! slot) answers one request at a time: at probity's default concurrency
//! 16 every call waits behind fifteen others, its latency is mostly time
//! queued at the server, and a bigger run trips `timeout_s` although the
//! server is healthy. [`UpstreamLoad`] keeps, per number of calls in
//! flight when a call started, the calls answered and their latency, and
//! [`UpstreamLoad::serial`] reads from them whether throughput — calls in
//! flight divided by their mean latency (Little's law, L = λW) — grew when
//! more calls were in flight. When it did not, the extra latency was spent
//! queued at the upstream, not served.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;

/// Levels of calls in flight told apart; more are counted in the last.
const LEVELS: usize = 256;

/// Calls a level needs before its mean latency is read.
const MIN_CALLS: u64 = 3;

/// The upstream counts as serving calls (nearly) one at a time when the
/// calls in flight at the busiest level are at least this many times its
/// useful concurrency: most of their latency was spent queued there.
const SERIAL_SHARE: f64 = 4.0;

/// Answered calls and their summed latency at one level.
#[derive(Debug, Default, Clone, Copy)]
struct Level {
    calls: u64,
    seconds: f64,
}

/// What [`UpstreamLoad::serial`] found: the latency with few and with many
/// calls in flight, and the concurrency that bought the throughput.
#[derive(Debug, Clone, PartialEq)]
pub struct SerialUpstream {
    /// Mean calls in flight, and mean latency in seconds, of the quietest calls.
    pub quiet_in_flight: f64,
    pub quiet_latency_s: f64,
    /// The same for the busiest level with enough calls.
    pub busy_in_flight: f64,
    pub busy_latency_s: f64,
    /// Calls in flight the upstream is worth: its throughput at the busy
    /// level in calls per quiet-call latency, at least 1.
    pub useful: usize,
}

impl std::fmt::Display for SerialUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the upstream seems to answer about {} call{} at a time: a call took {:.1} s with {:.0} in flight and {:.1} s with {:.0}, \
             so the difference was spent queued at the upstream (and counts against timeout_s); \
             `concurrency = {}` would be as fast and keep each call's latency its service time \
             (docs/providers.md, Test a model on your machine)",
            self.useful,
            if self.useful == 1 { "" } else { "s" },
            self.quiet_latency_s,
            self.quiet_in_flight,
            self.busy_latency_s,
            self.busy_in_flight,
            self.useful,
        )
    }
}

/// Calls in flight and latency per level, for one caller; with
/// [`UpstreamLoad::auto`], also the gate that holds calls back on this
/// side while the upstream's useful concurrency is being found.
#[derive(Debug, Default)]
pub struct UpstreamLoad {
    in_flight: AtomicU64,
    /// Calls let through at once; 0: no limit.
    limit: AtomicU64,
    /// Woken when a call ends (a place may be free).
    freed: Notify,
    levels: Mutex<Levels>,
    /// Whether [`UpstreamLoad::notice`] has said it.
    noticed: AtomicBool,
    /// Answered calls (when to look again).
    answered: AtomicU64,
}

/// The levels, and `auto`'s search over them (under one lock, so two
/// calls answered at once never both move the limit).
#[derive(Debug, Default)]
struct Levels {
    levels: Vec<Level>,
    auto: Option<AutoSearch>,
}

/// `concurrency = "auto"`: the limits tried so far, with the throughput
/// each bought, and whether the search is over.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AutoSearch {
    /// The most calls it may send at once (the run's workers).
    pub most: u64,
    /// `(calls at once, calls answered per second)` per limit tried, in
    /// order: 1, 2, 4 … .
    pub tried: Vec<(u64, f64)>,
    /// The limit now.
    pub chosen: u64,
    /// Whether it settled: the throughput stopped growing, or `most` was
    /// reached. Unsettled: the run ended first.
    pub settled: bool,
}

/// Calls `auto` waits for at the limit before it reads their latency.
const AUTO_CALLS: u64 = 4;

/// The throughput a doubled limit must buy, as a multiple of the one
/// before, for `auto` to keep it. A server serving one call at a time
/// gives 1.0, one serving them all in parallel 2.0; between, the doubling
/// that bought less than this is undone.
const AUTO_GAIN: f64 = 1.3;

impl std::fmt::Display for AutoSearch {
    /// `concurrency auto: 1 at a time (calls per second: 1 → 0.71, 2 → 0.70)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "concurrency auto: {} at a time", self.chosen)?;
        if !self.settled {
            f.write_str(", still searching when the run ended")?;
        } else if self.chosen == self.most {
            f.write_str(" (the most it tries)")?;
        }
        if !self.tried.is_empty() {
            let tried: Vec<String> = self
                .tried
                .iter()
                .map(|(c, x)| format!("{c} → {x:.2}"))
                .collect();
            write!(
                f,
                " (calls answered per second at each: {})",
                tried.join(", ")
            )?;
        }
        Ok(())
    }
}

/// One call in flight: counted until dropped.
#[derive(Debug)]
pub struct InFlight<'a> {
    load: &'a UpstreamLoad,
    /// Calls in flight when it started, itself included.
    pub level: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.load.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.load.freed.notify_waiters();
    }
}

impl UpstreamLoad {
    /// `concurrency = "auto"` with at most `most` calls at once: calls are
    /// sent one at a time, then two, four … — the limit doubled each time
    /// [`AUTO_CALLS`] calls answered at it show a throughput (calls at
    /// once over their mean latency, Little's law) at least [`AUTO_GAIN`]
    /// times the limit before's — and set back to the limit before once a
    /// doubling bought less: the upstream was serving no more at a time,
    /// and the extra calls would only have queued there. Calls held back
    /// wait on this side ([`UpstreamLoad::enter`]), where their wait is
    /// neither latency nor counted against a timeout.
    pub fn set_auto(&self, most: usize) {
        let most = (most as u64).max(1);
        let mut l = self.lock();
        l.auto = Some(AutoSearch {
            most,
            tried: Vec::new(),
            chosen: 1,
            settled: most == 1,
        });
        self.limit.store(1, Ordering::Release);
    }

    /// [`UpstreamLoad::set_auto`], builder style.
    pub fn auto(self, most: usize) -> Self {
        self.set_auto(most);
        self
    }

    /// `auto`'s search so far; `None` without `auto`.
    pub(crate) fn auto_search(&self) -> Option<AutoSearch> {
        self.lock().auto.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Levels> {
        self.levels.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The calls sent at once, when limited.
    pub fn limit(&self) -> Option<u64> {
        Some(self.limit.load(Ordering::Relaxed)).filter(|l| *l > 0)
    }

    /// A call starts now, whatever the limit.
    pub fn start(&self) -> InFlight<'_> {
        let level = self.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
        InFlight { load: self, level }
    }

    /// A call starts once fewer than the limit are in flight (at once
    /// without a limit).
    pub async fn enter(&self) -> InFlight<'_> {
        loop {
            // Registered before the check, so a call ending between the
            // check and the wait still wakes this one.
            let freed = self.freed.notified();
            let limit = self.limit.load(Ordering::Acquire);
            let now = self.in_flight.load(Ordering::Acquire);
            if limit == 0 || now < limit {
                if self
                    .in_flight
                    .compare_exchange(now, now + 1, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return InFlight {
                        load: self,
                        level: now + 1,
                    };
                }
                continue;
            }
            freed.await;
        }
    }

    /// A call started at `level` was answered after `latency`; returns
    /// the calls answered so far, and `auto`'s search when this answer
    /// ended it.
    pub fn answered(&self, level: u64, latency: Duration) -> (u64, Option<AutoSearch>) {
        let mut l = self.lock();
        if l.levels.is_empty() {
            l.levels.resize(LEVELS, Level::default());
        }
        let at = &mut l.levels[(level.max(1) as usize - 1).min(LEVELS - 1)];
        at.calls += 1;
        at.seconds += latency.as_secs_f64();
        let settled = self.auto_step(&mut l);
        drop(l);
        (self.answered.fetch_add(1, Ordering::Relaxed) + 1, settled)
    }

    /// One step of `auto`'s search ([`UpstreamLoad::set_auto`]) once the
    /// limit has [`AUTO_CALLS`] answers started at it; the search when it
    /// settles.
    fn auto_step(&self, l: &mut Levels) -> Option<AutoSearch> {
        let Levels { levels, auto } = l;
        let search = auto.as_mut().filter(|s| !s.settled)?;
        let c = search.chosen;
        let at = levels.get((c as usize - 1).min(LEVELS - 1))?;
        if at.calls < AUTO_CALLS || at.seconds <= 0.0 {
            return None;
        }
        let throughput = c as f64 / (at.seconds / at.calls as f64);
        let before = search.tried.last().copied();
        search.tried.push((c, throughput));
        match before {
            Some((b, x)) if throughput < AUTO_GAIN * x => {
                search.chosen = b;
                search.settled = true;
            }
            _ if c >= search.most => search.settled = true,
            _ => search.chosen = (2 * c).min(search.most),
        }
        self.limit.store(search.chosen, Ordering::Release);
        // A lower limit frees no place; a higher one does.
        self.freed.notify_waiters();
        search.settled.then(|| search.clone())
    }

    /// Whether the upstream serves calls one (or a few) at a time: the
    /// quietest calls (the lowest levels, pooled until they hold
    /// [`MIN_CALLS`]) against the busiest level holding [`MIN_CALLS`], at
    /// least twice as many in flight. Throughput at a level is its
    /// in-flight count over its mean latency; the useful concurrency is the
    /// busy throughput times one call's service time (the quiet calls'
    /// latency per call in flight). `None` unless the busy level holds at
    /// least [`SERIAL_SHARE`] times the useful concurrency, or when there
    /// is not enough to tell.
    pub fn serial(&self) -> Option<SerialUpstream> {
        let l = self.lock();
        let levels = &l.levels;
        let busy = levels.iter().rposition(|l| l.calls >= MIN_CALLS)?;
        let (mut calls, mut seconds, mut weighted) = (0u64, 0.0, 0.0);
        for (i, l) in levels.iter().enumerate().take(busy) {
            calls += l.calls;
            seconds += l.seconds;
            weighted += (i + 1) as f64 * l.calls as f64;
            if calls >= MIN_CALLS {
                break;
            }
        }
        if calls < MIN_CALLS {
            return None;
        }
        let quiet_in_flight = weighted / calls as f64;
        let busy_in_flight = (busy + 1) as f64;
        if busy_in_flight < 2.0 * quiet_in_flight {
            return None;
        }
        let quiet_latency_s = seconds / calls as f64;
        let busy_latency_s = levels[busy].seconds / levels[busy].calls as f64;
        if quiet_latency_s <= 0.0 || busy_latency_s <= 0.0 {
            return None;
        }
        // The quiet calls queued behind one another at a serial upstream
        // (the k-th of a ramp waits for k − 1): their latency per call in
        // flight estimates one call's service time.
        let service_s = quiet_latency_s / quiet_in_flight;
        let busy_throughput = busy_in_flight / busy_latency_s;
        let useful = (busy_throughput * service_s).round().max(1.0);
        (useful * SERIAL_SHARE <= busy_in_flight).then_some(SerialUpstream {
            quiet_in_flight,
            quiet_latency_s,
            busy_in_flight,
            busy_latency_s,
            useful: useful as usize,
        })
    }

    /// [`UpstreamLoad::serial`]'s finding, once per caller, looked for
    /// every 16 answered calls (`answered`: [`UpstreamLoad::answered`]'s
    /// count): the text to say, or `None`. Not looked for with `auto`,
    /// which finds the concurrency itself.
    pub fn notice(&self, answered: u64) -> Option<SerialUpstream> {
        if answered == 0 || !answered.is_multiple_of(16) || self.noticed.load(Ordering::Relaxed) {
            return None;
        }
        if self.lock().auto.is_some() {
            return None;
        }
        let found = self.serial()?;
        if self.noticed.swap(true, Ordering::Relaxed) {
            return None;
        }
        Some(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `calls` calls with `workers` always in flight against an upstream
    /// serving `slots` at a time, `service` seconds each, first come first
    /// served: returns the load the caller would have seen. A discrete-event
    /// simulation of the queue, independent of `serial`'s arithmetic.
    fn simulate(workers: usize, slots: usize, service: f64, calls: usize) -> UpstreamLoad {
        let load = UpstreamLoad::default();
        // Each worker's next start time; each slot's next free time.
        let mut free = vec![0.0f64; slots];
        let mut running: Vec<(f64, f64, u64)> = Vec::new(); // (start, end, level)
        let mut next_start = vec![0.0f64; workers];
        for n in 0..calls {
            let w = (0..workers)
                .min_by(|a, b| next_start[*a].total_cmp(&next_start[*b]))
                .unwrap();
            let start = next_start[w] + n as f64 * 1e-9;
            running.retain(|(_, end, _)| *end > start);
            let level = running.len() as u64 + 1;
            let s = (0..slots)
                .min_by(|a, b| free[*a].total_cmp(&free[*b]))
                .unwrap();
            let end = free[s].max(start) + service;
            free[s] = end;
            running.push((start, end, level));
            next_start[w] = end;
            load.answered(level, Duration::from_secs_f64(end - start));
        }
        load
    }

    #[test]
    fn a_one_at_a_time_upstream_is_noticed_and_its_useful_concurrency_found() {
        let found = simulate(16, 1, 1.5, 80).serial().expect("serial");
        assert_eq!(found.useful, 1, "{found:?}");
        assert!(found.busy_latency_s > 10.0 * found.quiet_latency_s / found.quiet_in_flight);
        assert_eq!(found.busy_in_flight, 16.0);
        let text = found.to_string();
        assert!(text.contains("about 1 call at a time"), "{text}");
        assert!(text.contains("`concurrency = 1`"), "{text}");
        // Two slots behind sixteen workers: flagged, a small concurrency advised.
        let two = simulate(16, 2, 1.0, 120).serial().expect("serial");
        assert!((1..=2).contains(&two.useful), "{two:?}");
    }

    #[test]
    fn an_upstream_serving_in_parallel_or_one_level_alone_is_not_flagged() {
        assert_eq!(simulate(16, 16, 1.5, 80).serial(), None);
        assert_eq!(simulate(8, 64, 0.2, 80).serial(), None);
        // Concurrency 1: nothing to compare.
        assert_eq!(simulate(1, 1, 1.5, 40).serial(), None);
    }

    #[test]
    fn the_notice_is_given_once() {
        let load = simulate(16, 1, 1.5, 32);
        assert!(load.notice(31).is_none(), "looked for every 16 calls");
        assert!(load.notice(32).is_some());
        assert!(load.notice(48).is_none());
        assert_eq!(load.limit(), None, "auto was not asked for");
    }

    #[test]
    fn calls_in_flight_are_counted_while_they_last() {
        let load = UpstreamLoad::default();
        let a = load.start();
        let b = load.start();
        assert_eq!((a.level, b.level), (1, 2));
        drop(a);
        assert_eq!(load.start().level, 2);
    }
}
