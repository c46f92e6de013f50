//! Every integration test of `probity-report` in one binary: one link of
//! the crate and its dependencies instead of one per file (as ripgrep and
//! nextest gather theirs). Each file under `tests/` is a module here; a
//! file not declared here would not run, which
//! `every_test_file_is_in_the_suite` refuses.

mod calibration;
mod common;
mod documents;
mod edge;
mod html;
mod html_browser;
mod json;
mod junit;
mod live;
mod markdown;
mod names;
mod sequential;
mod text;
mod wired;

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
