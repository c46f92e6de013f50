//! Expressions over their limits end in an Error verdict with a clear
//! reason: never a stack overflow, a hang or a blocked thread (the
//! adversarial pass's reproducers).

use probity_core::validator::expr::{MAX_EVAL_TIME, MAX_VARIABLES};
use probity_core::validator::Expression;
use probity_core::Input;
use probity_core::Verdict;
use std::time::{Duration, Instant};

fn input() -> Input {
    Input::text("0", "hi")
}

/// Evaluate on a thread with a tokio worker's default stack (2 MiB).
/// The wall clock of the evaluation time limit (the core reads none).
fn clock() -> Duration {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

fn on_small_stack(source: &'static str) -> (Verdict, Duration) {
    probity_core::validator::expr::install_clock(clock);
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let e = Expression::compile(source).expect("compiles");
            let t = Instant::now();
            let v = e.evaluate(&input(), "out");
            (v, t.elapsed())
        })
        .unwrap()
        .join()
        .expect("no panic")
}

fn reason(v: &Verdict) -> &str {
    match v {
        Verdict::Error { reason } => reason,
        other => panic!("expected an Error verdict, got {other:?}"),
    }
}

#[test]
fn deeply_nested_arrays_are_an_error_not_a_stack_overflow() {
    let (v, took) = on_small_stack("let a = []; for i in 0..50000 { a = [a]; } true");
    let r = reason(&v);
    assert!(
        r.contains("time limit") || r.contains("operations") || r.contains("too large"),
        "{r}"
    );
    assert!(took < MAX_EVAL_TIME * 5, "took {took:?}");
}

#[test]
fn deep_nesting_within_the_operation_limit_completes() {
    let (v, _) = on_small_stack("let a = []; for i in 0..300 { a = [a]; } true");
    assert_eq!(v, Verdict::Pass);
}

#[test]
fn sleep_is_an_error_at_once() {
    for src in [
        "sleep(20); true",
        "sleep(2.5); true",
        "Fn(\"sleep\").call(20); true",
        "let f = Fn(\"sleep\"); f.call(3.0); true",
    ] {
        let t = Instant::now();
        let v = Expression::compile(src).unwrap().evaluate(&input(), "o");
        assert!(reason(&v).contains("sleep"), "{src}: {v:?}");
        assert!(t.elapsed() < Duration::from_millis(500), "{src}");
    }
}

#[test]
fn too_many_variables_is_an_error() {
    let mut src = String::new();
    for i in 0..MAX_VARIABLES + 5 {
        src.push_str(&format!("let v{i} = {i};\n"));
    }
    src.push_str("true");
    let e = Expression::compile(&src).expect("compiles");
    let v = e.evaluate(&input(), "out");
    assert!(reason(&v).contains("variables"), "{v:?}");
}

#[test]
fn evaluations_in_parallel_chunks_use_large_stacks() {
    use probity_core::model::Sample;
    use probity_core::validator::{evaluate_all, Validator};
    let v = Validator::new("deep")
        .expression("let a = []; for i in 0..20000 { a = [a]; } true")
        .unwrap();
    let inputs = vec![input()];
    let samples: Vec<Sample> = (0..4)
        .map(|j| Sample {
            input: 0,
            repetition: j,
            output: "o".into(),
        })
        .collect();
    let out = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || evaluate_all(&[v], &inputs, &samples))
        .unwrap()
        .join()
        .expect("no overflow");
    assert_eq!(out.len(), 4);
}
