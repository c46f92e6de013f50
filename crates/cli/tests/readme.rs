//! The README's commands, run top to bottom as written, in a fresh
//! directory: every shell block after a `<!-- readme-test -->` line, each
//! command with `probity` (or `cargo run --release [-p probity-cli] --`) meaning the binary
//! under test. A command may end a verdict (exit 0 or 1); a usage error (2)
//! or an incomplete run (3) fails the test, naming the command. A comment
//! that starts `exit N` is a promise the test keeps: the command exits N,
//! and with `exit N (WORD)` its output says WORD.

use crate::common;

use common::text;
use std::path::Path;
use std::process::Command;

/// A tested command: what the shell runs, and the exit code (and word
/// of its output) its comment promises.
#[derive(Debug)]
struct Step {
    command: String,
    exit: Option<i32>,
    says: Option<String>,
}

/// `exit 1 (REGRESSED): …` → (1, "REGRESSED").
fn promise(comment: &str) -> (Option<i32>, Option<String>) {
    let Some(rest) = comment.trim().strip_prefix("exit ") else {
        return (None, None);
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let says = rest[digits.len()..]
        .strip_prefix(" (")
        .and_then(|r| r.split_once(')'))
        .map(|(w, _)| w.to_string());
    let code = digits.parse().ok();
    (code, says)
}

/// The commands of the tested blocks, in order, comments stripped.
fn commands(readme: &str) -> Vec<Step> {
    let mut out = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "<!-- readme-test -->" {
            continue;
        }
        let fence = lines.next().unwrap_or_default();
        assert!(fence.starts_with("```sh"), "a tested block is a sh block");
        for l in lines.by_ref() {
            if l.starts_with("```") {
                break;
            }
            let (command, comment) = match l.find(" #") {
                Some(at) => (&l[..at], &l[at + 2..]),
                None => (l, ""),
            };
            let command = command.trim();
            let command = command
                .replace("cargo run --release -p probity-cli --", "probity")
                .replace("cargo run --release --", "probity");
            // `cargo test` is the README's other command: it is what runs this.
            if !command.is_empty() && !command.starts_with('#') && !command.starts_with("cargo ") {
                let (exit, says) = promise(comment);
                out.push(Step {
                    command,
                    exit,
                    says,
                });
            }
        }
    }
    out
}

#[test]
fn the_readme_commands_run_as_written() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let commands = commands(&readme);
    assert!(commands.len() >= 10, "{commands:?}");
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_probity"), bin.join("probity")).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    assert!(
        commands
            .iter()
            .any(|s| s.says.as_deref() == Some("REGRESSED")),
        "the README shows a regression caught"
    );
    for step in &commands {
        let c = &step.command;
        let out = Command::new("sh")
            .arg("-c")
            .arg(c)
            .current_dir(&work)
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .env_remove("PROBITY_STORE")
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "`{c}` exited {:?}:\n{}\n{}",
            out.status.code(),
            text(&out.stdout),
            text(&out.stderr)
        );
        if let Some(code) = step.exit {
            assert_eq!(
                out.status.code(),
                Some(code),
                "`{c}` promises exit {code}:\n{}\n{}",
                text(&out.stdout),
                text(&out.stderr)
            );
        }
        if let Some(word) = &step.says {
            assert!(
                text(&out.stdout).contains(word.as_str()),
                "`{c}` promises {word}:\n{}",
                text(&out.stdout)
            );
        }
    }
    // The HTML report was written where the README says.
    assert!(work.join("report.html").exists());
}
