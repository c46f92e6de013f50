use crate::common;

use common::{tensor_report, HOSTILE};
use probity_core::stats::Counts;
use probity_report::html::{FAILURES_SHOWN, HEATMAP_MAX_INPUTS, SCRIPT};
use probity_report::sanitize::html_escape;
use probity_report::{heatmap, render, FailingSample, Format};
use sha2::{Digest, Sha256};

fn page() -> String {
    render(&tensor_report(5, 20), Format::Html, false)
}

#[test]
fn html_format_parses_and_renders() {
    assert_eq!("html".parse::<Format>().unwrap(), Format::Html);
    assert_eq!("HTML".parse::<Format>().unwrap(), Format::Html);
    assert_eq!("htm".parse::<Format>().unwrap(), Format::Html);
    assert_eq!(Format::Html.name(), "html");
    assert!(Format::NAMES.contains(&"html"));
    let h = page();
    assert!(h.starts_with("<!DOCTYPE html>"));
    assert!(h.trim_end().ends_with("</html>"));
}

/// Hostile text in outputs, input ids, check names and messages, reasons
/// and the run name never reaches the page as markup.
#[test]
fn untrusted_text_is_escaped() {
    let h = page();
    // The page's own script is the only one.
    assert_eq!(h.matches("<script").count(), 1, "extra <script> in page");
    assert_eq!(h.matches("</script>").count(), 1);
    assert!(!h.contains("<img"), "injected <img> element");
    assert!(!h.contains("</textarea"), "raw </textarea>");
    assert!(!h.contains("<b>"), "raw <b> from a check name");
    assert!(!h.contains("<i>"), "raw <i> from the system name");
    assert!(!h.contains("it's"), "raw apostrophe from an input id");
    assert!(!h.contains("onerror=alert(1)>"), "attribute break-out");
    // … and it is shown, escaped.
    let escaped = html_escape(HOSTILE);
    assert!(escaped.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(h.contains(&escaped), "hostile output not shown escaped");
    assert!(h.contains("it&#39;s"));
    assert!(h.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
    // Untrusted data never enters the script.
    let script = between(&h, "<script>", "</script>");
    assert_eq!(script, SCRIPT);
}

/// Every `onX=` attribute in the page would be an injected handler: the
/// page itself uses none (the CSP would block them anyway).
#[test]
fn no_inline_event_handlers() {
    let h = page();
    let lower = h.to_ascii_lowercase();
    for tag in lower.split('<').skip(1) {
        let tag = tag.split('>').next().unwrap_or("");
        for attr in tag.split_whitespace().skip(1) {
            assert!(
                !(attr.starts_with("on") && attr.contains('=')),
                "event handler attribute in <{tag}>"
            );
        }
    }
}

#[test]
fn self_contained_and_csp_matches_the_script() {
    let h = page();
    assert!(!h.contains("http://"), "http:// reference");
    assert!(!h.contains("https://"), "https:// reference");
    assert!(!h.contains("<link"), "linked resource");
    assert!(!h.contains("@import"));
    assert!(!h.contains("url("));
    let digest = Sha256::digest(between(&h, "<script>", "</script>").as_bytes());
    let want = format!("&#39;sha256-{}&#39;", b64(&digest));
    assert!(h.contains(&want), "CSP does not allow the page's script");
    assert!(h.contains("default-src &#39;none&#39;"));
}

/// One cell per input × check, each titled with its exact figures.
#[test]
fn heatmap_has_a_titled_cell_per_input_and_check() {
    let r = tensor_report(5, 20);
    let h = render(&r, Format::Html, false);
    assert_eq!(h.matches("class=\"hm-cell\"").count(), 5 * 3);
    let t = r.tensor.as_ref().unwrap();
    for k in 0..3 {
        let per_input = t.input_counts_for(k);
        for (i, c) in per_input.iter().enumerate() {
            let (x, n) = (c.pass, c.pass + c.fail + c.error);
            let title = format!(
                "{} × {}: {} ({x} of {n} passed; {} failed, {} errors, {} missing)",
                r.input_label(i),
                r.check_name(k),
                pct(x, n),
                c.fail,
                c.error,
                c.missing
            );
            let cell = format!("data-input=\"{i}\" data-validator=\"{k}\"",);
            assert!(h.contains(&cell), "no cell for ({i}, {k})");
            assert!(
                h.contains(&format!("<title>{}</title>", html_escape(&title))),
                "missing title {title}"
            );
        }
    }
    // The verdict bars carry their figures.
    for c in &r.summary.checks {
        let label = format!(
            "{:.1}% [{:.1}, {:.1}] at 95% confidence, n = {}; minimum {}%",
            c.rate.estimate * 100.0,
            c.rate.interval.lower * 100.0,
            c.rate.interval.upper * 100.0,
            c.rate.n,
            c.verdict.threshold * 100.0
        );
        assert!(
            h.contains(&format!("aria-label=\"{label}\"")),
            "no bar {label}"
        );
    }
    // One input × repetition chart per check, and the phi matrix K×K.
    assert_eq!(h.matches("<figure class=\"rep\"").count(), 3);
    assert_eq!(h.matches("class=\"phi-cell\"").count(), 9);
}

fn pct(x: u64, n: u64) -> String {
    let p = x as f64 / n as f64;
    let one = format!("{:.1}%", p * 100.0);
    assert!(one != "100.0%" || x == n);
    one
}

#[test]
fn profiles_retry_and_failures_are_shown() {
    let r = tensor_report(5, 20);
    let h = render(&r, Format::Html, false);
    for needle in [
        "Inputs (IRP)",
        "Repetitions (ORP)",
        "Checks (VRP)",
        "Retry plan",
        "P(pass all) under independence",
        "measured joint pass rate",
        "attempts for 99%",
        "Per input",
        "Check × check correlation (phi)",
    ] {
        assert!(h.contains(needle), "missing {needle}");
    }
    // Every failing output is listed, with its checks and reasons.
    assert_eq!(
        h.matches("<article class=\"failure").count(),
        r.failures.len()
    );
    assert!(h.contains(&format!(
        "All {} outputs that failed at least one check.",
        r.failures.len()
    )));
    let f = &r.failures[0];
    assert!(h.contains(&format!(
        "data-input=\"{}\" data-validators=\"{}\"",
        f.input,
        f.failed
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    )));
    assert!(h.contains(&html_escape(&format!("reason 0: {HOSTILE}"))));
    // Filter rows carry data attributes and the filters are hidden
    // without JavaScript.
    assert!(h.contains("<div class=\"filters needs-js\" id=\"filters\" hidden>"));
    assert!(h.contains("class=\"filterable\" data-validator=\"0\""));
    assert!(h.contains("class=\"filterable\" data-input=\"0\""));
}

#[test]
fn big_runs_are_capped_and_say_so() {
    let mut r = tensor_report(250, 4);
    let h = render(&r, Format::Html, false);
    assert_eq!(
        h.matches("class=\"hm-cell\"").count(),
        HEATMAP_MAX_INPUTS * 3
    );
    assert!(h.contains("Showing the 200 worst of 250 inputs by IRP."));
    // More failures than the browser shows.
    let extra = r.failures[0].clone();
    while r.failures.len() < FAILURES_SHOWN + 50 {
        r.failures.push(extra.clone());
    }
    let h = render(&r, Format::Html, false);
    assert_eq!(
        h.matches("<article class=\"failure").count(),
        FAILURES_SHOWN
    );
    assert!(h.contains(&format!(
        "A sample of {FAILURES_SHOWN} of the {} outputs",
        FAILURES_SHOWN + 50
    )));
}

#[test]
fn without_a_tensor_the_page_says_so() {
    let r = common::report();
    let h = render(&r, Format::Html, false);
    assert!(h.contains("Heatmaps are not available"));
    assert!(!h.contains("class=\"hm-cell\""));
    assert!(h.contains("politeness_validator"));
    assert!(h.contains("Check × check correlation (phi)"));
    assert!(heatmap(&r, false).starts_with("no heatmap"));
}

#[test]
fn failing_samples_from_tensor() {
    let r = tensor_report(5, 20);
    let t = r.tensor.as_ref().unwrap();
    let all = FailingSample::from_tensor(t, 0);
    assert_eq!(all.len(), r.failures.len());
    assert_eq!(FailingSample::from_tensor(t, 3).len(), 3);
    let e = all
        .iter()
        .find(|f| f.input == 1 && f.repetition == 3)
        .unwrap();
    assert_eq!(e.errored, vec![2]);
    // Input 0, output 0 fails check 0 only (0 % 2 == 0).
    assert_eq!(all[0].input, 0);
    assert_eq!(all[0].repetition, 0);
    assert_eq!(all[0].failed, vec![0]);
    // Counts match the tensor: every output with a fail or error is there.
    let mut n = 0;
    for i in 0..5 {
        for j in 0..20 {
            if (0..3).any(|k| {
                matches!(
                    common::synthetic_cell(i, j, k),
                    probity_core::Cell::Fail | probity_core::Cell::Error
                )
            }) {
                n += 1;
            }
        }
    }
    assert_eq!(all.len(), n);
}

#[test]
fn terminal_heatmap_plain_and_coloured() {
    let r = tensor_report(5, 20);
    let plain = heatmap(&r, false);
    println!("{plain}");
    assert!(!plain.contains('\x1b'), "{plain}");
    // Hostile labels are shown, cut, without control characters.
    assert!(plain.contains("hello"));
    assert!(plain.contains("1 contraction_validator"));
    assert!(plain.contains("shades"));
    // Input 4 fails check 3 on even outputs: .X pattern reversed.
    assert!(plain.contains("X.X.X.X.X.X.X.X.X.X.   10 of 20"), "{plain}");
    // Rows: header + 5 inputs before the legend.
    let grid: Vec<&str> = plain
        .lines()
        .skip(2)
        .take_while(|l| !l.starts_with("checks"))
        .collect();
    assert_eq!(grid.len(), 5, "{plain}");
    // The worst input by IRP comes first: input 4 (fails checks 0 and 2).
    assert!(grid[0].starts_with("</textarea>"), "{plain}");
    // Each row's cells are its input's rate on each check, shaded as the
    // legend says (from the tensor's own per-input counts).
    let t = r.tensor.as_ref().unwrap();
    let shade = |c: Counts| {
        let (x, n) = c.successes_of(r.summary.options.errors);
        let p = x as f64 / n as f64;
        match () {
            _ if n == 0 => "  ",
            _ if p >= 1.0 => "██",
            _ if p >= 0.95 => "▓▓",
            _ if p >= 0.8 => "▒▒",
            _ if p >= 0.5 => "░░",
            _ => "··",
        }
    };
    let mut expected: Vec<String> = (0..5)
        .map(|i| {
            (0..3)
                .map(|k| shade(t.input_counts(i, k)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let mut shown: Vec<String> = grid
        .iter()
        .map(|l| l.chars().skip(25).take(8).collect())
        .collect();
    expected.sort();
    shown.sort();
    assert_eq!(shown, expected, "{plain}");
    let coloured = heatmap(&r, true);
    println!("{coloured}");
    assert!(coloured.contains("\x1b[38;5;"));
    let big = heatmap(&tensor_report(100, 3), false);
    assert!(big.starts_with("input × check success rate · worst 40 of 100 inputs first"));
    assert!(big.contains("… 60 more inputs not shown"));
}

#[test]
fn terminal_heatmap_strips_escape_sequences_from_labels() {
    let mut r = tensor_report(5, 4);
    r.input_labels[0] = "\x1b]0;pwned\x07evil\x1b[2J".to_string();
    let plain = heatmap(&r, false);
    assert!(!plain.contains('\x1b'));
    assert!(plain.contains("evil"));
    let coloured = heatmap(&r, true);
    assert!(!coloured.contains("\x1b]"));
    assert!(!coloured.contains("\x1b[2J"));
}

#[test]
fn empty_counts_do_not_panic() {
    let mut r = tensor_report(5, 4);
    r.tensor = Some(probity_core::ReliabilityTensor::new(0, 0, 0).unwrap());
    assert!(render(&r, Format::Html, false).contains("The tensor is empty"));
    assert!(heatmap(&r, false).starts_with("no heatmap"));
    let _ = Counts::default();
}

#[test]
fn guarded_section_histogram_table_and_verdict() {
    let plain = render(&common::report(), Format::Html, false);
    assert!(!plain.contains("id=\"guarded\""));
    assert!(!plain.contains("href=\"#guarded\""));

    let mut r = tensor_report(5, 20);
    r.guarded = Some(common::retry_check(true));
    let h = render(&r, Format::Html, false);
    assert!(h.contains("<a href=\"#guarded\">Guarded system</a>"));
    let sec = between(&h, "<section id=\"guarded\">", "</section>");
    assert!(sec.contains("<h2>Guarded system (§4.2)</h2>"));
    // The histogram: attempts 1..3 and nothing published, with the joint
    // rate's predicted counts.
    let hist = between(sec, "<svg class=\"histogram\"", "</svg>");
    assert_eq!(hist.matches("class=\"hist-bar\"").count(), 4);
    assert_eq!(hist.matches("class=\"predicted\"").count(), 4);
    assert!(hist.contains("<title>published at attempt 1: 120 of 200 requests (60.0%)"));
    assert!(hist.contains("<title>nothing published: 20 of 200 requests (10.0%)"));
    // N·p(1−p)^(a−1) at p = 0.6: 120, 48, 19.2; nothing 200·0.4³ = 12.8.
    assert!(hist.contains("predicted at the joint rate 48.0"), "{hist}");
    assert!(hist.contains("predicted at the joint rate 12.8"), "{hist}");
    // The table: measured and the three models, with interval bars.
    let table = between(sec, "<table class=\"guarded\">", "</table>");
    assert_eq!(table.matches("<tr class=\"guard-row\"").count(), 4);
    for model in ["measured", "independence", "joint", "per-input"] {
        assert!(
            table.contains(&format!("data-model=\"{model}\"")),
            "{model}"
        );
    }
    assert!(table.contains("90.0% [85.0, 94.0]"));
    assert!(table.contains("1.62 [1.55, 1.70]"));
    assert!(table.matches("<svg class=\"bar\"").count() >= 8 + 2);
    // A prediction's bars show the measured interval behind them.
    assert_eq!(table.matches("class=\"measured-band\"").count(), 6);
    assert!(sec.contains("410 calls (2.05 per request, judge calls included), 12345 tokens"));
    assert!(sec.contains("<p class=\"verdict pass\" id=\"guard-verdict\">Prediction held"));
    assert!(sec.contains("Rule: the measured P(success within m) and attempts used lie inside the per-input model&#39;s intervals"));

    let mut r = tensor_report(5, 20);
    r.guarded = Some(common::retry_check(false));
    let h = render(&r, Format::Html, false);
    let sec = between(&h, "<section id=\"guarded\">", "</section>");
    assert!(sec.contains("<p class=\"verdict fail\" id=\"guard-verdict\">Prediction did not hold"));
    assert!(sec.contains("misses both"));

    // Still one script, no handlers, nothing external, hostile text escaped.
    assert_eq!(h.matches("<script").count(), 1);
    assert!(!h.contains("<img"));
    assert!(!h.contains("http://") && !h.contains("https://") && !h.contains("url("));
    let lower = h.to_ascii_lowercase();
    for tag in lower.split('<').skip(1) {
        let tag = tag.split('>').next().unwrap_or("");
        for attr in tag.split_whitespace().skip(1) {
            assert!(!(attr.starts_with("on") && attr.contains('=')), "<{tag}>");
        }
    }
}

/// A retry policy of one attempt, or with m large, or no requests: still
/// a drawable page.
#[test]
fn guarded_section_edge_cases() {
    for (m, samples) in [(1u32, 10u64), (25, 10), (3, 0)] {
        let mut r = tensor_report(5, 20);
        let mut c = common::retry_check(false);
        c.measured.m = m;
        c.measured.histogram = vec![samples / 2; m as usize];
        c.measured.samples = samples;
        c.measured.nothing_published = 0;
        r.guarded = Some(c);
        let h = render(&r, Format::Html, false);
        let sec = between(&h, "<section id=\"guarded\">", "</section>");
        let hist = between(sec, "<svg class=\"histogram\"", "</svg>");
        assert_eq!(hist.matches("class=\"hist-bar\"").count(), m as usize + 1);
        assert!(!sec.contains("NaN") && !sec.contains("inf"), "{sec}");
    }
}

fn between<'a>(s: &'a str, a: &str, b: &str) -> &'a str {
    let start = s.find(a).expect("start") + a.len();
    let end = start + s[start..].find(b).expect("end");
    &s[start..end]
}

fn b64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let v = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for n in 0..4 {
            if n <= c.len() {
                out.push(A[(v >> (18 - 6 * n) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Every rate bar on a run's page is drawn on one scale: every axis over
/// a column of rate bars says the same range.
#[test]
fn one_bar_scale_per_page() {
    let h = page();
    let axes: Vec<&str> = h
        .split("aria-label=\"scale ")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .filter(|s| s.ends_with("to 100%"))
        .collect();
    assert!(axes.len() >= 4, "{axes:?}");
    assert!(axes.iter().all(|a| *a == axes[0]), "{axes:?}");
    assert!(h.contains(&format!("drawn on one scale, {}.", axes[0])));
}

/// The template layer escapes what it is given unless Rust code marked it
/// as markup: a hostile title of a small page comes out as text.
#[test]
fn templates_escape_by_default() {
    let mut r = tensor_report(5, 20);
    r.run.name = format!("{HOSTILE}\u{202e}\x1b[2J");
    let h = render(&r, Format::Html, false);
    assert!(!h.contains("<img"));
    assert!(!h.contains('\u{202e}'), "bidi override passed through");
    assert!(!h.contains('\x1b'), "escape sequence passed through");
    assert!(h.contains(&html_escape(HOSTILE)));
}

/// A hostile episode: `<script>`, quotes and a huge argument in every
/// place an agent, a user or a tool can put text.
fn hostile_transcript() -> String {
    use probity_core::agent::{Ending, Party, ToolOutcome, Transcript};
    use probity_core::conversation::{Message, Role, ToolCall};
    let huge = "A".repeat(20_000);
    let mut call = Message::text(Role::Assistant, format!("checking {HOSTILE}"));
    call.tool_calls = vec![ToolCall {
        id: "c1\"><script>alert(2)</script>".into(),
        name: "get_order</code><script>alert(3)</script>".into(),
        arguments: serde_json::json!({"order_id": HOSTILE, "note": huge}),
    }];
    let messages = vec![
        Message::text(Role::System, "be helpful"),
        Message::text(Role::User, format!("user says {HOSTILE}")),
        call,
        Message::tool_result("c1", format!("tool says {HOSTILE}")),
        Message::text(Role::Assistant, "done ###STOP###"),
    ];
    let mut t = Transcript::from_messages(messages, Ending::Stop { by: Party::Agent });
    t.tool_outcomes.push(ToolOutcome {
        call_id: "c1".into(),
        message: 3,
        is_error: true,
        latency_ms: None,
    });
    t.final_state = Some(serde_json::json!({"orders": {"A1": HOSTILE}}));
    serde_json::to_string(&t).unwrap()
}

/// An agent's stored episode is drawn as a conversation — roles, turns,
/// tool calls with pretty arguments, the tool's error, the failed check at
/// its turn — in the report and in `probity view`, every piece escaped and
/// a huge argument cut.
#[test]
fn an_episode_is_drawn_as_an_escaped_conversation() {
    let mut r = tensor_report(5, 20);
    let f = &mut r.failures[0];
    assert_eq!(f.failed, vec![0]);
    f.output = Some(hostile_transcript());
    f.reasons = vec![(0, format!("turn 1: `refund` was called {HOSTILE}"))];
    let sample = f.clone();
    let report = render(&r, Format::Html, false);
    let view = probity_report::html::view::outputs_page(
        &r,
        std::slice::from_ref(&sample),
        &Default::default(),
    );
    for h in [&report, &view] {
        let script = h.matches("<script").count();
        assert!(script <= 1, "injected <script>: {script}");
        assert!(
            !h.contains("<script>alert"),
            "raw script from the transcript"
        );
        assert!(!h.contains("onerror=alert(1)>"));
        let art = between(h, "class=\"transcript\"", "</details>");
        // Roles and turns, in order.
        let roles: Vec<&str> = art
            .split("<strong>")
            .skip(1)
            .map(|s| s.split('<').next().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);
        assert!(art.contains("turn 0") && art.contains("turn 1") && art.contains("turn 2"));
        assert!(art.contains("episode: 2 turns · ended: stop by the agent"));
        // The call: its name escaped, its arguments pretty JSON, cut.
        assert!(art.contains("get_order&lt;/code&gt;&lt;script&gt;alert(3)"));
        assert!(art.contains("&quot;order_id&quot;: &quot;"), "pretty JSON");
        assert!(art.contains("cut at 4000 of 20"), "huge argument cut");
        assert!(!art.contains(&"A".repeat(4001)));
        // The tool answered with an error; the failed check is at turn 1.
        assert!(art.contains("tool error"));
        let at_turn_1 = art.split("data-turn=\"1\"").nth(1).unwrap();
        let failed = at_turn_1.split("data-turn=\"2\"").next().unwrap();
        assert!(failed.contains("failed here"), "{failed}");
        assert!(failed.contains("turn 1: `refund` was called"));
        assert!(art.contains(&html_escape(&format!("tool says {HOSTILE}"))));
        assert!(art.contains("final state"));
    }
}
