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
