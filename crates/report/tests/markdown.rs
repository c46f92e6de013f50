use crate::common;

use probity_report::{render, Format};

/// Split a GFM table row into cells, honouring `\|` escapes.
fn cells(row: &str) -> Vec<String> {
    let inner = row
        .trim()
        .strip_prefix('|')
        .unwrap()
        .strip_suffix('|')
        .unwrap();
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                out.last_mut().unwrap().push_str("\\|");
                chars.next();
            }
            '|' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

fn check_rows(md: &str) -> Vec<Vec<String>> {
    let mut lines = md.lines().skip_while(|l| !l.starts_with("| check |"));
    let header = lines.next().expect("checks table");
    assert_eq!(
        cells(header),
        [
            "check",
            "success",
            "interval",
            "threshold",
            "verdict",
            "established"
        ]
    );
    lines.next(); // delimiter row
    lines
        .take_while(|l| l.starts_with('|'))
        .map(cells)
        .collect()
}

#[test]
fn heading_table_aggregate_worst_inputs_examples() {
    let md = render(&common::report(), Format::Markdown, false);
    assert!(
        md.starts_with("## ❌ probity: FAIL — greeting-bot (run #12)\n"),
        "{md}"
    );
    assert!(md.contains("**FAIL: 1 of 2 checks below minimum**"));
    let rows = check_rows(&md);
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[0],
        [
            "contraction\\_validator",
            "96.2%",
            "[94.1, 97.6]",
            "≥ 95%",
            "✅ PASS",
            "established"
        ]
    );
    assert_eq!(rows[1][1], "85.0%");
    assert_eq!(rows[1][4], "❌ FAIL");
    assert!(rows[1][5].contains("120 more samples would settle it"));
    assert!(
        md.contains("**Aggregate:** min 85.0% [78.0, 90.1], worst check `politeness_validator`")
    );
    assert!(md.contains("| thanks-3 | 60.0% | [50.0, 69.0] |"), "{md}");
    assert!(md.contains("> System seems to have forgotten its manners"));
    assert!(md.contains("- 3 errors counted as failures"));
    assert!(
        md.contains("```text\nSure, no problem.\nAnything else?\\u{7}\n```\n"),
        "{md}"
    );
    assert!(!md.contains('\x1b'));
    assert!(md.contains("<summary>Retry plan</summary>"));
}

#[test]
fn passing_heading() {
    let md = render(&common::passing_report(), Format::Markdown, false);
    assert!(md.starts_with("## ✅ probity: PASS — greeting-bot"), "{md}");
    assert!(!md.contains("Checks not passing"));
}

#[test]
fn pipes_and_newlines_in_cells_are_escaped() {
    let mut r = common::report();
    r.summary.checks[0].info.name = "a|b\nc `d` <i>".to_string();
    r.input_labels[2] = "x|y".to_string();
    let md = render(&r, Format::Markdown, false);
    let rows = check_rows(&md);
    // Still six cells: the pipe did not split the row, the newline did not
    // end it.
    assert_eq!(rows[0].len(), 6, "{md}");
    assert_eq!(rows[0][0], "a\\|b<br>c \\`d\\` &lt;i&gt;");
    assert!(md.contains("| x\\|y | 60.0% |"), "{md}");
}

#[test]
fn backticks_cannot_close_the_code_block() {
    let mut r = common::report();
    r.examples[0].output = "before\n```\n# injected heading\n````".to_string();
    let md = render(&r, Format::Markdown, false);
    assert!(
        md.contains("`````text\nbefore\n```\n# injected heading\n````\n`````\n"),
        "{md}"
    );
}

#[test]
fn guarded_system_section() {
    let md = render(&common::report(), Format::Markdown, false);
    assert!(!md.contains("Guarded system"));

    let md = render(&common::guarded_report(true), Format::Markdown, false);
    println!("{md}");
    assert!(md.contains("### Guarded system (§4.2)"), "{md}");
    let header = md
        .lines()
        .find(|l| l.contains("P(success within m)") && l.starts_with('|'))
        .expect("table header");
    assert_eq!(
        cells(header),
        [
            "",
            "P(pass) per attempt",
            "P(success within m)",
            "attempts used"
        ]
    );
    let row = md
        .lines()
        .find(|l| l.starts_with("| joint model"))
        .expect("joint row");
    assert_eq!(
        cells(row),
        [
            "joint model",
            "60.0% [55.0, 65.0]",
            "92.0% [88.0, 95.0]",
            "1.62 [1.55, 1.70]"
        ]
    );
    let row = md
        .lines()
        .find(|l| l.starts_with("| **measured**"))
        .unwrap();
    assert_eq!(cells(row)[1], "–");
    assert!(md.contains("✅ prediction held"), "{md}");
    assert!(md.contains("410 calls"), "{md}");
    // The section comes before the retry plan's details.
    assert!(md.find("### Guarded system").unwrap() < md.find("<details>").unwrap());

    let md = render(&common::guarded_report(false), Format::Markdown, false);
    assert!(md.contains("❌ prediction did not hold"), "{md}");
}
