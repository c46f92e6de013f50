//! Every integration test of `probity-cli` in one binary: one link of
//! the crate and its dependencies instead of one per file (as ripgrep and
//! nextest gather theirs). Each file under `tests/` is a module here; a
//! file not declared here would not run, which
//! `every_test_file_is_in_the_suite` refuses.

mod agents;
mod calibration_cache;
mod classes;
mod common;
// The labelled sets the engine's calibration tests use.
mod compare;
mod config_limits;
mod cost;
mod export;
mod guarded;
mod hostile;
mod hostile_keys;
mod hostile_serve;
mod init;
mod input_checks;
mod judge;
#[path = "../../engine/tests/labels/mod.rs"]
mod labels;
mod lease;
mod plan;
mod postgres;
mod readme;
mod report_facts;
mod resume;
mod run;
mod runs;
mod scoped_checks;
mod sequential;
mod serve;
mod serve_calibration;
mod serve_monitor;
mod serve_protocol;
mod set;
mod store_urls;
mod traces;
mod trouble;
mod upstream;
mod variants;
mod view;

#[test]
fn every_test_file_is_in_the_suite() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let declared = include_str!("all.rs");
    for entry in std::fs::read_dir(&here).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs") && stem != "all" {
            assert!(
                declared.contains(&format!("\nmod {stem};")),
                "tests/{stem}.rs is not declared in tests/all.rs: its tests would never run"
            );
        }
    }
}
