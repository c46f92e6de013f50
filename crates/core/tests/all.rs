//! Every integration test of `probity-core` in one binary: one link of
//! the crate and its dependencies instead of one per file (as ripgrep and
//! nextest gather theirs). Each file under `tests/` is a module here; a
//! file not declared here would not run, which
//! `every_test_file_is_in_the_suite` refuses.

mod agents;
mod analysis;
mod calibration;
mod compare_sim;
mod expr_limits;
mod interval_order;
mod linear_in_k;
mod retry_over_inputs;
mod sequential;
mod sim;
mod stats_coverage;
mod stats_decision;
mod stats_edges;
mod stats_props;
mod stats_reference;
mod tensor_props;
mod validator_builtin;
mod validator_eval;
mod validator_expr;
mod validator_prefix;
mod validator_spec;

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
