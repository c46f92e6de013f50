//! ANSI colours for the terminal formats (off unless asked for).

use probity_core::stats::Decision;

/// Width of the label column of the terminal report.
pub const LEFT: usize = 12;

/// Paints text with ANSI SGR codes when `on`.
pub struct Paint {
    pub on: bool,
}

impl Paint {
    pub fn wrap(&self, code: &str, s: &str) -> String {
        if self.on && !s.is_empty() {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    pub fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
    pub fn decision(&self, d: Decision, s: &str) -> String {
        match d {
            Decision::Pass => self.wrap("1;32", s),
            Decision::Fail => self.wrap("1;31", s),
            Decision::Inconclusive => self.wrap("1;33", s),
        }
    }
    pub fn label(&self, s: &str) -> String {
        self.wrap("1;36", &format!("{s:>LEFT$}"))
    }
}
