//! The labelled set the calibration tests share (engine and CLI; the CLI's
//! tests include this file by path): `n` pairs "Thank you for tip i!",
//! answered with "You're welcome" on even i, without it on odd i, each
//! labelled with the simulator's truth (checked: even pass, odd fail).

use probity_engine::checks::verifier::sim_truth;
use std::fmt::Write;

/// `n` labelled pairs as JSON lines; `edit` may change pair i's output
/// (its truth must stay the same).
pub fn sim_labels(n: u64, edit: impl Fn(u64, &mut String)) -> String {
    let mut out = String::new();
    for i in 0..n {
        let input = format!("Thank you for tip {i}!");
        let mut output = if i % 2 == 0 {
            format!("You're welcome. Glad to help with tip {i}.")
        } else {
            format!("Glad to help with tip {i}.")
        };
        edit(i, &mut output);
        let pass = sim_truth(&input, &output).is_empty();
        assert_eq!(pass, i % 2 == 0, "pair {i}'s truth changed");
        let label = if pass { "PASS" } else { "FAIL" };
        writeln!(
            out,
            "{}",
            serde_json::json!({"input": input, "output": output, "label": label})
        )
        .unwrap();
    }
    out
}
