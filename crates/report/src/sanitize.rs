//! Escaping of untrusted text (model outputs, input ids, check names,
//! messages) for each medium a report is written to.
//!
//! Model output is untrusted: it may contain ANSI escape sequences that
//! recolour, move the cursor or retitle a terminal, other control
//! characters, Unicode bidirectional overrides that reorder what is shown,
//! characters that are not allowed in XML 1.0, or Markdown that breaks a
//! table, or HTML that runs script in the HTML report. Every function
//! here first removes ANSI/VT escape sequences
//! ([`strip_ansi`]) and then escapes or drops what is left for its medium.

use std::borrow::Cow;

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';
/// The C1 "control sequence introducer", the one-character form of `ESC [`.
const C1_CSI: char = '\u{9b}';
/// The C1 "operating system command", the one-character form of `ESC ]`.
const C1_OSC: char = '\u{9d}';
/// The C1 "string terminator", the one-character form of `ESC \`.
const C1_ST: char = '\u{9c}';

/// Removes ANSI/VT escape sequences: CSI (`ESC [ … final`, e.g. colours
/// `\x1b[31m` and cursor motion), OSC (`ESC ] … BEL|ST`, e.g. window titles
/// and hyperlinks), DCS/SOS/PM/APC strings, two-character `ESC x`
/// sequences, and their C1 single-character forms. An unterminated string
/// sequence is dropped to the end of the text. Other control characters
/// are left for the caller to escape.
pub fn strip_ansi(s: &str) -> Cow<'_, str> {
    if !s.contains([ESC, C1_CSI, C1_OSC, '\u{90}', '\u{98}', '\u{9e}', '\u{9f}']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        let kind = match c {
            ESC => match it.peek() {
                Some('[') => {
                    it.next();
                    Seq::Csi
                }
                Some(']') => {
                    it.next();
                    Seq::Str
                }
                Some('P' | 'X' | '^' | '_') => {
                    it.next();
                    Seq::Str
                }
                Some(_) => {
                    // Two-character sequence (ESC c, ESC 7, ESC ( B …):
                    // intermediates 0x20–0x2F, then one final character.
                    while matches!(it.peek(), Some(' '..='/')) {
                        it.next();
                    }
                    it.next();
                    continue;
                }
                None => continue,
            },
            C1_CSI => Seq::Csi,
            C1_OSC | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => Seq::Str,
            _ => {
                out.push(c);
                continue;
            }
        };
        match kind {
            Seq::Csi => {
                // Parameter and intermediate bytes 0x20–0x3F, then a final
                // byte 0x40–0x7E. Anything else ends the sequence unconsumed.
                while let Some(&n) = it.peek() {
                    if (' '..='?').contains(&n) {
                        it.next();
                    } else {
                        if ('@'..='~').contains(&n) {
                            it.next();
                        }
                        break;
                    }
                }
            }
            Seq::Str => {
                // Until BEL, ST (ESC \ or C1 ST), or the end of the text.
                while let Some(n) = it.next() {
                    if n == BEL || n == C1_ST {
                        break;
                    }
                    if n == ESC {
                        if it.peek() == Some(&'\\') {
                            it.next();
                        }
                        break;
                    }
                }
            }
        }
    }
    Cow::Owned(out)
}

enum Seq {
    Csi,
    Str,
}

/// Unicode bidirectional formatting characters ("Trojan Source"): they can
/// make shown text differ from the real one, so they are escaped.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// Characters that must not reach a terminal raw.
fn is_unsafe_for_terminal(c: char) -> bool {
    c.is_control() || is_bidi_control(c) || c == '\u{feff}'
}

/// Escape one character the way Rust's debug format does (`\n`, `\t`,
/// `\r`, `\u{7}`).
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

/// Text made safe for a terminal and kept on one line: escape sequences
/// removed, newlines, tabs and other control or bidi characters shown as
/// `\n`, `\t`, `\u{7}`; truncated to at most `max_chars` characters of the
/// result (with `…` at the end when cut). `max_chars == 0` means no limit.
pub fn terminal_line(s: &str, max_chars: usize) -> String {
    let clean = strip_ansi(s);
    let mut out = String::with_capacity(clean.len() + 8);
    for c in clean.chars() {
        if is_unsafe_for_terminal(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    truncate_chars(&out, max_chars).into_owned()
}

/// Truncate `s` to at most `max_chars` characters, ending with `…` when
/// cut. `max_chars == 0` means no limit.
pub fn truncate_chars(s: &str, max_chars: usize) -> Cow<'_, str> {
    if max_chars == 0 {
        return Cow::Borrowed(s);
    }
    match s.char_indices().nth(max_chars) {
        None => Cow::Borrowed(s),
        Some(_) => {
            let keep = max_chars.saturating_sub(1);
            let end = s.char_indices().nth(keep).map_or(s.len(), |(i, _)| i);
            Cow::Owned(format!("{}…", &s[..end]))
        }
    }
}

/// Whether `c` may appear in an XML 1.0 document:
/// `#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]`.
pub fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
}

/// Text content for XML: escape sequences removed, characters not allowed
/// in XML 1.0 dropped, `&`, `<`, `>` escaped.
pub fn xml_text(s: &str) -> String {
    xml_escape(s, false)
}

/// An attribute value for XML (to be written between double quotes):
/// as [`xml_text`], and `"`, `'` escaped, tab, newline and carriage return
/// written as character references so attribute normalisation keeps them.
pub fn xml_attr(s: &str) -> String {
    xml_escape(s, true)
}

/// Text fit for XML before a writer escapes it (JUnit through
/// `quick-junit`): escape sequences removed, characters XML 1.0 does not
/// allow dropped, and C1 controls, DEL and bidirectional overrides
/// dropped as [`xml_text`] drops them; nothing escaped.
pub fn xml_clean(s: &str) -> String {
    strip_ansi(s)
        .chars()
        .filter(|&c| {
            let allowed_control = matches!(c, '\n' | '\t' | '\r');
            is_xml_char(c) && (allowed_control || !c.is_control()) && !is_bidi_control(c)
        })
        .collect()
}

fn xml_escape(s: &str, attr: bool) -> String {
    let clean = strip_ansi(s);
    let mut out = String::with_capacity(clean.len() + 16);
    for c in clean.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attr => out.push_str("&quot;"),
            '\'' if attr => out.push_str("&apos;"),
            '\n' if attr => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if attr => out.push_str("&#9;"),
            c if !is_xml_char(c) => {}
            // C1 controls and DEL are legal XML but useless and confusing
            // in a CI log: drop them too, like bidi overrides.
            c if c.is_control() && !matches!(c, '\n' | '\t') => {}
            c if is_bidi_control(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// Text for a Markdown table cell (GitHub-flavoured): one line, escape
/// sequences removed, other control characters dropped, newlines shown as
/// `<br>`, and the characters that would end the cell or start markup
/// escaped: `|`, `\`, `` ` ``, `*`, `_`, `[`, `]`, `<`, `>`, `&`.
pub fn md_cell(s: &str) -> String {
    let clean = strip_ansi(s);
    let mut out = String::with_capacity(clean.len() + 8);
    let mut chars = clean.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '|' => out.push_str("\\|"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '~' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push_str("<br>");
            }
            '\n' => out.push_str("<br>"),
            '\t' => out.push(' '),
            c if is_unsafe_for_terminal(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// Inline text for Markdown outside tables (headings, list items): as
/// [`md_cell`] but newlines become spaces.
pub fn md_inline(s: &str) -> String {
    md_cell(&s.replace("\r\n", " ").replace(['\n', '\r'], " "))
}

/// A fenced code block holding `s` verbatim, as CommonMark allows: the
/// fence is one backtick longer than the longest run of backticks in `s`,
/// so nothing inside can close it. Escape sequences are removed and other
/// control characters (but newline and tab) shown as `\u{…}`. `info` is
/// the info string (e.g. `text`).
pub fn md_code_block(s: &str, info: &str) -> String {
    let clean = strip_ansi(s);
    let mut body = String::with_capacity(clean.len() + 8);
    let mut chars = clean.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => body.push(c),
            '\r' if chars.peek() == Some(&'\n') => {}
            c if is_unsafe_for_terminal(c) => push_escaped(&mut body, c),
            c => body.push(c),
        }
    }
    let mut longest = 0usize;
    let mut run = 0usize;
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((longest + 1).max(3));
    let info: String = info
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let nl = if body.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{info}\n{body}{nl}{fence}\n")
}

/// Text for HTML, safe both as element content and inside a quoted
/// attribute value (`"…"` or `'…'`), including inline SVG: escape
/// sequences removed, `&`, `<`, `>`, `"` and `'` written as character
/// references, control characters other than newline and tab dropped
/// (carriage return too), bidirectional overrides shown as `\u{202e}` so
/// they cannot reorder what is shown, and noncharacters dropped.
///
/// Hand-written rather than taken from a crate (`html-escape`,
/// `v_htmlescape`): it is a dozen lines, and it must also apply the
/// ANSI/control/bidi clean-up every other format applies, which those
/// crates do not. Never use it for text inside `<script>` or `<style>`:
/// the HTML report puts no run data there at all.
pub fn html_escape(s: &str) -> String {
    let clean = strip_ansi(s);
    let mut out = String::with_capacity(clean.len() + 16);
    for c in clean.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if is_bidi_control(c) => push_escaped(&mut out, c),
            c if c.is_control() || c == '\u{feff}' || !is_xml_char(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// [`html_escape`] of `s` cut to at most `max_chars` characters (`…` at
/// the end when cut; 0: no limit), for labels in tables and charts.
pub fn html_short(s: &str, max_chars: usize) -> String {
    html_escape(&truncate_chars(&strip_ansi(s), max_chars))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_csi_osc_and_two_char_sequences() {
        assert_eq!(strip_ansi("\x1b[31mred\x1b[0m"), "red");
        assert_eq!(strip_ansi("a\x1b[2J\x1b[1;1Hb"), "ab");
        assert_eq!(strip_ansi("\x1b]0;pwned\x07title"), "title");
        assert_eq!(
            strip_ansi("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"),
            "link"
        );
        assert_eq!(strip_ansi("x\x1bcy"), "xy");
        assert_eq!(strip_ansi("x\x1b(By"), "xy");
        assert_eq!(strip_ansi("\u{9b}31mred"), "red");
        assert_eq!(strip_ansi("end\x1b"), "end");
        assert_eq!(strip_ansi("plain"), "plain");
    }

    #[test]
    fn terminal_line_escapes_controls_and_truncates() {
        assert_eq!(terminal_line("a\nb\tc\u{7}", 0), "a\\nb\\tc\\u{7}");
        assert_eq!(terminal_line("\x1b[31mred\x1b[0m", 0), "red");
        assert_eq!(terminal_line("abc\u{202e}def", 0), "abc\\u{202e}def");
        assert_eq!(terminal_line("abcdef", 4), "abc…");
        assert_eq!(terminal_line("abcd", 4), "abcd");
        assert_eq!(terminal_line("ab\ncd", 3), "ab…");
        assert_eq!(terminal_line("", 4), "");
    }

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate_chars("ééééé", 3), "éé…");
        assert_eq!(truncate_chars("ééé", 3), "ééé");
        assert_eq!(truncate_chars("abc", 0), "abc");
    }

    #[test]
    fn xml_escaping() {
        assert_eq!(xml_text("<a & b>"), "&lt;a &amp; b&gt;");
        assert_eq!(xml_attr("\"x\" 'y'\n"), "&quot;x&quot; &apos;y&apos;&#10;");
        assert_eq!(xml_text("a\u{0}b\u{1}c\u{fffe}d\x1b[1me"), "abcde");
        assert_eq!(xml_text("ok\ttab\nline"), "ok\ttab\nline");
    }

    #[test]
    fn html_escaping() {
        assert_eq!(
            html_escape("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(
            html_escape("\"><img src=x onerror=alert(1)>"),
            "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
        );
        assert_eq!(html_escape("it's & co"), "it&#39;s &amp; co");
        assert_eq!(html_escape("a\u{0}b\rc\x1b[31md\ne\tf"), "abcd\ne\tf");
        assert_eq!(html_escape("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(html_short("<abcdef>", 4), "&lt;ab…");
    }

    #[test]
    fn markdown_cell_escaping() {
        assert_eq!(md_cell("a|b"), "a\\|b");
        assert_eq!(md_cell("x\ny"), "x<br>y");
        assert_eq!(md_cell("<b>"), "&lt;b&gt;");
        assert_eq!(md_cell("`c`"), "\\`c\\`");
    }

    #[test]
    fn code_block_fence_outlasts_backticks() {
        let b = md_code_block("```\nnot closed", "text");
        assert!(b.starts_with("````text\n"));
        assert!(b.ends_with("\n````\n"));
        assert_eq!(md_code_block("x", ""), "```\nx\n```\n");
    }
}
