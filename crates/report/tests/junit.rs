use crate::common;

use probity_core::stats::Decision;
use probity_report::{render, Format, RunReport};
use quick_xml::events::Event;
use quick_xml::Reader;

/// A minimal DOM, parsed back with quick-xml.
#[derive(Debug, Default)]
struct Node {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Node>,
    text: String,
}

impl Node {
    fn attr(&self, key: &str) -> &str {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("<{}> has no {key}", self.name))
    }
    fn all(&self, name: &str) -> Vec<&Node> {
        self.children.iter().filter(|c| c.name == name).collect()
    }
    fn one(&self, name: &str) -> &Node {
        let v = self.all(name);
        assert_eq!(v.len(), 1, "expected one <{name}> in <{}>", self.name);
        v[0]
    }
}

fn element(e: &quick_xml::events::BytesStart) -> Node {
    Node {
        name: e.name().as_ref().to_string(),
        attrs: e
            .attributes()
            .map(|a| {
                let a = a.expect("well-formed attribute");
                (
                    a.key.as_ref().to_string(),
                    a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .expect("valid attribute value")
                        .into_owned(),
                )
            })
            .collect(),
        ..Node::default()
    }
}

fn parse(xml: &str) -> Node {
    assert!(
        xml.chars().all(|c| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)),
        "character not allowed in XML 1.0: {xml:?}"
    );
    let mut reader = Reader::from_str(xml);
    let mut stack = vec![Node::default()];
    loop {
        match reader
            .read_event()
            .unwrap_or_else(|e| panic!("invalid XML: {e}\n{xml}"))
        {
            Event::Start(e) => stack.push(element(&e)),
            Event::Empty(e) => {
                let n = element(&e);
                stack.last_mut().unwrap().children.push(n);
            }
            Event::End(_) => {
                let n = stack.pop().unwrap();
                stack.last_mut().unwrap().children.push(n);
            }
            Event::Text(t) => stack.last_mut().unwrap().text.push_str(&t.xml10_content()),
            Event::GeneralRef(r) => {
                let s = match r.resolve_char_ref().unwrap() {
                    Some(c) => c.to_string(),
                    None => {
                        let name = r.xml10_content();
                        quick_xml::escape::resolve_predefined_entity(&name)
                            .unwrap_or_else(|| panic!("unknown entity {name}"))
                            .to_string()
                    }
                };
                stack.last_mut().unwrap().text.push_str(&s);
            }
            Event::Eof => break,
            Event::Decl(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(stack.len(), 1, "unclosed elements");
    let mut doc = stack.pop().unwrap();
    assert_eq!(doc.children.len(), 1, "one root element");
    doc.children.pop().unwrap()
}

fn suite(r: &RunReport) -> (Node, String) {
    let xml = render(r, Format::Junit, false);
    let root = parse(&xml);
    assert_eq!(root.name, "testsuites");
    (root, xml)
}

#[test]
fn one_suite_one_case_per_check_with_counts() {
    let (root, xml) = suite(&common::report());
    assert_eq!(root.attr("tests"), "2");
    assert_eq!(root.attr("failures"), "1");
    let s = root.one("testsuite");
    assert_eq!(s.attr("name"), "probity: greeting-bot");
    assert_eq!(s.attr("tests"), "2");
    assert_eq!(s.attr("failures"), "1");
    assert_eq!(s.attr("errors"), "0");
    assert_eq!(s.attr("skipped"), "0");
    assert_eq!(s.attr("time"), "12.340");
    let cases = s.all("testcase");
    assert_eq!(cases.len(), 2, "{xml}");
    assert_eq!(cases[0].attr("classname"), "probity.greeting-bot");
    assert_eq!(cases[0].attr("name"), "contraction_validator");
    assert!(cases[0].all("failure").is_empty());
    assert_eq!(cases[1].attr("name"), "politeness_validator");
    let f = cases[1].one("failure");
    let msg = f.attr("message");
    assert!(
        msg.starts_with("System seems to have forgotten its manners: "),
        "{msg}"
    );
    assert!(msg.contains("rate 85.0% [80.1, 88.9]"), "{msg}");
    assert!(msg.contains("minimum 90%"), "{msg}");
    assert!(msg.contains("n = 200"), "{msg}");
    assert_eq!(f.attr("type"), "below-minimum");
    assert!(f.text.contains("worst input thanks-3"), "{}", f.text);
    assert!(
        f.text.contains("Sure, no problem.\nAnything else?"),
        "{}",
        f.text
    );
    // Errors counted apart go to system-out.
    let out = &cases[1].one("system-out").text;
    assert!(out.contains("3 errors counted as failures"), "{out}");
    assert!(
        out.contains("not established: ~120 more samples would settle it"),
        "{out}"
    );
    let props = s.one("properties").all("property");
    assert!(props
        .iter()
        .any(|p| p.attr("name") == "probity.run.system" && p.attr("value") == "sim/polite-v1"));
}

#[test]
fn inconclusive_is_a_failure_and_no_data_an_error() {
    let mut r = common::report();
    r.summary.checks[1].verdict.decision = Decision::Inconclusive;
    let (root, _) = suite(&r);
    let s = root.one("testsuite");
    assert_eq!(s.attr("failures"), "1");
    assert!(s.all("testcase")[0].all("failure").is_empty());
    let f = s.all("testcase")[1].one("failure");
    assert_eq!(f.attr("type"), "inconclusive");

    let mut r = common::report();
    r.summary.checks[1].rate = common::rate(0, 0, 0, 0.0, 1.0, 1.0);
    let (root, _) = suite(&r);
    let s = root.one("testsuite");
    assert_eq!(s.attr("failures"), "0");
    assert_eq!(s.attr("errors"), "1");
    assert_eq!(s.all("testcase")[1].one("error").attr("type"), "no-data");
}

#[test]
fn hostile_names_and_outputs_round_trip_safely() {
    let mut r = common::report();
    let name = "<script>&\"'\u{1}\x1b[31m";
    r.run.name = "run <&> \"q\"".to_string();
    r.summary.checks[1].info.name = name.to_string();
    r.summary.checks[1].info.message = "a < b && \"c\" 'd'\u{0}".to_string();
    r.examples[0].output =
        "</failure><script>alert('x')</script>&amp;\u{1}\u{b}\u{fffe}\x1b]0;t\x07]]>".to_string();
    let (root, xml) = suite(&r);
    assert!(!xml.contains("<script>"), "{xml}");
    let s = root.one("testsuite");
    assert_eq!(s.attr("name"), "probity: run <&> \"q\"");
    let c = s.all("testcase")[1];
    // Control characters and escape sequences are removed, the rest kept.
    assert_eq!(c.attr("name"), "<script>&\"'");
    assert_eq!(c.attr("classname"), "probity.run <&> \"q\"");
    let f = c.one("failure");
    assert!(
        f.attr("message").starts_with("a < b && \"c\" 'd': rate"),
        "{}",
        f.attr("message")
    );
    assert!(
        f.text
            .contains("</failure><script>alert('x')</script>&amp;]]>"),
        "{}",
        f.text
    );
}

/// quick-junit writes a newline in an attribute as it is, which XML
/// readers normalise to a space; the failure's text keeps it.
#[test]
fn attribute_newlines_survive() {
    let mut r = common::report();
    r.summary.checks[1].info.message = "line one\nline two".to_string();
    let (root, _) = suite(&r);
    let f = root.one("testsuite").all("testcase")[1].one("failure");
    assert!(
        f.attr("message").starts_with("line one line two:"),
        "{:?}",
        f.attr("message")
    );
    assert!(f.text.starts_with("line one\nline two:"), "{:?}", f.text);
}

#[test]
fn passing_report_has_no_failures() {
    let (root, _) = suite(&common::passing_report());
    assert_eq!(root.attr("failures"), "0");
    for c in root.one("testsuite").all("testcase") {
        assert!(c.all("failure").is_empty() && c.all("error").is_empty());
    }
}

#[test]
#[ignore = "prints the reports for a person to read: cargo test -- --ignored --nocapture"]
fn show_all_formats() {
    for f in Format::ALL {
        println!("===== {f}\n{}", render(&common::report(), f, false));
    }
}

#[test]
fn guard_prediction_case() {
    // Without a retry policy there is no such case.
    let (root, _) = suite(&common::report());
    let s = root.one("testsuite");
    assert!(s
        .all("testcase")
        .iter()
        .all(|c| c.attr("name") != "guard prediction"));

    // Held: one more test case, passing.
    let (root, xml) = suite(&common::guarded_report(true));
    assert_eq!(root.attr("tests"), "3", "{xml}");
    assert_eq!(root.attr("failures"), "1");
    let s = root.one("testsuite");
    assert_eq!(s.attr("tests"), "3");
    let case = s
        .all("testcase")
        .into_iter()
        .find(|c| c.attr("name") == "guard prediction")
        .expect("guard prediction case");
    assert_eq!(case.attr("classname"), "probity.greeting-bot");
    assert!(case.all("failure").is_empty() && case.all("error").is_empty());
    assert!(case.one("system-out").text.contains("prediction held"));

    // Not held: a failure of type "prediction" with the figures.
    let (root, xml) = suite(&common::guarded_report(false));
    assert_eq!(root.attr("tests"), "3");
    assert_eq!(root.attr("failures"), "2", "{xml}");
    assert_eq!(root.attr("errors"), "0");
    let s = root.one("testsuite");
    assert_eq!(s.attr("failures"), "2");
    let case = s
        .all("testcase")
        .into_iter()
        .find(|c| c.attr("name") == "guard prediction")
        .unwrap();
    let f = case.one("failure");
    assert_eq!(f.attr("type"), "prediction");
    let msg = f.attr("message");
    assert!(msg.starts_with("retry prediction did not hold"), "{msg}");
    assert!(
        msg.contains("measured 90.0% [85.0, 94.0] vs predicted (each input at its own rate) 90.0% [75.0, 99.0]"),
        "{msg}"
    );
    assert!(
        msg.contains("attempts used measured 1.60 [1.50, 1.70] vs predicted 1.60 [1.30, 2.10]"),
        "{msg}"
    );
    assert!(f.text.contains("Guarded system (§4.2)"), "{}", f.text);

    // No per-input prediction: an error, not a measured failure.
    let mut r = common::guarded_report(false);
    r.guarded.as_mut().unwrap().predictions.truncate(1);
    let (root, _) = suite(&r);
    assert_eq!(root.attr("errors"), "1");
    assert_eq!(root.attr("failures"), "1");
    let s = root.one("testsuite");
    let case = s
        .all("testcase")
        .into_iter()
        .find(|c| c.attr("name") == "guard prediction")
        .unwrap();
    assert_eq!(case.one("error").attr("type"), "no-data");
}
