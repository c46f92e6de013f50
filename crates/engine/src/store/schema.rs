//! The store's schema version, shared by both backends.
//!
//! Migrations are numbered; a store records the last one applied (SQLite:
//! `PRAGMA user_version`; PostgreSQL: the `schema_migrations` table) and
//! opening it applies the ones after, in order. History: 2 added the
//! `attempts` table (every attempt of a retry policy); 3 the `judgements`
//! table (the judge cache); 4 `attempts.cache_key` (the output cache of
//! attempts after the first); 6 the `leases` table (one process owns a run
//! at a time); 7 `runs.verdicts` (each check's decision, stored when the
//! run finishes); 8 the `rechecks` table and `runs.outputs_from` (a
//! revalidated run's verdicts over another run's outputs), the `snapshots`
//! table (a finished run's tensor and causes) and dropped the index of
//! samples by cache key; 9 `runs.sequential` (a sequential run's outcome).
//! Schema 9 is the baseline both backends create at once (`sqlite::schema`,
//! `postgres::schema`; an older SQLite store is brought to it in place);
//! 10 added `claims` (inputs of a shared run claimed by workers,
//! `probity work`) and the leases' holder token; 11 `runs.variant` and
//! `runs.variant_group` (the variants of one `probity run`, `[[variant]]`);
//! 12 `calibration_verdicts` (the judges' verdicts on verifiers' labelled
//! pairs, reused by later runs that ask the same question); 13 the claims'
//! `tries` and `given_up` (dead letters) and, in PostgreSQL, `run_counts`
//! (each writer's counts on a row of its own: writers of one run never
//! wait for each other); 14 the runs' call time (`call_s`, `queued_s`,
//! `process_s`, `processes`, the span `span_start_s`–`span_end_s`) and
//! `upstream` (what the upstreams were found to take), so a shared run's
//! report tells its wall time from the time its calls took; 15
//! `runs.usage` (and, in PostgreSQL, `run_counts.usage`): answered calls'
//! input and output tokens, the system's and each judge's apart, so a
//! report prices them (cost in money; `NULL` for a run stored before: its
//! cost is not known); 16 the calls
//! that ended (`calls_ended`, on `runs` and PostgreSQL's `run_counts`):
//! a shared run counts each call before it is sent, so the calls a killed
//! worker had in flight are counted, and told apart (`model_calls -
//! calls_ended`); 17 `claims.claim_tag` and `runs.create_tag`: the claim
//! that took each input and the call that created each run, so one tried
//! again after its COMMIT's answer was lost hands back what it made instead
//! of taking more inputs or making a second run (PostgreSQL; SQLite keeps
//! the same columns).

/// The last migration this version of probity knows.
pub const SCHEMA_VERSION: i64 = 17;

/// Migration 14 on SQLite (`DOUBLE PRECISION` and `BIGINT` are SQLite
/// types too); PostgreSQL's adds `IF NOT EXISTS`, which SQLite lacks
/// (`postgres::schema`).
pub(crate) const RUN_CALLS: &str = r#"
ALTER TABLE runs ADD COLUMN call_s DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN queued_s DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN process_s DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN processes BIGINT;
ALTER TABLE runs ADD COLUMN span_start_s DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN span_end_s DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN upstream TEXT;
"#;

/// Migration 15 on SQLite: the runs' usage ([`crate::store::rows::USAGE_NONE`]
/// when created; `NULL`: stored before it was kept).
pub(crate) const RUN_USAGE: &str = r#"
ALTER TABLE runs ADD COLUMN usage TEXT;
"#;

/// Migration 16 on SQLite: of the run's calls, those that ended (answered,
/// failed or cut short); `NULL` for runs stored before (nothing known).
pub(crate) const CALLS_ENDED: &str = r#"
ALTER TABLE runs ADD COLUMN calls_ended BIGINT;
"#;
