//! Agents in the core (issue 34): transcripts judged by checks that name
//! the failing turn, and per-task statistics checked against reference
//! values (scipy) and against simulation with a known truth (a mixture of
//! easy and hard tasks, not a Beta).

use probity_core::agent::{
    episode_cell, AgentCheck, AgentStats, Bounds, CallPattern, Ending, EpisodeResult, Order, Party,
    TaskCounts, ToolOutcome, Transcript, UserCheck,
};
use probity_core::conversation::{Message, Role, ToolCall};
use probity_core::stats::{pass_all_k, Consistency, IntervalMethod, TaskClass};
use probity_core::tensor::Cell;
use probity_core::{Input, Validator};
use rand::{Rng, SeedableRng};
use serde_json::json;

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    }
}

fn calls(turn_calls: Vec<ToolCall>) -> Message {
    Message {
        tool_calls: turn_calls,
        ..Message::text(Role::Assistant, "")
    }
}

/// user; turn 1: get_order A1; turn 2: cancel_order A1 + refund; turn 3:
/// text "Done."; final state given.
fn transcript() -> Transcript {
    let messages = vec![
        Message::text(Role::User, "Cancel A1 please"),
        calls(vec![call("c1", "get_order", json!({"order_id": "A1"}))]),
        Message::tool_result("c1", "{\"status\":\"placed\"}"),
        calls(vec![
            call(
                "c2",
                "cancel_order",
                json!({"order_id": "A1", "reason": "asked"}),
            ),
            call("c3", "refund", json!({"order_id": "A1", "amount": 40})),
        ]),
        Message::tool_result("c2", "cancelled"),
        Message::tool_result("c3", "refunded"),
        Message::text(Role::Assistant, "Done."),
    ];
    let mut t = Transcript::from_messages(messages, Ending::Stop { by: Party::User });
    t.tool_outcomes = [(2, "c1"), (4, "c2"), (5, "c3")]
        .iter()
        .map(|&(m, id)| ToolOutcome {
            call_id: id.into(),
            message: m,
            is_error: false,
            latency_ms: None,
        })
        .collect();
    t.final_state = Some(json!({"orders": {"A1": {"status": "cancelled"}}, "credit": 40}));
    t
}

fn judge(c: AgentCheck) -> (Cell, Option<u32>, String) {
    let o = c.evaluate(&Input::text("t", "x"), &transcript());
    (o.cell, o.turn, o.reason.unwrap_or_default())
}

#[test]
fn turns_and_calls_are_read_off_the_transcript() {
    let t = transcript();
    assert_eq!(t.turn_count(), 3);
    let c: Vec<(u32, &str)> = t
        .tool_calls()
        .map(|c| (c.turn, c.call.name.as_str()))
        .collect();
    assert_eq!(c, [(1, "get_order"), (2, "cancel_order"), (2, "refund")]);
    assert_eq!(t.turn_of(0), 0);
    assert_eq!(t.turn_of(5), 2);
    assert_eq!(t.last_text(), "Done.");
    let v = t.to_value();
    assert_eq!(v["tool_calls"][1]["result"], "cancelled");
    assert_eq!(v["tool_calls"][2]["turn"], 2);
    assert_eq!(
        v["messages"][1]["tool_calls"][0]["function"]["name"],
        "get_order"
    );
}

#[test]
fn tool_called_and_never_called_name_the_turn() {
    let cancel = |args| AgentCheck::ToolCalled {
        call: CallPattern {
            name: "cancel_order".into(),
            arguments: Some(args),
        },
        times: Bounds {
            min: Some(1),
            max: None,
        },
    };
    assert_eq!(judge(cancel(json!({"order_id": "A1"}))).0, Cell::Pass);
    let (cell, _, why) = judge(cancel(json!({"order_id": "A2"})));
    assert_eq!(cell, Cell::Fail);
    assert!(
        why.contains("called 0 times") && why.contains("A1"),
        "{why}"
    );
    let (cell, turn, why) = judge(AgentCheck::ToolNotCalled(CallPattern::named("refund")));
    assert_eq!((cell, turn), (Cell::Fail, Some(2)));
    assert!(why.contains("40"), "{why}");
    assert_eq!(
        judge(AgentCheck::ToolNotCalled(CallPattern::named("delete"))).0,
        Cell::Pass
    );
    let once = AgentCheck::ToolCalled {
        call: CallPattern::named("get_order"),
        times: Bounds {
            min: Some(1),
            max: Some(0),
        },
    };
    assert_eq!(judge(once).1, Some(1));
}

#[test]
fn calls_in_order_exact_and_any_order() {
    let p = |n: &str| CallPattern::named(n);
    let check = |names: &[&str], order| AgentCheck::Calls {
        calls: names.iter().map(|n| p(n)).collect(),
        order,
    };
    assert_eq!(
        judge(check(&["get_order", "refund"], Order::InOrder)).0,
        Cell::Pass
    );
    let (cell, turn, _) = judge(check(&["refund", "get_order"], Order::InOrder));
    assert_eq!((cell, turn), (Cell::Fail, Some(2)));
    assert_eq!(
        judge(check(&["refund", "get_order"], Order::AnyOrder)).0,
        Cell::Pass
    );
    let (cell, turn, why) = judge(check(&["get_order", "refund"], Order::Exact));
    assert_eq!((cell, turn), (Cell::Fail, Some(2)), "{why}");
    assert!(why.contains("call 2 was `cancel_order`"), "{why}");
    let (cell, turn, why) = judge(check(&["get_order", "cancel_order"], Order::Exact));
    assert_eq!((cell, turn), (Cell::Fail, Some(2)));
    assert!(why.contains("extra call `refund`"), "{why}");
    assert_eq!(
        judge(check(
            &["get_order", "cancel_order", "refund"],
            Order::Exact
        ))
        .0,
        Cell::Pass
    );
    // Overlapping patterns: a greedy match would give the first call to
    // the general pattern and leave the specific one unmatched.
    let overlapping = AgentCheck::Calls {
        calls: vec![
            CallPattern::named("cancel_order"),
            CallPattern {
                name: "cancel_order".into(),
                arguments: Some(json!({"order_id": "A1"})),
            },
        ],
        order: Order::AnyOrder,
    };
    assert_eq!(
        judge(overlapping).0,
        Cell::Fail,
        "one call cannot match twice"
    );
}

#[test]
fn bounds_state_and_validators() {
    let b = |min, max| Bounds { min, max };
    assert_eq!(judge(AgentCheck::Turns(b(Some(1), Some(3)))).0, Cell::Pass);
    assert_eq!(judge(AgentCheck::Turns(b(None, Some(2)))).1, Some(3));
    let (cell, turn, _) = judge(AgentCheck::ToolCallCount(b(None, Some(2))));
    assert_eq!(
        (cell, turn),
        (Cell::Fail, Some(2)),
        "the third call is at turn 2"
    );
    let expected = json!({"orders": {"A1": {"status": "cancelled"}}, "credit": 0});
    let (cell, _, why) = judge(AgentCheck::FinalState(expected));
    assert_eq!(cell, Cell::Fail);
    assert!(why.contains("`/credit`"), "{why}");
    let pred = Validator::new("no credit")
        .expression("input.state.credit == 0")
        .unwrap();
    assert_eq!(judge(AgentCheck::StatePredicate(pred)).0, Cell::Fail);
    let polite = Validator::new("short")
        .expression("output.len() < 5")
        .unwrap();
    let (cell, turn, _) = judge(AgentCheck::EveryAssistantTurn(polite));
    assert_eq!(
        (cell, turn),
        (Cell::Fail, Some(3)),
        "\"Done.\" is 5 long, at turn 3"
    );
    let over = Validator::new("refund after cancel")
        .expression(
            r#"let c = input.transcript.tool_calls; c.len() == 3 && c[2].name == "refund" && c[2].arguments.amount == 40 && c[1].result == "cancelled""#,
        )
        .unwrap();
    assert_eq!(judge(AgentCheck::Transcript(over)).0, Cell::Pass);
}

#[test]
fn an_episode_that_erred_is_never_judged_as_the_agents_failure() {
    let mut t = transcript();
    t.ending = Ending::Error {
        by: Party::Upstream,
        message: "HTTP 503".into(),
    };
    let o =
        AgentCheck::ToolNotCalled(CallPattern::named("refund")).evaluate(&Input::text("t", ""), &t);
    assert_eq!(o.cell, Cell::Error);
    assert!(o.reason.unwrap().contains("503"));
    assert_eq!(
        episode_cell([Cell::Pass, Cell::Fail, Cell::Error]),
        Cell::Error
    );
    assert_eq!(episode_cell([Cell::Pass, Cell::Fail]), Cell::Fail);
    assert_eq!(episode_cell([Cell::Pass, Cell::Pass]), Cell::Pass);
}

#[test]
fn user_checks_find_spoiled_episodes() {
    let mut t = transcript();
    let task = Input::text("t", "");
    let leak = UserCheck::EveryMessage(
        Validator::new("no secret")
            .expression(r#"!output.contains("A1")"#)
            .unwrap(),
    );
    let s = leak.spoiled("no secret", &task, &t).unwrap();
    assert_eq!(s.turn, 0);
    let early = UserCheck::NoEarlyStop { min_turns: 4 };
    assert!(early.spoiled("early", &task, &t).is_some());
    t.ending = Ending::Stop { by: Party::Agent };
    assert!(
        early.spoiled("early", &task, &t).is_none(),
        "the agent stopped, not the user"
    );
}

/// C(c, k)/C(n, k) against exact binomials (u128, computed here), the
/// per-task interval against scipy: Wilson (7 of 10) and Clopper–Pearson
/// (9 of 10) raised to the k-th power —
/// `((p + z²/2n) ± z·sqrt(p(1−p)/n + z²/4n²))/(1 + z²/n)` with
/// z = norm.ppf(0.975), and `beta.ppf(0.025, 9, 2)**5`,
/// `beta.ppf(0.975, 10, 1)**5`.
#[test]
fn pass_k_per_task_matches_references() {
    fn binom(n: u128, k: u128) -> u128 {
        (0..k).fold(1, |acc, i| acc * (n - i) / (i + 1))
    }
    for (c, n, k) in [
        (7u64, 10u64, 3u32),
        (18, 20, 5),
        (30, 40, 10),
        (40, 40, 7),
        (3, 40, 4),
    ] {
        let want = binom(c.into(), k.into()) as f64 / binom(n.into(), k.into()) as f64;
        assert!(
            (pass_all_k(c, n, k).unwrap() - want).abs() < 1e-12,
            "{c}/{n} k={k}"
        );
    }
    let counts = |p, f| TaskCounts {
        pass: p,
        fail: f,
        ..TaskCounts::default()
    };
    let s = AgentStats::new(&[counts(7, 3)], 3, 0.95, IntervalMethod::Wilson).unwrap();
    let (est, iv) = s.tasks[0].pass_k.unwrap();
    assert!((est - 0.2916666666666667).abs() < 1e-12);
    assert!((iv.lower - 0.06246593373798358).abs() < 1e-9, "{iv:?}");
    assert!((iv.upper - 0.7102306476318282).abs() < 1e-9, "{iv:?}");
    let s = AgentStats::new(&[counts(9, 1)], 5, 0.95, IntervalMethod::ClopperPearson).unwrap();
    let (_, iv) = s.tasks[0].pass_k.unwrap();
    assert!((iv.lower - 0.0526504219210543).abs() < 1e-7, "{iv:?}");
    assert!((iv.upper - 0.987420882906575).abs() < 1e-7, "{iv:?}");
    // Within the task, the rate's interval is the binomial one: scipy
    // beta.ppf(0.025, 18, 3), beta.ppf(0.975, 19, 2).
    let s = AgentStats::new(&[counts(18, 2)], 1, 0.95, IntervalMethod::ClopperPearson).unwrap();
    let iv = s.tasks[0].rate.interval;
    assert!(
        (iv.lower - 0.6830172859809176).abs() < 1e-7
            && (iv.upper - 0.9876514728297052).abs() < 1e-7
    );
}

#[test]
fn classes_errors_and_spoiled_episodes_are_counted_apart() {
    let ep = |cell, spoiled| EpisodeResult { cell, spoiled };
    let task = TaskCounts::of(&[
        ep(Cell::Pass, false),
        ep(Cell::Fail, false),
        ep(Cell::Error, false),
        ep(Cell::Fail, true),
        ep(Cell::Pass, true),
        ep(Cell::Error, true),
    ]);
    assert_eq!(
        (
            task.pass,
            task.fail,
            task.error,
            task.spoiled_pass,
            task.spoiled_fail
        ),
        (1, 1, 2, 1, 1)
    );
    let per_task = [
        TaskCounts {
            pass: 5,
            ..Default::default()
        },
        task,
        TaskCounts {
            fail: 5,
            spoiled_fail: 3,
            ..Default::default()
        },
        TaskCounts {
            error: 5,
            ..Default::default()
        },
    ];
    let s = AgentStats::new(&per_task, 2, 0.95, IntervalMethod::Wilson).unwrap();
    let classes: Vec<TaskClass> = s.tasks.iter().map(|t| t.class).collect();
    assert_eq!(
        classes,
        [
            TaskClass::AlwaysPasses,
            TaskClass::Flips,
            TaskClass::AlwaysFails,
            TaskClass::Unjudged
        ]
    );
    assert_eq!(
        (
            s.classes.always_passes,
            s.classes.flips,
            s.classes.always_fails,
            s.classes.unjudged
        ),
        (1, 1, 1, 1)
    );
    // Judged: 6 of 12 passes; errors in counts but not in n.
    assert_eq!((s.rate.n, s.rate.counts.error), (12, 7));
    assert!((s.rate.estimate - 6.0 / 12.0).abs() < 1e-12);
    assert_eq!((s.user.spoiled, s.user.episodes), (5, 17));
    assert!((s.user.if_spoiled_failed.estimate - 6.0 / 17.0).abs() < 1e-12);
    assert!((s.user.if_spoiled_passed.estimate - 11.0 / 17.0).abs() < 1e-12);
    assert!(
        s.user.bounds.lower <= s.rate.interval.lower
            && s.user.bounds.upper >= s.rate.interval.upper
    );
}

/// Simulation with a known truth that is not a Beta: 30 tasks, 80% easy
/// (p = 0.97) and 20% hard (p = 0.5), 10 episodes each, k = 3. The mean
/// pass^3 estimate is unbiased for mean p_i^3 (its average over 400 runs
/// is within 4 Monte-Carlo standard errors) and the mean's interval
/// covers the truth of these tasks in at least 90% of runs at 95%.
#[test]
fn mean_pass_k_is_unbiased_and_covered_on_a_mixture() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(34);
    let ps: Vec<f64> = (0..30)
        .map(|i| if i % 5 == 0 { 0.5 } else { 0.97 })
        .collect();
    let truth = ps.iter().map(|p: &f64| p.powi(3)).sum::<f64>() / ps.len() as f64;
    let runs = 400;
    let (mut sum, mut sum2, mut covered) = (0.0, 0.0, 0);
    for _ in 0..runs {
        let counts: Vec<(u64, u64)> = ps
            .iter()
            .map(|&p| ((0..10).filter(|_| rng.gen::<f64>() < p).count() as u64, 10))
            .collect();
        let c = Consistency::new(&counts, 3, 0.95, IntervalMethod::Wilson).unwrap();
        let m = c.mean_pass_all_k.estimate;
        sum += m;
        sum2 += m * m;
        covered += usize::from(c.mean_pass_all_k.interval.contains(truth));
    }
    let mean = sum / runs as f64;
    let se = ((sum2 / runs as f64 - mean * mean) / runs as f64).sqrt();
    assert!(
        (mean - truth).abs() < 4.0 * se,
        "mean {mean} truth {truth} se {se}"
    );
    assert!(
        covered as f64 / runs as f64 >= 0.90,
        "coverage {covered}/{runs}"
    );
}

/// An answer behind `probity serve` (issue 34 item 9c): the request's
/// history is context, its past tool calls are not this answer's, and the
/// answer is the one turn its checks judge.
#[test]
fn an_answer_is_judged_on_its_own_calls_with_the_history_as_context() {
    let history = transcript().messages;
    let answer = calls(vec![call("c9", "refund", json!({"order_id": "B2"}))]);
    let t = Transcript::answer(history.clone(), answer);
    let task = Input::text("t", "x");
    assert_eq!(t.turn_count(), 1);
    assert_eq!(t.messages.len(), history.len() + 1);
    // The history called refund for A1: not this answer's call.
    let a1 = CallPattern {
        arguments: Some(json!({"order_id": "A1"})),
        ..CallPattern::named("refund")
    };
    assert_eq!(
        AgentCheck::ToolNotCalled(a1).evaluate(&task, &t).cell,
        Cell::Pass
    );
    let never_refund = AgentCheck::ToolNotCalled(CallPattern::named("refund")).evaluate(&task, &t);
    assert_eq!(never_refund.cell, Cell::Fail);
    assert_eq!(never_refund.turn, Some(1));
    assert!(never_refund.reason.unwrap().contains("B2"));
    // get_order was called in the history only.
    let got = AgentCheck::ToolCalled {
        call: CallPattern::named("get_order"),
        times: Bounds {
            min: Some(1),
            max: None,
        },
    }
    .evaluate(&task, &t);
    assert_eq!(got.cell, Cell::Fail);
    // A whole-conversation check still reads the history.
    let v = Validator::new("saw_history")
        .expression(
            "input.transcript.messages.len() == 8 && input.transcript.tool_calls.len() == 1",
        )
        .unwrap();
    assert_eq!(
        AgentCheck::Transcript(v).evaluate(&task, &t).cell,
        Cell::Pass
    );
}
