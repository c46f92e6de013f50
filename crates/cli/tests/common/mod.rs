//! Running the `probity` binary as a user does, shared by the CLI tests.
// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// `probity ARGS` in `dir`, with the run store in `dir/runs.db` and no colour.
pub fn probity(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_probity"))
        .current_dir(dir)
        .args(args)
        .env("PROBITY_STORE", dir.join("runs.db"))
        .env("NO_COLOR", "1")
        .output()
        .expect("run probity")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `probity runs --json` in `dir`: the stored runs, newest first.
pub fn json_runs(dir: &Path) -> Vec<Value> {
    let out = probity(dir, &["runs", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
