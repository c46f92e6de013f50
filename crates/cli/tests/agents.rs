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
    std::fs::write(&path, &config).unwrap();
}

/// `probity revalidate` of an agent's run judges the stored transcripts
/// and final states with the changed checks (no episode run, no call), and
/// `probity export` writes the tasks with their episodes' transcripts.
#[test]
fn an_agents_run_is_revalidated_and_exported_without_new_episodes() {
    let dir = tempfile::tempdir().unwrap();
    let init = probity(dir.path(), &["init", "--provider", "agent"]);
    assert_eq!(init.status.code(), Some(0), "{}", text(&init.stderr));
    let path = dir.path().join("probity.toml");
    let run = probity(
        dir.path(),
        &[
            "run",
            "--quiet",
            "--outputs",
            "3",
            "--format",
            "json",
            "--set",
            "user.seed=1",
            // Pinned: the episodes (and so which fail the new check at
            // which turn) are the same on every machine.
            "--set",
            "agent.seed=1",
        ],
    );
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "{}",
        text(&run.stderr)
    );
    let first: Value = serde_json::from_slice(&run.stdout).unwrap();
    // The episodes' model calls are the run's calls (one per agent turn,
    // the simulated user's included), never 0.
    let calls = first["run"]["model_calls"].as_u64().unwrap();
    assert!(calls >= 36 * 2, "{calls} calls for 36 episodes");
    // A new check that every episode of more than one turn fails.
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!("{config}\n[[agent_check]]\nname = \"one_turn\"\nkind = \"turns\"\nmax = 1\n"),
    )
    .unwrap();
    let re = probity(
        dir.path(),
        &[
            "revalidate",
            "1",
            "--config",
            "probity.toml",
            "--format",
            "json",
        ],
    );
    assert!(
        matches!(re.status.code(), Some(0 | 1)),
        "{}",
        text(&re.stderr)
    );
    let j: Value = serde_json::from_slice(&re.stdout).unwrap();
    let names: Vec<&str> = j["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["end_state", "no_forbidden_refund", "one_turn"]);
    // The stored verdicts judged again, the same; the new check fails
    // every judged episode; no call was made.
    for k in 0..2 {
        assert_eq!(
            j["checks"][k]["rate"]["pass"],
            first["checks"][k]["rate"]["pass"]
        );
        assert_eq!(j["checks"][k]["rate"]["n"], first["checks"][k]["rate"]["n"]);
    }
    assert_eq!(j["checks"][2]["rate"]["pass"], 0, "{}", j["checks"][2]);
    assert_eq!(j["checks"][2]["rate"]["n"], first["checks"][0]["rate"]["n"]);
    assert_eq!(
        j["errors"]["system"]["total"],
        first["errors"]["system"]["total"]
    );
    assert_eq!(j["run"]["model_calls"], 0);
    let db = rusqlite::Connection::open(dir.path().join("runs.db")).unwrap();
    let failing: String = db
        .query_row(
            "SELECT reasons FROM rechecks WHERE run_id = 2 AND reasons LIKE '%turns, outside%' LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    // "turn T: T turns, outside …": the failure names the turn it is at.
    let (turn, count) = failing
        .split("turn ")
        .filter_map(|s| {
            let (t, rest) = s.split_once(": ")?;
            let n = rest.split_once(" turns, outside")?.0;
            Some((t.parse::<u32>().ok()?, n.parse::<u32>().ok()?))
        })
        .next()
        .unwrap_or_else(|| panic!("{failing}"));
    assert_eq!(turn, count, "{failing}");
    assert!(turn >= 2, "{failing}");
    let fresh: i64 = db
        .query_row("SELECT count(*) FROM samples WHERE run_id = 2", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(fresh, 0, "no episode was run again");

    // Export: every task, its scenario kept, its episodes' transcripts.
    let out = probity(dir.path(), &["export", "1", "--all"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 12);
    for row in &rows {
        assert!(row["scenario"].is_object(), "{row}");
        let episodes = row["episodes"].as_array().unwrap();
        assert_eq!(episodes.len(), 3, "{row}");
        let t = &episodes[0]["transcript"];
        assert!(t["messages"].as_array().unwrap().len() >= 2, "{t}");
        assert!(t["ending"]["kind"].is_string(), "{t}");
    }
}
