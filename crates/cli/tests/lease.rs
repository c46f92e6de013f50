//! One process owns a run at a time: a second `--resume` of a run another
//! live process is running is refused with a message naming the holder;
//! once the holder has finished, or died (kill -9), the run can be resumed.

use crate::common;

use common::{probity_cmd, text};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn write_config(dir: &Path) {
    let inputs: String = (0..5)
        .map(|i| format!("[[input]]\nid = \"q{i}\"\ntext = \"t{i}\"\n"))
        .collect();
    std::fs::write(
        dir.join("probity.toml"),
        format!(
            "name = \"lease\"\n[system]\nprovider = \"sim\"\nlatency_ms = 100\n[experiment]\noutputs_per_input = 20\nconcurrency = 1\ndeadline_s = 2\n[[validator]]\nname = \"short\"\ncheck = 'output.len() < 100000'\n{inputs}"
        ),
    )
    .unwrap();
}

fn cmd(dir: &Path, resume: bool) -> Command {
    let mut c = probity_cmd();
    c.current_dir(dir)
        .args(["run", "--quiet"])
        .env("PROBITY_STORE", dir.join("runs.db"));
    if resume {
        c.arg("--resume");
    }
    c
}

fn spawn(dir: &Path) -> Child {
    cmd(dir, true)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn resume(dir: &Path) -> Output {
    cmd(dir, true).output().unwrap()
}

/// Wait until `child` holds run 1's lease (however slow its start).
fn holds_the_lease(dir: &Path, child: &Child) {
    let store = probity_engine::store::Store::open(&dir.join("runs.db")).unwrap();
    let start = Instant::now();
    while store.lease_holder(1).unwrap() != Some(i64::from(child.id())) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the resumed run never took its lease"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_resume_is_refused_naming_the_holder_until_it_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path());
    // A run stopped by its deadline: unfinished, resumable.
    let first = cmd(dir.path(), false).output().unwrap();
    assert_ne!(first.status.code(), Some(0), "{}", text(&first.stderr));

    // A resumes it; B, while A runs, is refused.
    let a = spawn(dir.path());
    holds_the_lease(dir.path(), &a);
    let b = resume(dir.path());
    let err = text(&b.stderr);
    assert_eq!(b.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is being run by process") && err.contains(&a.id().to_string()),
        "{err}"
    );
    let a_out = a.wait_with_output().unwrap();
    assert!(!text(&a_out.stderr).contains("is being run by"));

    // A finished (its deadline): its lease is released.
    let mut c = spawn(dir.path());
    holds_the_lease(dir.path(), &c);
    // C is killed without a chance to release its lease: the lease names
    // a process that is gone, and is taken over.
    c.kill().unwrap();
    c.wait().unwrap();
    let d = resume(dir.path());
    let err = text(&d.stderr);
    assert!(!err.contains("is being run by"), "{err}");
}

/// Issue 24, item 5: a revalidation killed outright (kill -9) is listed as
/// interrupted once its process is gone, not running for ever; while it
/// lives it is listed as running.
#[test]
fn a_killed_revalidation_is_listed_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let inputs: String = (0..5)
        .map(|i| format!("[[input]]\nid = \"q{i}\"\ntext = \"t{i}\"\n"))
        .collect();
    let config = |check: &str| {
        format!(
            "name = \"recheck\"\n[system]\nprovider = \"sim\"\n[experiment]\noutputs_per_input = 20\n[[validator]]\nname = \"c\"\ncheck = '''{check}'''\n{inputs}"
        )
    };
    std::fs::write(
        dir.path().join("probity.toml"),
        config("output.len() < 100000"),
    )
    .unwrap();
    // Each evaluation runs into its 1 s limit: 100 outputs take a while.
    std::fs::write(
        dir.path().join("slow.toml"),
        config("let a = []; for i in 0..50000 { a = [a]; } true"),
    )
    .unwrap();
    let first = cmd(dir.path(), false).output().unwrap();
    assert!(
        matches!(first.status.code(), Some(0 | 1)),
        "{}",
        text(&first.stderr)
    );

    let mut child = probity_cmd()
        .current_dir(dir.path())
        .args(["revalidate", "1", "--config", "slow.toml"])
        .env("PROBITY_STORE", dir.path().join("runs.db"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let store = probity_engine::store::Store::open(&dir.path().join("runs.db")).unwrap();
    let start = Instant::now();
    while store.lease_holder(2).unwrap() != Some(i64::from(child.id())) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the revalidation never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = |dir: &Path| {
        let runs = common::json_runs(dir);
        runs.iter()
            .find(|r| r["id"] == 2)
            .map(|r| r["status"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(
        status(dir.path()),
        "running",
        "a live revalidation is left alone"
    );
    child.kill().unwrap(); // SIGKILL: no chance to clean up.
    child.wait().unwrap();
    assert_eq!(status(dir.path()), "interrupted");
    // It stays so, and the revalidated run is untouched.
    assert_eq!(status(dir.path()), "interrupted");
    let runs = common::json_runs(dir.path());
    assert_eq!(
        runs.iter().find(|r| r["id"] == 1).unwrap()["status"],
        "complete"
    );
}

/// A shared run's configuration whose system is the provider stand-in at
/// `upstream` (`probity sim serve`, which counts every request it is
/// paid for): `inputs` inputs × `outputs` outputs.
fn shared_config(dir: &Path, upstream: &str, inputs: usize, outputs: usize) {
    let inputs: String = (0..inputs)
        .map(|i| format!("[[input]]\nid = \"q{i}\"\ntext = \"Thank you, {i}.\"\n"))
        .collect();
    std::fs::write(
        dir.join("probity.toml"),
        format!(
            "name = \"shared\"\n[system]\nprovider = \"openai\"\nbase_url = \"http://{upstream}/v1\"\nmodel = \"probity-sim\"\napi_key_env = \"PROBITY_TEST_UPSTREAM_KEY\"\n[experiment]\noutputs_per_input = {outputs}\nconcurrency = 4\n[[validator]]\nname = \"short\"\ncheck = 'output.len() < 100000'\n{inputs}"
        ),
    )
    .unwrap();
}

/// `probity ARGS` in `dir` on its SQLite store, claims living 2 s.
fn shared_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut c = probity_cmd();
    c.current_dir(dir)
        .args(args)
        .env("PROBITY_STORE", dir.join("runs.db"))
        .env("PROBITY_CLAIM_TTL_S", "2")
        .env("PROBITY_TEST_UPSTREAM_KEY", "k")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

fn sqlite_count(dir: &Path, sql: &str) -> i64 {
    let c = rusqlite::Connection::open(dir.join("runs.db")).unwrap();
    c.query_row(sql, [], |r| r.get(0)).unwrap_or(0)
}

/// Wait until `sql` counts at least one row of `dir`'s store.
fn until_some(dir: &Path, sql: &str, what: &str) {
    let start = Instant::now();
    while sqlite_count(dir, sql) == 0 {
        assert!(start.elapsed() < Duration::from_secs(60), "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn finished(child: Child) -> Output {
    let out = child.wait_with_output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    out
}

/// Issue 38: one run shared by three processes on one SQLite file (`run
/// --shared` and two `work`): every sample stored once, and the provider
/// stand-in paid exactly one call per sample — a worker never claims an
/// input it holds itself (it used to take its own in-flight inputs again
/// and buy ~60% of the calls twice).
#[test]
fn a_shared_run_on_sqlite_buys_each_call_once() {
    let upstream = common::sim_serve(&["--latency-ms", "100"]);
    let dir = tempfile::tempdir().unwrap();
    shared_config(dir.path(), &upstream.1, 24, 6);
    let creator = shared_cmd(dir.path(), &["run", "--shared", "-q"])
        .spawn()
        .unwrap();
    until_some(dir.path(), "SELECT COUNT(*) FROM claims", "no claims");
    let workers: Vec<Child> = (0..2)
        .map(|_| shared_cmd(dir.path(), &["work", "-q"]).spawn().unwrap())
        .collect();
    finished(creator);
    for w in workers {
        finished(w);
    }
    assert_eq!(
        sqlite_count(dir.path(), "SELECT COUNT(*) FROM samples"),
        144
    );
    assert_eq!(
        sqlite_count(dir.path(), "SELECT COUNT(*) FROM claims WHERE done = 1"),
        24
    );
    assert_eq!(
        common::requests(&upstream.1),
        144,
        "calls paid for 144 samples"
    );
    assert_eq!(
        sqlite_count(dir.path(), "SELECT model_calls FROM runs WHERE id = 1"),
        144
    );
    // Wall time and the calls' time apart (issue 38, item 5): three
    // processes worked at once, so their calls (144 × 100 ms, sent to
    // answered) add up to more than the run's wall, and so do their
    // durations.
    let out = common::probity(dir.path(), &["report", "1", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&common::text(&out.stdout)).unwrap();
    let calls = &report["run"]["calls"];
    assert_eq!(calls["processes"], 3, "{calls}");
    let secs = |k: &str| calls[k].as_f64().unwrap();
    assert!(secs("call_s") >= 144.0 * 0.1 * 0.99, "{calls}");
    assert!(secs("wall_s") < secs("process_s"), "{calls}");
    assert!(secs("wall_s") < secs("call_s"), "{calls}");
    assert_eq!(
        report["run"]["duration_s"], calls["wall_s"],
        "the header's time is the wall"
    );
    let out = common::probity(dir.path(), &["report", "1"]);
    let page = common::text(&out.stdout);
    assert!(page.contains(" · 3 processes "), "{page}");
    assert!(page.contains("calls took "), "{page}");
}

/// Issue 38 item 3: on a system that answers at once, a worker claims more
/// inputs at a time while its claims come fast, instead of 8 at a time
/// (twice its 4 workers) for the whole run: 2,000 inputs take a handful
/// of claims (each claim tags the inputs it takes), not 250.
#[test]
fn a_shared_run_on_a_fast_system_claims_in_growing_batches() {
    let dir = tempfile::tempdir().unwrap();
    let inputs: String = (0..2000)
        .map(|i| format!("{{\"id\": \"q{i}\", \"text\": \"Thank you, {i}.\"}}\n"))
        .collect();
    std::fs::write(dir.path().join("inputs.jsonl"), inputs).unwrap();
    std::fs::write(
        dir.path().join("probity.toml"),
        "name = \"fast\"\n[system]\nprovider = \"sim\"\n[experiment]\ninputs = \"inputs.jsonl\"\noutputs_per_input = 1\nconcurrency = 4\n[[validator]]\nname = \"short\"\ncheck = 'output.len() < 100000'\n",
    )
    .unwrap();
    let out = shared_cmd(dir.path(), &["run", "--shared", "-q"])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        sqlite_count(dir.path(), "SELECT COUNT(*) FROM samples"),
        2000
    );
    let claims = sqlite_count(dir.path(), "SELECT COUNT(DISTINCT claim_tag) FROM claims");
    assert!(
        (1..=60).contains(&claims),
        "{claims} claims for 2,000 inputs (250 at a fixed 8 a claim)"
    );
}

/// Issue 38: a worker killed outright (kill -9) while it holds inputs: the
/// others take its inputs once its claims expire and store every sample
/// once; the calls paid beyond one per sample are at most the killed
/// worker's calls in flight (its concurrency) and those it made but had
/// not yet committed.
#[test]
fn a_killed_worker_on_sqlite_costs_at_most_its_calls_in_flight() {
    let upstream = common::sim_serve(&["--latency-ms", "40"]);
    let dir = tempfile::tempdir().unwrap();
    shared_config(dir.path(), &upstream.1, 24, 6);
    let creator = shared_cmd(dir.path(), &["run", "--shared", "-q"])
        .spawn()
        .unwrap();
    until_some(dir.path(), "SELECT COUNT(*) FROM claims", "no claims");
    let worker = shared_cmd(dir.path(), &["work", "-q"]).spawn().unwrap();
    let mut victim = shared_cmd(dir.path(), &["work", "-q"]).spawn().unwrap();
    let pid = victim.id();
    until_some(
        dir.path(),
        &format!("SELECT COUNT(*) FROM claims WHERE pid = {pid} AND done = 0"),
        "the victim claimed nothing",
    );
    std::thread::sleep(Duration::from_millis(150));
    victim.kill().unwrap();
    victim.wait().unwrap();
    finished(creator);
    finished(worker);
    assert_eq!(
        sqlite_count(dir.path(), "SELECT COUNT(*) FROM samples"),
        144
    );
    assert_eq!(
        sqlite_count(dir.path(), "SELECT COUNT(*) FROM claims WHERE done = 1"),
        24
    );
    let paid = common::requests(&upstream.1);
    // Concurrency 4 in flight, and up to a commit window (200 ms, 5 calls
    // of 40 ms per slot) made but not committed.
    assert!((144..=144 + 4 * 6).contains(&paid), "{paid} calls paid");
}

/// Issue 38, item 5: a worker killed (kill -9) with its calls in flight
/// has counted them — a shared run commits each call's count with its
/// writer's next batch before sending it — so the run's calls equal the
/// provider stand-in's own count, and the report tells those the dead
/// worker paid for without recording an answer: every call is either a
/// stored sample (16, one call each) or lost in flight. Calls last 2 s, so
/// at the kill the victim's calls are all sent and none is answered.
fn a_killed_workers_calls_in_flight_are_counted(store: &str, samples: impl Fn() -> i64) {
    let upstream = common::sim_serve(&["--latency-ms", "2000"]);
    let dir = tempfile::tempdir().unwrap();
    shared_config(dir.path(), &upstream.1, 4, 4);
    let start = Instant::now();
    let shared = |args: &[&str]| {
        let mut c = shared_cmd(dir.path(), args);
        c.env("PROBITY_STORE", store);
        c
    };
    let creator = shared(&["run", "--shared", "-q"]).spawn().unwrap();
    while common::requests(&upstream.1) < 4 {
        assert!(start.elapsed() < Duration::from_secs(60), "no calls");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut victim = shared(&["work", "-q"]).spawn().unwrap();
    while common::requests(&upstream.1) < 8 {
        assert!(start.elapsed() < Duration::from_secs(60), "no 8 calls");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Every call the victim started is sent (none answered for 2 s).
    std::thread::sleep(Duration::from_millis(300));
    victim.kill().unwrap();
    victim.wait().unwrap();
    finished(creator);
    assert_eq!(samples(), 16);
    let paid = common::requests(&upstream.1);
    assert!(paid > 16, "the victim had calls in flight: {paid} paid");
    let mut report = common::probity_cmd();
    report
        .current_dir(dir.path())
        .args(["report", "1", "--format", "json"])
        .env("PROBITY_STORE", store);
    let out = report.output().unwrap();
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout))
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)));
    assert_eq!(v["run"]["model_calls"].as_u64(), Some(paid), "{}", v["run"]);
    assert_eq!(
        v["run"]["calls"]["lost_in_flight"].as_u64(),
        Some(paid - 16),
        "{}",
        v["run"]
    );
    let mut page = common::probity_cmd();
    page.current_dir(dir.path())
        .args(["report", "1"])
        .env("PROBITY_STORE", store)
        .env("NO_COLOR", "1");
    let page = text(&page.output().unwrap().stdout);
    let said = format!(
        "{paid} calls (0 to judges; {} by workers that died before recording answers)",
        paid - 16
    );
    assert!(page.contains(&said), "{said} not in:\n{page}");
}

#[test]
fn a_killed_workers_calls_in_flight_are_counted_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    a_killed_workers_calls_in_flight_are_counted(db.to_str().unwrap(), || {
        rusqlite::Connection::open(&db)
            .unwrap()
            .query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0))
            .unwrap()
    });
}

#[test]
fn a_killed_workers_calls_in_flight_are_counted_on_postgres() {
    let Some(db) = probity_engine::store::postgres::testing::TestDatabase::create() else {
        return;
    };
    a_killed_workers_calls_in_flight_are_counted(db.url(), || {
        db.query("SELECT COUNT(*) FROM samples")[0].parse().unwrap()
    });
}
