//! `probity plan` as a user runs it: output and exit codes.

use std::process::Command;

fn probity(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_probity"))
        .args(args)
        .output()
        .expect("run probity");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn worked_example_exits_zero() {
    let (code, out, _) = probity(&["plan", "--rates", "0.95,0.90,0.85", "--confidence", "0.99"]);
    assert_eq!(code, 0);
    assert!(out.contains("0.72675"), "{out}");
    assert!(out.contains("1.376"), "{out}");
    assert!(out.contains("→ 4 attempts (3 retries)"), "{out}");
}

#[test]
fn bad_arguments_exit_two_with_a_clear_message() {
    let (code, _, err) = probity(&["plan", "--rates", "0.95,1.2"]);
    assert_eq!(code, 2);
    assert!(err.contains("pass rate #2 is 1.2"), "{err}");

    let (code, _, err) = probity(&["plan", "--rates", ""]);
    assert_eq!(code, 2);
    assert!(err.contains("--rates"), "{err}");

    let (code, _, err) = probity(&["plan", "--rates", "0.9", "--confidence", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("--confidence"), "{err}");

    let (code, _, _) = probity(&["plan"]);
    assert_eq!(code, 2);
}

#[test]
fn zero_and_one_rates_do_not_crash() {
    let (code, out, _) = probity(&["plan", "--rates", "0,0.5"]);
    assert_eq!(code, 0);
    assert!(out.contains("none suffices"), "{out}");
    let (code, out, _) = probity(&["plan", "--rates", "1"]);
    assert_eq!(code, 0);
    assert!(out.contains("→ 1 attempt (0 retries)"), "{out}");
}
