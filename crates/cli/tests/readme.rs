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

/// The blocks after `<!-- readme-output: COMMAND -->`: (command, the
/// block's lines).
fn printed_blocks(readme: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let Some(command) = line
            .trim()
            .strip_prefix("<!-- readme-output: ")
            .and_then(|r| r.strip_suffix(" -->"))
        else {
            continue;
        };
        assert!(lines.next().is_some_and(|l| l.starts_with("```")));
        let block = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .map(str::to_string)
            .collect();
        out.push((command.to_string(), block));
    }
    out
}

/// The README's printed blocks are what their commands print, to the
/// digit: each `<!-- readme-output: … -->` command is run on a fresh
/// `probity init demo`, and its block must be a run of its output's lines.
#[test]
fn the_readme_printed_blocks_are_what_their_commands_print() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let blocks = printed_blocks(&readme);
    assert!(!blocks.is_empty(), "the quick start's block is tested");
    for (command, block) in blocks {
        let dir = tempfile::tempdir().unwrap();
        let args: Vec<&str> = command.split_whitespace().collect();
        assert_eq!(args[0], "probity", "{command}");
        assert_eq!(
            common::probity(dir.path(), &["init", "demo"]).status.code(),
            Some(0)
        );
        let out = common::probity(dir.path(), &args[1..]);
        let stdout = text(&out.stdout);
        let printed: Vec<&str> = stdout.lines().map(str::trim_end).collect();
        let want: Vec<&str> = block.iter().map(|l| l.trim_end()).collect();
        assert!(
            printed.windows(want.len()).any(|w| w == want.as_slice()),
            "the README's block for `{command}` is not what it prints:\n--- README\n{}\n--- printed\n{}",
            want.join("\n"),
            printed.join("\n")
        );
    }
}

/// The example workflow (`.github/workflows/probity.yml`, "a working
/// example") is green on the correct system it runs: its `probity`
/// commands, run as written twice (the second run compares with the
/// first), exit 0.
#[test]
fn the_example_workflow_is_green() {
    let yml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.github/workflows/probity.yml"),
    )
    .unwrap();
    // Shell lines of the steps, backslash continuations joined.
    let mut commands = Vec::new();
    let mut current = String::new();
    for line in yml.lines() {
        let l = line.trim().trim_start_matches("run: ");
        if current.is_empty() && !l.starts_with("probity ") && !l.starts_with("test -f") {
            continue;
        }
        match l.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(l);
                commands.push(std::mem::take(&mut current));
            }
        }
    }
    assert!(
        commands.iter().any(|c| c.starts_with("probity run")),
        "{commands:?}"
    );
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
    for push in 1..=2 {
        for c in &commands {
            let out = Command::new("sh")
                .arg("-c")
                .arg(c)
                .current_dir(&work)
                .env("PATH", &path)
                .env("NO_COLOR", "1")
                .env("GITHUB_STEP_SUMMARY", work.join("summary.md"))
                .env_remove("PROBITY_STORE")
                .output()
                .unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "push {push}: `{c}`:\n{}\n{}",
                text(&out.stdout),
                text(&out.stderr)
            );
        }
    }
    assert!(std::fs::read_to_string(work.join("summary.md"))
        .unwrap()
        .contains("Comparison with baseline"));
}
