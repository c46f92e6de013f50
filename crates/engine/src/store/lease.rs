//! Leases and claims: how long they live.
//!
//! A lease makes one process the writer of a run (`--resume` twice at once
//! is refused); a claim makes one worker the sampler of an input of a
//! shared run (`probity work`). Both record their holder
//! ([`super::identity`]) and when they were last refreshed, by the store's
//! own clock (SQLite's file is one machine's; PostgreSQL's `now()` is the
//! same for every machine), and go stale when not refreshed in time.

/// A lease not refreshed for this long is stale: its holder is taken to be
/// gone and the run may be taken over.
pub const LEASE_STALE_S: f64 = 60.0;

/// How often a process holding a lease refreshes it.
pub const LEASE_REFRESH_S: f64 = 10.0;

/// How long a worker's claim on inputs lives unless refreshed (every third
/// of it): a worker killed outright frees its inputs for the others this
/// long after its last refresh. 30 s, or `PROBITY_CLAIM_TTL_S` seconds
/// (1 to 3600) when set: shorter hands a dead worker's inputs on sooner,
/// at the cost of more refreshes.
pub fn claim_ttl() -> std::time::Duration {
    let seconds = std::env::var("PROBITY_CLAIM_TTL_S")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite())
        .map_or(30.0, |s| s.clamp(1.0, 3600.0));
    std::time::Duration::from_secs_f64(seconds)
}

/// How many times an input of a shared run may be claimed without being
/// finished before it is given up (a dead letter): an input whose every
/// worker dies on it (a crash, an out-of-memory kill) would otherwise be
/// handed from one worker to the next for ever. A worker that stops early
/// on purpose gives its claims back without spending a try
/// ([`super::Store::release_claims`]).
pub const CLAIM_TRIES: i64 = 3;
