//! The PostgreSQL store against a real server (`PROBITY_TEST_PG`, see
//! `probity_engine::store::postgres::testing`): the same runs as SQLite
//! stores, read back the same; leases by the server's clock; claims that
//! never hand one input to two workers; migrations applied once; hostile
//! text stored as it came; no password in any error.

use crate::common;

use common::contraction_experiment;
use probity_core::Cell;
use probity_engine::sim::{SimConfig, SimModel};
use probity_engine::store::postgres::testing::TestDatabase;
use probity_engine::store::{
    RunTotals, SampleRow, Store, StoreError, StoreLocation, CLAIM_TRIES, SCHEMA_VERSION,
};
use probity_engine::{run_with, Control, Experiment, RetryPolicy, RunOutcome, Sink};
use std::sync::Arc;

fn experiment(seed: u64) -> Experiment {
    let sim = SimModel::new(SimConfig {
        seed: Some(seed),
        contractions: 0.1,
        input_spread: 0.3,
        ..SimConfig::default()
    })
    .unwrap();
    contraction_experiment("pg", Arc::new(sim), 7, 9).concurrency(4)
}

async fn go(exp: &Experiment, store: &mut Store) -> RunOutcome {
    run_with(exp, Sink::Store(store), Control::default())
        .await
        .unwrap()
}

/// A store opened off the runtime's threads (the client is synchronous).
fn connect(db: &TestDatabase) -> Store {
    Store::connect(&db.location()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_reads_back_from_postgres_as_from_sqlite() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut lite = Store::open(&dir.path().join("runs.db")).unwrap();
    let mut pg = connect(&db);
    let exp = experiment(11).retry(RetryPolicy {
        attempts: 3,
        ..RetryPolicy::default()
    });
    let a = go(&exp, &mut lite).await;
    let b = go(&exp, &mut pg).await;
    assert_eq!(
        a.tensor, b.tensor,
        "the same seeded simulator, the same cells"
    );
    let (ra, rb) = (
        lite.run(a.stored_id()).unwrap(),
        pg.run(b.stored_id()).unwrap(),
    );
    assert_eq!(
        (ra.inputs, ra.outputs_per_input, &ra.checks, ra.status),
        (rb.inputs, rb.outputs_per_input, &rb.checks, rb.status)
    );
    assert_eq!(ra.verdicts, rb.verdicts);
    assert_eq!(ra.model_calls, rb.model_calls);
    let strip = |rows: Vec<SampleRow>| {
        rows.into_iter()
            .map(|r| SampleRow {
                latency_ms: None,
                ..r
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        strip(lite.samples(a.stored_id()).unwrap()),
        strip(pg.samples(b.stored_id()).unwrap())
    );
    let attempts = |s: &Store, id| {
        s.attempts(id)
            .unwrap()
            .into_iter()
            .map(|r| (r.input_idx, r.repetition, r.attempt, r.output, r.published))
            .collect::<Vec<_>>()
    };
    assert!(!attempts(&pg, b.stored_id()).is_empty());
    // What `probity monitor` reads: each request's first and published cells.
    let live = |s: &Store, id| s.live_cells(id, 2, 5).unwrap();
    assert_eq!(live(&lite, a.stored_id()).len(), 5);
    assert_eq!(live(&lite, a.stored_id()), live(&pg, b.stored_id()));
    assert_eq!(attempts(&lite, a.stored_id()), attempts(&pg, b.stored_id()));
    assert_eq!(
        lite.inputs(a.stored_id()).unwrap(),
        pg.inputs(b.stored_id()).unwrap()
    );
    // What a report reads of its inputs: every id, and the quoted ones'
    // fields, in the order asked (an index not stored is left out).
    let all = lite.inputs(a.stored_id()).unwrap();
    let ids: Vec<String> = all.iter().map(|i| i.id.clone()).collect();
    assert_eq!(lite.input_ids(a.stored_id()).unwrap(), ids);
    assert_eq!(pg.input_ids(b.stored_id()).unwrap(), ids);
    let want = vec![(6, all[6].clone()), (2, all[2].clone())];
    assert_eq!(lite.inputs_at(a.stored_id(), &[6, 2, 99]).unwrap(), want);
    assert_eq!(pg.inputs_at(b.stored_id(), &[6, 2, 99]).unwrap(), want);
    // The report's reader: snapshot, causes, a few quoted samples.
    let shape = (9, 7, 1);
    assert_eq!(
        pg.snapshot(b.stored_id(), shape).unwrap().unwrap().0,
        b.tensor
    );
    let quoted = pg
        .samples_at(b.stored_id(), &[(3, 2), (0, 0), (3, 2)])
        .unwrap();
    assert_eq!(
        quoted
            .iter()
            .map(|r| (r.input_idx, r.repetition))
            .collect::<Vec<_>>(),
        [(3, 2), (0, 0)]
    );
    let mut cells = 0;
    pg.each_sample_cells(b.stored_id(), |_, _, c| cells += c.len())
        .unwrap();
    assert_eq!(cells, 63);
    assert_eq!(pg.latest_named("pg").unwrap(), Some(b.stored_id()));
    assert_eq!(pg.runs(Some("p")).unwrap().len(), 1);
    assert_eq!(pg.sample_count(b.stored_id()).unwrap(), 63);
}

/// Outputs, errors and input ids holding NUL (which PostgreSQL's TEXT
/// refuses) and other hostile text are stored and read back unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_text_is_stored_as_it_came() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let mut pg = connect(&db);
    let exp = experiment(3).outputs_per_input(1);
    let out = go(&exp, &mut pg).await;
    let run = out.stored_id();
    let writer = pg.writer(run).unwrap();
    let hostile = "a\0b <script>alert(1)</script> \u{202e} '; DROP TABLE runs; --";
    writer
        .send(SampleRow {
            input_idx: 0,
            repetition: 0,
            cache_key: "k".into(),
            output: Some(hostile.into()),
            error: Some(format!("upstream said {hostile}")),
            latency_ms: Some(1.5),
            input_tokens: Some(3),
            output_tokens: None,
            call_attempts: 2,
            cells: vec![Cell::Error],
            reasons: vec![(0, hostile.into())],
        })
        .unwrap();
    writer
        .send_input(
            0,
            probity_core::Input::text(format!("id{hostile}"), hostile.to_string()),
        )
        .unwrap();
    writer.finish().unwrap();
    let row = &pg.samples_at(run, &[(0, 0)]).unwrap()[0];
    assert_eq!(row.output.as_deref(), Some(hostile));
    assert_eq!(
        row.error.as_deref(),
        Some(&*format!("upstream said {hostile}"))
    );
    assert_eq!(row.reasons, vec![(0, hostile.to_string())]);
    assert_eq!(pg.inputs(run).unwrap()[0].id, format!("id{hostile}"));
    assert_eq!(db.query("SELECT COUNT(*) FROM runs"), ["1"]);
}

/// One process at a time writes a run: a second resume is refused naming
/// the holder; a lease the server's clock finds stale is taken over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_use_the_servers_clock_and_refuse_a_second_writer() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let mut pg = connect(&db);
    let out = go(&experiment(5), &mut pg).await;
    let run = out.stored_id();
    pg.take_lease(run).unwrap();
    // Another holder (another machine) took it a second ago.
    db.query(&format!(
        "UPDATE leases SET holder = 'other', host = 'elsewhere', pid = 4242, refreshed_at = now() - interval '1 second' WHERE run_id = {run}"
    ));
    match pg.take_lease(run) {
        Err(StoreError::Leased { pid, host, .. }) => {
            assert_eq!((pid, host.as_str()), (4242, "elsewhere"))
        }
        other => panic!("expected the lease refused, got {other:?}"),
    }
    // Not refreshed for longer than LEASE_STALE_S by the server's clock.
    db.query(&format!(
        "UPDATE leases SET refreshed_at = now() - interval '61 seconds' WHERE run_id = {run}"
    ));
    pg.take_lease(run).unwrap();
    assert_eq!(
        pg.lease_holder(run).unwrap(),
        Some(i64::from(std::process::id()))
    );
    // A run whose writer is gone reads as interrupted; one held, not.
    pg.release_lease(run).unwrap();
    db.query(&format!(
        "UPDATE runs SET status = 'running' WHERE id = {run}"
    ));
    assert_eq!(pg.interrupt_all_abandoned().unwrap(), 1);
}

/// Claims: two workers never get one input; a claim not refreshed in
/// time is taken over; done inputs are never handed out again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_split_inputs_and_expire() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let mut pg = connect(&db);
    let run = go(&experiment(8), &mut pg).await.stored_id();
    let other = connect(&db);
    let mine = pg.claim_inputs(run, 4).unwrap();
    // The other store is this process too: make its claims another holder's.
    db.query(&format!(
        "UPDATE claims SET holder = 'other' WHERE run_id = {run} AND holder IS NOT NULL"
    ));
    let theirs = other.claim_inputs(run, 10).unwrap();
    assert_eq!(mine, [0, 1, 2, 3]);
    assert_eq!(theirs, [4, 5, 6, 7, 8]);
    assert_eq!(pg.open_inputs(run).unwrap(), (9, 9));
    assert!(pg.claim_inputs(run, 10).unwrap().is_empty());
    pg.finish_inputs(run, &[0, 1]).unwrap();
    // An expired claim of this process's own (4 and 5: `other` is this
    // process too) is never taken back by it: it may still be sampling it.
    db.query(&format!(
        "UPDATE claims SET expires_at = now() - interval '1 second' WHERE run_id = {run} AND input_idx IN (4, 5)"
    ));
    assert!(pg.claim_inputs(run, 10).unwrap().is_empty());
    // Another holder's expired claims are.
    db.query(&format!(
        "UPDATE claims SET expires_at = now() - interval '1 second' WHERE run_id = {run} AND input_idx IN (2, 3)"
    ));
    assert_eq!(pg.claim_inputs(run, 10).unwrap(), [2, 3]);
    assert_eq!(pg.open_inputs(run).unwrap(), (7, 5));
}

/// Dead letters: an input whose holder dies [`CLAIM_TRIES`] times is
/// given up (done, named) instead of being handed on for ever; a worker
/// that gives its claims back on purpose spends no try.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_that_kills_its_workers_is_given_up_after_its_tries() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let mut pg = connect(&db);
    let run = go(&experiment(8), &mut pg).await.stored_id();
    let die = || {
        db.query(&format!(
            "UPDATE claims SET holder = 'dead', expires_at = now() - interval '1 second'
             WHERE run_id = {run} AND input_idx = 0"
        ))
    };
    for _ in 0..CLAIM_TRIES {
        assert_eq!(pg.claim_inputs(run, 1).unwrap(), [0]);
        die();
    }
    assert!(pg.given_up_inputs(run).unwrap().is_empty());
    // Its tries spent: given up, and the next input handed out instead.
    assert_eq!(pg.claim_inputs(run, 1).unwrap(), [1]);
    assert_eq!(pg.given_up_inputs(run).unwrap(), [0]);
    assert_eq!(pg.open_inputs(run).unwrap(), (8, 1));
    // Released on purpose, twice over the tries: never given up. A
    // released input has no holder: anyone may take it, its releaser too.
    for _ in 0..=CLAIM_TRIES {
        pg.release_claims(run).unwrap();
        assert_eq!(pg.open_inputs(run).unwrap(), (8, 0));
        assert_eq!(pg.claim_inputs(run, 1).unwrap(), [1]);
    }
    assert_eq!(pg.given_up_inputs(run).unwrap(), [0]);
}

/// The server's deadlock count for the test database, once every
/// backend's pending statistics are in (a backend reports them when it
/// exits or at most once a second while busy).
fn deadlocks(db: &TestDatabase) -> i64 {
    std::thread::sleep(std::time::Duration::from_millis(1500));
    db.query("SELECT deadlocks::text FROM pg_stat_database WHERE datname = current_database()")[0]
        .parse()
        .unwrap()
}

/// A writer's session usage after `n` samples: two tokens in and three
/// out a sample, one judge call on check 1 with one token each way.
fn usage(n: u64) -> probity_core::cost::RunUsage {
    use probity_core::cost::{RunUsage, Usage};
    RunUsage {
        system: Usage {
            answered: n,
            reported: n,
            input_tokens: 2 * n,
            output_tokens: 3 * n,
        },
        judges: vec![
            Usage::default(),
            Usage {
                answered: n,
                reported: n,
                input_tokens: n,
                output_tokens: n,
            },
        ],
    }
}

/// Six writers of one run at once (as six `probity work` processes), each
/// committing its samples and counts in many small transactions: the
/// server counts no deadlock (writers used to lock the run's row to add
/// their counts, while each other's sample rows held its key-share lock),
/// and the run's counts are the sum of every writer's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_of_one_run_never_deadlock_and_add_up() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let mut pg = connect(&db);
    let run = go(&experiment(3), &mut pg).await.stored_id();
    let before = pg.run(run).unwrap();
    let deadlocks_before = deadlocks(&db);
    const WRITERS: usize = 6;
    const SAMPLES: usize = 150;
    let location = db.location();
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let location = location.clone();
            std::thread::spawn(move || {
                let store = Store::connect(&location).unwrap();
                let writer = store
                    .writer_committing_every(run, std::time::Duration::from_millis(1))
                    .unwrap();
                for s in 0..SAMPLES {
                    writer
                        .send(SampleRow {
                            input_idx: s % 7,
                            repetition: 100 + w * SAMPLES + s,
                            cache_key: format!("w{w}s{s}"),
                            output: Some("ok".into()),
                            error: None,
                            latency_ms: Some(1.0),
                            input_tokens: Some(2),
                            output_tokens: Some(3),
                            call_attempts: 1,
                            cells: vec![Cell::Pass; 3],
                            reasons: Vec::new(),
                        })
                        .unwrap();
                    // This writer's session counts so far (one call and
                    // five tokens a sample, one judge call on check 1).
                    let n = s as u64 + 1;
                    writer
                        .send_totals(RunTotals {
                            model_calls: 2 * n,
                            judge_calls: n,
                            tokens: 5 * n,
                            judge_calls_by_check: vec![0, n],
                            usage: usage(n),
                            calls_ended: 2 * n,
                        })
                        .unwrap();
                    if s % 10 == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
                writer.finish().unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        deadlocks(&db) - deadlocks_before,
        0,
        "deadlocks counted by the server"
    );
    let after = pg.run(run).unwrap();
    let n = (WRITERS * SAMPLES) as u64;
    assert_eq!(after.model_calls, before.model_calls + 2 * n);
    assert_eq!(after.judge_calls, before.judge_calls + n);
    assert_eq!(after.tokens, before.tokens + 5 * n);
    // Every writer's calls ended: none lost in flight (schema 16).
    assert_eq!(
        after.calls_ended,
        Some(before.calls_ended.unwrap_or(0) + 2 * n)
    );
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    assert_eq!(
        at(&after.judge_calls_by_check, 1),
        at(&before.judge_calls_by_check, 1) + n
    );
    assert_eq!(
        db.query(&format!(
            "SELECT COUNT(*)::text FROM samples WHERE run_id = {run} AND repetition >= 100"
        )),
        [n.to_string()]
    );
    // The usage too (cost in money): each writer's own, added.
    let each = usage(SAMPLES as u64);
    let mut want = before.usage.clone().expect("a new run's usage is known");
    for _ in 0..WRITERS {
        want = want.plus(&each);
    }
    assert_eq!(after.usage, Some(want));
    // The listing reads the same sums.
    let listed = pg.runs(None).unwrap();
    assert_eq!(
        listed.iter().find(|r| r.id == run).unwrap().model_calls,
        after.model_calls
    );
}

/// Migrations: numbered, each applied once however many processes open a
/// new database at once; a database from a newer probity is refused.
#[test]
fn migrations_are_applied_once_and_a_newer_schema_is_refused() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let location = db.location();
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let location = location.clone();
            std::thread::spawn(move || Store::connect(&location).map(|_| ()))
        })
        .collect();
    for o in openers {
        o.join().unwrap().unwrap();
    }
    assert_eq!(
        db.query("SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations"),
        [(9..=SCHEMA_VERSION)
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(",")]
    );
    db.query("INSERT INTO schema_migrations (version) VALUES (99)");
    match Store::connect(&location) {
        Err(e @ StoreError::TooNew { .. }) => assert!(e.to_string().contains("schema 99")),
        other => panic!("expected TooNew, got {:?}", other.err()),
    }
}

/// A wrong password, a missing database, a dead port: each a clear error
/// naming the store, and never the password.
#[test]
fn connection_failures_name_the_cause_and_never_the_password() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let url = db.url();
    let wrong_pw = replace_password(url, "Wr0ngSecret");
    let e = Store::connect(&StoreLocation::parse(&wrong_pw).unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("password authentication failed"), "{e}");
    assert!(!e.contains("Wr0ngSecret"), "{e}");
    let missing = format!("{}_missing", url.split('?').next().unwrap());
    let e = Store::connect(&StoreLocation::parse(&missing).unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("does not exist"), "{e}");
    let dead = "postgres://probity:Wr0ngSecret@127.0.0.1:1/probity";
    let e = Store::connect(&StoreLocation::parse(dead).unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("127.0.0.1:1") || e.to_lowercase().contains("refused"),
        "{e}"
    );
    assert!(!e.contains("Wr0ngSecret"), "{e}");
    let e = Store::connect(&StoreLocation::parse("postgres://a:Wr0ngSecret@h:notaport/x").unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not a valid PostgreSQL URL"), "{e}");
    assert!(!e.contains("Wr0ngSecret"), "{e}");
}

/// `url` with its password (user part) replaced by `pw`.
fn replace_password(url: &str, pw: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (userinfo, host) = rest.split_once('@').unwrap();
    let user = userinfo.split(':').next().unwrap();
    format!("{scheme}://{user}:{pw}@{host}")
}

/// Four workers claiming one input at a time, at once: each claim holds at
/// most what was asked, no input is handed out twice, none is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_claims_take_what_they_ask_and_never_the_same_input() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let mut pg = connect(&db);
    let sim = SimModel::new(SimConfig {
        seed: Some(1),
        ..SimConfig::default()
    })
    .unwrap();
    let exp = contraction_experiment("many", Arc::new(sim), 1, 200);
    let run = go(&exp, &mut pg).await.stored_id();
    let location = db.location();
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let location = location.clone();
            std::thread::spawn(move || {
                let store = Store::connect(&location).unwrap();
                let mut got = Vec::new();
                loop {
                    let claim = store.claim_inputs(run, 1).unwrap();
                    assert!(claim.len() <= 1, "worker {w} asked for 1, got {claim:?}");
                    let Some(&i) = claim.first() else { break };
                    // Another holder in the store's eyes: this process's
                    // token is shared by the threads.
                    store.finish_inputs(run, &[i]).unwrap();
                    got.push(i);
                }
                got
            })
        })
        .collect();
    let mut all: Vec<usize> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..200).collect::<Vec<_>>());
}

/// A TCP proxy to the test server that, once, swallows the server's answer
/// to the COMMIT of a transaction that sent `needle` and cuts the
/// connection: the transaction committed, its client told only that the
/// connection was lost (what a restart or a network cut mid-COMMIT does).
/// Every later connection passes through.
struct LosesCommit {
    addr: std::net::SocketAddr,
    cut: Arc<std::sync::atomic::AtomicBool>,
}

impl LosesCommit {
    fn start(server: std::net::SocketAddr, needle: &'static [u8]) -> LosesCommit {
        Self::losing(server, needle, b"COMMIT\0")
    }

    /// The same, swallowing the first answer holding `answer` (a
    /// statement's command tag, e.g. `UPDATE `, for one sent outside a
    /// transaction, which commits as it completes).
    fn losing(
        server: std::net::SocketAddr,
        needle: &'static [u8],
        answer: &'static [u8],
    ) -> LosesCommit {
        use std::io::{Read, Write};
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let done = cut.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(upstream) = std::net::TcpStream::connect(server) else {
                    return;
                };
                let claiming = Arc::new(AtomicBool::new(false));
                let (mut c_in, mut u_out) =
                    (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                let seen = claiming.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 65536];
                    while let Ok(n @ 1..) = c_in.read(&mut buf) {
                        if contains(&buf[..n], needle) {
                            seen.store(true, SeqCst);
                        }
                        if u_out.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
                let (mut u_in, mut c_out, done) = (upstream, client, done.clone());
                std::thread::spawn(move || {
                    let mut buf = [0u8; 65536];
                    while let Ok(n @ 1..) = u_in.read(&mut buf) {
                        if claiming.load(SeqCst)
                            && contains(&buf[..n], answer)
                            && !done.swap(true, SeqCst)
                        {
                            let _ = c_out.shutdown(std::net::Shutdown::Both);
                            let _ = u_in.shutdown(std::net::Shutdown::Both);
                            break;
                        }
                        if c_out.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        LosesCommit { addr, cut }
    }

    /// `db`'s URL through this proxy, in plain text (the proxy reads it).
    fn url(&self, db: &TestDatabase) -> String {
        let url = db.url();
        let at = url.rfind('@').expect("a URL with a role") + 1;
        let slash = at + url[at..].find('/').expect("a URL with a database");
        let sep = if url.contains('?') { '&' } else { '?' };
        format!(
            "{}{}{}{sep}sslmode=disable",
            &url[..at],
            self.addr,
            &url[slash..]
        )
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The server's address in `db`'s URL.
fn server_addr(db: &TestDatabase) -> std::net::SocketAddr {
    use std::net::ToSocketAddrs;
    let url = db.url();
    let at = url.rfind('@').expect("a URL with a role") + 1;
    let host = &url[at..at + url[at..].find('/').expect("a URL with a database")];
    host.to_socket_addrs().unwrap().next().unwrap()
}

/// A claim whose COMMIT's answer is lost is tried again on a new
/// connection (issue 38's restarts): the second try hands back what the
/// first took and takes nothing more. Inputs held by this process but
/// never handed to its sampler would be kept alive by its writer for ever,
/// and the shared run never end (a clean-clone CI run hung on this: a
/// server restart mid-COMMIT).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_whose_commit_answer_is_lost_is_taken_once() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let mut pg = connect(&db);
    let run = go(&experiment(8), &mut pg).await.stored_id();
    let proxy = LosesCommit::start(server_addr(&db), b"SET holder = $2");
    let lossy = Store::connect(&StoreLocation::parse(&proxy.url(&db)).unwrap()).unwrap();
    let got = lossy.claim_inputs(run, 3).unwrap();
    assert!(
        proxy.cut.load(std::sync::atomic::Ordering::SeqCst),
        "the proxy cut a claim's COMMIT answer"
    );
    assert_eq!(got, [0, 1, 2]);
    assert_eq!(
        pg.open_inputs(run).unwrap().1,
        3,
        "held: what the claim handed back, nothing more"
    );
    assert_eq!(
        db.query(&format!(
            "SELECT SUM(tries)::text FROM claims WHERE run_id = {run}"
        )),
        ["3"],
        "each input claimed once"
    );
}

/// A release of claims (a worker stopping early) whose answer is lost is
/// tried again on a new connection: it gives back each input's try once,
/// not twice (an input would be handed out once more than `CLAIM_TRIES`
/// allows before it is given up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_whose_answer_is_lost_gives_each_try_back_once() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let mut pg = connect(&db);
    let run = go(&experiment(8), &mut pg).await.stored_id();
    let proxy = LosesCommit::losing(server_addr(&db), b"tries = GREATEST", b"UPDATE ");
    let lossy = Store::connect(&StoreLocation::parse(&proxy.url(&db)).unwrap()).unwrap();
    assert_eq!(lossy.claim_inputs(run, 3).unwrap(), [0, 1, 2]);
    // Two earlier workers died on each of them: this is the third try.
    db.query(&format!(
        "UPDATE claims SET tries = 3 WHERE run_id = {run} AND tries = 1 RETURNING 1"
    ));
    lossy.release_claims(run).unwrap();
    assert!(
        proxy.cut.load(std::sync::atomic::Ordering::SeqCst),
        "the proxy cut the release's answer"
    );
    assert_eq!(
        db.query(&format!(
            "SELECT string_agg(tries::text, ' ' ORDER BY input_idx) FROM claims
             WHERE run_id = {run} AND input_idx < 3"
        )),
        ["2 2 2"],
        "each try given back once"
    );
    assert_eq!(pg.open_inputs(run).unwrap().1, 0, "nothing held");
}

/// A run's creation whose COMMIT's answer is lost is tried again on a new
/// connection: it hands back the run its first try made instead of making
/// a second (an empty run that would read as interrupted), and the run
/// goes on to the end through the same store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_creation_commit_answer_is_lost_is_made_once() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let proxy = LosesCommit::start(server_addr(&db), b"INSERT INTO runs");
    let mut lossy = Store::connect(&StoreLocation::parse(&proxy.url(&db)).unwrap()).unwrap();
    let id = go(&experiment(8), &mut lossy).await.stored_id();
    assert!(
        proxy.cut.load(std::sync::atomic::Ordering::SeqCst),
        "the proxy cut the creation's COMMIT answer"
    );
    assert_eq!(
        db.query("SELECT id::text || ' ' || status FROM runs"),
        [format!("{id} complete")],
        "one run, complete"
    );
}
