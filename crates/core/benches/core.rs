//! Benchmarks of probity-core. Run briefly with
//! `cargo bench -p probity-core -- --warm-up-time 1 --measurement-time 3`.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use probity_core::validator::{Builtin, Evaluator, PreparedInput, Validator};
use probity_core::{Input, Sample};

/// Deterministic 500-character outputs, some with contractions, some polite.
fn outputs(n: usize) -> Vec<String> {
    let words = [
        "I",
        "can't",
        "help",
        "with",
        "that",
        "but",
        "You're",
        "welcome",
        "to",
        "ask",
        "again",
        "the",
        "answer",
        "is",
        "forty-two",
        "and",
        "it",
        "isn't",
        "obvious",
        "why",
    ];
    (0..n)
        .map(|k| {
            let mut s = String::new();
            let mut w = k;
            while s.len() < 500 {
                w = w
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                s.push_str(words[(w >> 33) % words.len()]);
                s.push(' ');
            }
            s.truncate(500);
            s
        })
        .collect()
}

/// Expression and builtin evaluations per second over 500-character
/// outputs, sequentially on one core (paper §2.1's two example predicates).
fn bench_expressions(c: &mut Criterion) {
    const N: usize = 1000;
    let outs = outputs(N);
    let inputs = [
        Input::text("0", "Thank you so much for the answer!"),
        Input::text("1", "What is the meaning of life?"),
    ];
    let prepared: Vec<PreparedInput> = inputs.iter().map(PreparedInput::new).collect();
    let validators = [
        (
            // The fixed cost of one evaluation: scope set-up and engine entry.
            "baseline_true",
            Validator::new("true").expression("true").unwrap(),
        ),
        (
            "contraction",
            Validator::new("contraction")
                .expression(r#"count(output, "'") <= 3"#)
                .unwrap(),
        ),
        (
            "politeness",
            Validator::new("politeness")
                .expression(r#"if input.text.contains("Thank you") { output.contains("You're welcome") } else { true }"#)
                .unwrap(),
        ),
        (
            "politeness_input_text",
            Validator::new("politeness")
                .expression(r#"if "Thank you" in input_text { "You're welcome" in output } else { true }"#)
                .unwrap(),
        ),
        (
            "matches_regex",
            Validator::new("regex")
                .expression(r#"matches(output, "(?i)you're welcome")"#)
                .unwrap(),
        ),
        (
            "builtin_regex",
            Validator::new("regex")
                .builtin(Builtin::regex(r"(?i)you're welcome").unwrap()),
        ),
        (
            "builtin_count",
            Validator::new("count")
                .builtin(Builtin::count("'", false, None, Some(3)).unwrap()),
        ),
        (
            "closure_count",
            Validator::new("closure").check(|o: &str| o.matches('\'').count() <= 3),
        ),
    ];

    let mut group = c.benchmark_group("validator_eval_500_chars");
    group.throughput(Throughput::Elements(N as u64));
    for (label, v) in &validators {
        group.bench_with_input(BenchmarkId::new("prepared", label), v, |b, v| {
            b.iter(|| {
                let mut passes = 0usize;
                for (k, o) in outs.iter().enumerate() {
                    passes += v
                        .evaluate_prepared(&prepared[k & 1], black_box(o))
                        .is_pass() as usize;
                }
                passes
            })
        });
    }
    // The convenience path that converts the input on every call.
    let polite = &validators[2].1;
    group.bench_function("unprepared/politeness", |b| {
        b.iter(|| {
            let mut passes = 0usize;
            for (k, o) in outs.iter().enumerate() {
                passes += polite.evaluate(&inputs[k & 1], black_box(o)).is_pass() as usize;
            }
            passes
        })
    });
    group.finish();

    // All validators over all samples through the parallel evaluator.
    let all: Vec<Validator> = validators.iter().map(|(_, v)| v.clone()).collect();
    let samples: Vec<Sample> = outs
        .iter()
        .enumerate()
        .map(|(k, o)| Sample {
            input: k & 1,
            repetition: k / 2,
            output: o.clone(),
        })
        .collect();
    let mut group = c.benchmark_group("evaluator");
    group.throughput(Throughput::Elements((N * all.len()) as u64));
    let ev = Evaluator::new(&all, &inputs);
    group.bench_function("parallel_chunk", |b| b.iter(|| ev.evaluate_chunk(&samples)));
    group.bench_function("sequential", |b| {
        b.iter(|| ev.evaluate_sequential(&samples))
    });
    group.finish();
}

criterion_group!(benches, bench_expressions);
criterion_main!(benches);
