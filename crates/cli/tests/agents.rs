//! An agent under test from the command line (issue 34, docs/agents.md):
//! `probity init --provider agent` writes the simulated shop assistant and
//! customer with known error rates; `probity run` samples whole episodes,
//! judges them with the agent checks, stores every transcript, counts the
//! episodes the customer spoiled apart, and measures the simulator's truth.

use crate::common::{probity, text};
use serde_json::Value;

/// The simulator's truth over the demo's 10 easy and 2 hard tasks (its
/// probity.toml derives it): the end state is right in Π(1 − d·q) of an
/// easy task's episodes (d = 1) and a hard one's (d = 3), averaged over
/// tasks; the forbidden refund happens at its own rate d·q.
fn truth() -> (f64, f64) {
    let clean = |d: f64| {
        [0.03, 0.03, 0.02, 0.03]
            .iter()
            .map(|q| 1.0 - d * q)
            .product::<f64>()
    };
    let end_state = (10.0 * clean(1.0) + 2.0 * clean(3.0)) / 12.0;
    let no_refund = 1.0 - (10.0 * 0.02 + 2.0 * 0.06) / 12.0;
    (end_state, no_refund)
}

/// The demo run with 30 episodes a task and both simulators' seeds pinned.
fn pinned_run(dir: &std::path::Path) -> std::process::Output {
    let args = "run --quiet --outputs 30 --format json --set agent.seed=11 --set user.seed=11";
    probity(dir, &args.split(' ').collect::<Vec<_>>())
}

#[test]
fn the_agent_demo_runs_episodes_and_its_intervals_cover_the_simulators_truth() {
    let dir = tempfile::tempdir().unwrap();
    let init = probity(dir.path(), &["init", "--provider", "agent"]);
    assert_eq!(init.status.code(), Some(0), "{}", text(&init.stderr));
    let run = pinned_run(dir.path());
    // A verdict (the forbidden-refund check's minimum of 99% is above the
    // simulator's truth, by design), never a run that could not complete.
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "{}",
        text(&run.stderr)
    );
    let j: Value = serde_json::from_slice(&run.stdout).unwrap();
    let checks = j["checks"].as_array().unwrap();
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["end_state", "no_forbidden_refund"]);
    let (end_state, no_refund) = truth();
    for (c, truth) in checks.iter().zip([end_state, no_refund]) {
        let r = &c["rate"];
        let (lo, hi) = (r["lower"].as_f64().unwrap(), r["upper"].as_f64().unwrap());
        assert!(
            lo <= truth && truth <= hi,
            "{truth} outside [{lo}, {hi}]: {c}"
        );
        assert_eq!(r["inputs"], 12, "{c}");
    }
    // The customer hangs up at once in 3% of episodes: spoiled, counted
    // apart with their cause, never as the agent's failures.
    let spoiled = j["errors"]["system"]["total"].as_u64().unwrap();
    assert!(spoiled > 0 && spoiled < 40, "{spoiled} spoiled of 360");
    let causes = j["errors"]["system"]["causes"].to_string();
    assert!(causes.contains("spoiled"), "{causes}");
    let judged = checks[0]["rate"]["n"].as_u64().unwrap();
    assert_eq!(judged + spoiled, 360, "every episode judged or spoiled");
    // Every output is the episode's whole transcript.
    let db = rusqlite::Connection::open(dir.path().join("runs.db")).unwrap();
    let output: String = db
        .query_row(
            "SELECT output FROM samples WHERE error IS NULL LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let t: Value = serde_json::from_str(&output).unwrap();
    let roles: Vec<&str> = t["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert!(
        roles.contains(&"tool") && roles.contains(&"user"),
        "{roles:?}"
    );
    assert!(t["final_state"]["orders"].is_object(), "{t}");
    // Pinned seeds repeat the run to the digit.
    let again = pinned_run(dir.path());
    let k: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(k["checks"][0]["rate"]["pass"], checks[0]["rate"]["pass"]);
}

#[test]
fn an_agent_file_with_a_typo_in_a_check_is_named_before_any_episode() {
    let dir = tempfile::tempdir().unwrap();
    let init = probity(dir.path(), &["init", "--provider", "agent"]);
    assert_eq!(init.status.code(), Some(0), "{}", text(&init.stderr));
    let path = dir.path().join("probity.toml");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        config.replace("kind = \"tool_not_called\"", "kind = \"tool_not_caled\""),
    )
    .unwrap();
    let out = probity(dir.path(), &["run", "--quiet"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("tool_not_caled") && err.contains("line"),
        "{err}"
    );
    // A re-check of an agent's stored episodes is refused, not run with
    // fewer columns.
    std::fs::write(&path, config).unwrap();
    let run = probity(
        dir.path(),
        &["run", "--quiet", "--outputs", "3", "--set", "user.seed=1"],
    );
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "{}",
        text(&run.stderr)
    );
    let re = probity(dir.path(), &["revalidate", "1", "--config", "probity.toml"]);
    assert_eq!(re.status.code(), Some(2), "{}", text(&re.stderr));
    assert!(text(&re.stderr).contains("agent"), "{}", text(&re.stderr));
}
