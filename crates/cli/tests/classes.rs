//! Attempts per class of request (paper §4.2.5): `probity plan RUN --by
//! FIELD --out FILE` measures each class's joint rate and writes its m;
//! `probity serve` with `classes = FILE` gives a request of a class that m.

use crate::common;

use common::{probity, probity_cmd, start, text};
use probity_engine::store::Store;
use serde_json::json;

#[test]
fn plan_by_a_field_writes_each_class_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    common::pin_seed(d, 42);
    // A class per input kind: thanks (politeness applies) and questions.
    let inputs = std::fs::read_to_string(d.join("inputs.jsonl")).unwrap();
    let classed: String = inputs
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let kind = if v["text"].as_str().unwrap().contains("Thank") {
                "thanks"
            } else {
                "question"
            };
            v["kind"] = json!(kind);
            format!("{v}\n")
        })
        .collect();
    std::fs::write(d.join("inputs.jsonl"), classed).unwrap();
    assert_eq!(probity(d, &["run", "--quiet"]).status.code(), Some(1));
    let out = probity(d, &["plan", "1", "--by", "kind", "--out", "classes.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(
        table.contains("thanks") && table.contains("question"),
        "{table}"
    );
    let file: toml::Table =
        toml::from_str(&std::fs::read_to_string(d.join("classes.toml")).unwrap()).unwrap();
    assert_eq!(file["field"].as_str(), Some("kind"));
    let m = |c: &str| file["attempts"][c].as_integer().unwrap();
    // Thanks fail the politeness check too: a lower joint rate, more attempts.
    assert!(m("thanks") >= m("question"), "{file:?}");
    let missing = probity(d, &["plan", "1", "--by", "nope"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("--by nope: no input"),
        "{}",
        text(&missing.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_gives_a_request_its_class_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("classes.toml"),
        "field = \"kind\"\n[attempts]\nquick = 1\npatient = 5\n",
    )
    .unwrap();
    // Every output fails the check: a request uses all its attempts.
    let config = d.join("guard.toml");
    std::fs::write(
        &config,
        "name = \"classed\"\nclasses = \"classes.toml\"\non_nothing_passed = \"error\"\n[upstream]\nprovider = \"sim\"\nseed = 1\n[retry]\nattempts = 3\n[[validator]]\nname = \"impossible\"\nkind = \"contains\"\nvalue = \"no simulated answer says this\"\n",
    )
    .unwrap();
    let mut cmd = probity_cmd();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--store")
        .arg(d.join("runs.db"));
    let server = start(cmd);
    let client = reqwest::Client::new();
    for class in ["quick", "patient", "unlisted"] {
        let r = client
            .post(format!("http://{}/v1/chat/completions", server.1))
            .header("x-probity-class", class)
            .json(&json!({"model": "m", "messages": [{"role": "user", "content": "hello"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422, "{class}");
    }
    assert_eq!(server.stop("TERM"), Some(0));
    let store = Store::open(&d.join("runs.db")).unwrap();
    let mut per_request = [0u32; 3];
    for a in store.attempts(1).unwrap() {
        per_request[a.input_idx] = per_request[a.input_idx].max(a.attempt);
    }
    assert_eq!(per_request, [1, 5, 3]);
}
