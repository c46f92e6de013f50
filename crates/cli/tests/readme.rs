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

/// Whether `line` quotes a throughput or ratio figure: a number written
/// against `×` (`0.72×`, `5–10×`) or a rate in samples, requests or
/// calls per second.
fn quotes_a_figure(line: &str) -> bool {
    let chars: Vec<char> = line.chars().collect();
    let ratio = chars
        .windows(2)
        .any(|w| w[0].is_ascii_digit() && w[1] == '×');
    ratio
        || ["samples/s", "req/s", "requests/s", "calls/s"]
            .iter()
            .any(|unit| {
                line.match_indices(unit).any(|(at, _)| {
                    line[..at]
                        .trim_end()
                        .chars()
                        .last()
                        .is_some_and(|c| c.is_ascii_digit())
                })
            })
}

/// The paragraphs of a Markdown text outside fenced code: (first line
/// number, text), split at blank lines and headings.
fn paragraphs(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let (mut fenced, mut open) = (false, false);
    for (n, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") {
            fenced = !fenced;
            open = false;
            continue;
        }
        if fenced || t.is_empty() || t.starts_with('#') {
            open = false;
            continue;
        }
        if !open {
            out.push((n + 1, String::new()));
            open = true;
        }
        let last = out.last_mut().unwrap();
        last.1.push_str(line);
        last.1.push('\n');
    }
    out
}

/// Issue 40 item 6: every throughput or ratio figure quoted in the README
/// and docs names the bench that produced it — its paragraph names a
/// `bench/…` script, or, for a table, the paragraph just before it does.
#[test]
fn every_quoted_figure_names_its_bench() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut unnamed = Vec::new();
    let mut figures = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let paras = paragraphs(&text);
        for (i, (line, para)) in paras.iter().enumerate() {
            if !para.lines().any(quotes_a_figure) {
                continue;
            }
            figures += 1;
            let table = para.trim_start().starts_with('|');
            let named =
                para.contains("bench/") || (table && i > 0 && paras[i - 1].1.contains("bench/"));
            if !named {
                let first = para.lines().find(|l| quotes_a_figure(l)).unwrap_or("");
                unnamed.push(format!(
                    "{}:{line}: {}",
                    file.strip_prefix(&root).unwrap_or(file).display(),
                    first.trim()
                ));
            }
        }
    }
    // The scan finds the figures it is for (README's memory and install
    // figures, docs/store.md's and docs/serve.md's tables).
    assert!(
        figures >= 5,
        "only {figures} figures found: is the scan broken?"
    );
    assert!(
        unnamed.is_empty(),
        "figures quoted without the bench that produced them (name its `bench/…` script in the paragraph):\n{}",
        unnamed.join("\n")
    );
}

#[test]
fn the_figure_scan_finds_ratios_and_rates_and_skips_code() {
    assert!(quotes_a_figure("the p50 latency is 0.64× that of"));
    assert!(quotes_a_figure("measured 5–10× slower"));
    assert!(quotes_a_figure("at 28,000–36,000 samples/s."));
    assert!(quotes_a_figure("| 5,092 req/s |"));
    assert!(!quotes_a_figure("100,000 samples × 3 checks"));
    assert!(!quotes_a_figure("samples/s is the unit"));
    let p = paragraphs("# T\nfirst 2× line\nsecond\n\n```\n3× in code\n```\n| a | 1× |\n");
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(p[0], (2, "first 2× line\nsecond\n".to_string()));
    assert_eq!(p[1].0, 8);
}
