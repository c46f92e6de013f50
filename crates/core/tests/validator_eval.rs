//! Parallel evaluation of K validators over samples (paper §3.1).

use probity_core::validator::{evaluate_all, Builtin, Evaluator, Validator};
use probity_core::{Input, Sample, Verdict};
use rand::{rngs::StdRng, Rng, SeedableRng};

fn validators() -> Vec<Validator> {
    vec![
        Validator::new("contraction").expression(r#"count(output, "'") <= 3"#).unwrap(),
        Validator::new("politeness")
            .expression(r#"if input.text.contains("Thank you") { output.contains("You're welcome") } else { true }"#)
            .unwrap(),
        Validator::new("regex").expression(r#"matches(output, "(?i)^you")"#).unwrap(),
        Validator::new("words").builtin(Builtin::words(None, Some(8)).unwrap()),
        Validator::new("closure").check_with_input(|i: &Input, o: &str| i.id.len() + o.len() % 3 != 2),
        Validator::new("errs").expression(r#"if output.len() % 7 == 0 { 1 } else { true }"#).unwrap(),
    ]
}

fn data(n_inputs: usize, n_samples: usize, seed: u64) -> (Vec<Input>, Vec<Sample>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let texts = [
        "Thank you!",
        "What time is it?",
        "Thank you for the help",
        "Hi",
    ];
    let words = [
        "You're", "welcome", "can't", "I", "won't", "help", "you", "it's", "fine", "Sure",
    ];
    let inputs = (0..n_inputs)
        .map(|i| Input::text(i.to_string(), texts[i % texts.len()]))
        .collect();
    let samples = (0..n_samples)
        .map(|k| {
            let len = rng.gen_range(0..12);
            let output = (0..len)
                .map(|_| words[rng.gen_range(0..words.len())])
                .collect::<Vec<_>>()
                .join(" ");
            Sample {
                input: k % n_inputs,
                repetition: k / n_inputs,
                output,
            }
        })
        .collect();
    (inputs, samples)
}

#[test]
fn parallel_equals_sequential() {
    let vs = validators();
    let (inputs, samples) = data(37, 4000, 7);
    let par = evaluate_all(&vs, &inputs, &samples);
    let seq: Vec<Vec<Verdict>> = samples
        .iter()
        .map(|s| {
            vs.iter()
                .map(|v| v.evaluate(&inputs[s.input], &s.output))
                .collect()
        })
        .collect();
    assert_eq!(par.len(), samples.len());
    assert!(par.iter().all(|row| row.len() == vs.len()));
    assert_eq!(par, seq);
    // The data exercises every outcome.
    let flat: Vec<&Verdict> = par.iter().flatten().collect();
    assert!(flat.iter().any(|v| v.is_pass()));
    assert!(flat.iter().any(|v| **v == Verdict::Fail));
    assert!(flat.iter().any(|v| matches!(v, Verdict::Error { .. })));
    let ev = Evaluator::new(&vs, &inputs);
    assert_eq!(ev.evaluate_sequential(&samples), seq);
}

#[test]
fn streaming_equals_batch() {
    let vs = validators();
    let (inputs, samples) = data(5, 1000, 11);
    let batch = evaluate_all(&vs, &inputs, &samples);
    let ev = Evaluator::new(&vs, &inputs);
    for chunk in [1, 7, 64, 5000] {
        let mut got = Vec::new();
        let mut seen = Vec::new();
        ev.evaluate_stream(samples.iter().cloned(), chunk, |s, v| {
            assert_eq!(s.len(), v.len());
            assert!(s.len() <= chunk);
            seen.extend_from_slice(s);
            got.extend(v);
        });
        assert_eq!(seen, samples);
        assert_eq!(got, batch, "chunk size {chunk}");
    }
}

#[test]
fn out_of_range_input_gives_errors() {
    let vs = validators();
    let inputs = vec![Input::text("0", "Thank you")];
    let samples = vec![
        Sample {
            input: 0,
            repetition: 0,
            output: "You're welcome".into(),
        },
        Sample {
            input: 3,
            repetition: 0,
            output: "x".into(),
        },
    ];
    let r = evaluate_all(&vs, &inputs, &samples);
    assert_eq!(r[0][1], Verdict::Pass);
    assert_eq!(r[1].len(), vs.len());
    for v in &r[1] {
        match v {
            Verdict::Error { reason } => assert!(reason.contains("input 3"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }
    assert!(evaluate_all(&vs, &[], &samples)
        .iter()
        .flatten()
        .all(|v| matches!(v, Verdict::Error { .. })));
    assert!(evaluate_all(&vs, &inputs, &[]).is_empty());
    assert_eq!(
        evaluate_all(&[], &inputs, &samples),
        vec![Vec::<Verdict>::new(); 2]
    );
}

#[test]
fn runaway_expressions_do_not_stall_a_batch() {
    let vs = vec![
        Validator::new("loop").expression("loop {} true").unwrap(),
        Validator::new("ok").builtin(Builtin::is_json()),
    ];
    let inputs = vec![Input::text("0", "")];
    let samples: Vec<Sample> = (0..16)
        .map(|j| Sample {
            input: 0,
            repetition: j,
            output: "[]".into(),
        })
        .collect();
    let r = evaluate_all(&vs, &inputs, &samples);
    for row in r {
        assert!(matches!(row[0], Verdict::Error { .. }));
        assert_eq!(row[1], Verdict::Pass);
    }
}

#[test]
fn a_check_with_its_own_verdict_gives_pass_fail_and_error_cells_with_causes() {
    use probity_core::Verdict;
    let v = Validator::new("external").check_verdict(|i: &Input, o: &str| match o {
        "yes" => Verdict::Pass,
        "no" => Verdict::Fail,
        _ => Verdict::error(format!("cannot judge {o:?} for {}", i.id)),
    });
    let input = Input::text("q1", "hello");
    assert_eq!(v.evaluate(&input, "yes"), Verdict::Pass);
    assert_eq!(v.evaluate(&input, "no"), Verdict::Fail);
    assert_eq!(
        v.evaluate(&input, "maybe"),
        Verdict::error("cannot judge \"maybe\" for q1")
    );
    let panics = Validator::new("panics").check_verdict(|_: &Input, _: &str| panic!("boom"));
    assert_eq!(
        panics.evaluate(&input, "x"),
        Verdict::error("check panicked: boom")
    );
}
