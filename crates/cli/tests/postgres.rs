//! The shared PostgreSQL store as users meet it, against a real server
//! (`PROBITY_TEST_PG`; see `probity_engine::store::postgres::testing`):
//! eight `probity run` processes at once; one run split over three
//! processes, one killed with SIGKILL; the server restarted mid-run; a
//! wrong password. Every command here is the `probity` binary.

use crate::common;

use common::text;
use probity_engine::store::postgres::testing::TestDatabase;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `probity ARGS` in `dir` against `store`.
fn probity(dir: &Path, store: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_probity"));
    c.current_dir(dir)
        .args(args)
        .env("PROBITY_STORE", store)
        .env("PROBITY_CLAIM_TTL_S", "2")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn output(mut c: Command) -> Output {
    c.output().expect("run probity")
}

/// `probity init` in `dir`, its simulator slowed to `latency_ms` a call
/// and its seed pinned.
fn init(dir: &Path, latency_ms: u64) {
    let out = Command::new(env!("CARGO_BIN_EXE_probity"))
        .current_dir(dir)
        .args(["init", "."])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let path = dir.join("probity.toml");
    let config = std::fs::read_to_string(&path).unwrap().replace(
        "[system]\nprovider = \"sim\"\n",
        &format!("[system]\nprovider = \"sim\"\nlatency_ms = {latency_ms}\n"),
    );
    assert!(config.contains("latency_ms"), "the simulator table moved");
    // Pinned: runs of the same file sample the same outputs.
    let config = if config.contains("\nseed = ") {
        config
    } else {
        config.replace("latency_ms =", "seed = 42\nlatency_ms =")
    };
    std::fs::write(path, config).unwrap();
}

/// Wait for `child`, at most `limit`; past it, the child is killed and
/// the test fails with what it printed.
fn wait(mut child: Child, limit: Duration) -> Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() >= limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "probity did not finish in {limit:?}; it printed:\n{}\n{}",
                text(&out.stdout),
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The JSON report of run `run` (rates per check).
fn report(dir: &Path, store: &str, run: &str) -> Value {
    let out = output(probity(dir, store, &["report", run, "--format", "json"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each check's name, passes and count, from a JSON report.
fn counts(report: &Value) -> Vec<(String, u64, u64)> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["rate"]["pass"].as_u64().unwrap(),
                c["rate"]["n"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Eight processes write runs to one database at once: every one ends
/// with a verdict, ids are distinct, every run holds all its samples.
#[test]
fn eight_processes_write_runs_at_once() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), 0);
    let children: Vec<Child> = (0..8)
        .map(|_| {
            probity(dir.path(), db.url(), &["run", "-q"])
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = wait(child, Duration::from_secs(120));
        // 1: the simulator's contraction check fails by design.
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(!text(&out.stderr).contains("probity-test-pw"));
    }
    assert_eq!(
        db.query("SELECT COUNT(DISTINCT id) || '/' || COUNT(*) || ' ' || string_agg(DISTINCT status, ',') FROM runs"),
        ["8/8 complete"]
    );
    assert_eq!(
        db.query("SELECT COUNT(*) FROM samples GROUP BY run_id HAVING COUNT(*) = 400"),
        vec!["400".to_string(); 8]
    );
    let runs = output(probity(dir.path(), db.url(), &["runs"]));
    assert_eq!(runs.status.code(), Some(0), "{}", text(&runs.stderr));
    assert_eq!(text(&runs.stdout).matches("complete").count(), 8);
}

/// One run, three processes (`run --shared` and two `work`), one killed
/// with SIGKILL while it holds inputs: the others take its inputs once its
/// claims expire, and the run ends with every sample exactly once and the
/// verdicts of a one-process run of the same seeded simulator.
#[test]
fn three_workers_one_killed_store_every_sample_once() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), 60);
    let creator = probity(
        dir.path(),
        db.url(),
        &["run", "--shared", "--concurrency", "4", "-q"],
    )
    .spawn()
    .unwrap();
    let started = Instant::now();
    while db.query("SELECT COUNT(*) FROM claims") != ["20"] {
        assert!(started.elapsed() < Duration::from_secs(30), "no claims");
        std::thread::sleep(Duration::from_millis(20));
    }
    let worker = probity(dir.path(), db.url(), &["work", "--concurrency", "4", "-q"])
        .spawn()
        .unwrap();
    let mut victim = probity(dir.path(), db.url(), &["work", "--concurrency", "4", "-q"])
        .spawn()
        .unwrap();
    // Killed while it holds inputs of its own.
    let victim_pid = victim.id();
    let held = format!("SELECT COUNT(*) > 0 FROM claims WHERE pid = {victim_pid} AND NOT done");
    while db.query(&held) != ["t"] {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the third worker claimed nothing"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    victim.kill().unwrap();
    victim.wait().unwrap();
    let creator = wait(creator, Duration::from_secs(180));
    let worker = wait(worker, Duration::from_secs(180));
    for out in [&creator, &worker] {
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    }
    assert_eq!(db.query("SELECT COUNT(*) FROM samples"), ["400"]);
    assert_eq!(db.query("SELECT status FROM runs"), ["complete"]);
    assert_eq!(db.query("SELECT COUNT(*) FROM claims WHERE done"), ["20"]);
    // Every worker's calls added up: at least one per stored sample (the
    // killed worker's last, uncommitted ones are lost with it).
    // The run's row and its writers' own rows (migration 13).
    let calls: u64 = db.query(
        "SELECT (SELECT model_calls FROM runs) + COALESCE((SELECT SUM(model_calls) FROM run_counts), 0)",
    )[0]
    .parse()
    .unwrap();
    assert!((400..=460).contains(&calls), "model_calls {calls}");
    // The same verdicts as one process on SQLite.
    let single = dir.path().join("single.db");
    let single = single.to_str().unwrap();
    let out = output(probity(dir.path(), single, &["run", "-q"]));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        counts(&report(dir.path(), db.url(), "1")),
        counts(&report(dir.path(), single, "1"))
    );
}

/// A wrong password, a missing database: exit 3, the cause named, the
/// password nowhere; nothing is written.
#[test]
fn a_wrong_password_or_database_is_named_and_the_password_never_shown() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), 0);
    let (scheme, rest) = db.url().split_once("://").unwrap();
    let (userinfo, host) = rest.split_once('@').unwrap();
    let user = userinfo.split(':').next().unwrap();
    let wrong = format!("{scheme}://{user}:Wr0ngSecret@{host}");
    for (store, cause) in [
        (wrong.as_str(), "password authentication failed"),
        (&*format!("{}_gone", db.url()), "does not exist"),
    ] {
        for args in [&["run", "-q"][..], &["runs"], &["report", "1"]] {
            let out = output(probity(dir.path(), store, args));
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
            assert!(err.contains(cause), "{args:?}: {err}");
            assert!(
                !err.contains("Wr0ngSecret") && !err.contains("probity-test-pw"),
                "{err}"
            );
        }
    }
    assert_eq!(db.query("SELECT COUNT(*) FROM runs"), ["0"]);
}

/// A PostgreSQL server of this test's own (so it may be restarted), from
/// Debian's binaries; run as the `postgres` user when this is root.
struct PrivateServer {
    dir: tempfile::TempDir,
    bin: std::path::PathBuf,
    port: u16,
}

impl PrivateServer {
    fn start() -> Option<PrivateServer> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .find(|b| b.join("initdb").exists());
        let Some(bin) = bin else {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI: no PostgreSQL binaries in /usr/lib/postgresql"
            );
            eprintln!("skipped: no PostgreSQL binaries in /usr/lib/postgresql");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = PrivateServer { dir, bin, port };
        if server.root() {
            let chown = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(server.dir.path())
                .status()
                .unwrap();
            assert!(chown.success());
        }
        let data = server.dir.path().join("data");
        server.pg(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "--auth=trust",
                "-U",
                "postgres",
            ],
        );
        server.ctl("start");
        Some(server)
    }

    fn root(&self) -> bool {
        Command::new("id")
            .arg("-u")
            .output()
            .map(|o| text(&o.stdout).trim() == "0")
            .unwrap_or(false)
    }

    fn pg(&self, tool: &str, args: &[&str]) {
        let exe = self.bin.join(tool);
        let mut c = if self.root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        let out = c.args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{tool}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
    }

    /// `pg_ctl start|restart`, waiting until it is up.
    fn ctl(&self, action: &str) {
        let d = self.dir.path();
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1",
            self.port,
            d.display()
        );
        self.pg(
            "pg_ctl",
            &[
                "-D",
                d.join("data").to_str().unwrap(),
                "-l",
                d.join("log").to_str().unwrap(),
                "-o",
                &opts,
                "-m",
                "fast",
                "-w",
                action,
            ],
        );
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let exe = self.bin.join("pg_ctl");
        let mut c = if self.root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        let _ = c
            .args(["-D", data.to_str().unwrap(), "-m", "immediate", "stop"])
            .output();
    }
}

/// The server restarted while a run writes: the run gets its connections
/// back and ends with every sample stored — or, past the writer's
/// patience, stops with exit 3 naming the store and resumes with nothing
/// lost.
#[test]
fn a_server_restarted_mid_run_loses_nothing() {
    let Some(server) = PrivateServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), 40);
    let url = server.url();
    let run = probity(dir.path(), &url, &["run", "--concurrency", "4", "-q"])
        .spawn()
        .unwrap();
    let count = |sql: &str| -> Option<i64> {
        let out = Command::new("psql")
            .args([&url, "-tAc", sql])
            .output()
            .ok()?;
        text(&out.stdout).trim().parse().ok()
    };
    let started = Instant::now();
    while count("SELECT COUNT(*) FROM samples").unwrap_or(0) < 40 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no sample stored"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server.ctl("restart");
    let out = wait(run, Duration::from_secs(180));
    let err = text(&out.stderr);
    println!("after the restart: exit {:?}", out.status.code());
    match out.status.code() {
        Some(1) => {}
        Some(3) => {
            assert!(err.contains("127.0.0.1"), "{err}");
            let again = output(probity(dir.path(), &url, &["run", "--resume", "-q"]));
            assert_eq!(again.status.code(), Some(1), "{}", text(&again.stderr));
        }
        other => panic!("exit {other:?}: {err}"),
    }
    assert_eq!(count("SELECT COUNT(*) FROM samples"), Some(400));
    assert_eq!(
        count("SELECT COUNT(*) FROM runs WHERE status = 'complete'"),
        Some(1)
    );
}

/// Every command that reads or writes history works on PostgreSQL as on
/// SQLite: run, --baseline, --reuse, a kill -9 then --resume, report in
/// every format, compare, trend, revalidate, plan RUN, export, runs.
#[test]
fn every_history_command_works_on_postgres() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), 0);
    let d = dir.path();
    let url = db.url();
    let code = |args: &[&str]| -> (Option<i32>, String, String) {
        let out = output(probity(d, url, args));
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    // Runs 1, 2 (against 1), 3 (outputs of 1 reused).
    assert_eq!(code(&["run", "-q"]).0, Some(1));
    let (c, out, err) = code(&["run", "-q", "--baseline", "polite-assistant"]);
    assert_eq!(c, Some(1), "{err}");
    assert!(out.contains("run 1"), "the baseline named: {out}");
    let (c, _, err) = code(&["run", "-q", "--reuse", "1"]);
    assert_eq!(c, Some(1), "{err}");
    assert_eq!(db.query("SELECT cached FROM runs WHERE id = 3"), ["400"]);
    for format in ["text", "json", "markdown", "html", "junit"] {
        let (c, out, err) = code(&["report", "1", "--format", format]);
        assert_eq!(c, Some(0), "{format}: {err}");
        assert!(out.contains("contraction_validator"), "{format}");
    }
    let (c, out, err) = code(&["compare", "1", "2"]);
    assert!(matches!(c, Some(0 | 1)), "{err}");
    assert!(out.contains("contraction_validator"), "{out}");
    let (c, out, err) = code(&["report", "--trend", "polite-assistant"]);
    assert_eq!(c, Some(0), "{err}");
    assert!(out.contains("contraction_validator"), "{out}");
    let (c, _, err) = code(&["revalidate", "1", "--config", "probity.toml"]);
    assert!(matches!(c, Some(0 | 1)), "{err}");
    assert_eq!(
        db.query("SELECT outputs_from FROM runs WHERE id = 4"),
        ["1"]
    );
    let (c, out, err) = code(&["plan", "1"]);
    assert_eq!(c, Some(0), "{err}");
    assert!(out.contains("attempt"), "{out}");
    let (c, out, err) = code(&["export", "1", "--all"]);
    assert_eq!(c, Some(0), "{err}");
    assert_eq!(out.lines().count(), 20, "{out}");
    // Killed mid-run, then resumed: every sample once.
    let config = std::fs::read_to_string(d.join("probity.toml"))
        .unwrap()
        .replace("latency_ms = 0", "latency_ms = 20");
    std::fs::write(d.join("slow.toml"), config).unwrap();
    let mut slow = probity(d, url, &["run", "slow.toml", "--concurrency", "2", "-q"])
        .spawn()
        .unwrap();
    let started = Instant::now();
    while db.query("SELECT COUNT(*) FROM samples WHERE run_id = 5") < vec!["40".to_string()] {
        assert!(started.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(20));
    }
    slow.kill().unwrap();
    slow.wait().unwrap();
    let (c, _, err) = code(&["run", "slow.toml", "--resume", "-q"]);
    assert_eq!(c, Some(1), "{err}");
    assert!(err.contains("resuming run 5"), "{err}");
    assert_eq!(
        db.query("SELECT COUNT(*) FROM samples WHERE run_id = 5"),
        ["400"]
    );
    let (c, out, _) = code(&["runs"]);
    assert_eq!(c, Some(0));
    assert_eq!(out.matches("complete").count(), 5, "{out}");
    // A connection that may only read (a read replica, a dashboard's
    // role) reads every history command: opening writes nothing.
    let read_only = format!(
        "{url}{}options=-c%20default_transaction_read_only%3Don",
        if url.contains('?') { '&' } else { '?' }
    );
    let read = |args: &[&str]| -> (Option<i32>, String, String) {
        let out = output(probity(d, &read_only, args));
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    for args in [
        &["runs"][..],
        &["report", "1", "--format", "json"],
        &["compare", "1", "2"],
        &["report", "--trend", "polite-assistant"],
        &["plan", "1"],
        &["export", "1", "--all"],
    ] {
        let (c, out, err) = read(args);
        assert!(matches!(c, Some(0 | 1)), "{args:?}: {err}");
        assert!(!out.is_empty(), "{args:?}");
    }
    // Writing through it is refused by the server, and named.
    let (c, _, err) = read(&["run", "-q"]);
    assert_eq!(c, Some(3), "{err}");
    assert!(err.contains("read-only"), "{err}");
}

/// Two `probity serve` replicas on one store: each records its own run,
/// every request is stored, and both runs close complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_replicas_share_one_store() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("guard.toml");
    std::fs::write(
        &config,
        "name = \"live\"\n[upstream]\nprovider = \"sim\"\nseed = 3\n[[validator]]\nname = \"short\"\nkind = \"length\"\nmax = 100000\n",
    )
    .unwrap();
    let replica = || {
        let mut cmd = common::probity_cmd();
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .env("PROBITY_STORE", db.url());
        common::start(cmd)
    };
    let (a, b) = (replica(), replica());
    let client = reqwest::Client::new();
    for i in 0..30 {
        let addr = if i % 2 == 0 { &a.1 } else { &b.1 };
        let r = client
            .post(format!("http://{addr}/v1/chat/completions"))
            .json(&serde_json::json!({"model": "m", "messages": [{"role": "user", "content": format!("hello {i}")}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    assert_eq!(a.stop("TERM"), Some(0));
    assert_eq!(b.stop("TERM"), Some(0));
    assert_eq!(
        db.query("SELECT string_agg(inputs || ':' || status, ',' ORDER BY id) FROM runs"),
        ["15:complete,15:complete"]
    );
    assert_eq!(db.query("SELECT COUNT(*) FROM samples"), ["30"]);
}

/// `probity work` on a run started without `--shared` is refused, naming
/// the fix: it would sample what the run's own process samples.
#[test]
fn work_refuses_a_run_that_is_not_shared() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), 0);
    let out = output(probity(dir.path(), db.url(), &["run", "-q"]));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let out = output(probity(dir.path(), db.url(), &["work", "--run", "1", "-q"]));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("complete") || err.contains("--shared"),
        "{err}"
    );
    // A worker that would take another M is refused, naming the flag.
    let shared = probity(
        dir.path(),
        db.url(),
        &["run", "--shared", "--outputs", "3", "-q"],
    )
    .spawn()
    .unwrap();
    let shared = wait(shared, Duration::from_secs(60));
    assert_eq!(shared.status.code(), Some(1), "{}", text(&shared.stderr));
    db.query("UPDATE runs SET status = 'interrupted' WHERE id = 2");
    db.query("UPDATE claims SET done = false WHERE run_id = 2");
    let out = output(probity(dir.path(), db.url(), &["work", "--run", "2", "-q"]));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--outputs"), "{err}");
    db.query("UPDATE runs SET status = 'interrupted'");
    let out = output(probity(dir.path(), db.url(), &["work", "--run", "1", "-q"]));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not started with `probity run --shared`"),
        "{err}"
    );
}

/// The database down mid-run: within seconds the run stops starting calls
/// (the writer stuck in a commit says the store is stalled), so an outage
/// costs a few calls, not every call made until the writer gives up; once
/// the server is back the run goes on and stores every sample.
#[test]
fn a_run_starts_no_calls_while_its_database_is_down() {
    let Some(server) = PrivateServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let inputs: String = (0..20)
        .map(|i| format!("[[input]]\ntext = \"question {i}\"\n"))
        .collect();
    std::fs::write(
        dir.path().join("probity.toml"),
        format!(
            "name = \"outage\"\n[system]\nprovider = \"command\"\ncommand = [\"/bin/sh\", \"-c\", \"echo x >> '{}'; sleep 0.01; cat >/dev/null; echo fine\"]\n[experiment]\noutputs_per_input = 100\nconcurrency = 4\n[[validator]]\nname = \"short\"\ncheck = \"output.len() < 100\"\n{inputs}",
            log.display()
        ),
    )
    .unwrap();
    let url = server.url();
    let run = probity(dir.path(), &url, &["run", "-q"]).spawn().unwrap();
    let calls = || {
        std::fs::read_to_string(&log)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let started = Instant::now();
    while calls() < 40 {
        assert!(started.elapsed() < Duration::from_secs(60), "no call made");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.ctl("stop");
    // Past the stall (2 s) and then some: no new call starts.
    std::thread::sleep(Duration::from_secs(3));
    let before = calls();
    std::thread::sleep(Duration::from_secs(3));
    let during = calls() - before;
    assert!(
        during <= 4,
        "{during} calls started while the store was down"
    );
    server.ctl("start");
    let out = wait(run, Duration::from_secs(180));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stored = Command::new("psql")
        .args([&url, "-tAc", "SELECT COUNT(*) FROM samples"])
        .output()
        .unwrap();
    assert_eq!(text(&stored.stdout).trim(), "2000");
}

/// Issue 38, the fleet recipe of docs/store.md run locally: three `probity
/// work --wait` started before the run exists (as a Kubernetes Job's pods
/// or systemd units start in any order), then `run --shared`; the store's
/// URL carries no password (it comes from a file, as a mounted secret),
/// so no command line shows it. Every process ends with the run's verdict,
/// the run holds every sample once; a worker started after the run is
/// complete waits for a new one, and says so when its wait is over.
#[test]
fn a_fleet_started_in_any_order_waits_and_shares_one_run() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // 400 calls of 150 ms at 4 in flight: 15 s for one process, long
    // enough for the waiting workers to join however loaded the machine.
    init(dir.path(), 150);
    let (scheme, rest) = db.url().split_once("://").unwrap();
    let (userinfo, host) = rest.split_once('@').unwrap();
    let (user, password) = userinfo.split_once(':').unwrap();
    let bare = format!("{scheme}://{user}@{host}");
    let secret = dir.path().join("pg-password");
    std::fs::write(&secret, format!("{password}\n")).unwrap();
    let fleet = |args: &[&str]| {
        let mut c = probity(dir.path(), &bare, args);
        c.env("PROBITY_STORE_PASSWORD_FILE", &secret)
            .env_remove("PGPASSWORD");
        c
    };
    let workers: Vec<Child> = (0..3)
        .map(|_| {
            fleet(&["work", "--wait=120s", "--concurrency", "4", "-q"])
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let creator = fleet(&["run", "--shared", "--concurrency", "4", "-q"])
        .spawn()
        .unwrap();
    let creator = wait(creator, Duration::from_secs(180));
    assert_eq!(creator.status.code(), Some(1), "{}", text(&creator.stderr));
    for w in workers {
        let out = wait(w, Duration::from_secs(180));
        let err = text(&out.stderr);
        // The verdict (1: the simulator's contraction check fails by
        // design), or 0 when the run was complete before it looked.
        assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
        assert!(!err.contains(password), "{err}");
    }
    assert_eq!(db.query("SELECT COUNT(*) FROM samples"), ["400"]);
    assert_eq!(db.query("SELECT status FROM runs"), ["complete"]);
    // More than one process sampled it.
    let holders: u64 = db.query("SELECT COUNT(DISTINCT pid) FROM claims")[0]
        .parse()
        .unwrap();
    assert!(holders >= 2, "{holders} processes took inputs");
    let late = output(fleet(&["work", "--wait=5s", "-q"]));
    assert_eq!(late.status.code(), Some(2), "{}", text(&late.stderr));
    // Its password file unreadable: named, not a silent connection.
    let mut missing = fleet(&["runs"]);
    missing.env("PROBITY_STORE_PASSWORD_FILE", dir.path().join("nope"));
    let out = output(missing);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("PROBITY_STORE_PASSWORD_FILE"));
}

/// Issue 38: the server restarted while three processes share one run: no
/// process ends with an error — each waits, reconnects and goes on — and
/// the run holds every sample once.
#[test]
fn a_shared_run_outlives_a_server_restart() {
    let Some(server) = PrivateServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), 40);
    let url = server.url();
    let creator = probity(
        dir.path(),
        &url,
        &["run", "--shared", "--concurrency", "4", "-q"],
    )
    .spawn()
    .unwrap();
    let workers: Vec<Child> = (0..2)
        .map(|_| {
            probity(
                dir.path(),
                &url,
                &["work", "--wait=60s", "--concurrency", "4", "-q"],
            )
            .spawn()
            .unwrap()
        })
        .collect();
    let count = |sql: &str| -> Option<i64> {
        let out = Command::new("psql")
            .args([&url, "-tAc", sql])
            .output()
            .ok()?;
        text(&out.stdout).trim().parse().ok()
    };
    let started = Instant::now();
    while count("SELECT COUNT(*) FROM samples").unwrap_or(0) < 60 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no sample stored"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server.ctl("restart");
    for child in std::iter::once(creator).chain(workers) {
        let out = wait(child, Duration::from_secs(180));
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "exit {:?}: {}",
            out.status.code(),
            text(&out.stderr)
        );
    }
    assert_eq!(count("SELECT COUNT(*) FROM samples"), Some(400));
    assert_eq!(
        count("SELECT COUNT(*) FROM runs WHERE status = 'complete'"),
        Some(1)
    );
}
