//! Why cells are errors, grouped: the causes of failed calls (the system's)
//! and of checks that could not judge an output (each check's), each with
//! a count and the first sample it was seen on. Errors are "not measured",
//! never failures in disguise: these are what a report shows instead.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Distinct causes kept per group; further ones are counted as "other".
pub const MAX_CAUSES: usize = 20;

/// Longest cause text kept, in characters.
pub const MAX_CAUSE_CHARS: usize = 300;

/// One cause: its message, how many samples it struck, the first one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    pub message: String,
    pub count: u64,
    /// `(i, j)`: input and repetition of the first sample with it.
    pub first: (usize, usize),
}

/// Causes of one group, most common first once [`CauseGroup::sorted`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CauseGroup {
    pub causes: Vec<Cause>,
    /// Errors whose cause did not fit in [`MAX_CAUSES`].
    pub other: u64,
    /// Every error of the group.
    pub total: u64,
}

impl CauseGroup {
    fn add(&mut self, message: &str, at: (usize, usize), index: &mut HashMap<String, usize>) {
        self.total += 1;
        let message = shorten(message);
        match index.get(&message) {
            Some(&c) => self.causes[c].count += 1,
            None if self.causes.len() < MAX_CAUSES => {
                index.insert(message.clone(), self.causes.len());
                self.causes.push(Cause {
                    message,
                    count: 1,
                    first: at,
                });
            }
            None => self.other += 1,
        }
    }

    /// Most common first; ties by first appearance.
    pub fn sorted(mut self) -> Self {
        self.causes
            .sort_by(|a, b| b.count.cmp(&a.count).then(a.first.cmp(&b.first)));
        self
    }

    /// The most common cause.
    pub fn top(&self) -> Option<&Cause> {
        self.causes
            .iter()
            .max_by(|a, b| a.count.cmp(&b.count).then_with(|| b.first.cmp(&a.first)))
    }
}

fn shorten(message: &str) -> String {
    let m = message.trim();
    match m.char_indices().nth(MAX_CAUSE_CHARS) {
        Some((at, _)) => format!("{}…", &m[..at]),
        None => m.to_string(),
    }
}

/// The causes of a run's errors, gathered sample by sample. Read back
/// from JSON (a stored run's), it can be added to as before.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(from = "StoredCauses")]
pub struct Causes {
    /// Calls to the system that failed after their tries.
    pub system: CauseGroup,
    /// Per check `k`: outputs it could not judge (a predicate error, a
    /// judge that failed or answered unreadably).
    pub checks: Vec<CauseGroup>,
    /// Samples with an output: what a check could have judged.
    pub outputs: u64,
    #[serde(skip)]
    index: Vec<HashMap<String, usize>>,
}

impl Causes {
    /// Empty, for `k` checks.
    pub fn new(k: usize) -> Self {
        Causes {
            system: CauseGroup::default(),
            checks: vec![CauseGroup::default(); k],
            outputs: 0,
            index: vec![HashMap::new(); k + 1],
        }
    }

    /// A sample at `at` whose call failed with `error`.
    pub fn add_call_error(&mut self, at: (usize, usize), error: &str) {
        let (system, index) = (&mut self.system, &mut self.index[0]);
        system.add(error, at, index);
    }

    /// A sample at `at` with an output, and the reasons of its Error cells
    /// (`(k, reason)`; one per erring check is counted).
    pub fn add_output<'a>(
        &mut self,
        at: (usize, usize),
        errors: impl IntoIterator<Item = (usize, &'a str)>,
    ) {
        self.outputs += 1;
        let mut seen = Vec::new();
        for (k, reason) in errors {
            if k >= self.checks.len() || seen.contains(&k) {
                continue;
            }
            seen.push(k);
            self.checks[k].add(reason, at, &mut self.index[k + 1]);
        }
    }

    /// Checks that erred on every output they saw (at least one): broken
    /// checks, with their most common message.
    pub fn broken(&self) -> Vec<(usize, &Cause)> {
        if self.outputs == 0 {
            return Vec::new();
        }
        self.checks
            .iter()
            .enumerate()
            .filter(|(_, g)| g.total == self.outputs)
            .filter_map(|(k, g)| g.top().map(|c| (k, c)))
            .collect()
    }

    /// Every group sorted, most common cause first.
    pub fn sorted(self) -> Self {
        StoredCauses {
            system: self.system.sorted(),
            checks: self.checks.into_iter().map(CauseGroup::sorted).collect(),
            outputs: self.outputs,
        }
        .into()
    }
}

/// [`Causes`] without its index, as serialized.
#[derive(Deserialize)]
struct StoredCauses {
    system: CauseGroup,
    checks: Vec<CauseGroup>,
    outputs: u64,
}

impl From<StoredCauses> for Causes {
    /// The groups, with the index of each group's messages rebuilt.
    fn from(s: StoredCauses) -> Self {
        let index = std::iter::once(&s.system)
            .chain(&s.checks)
            .map(|g| {
                g.causes
                    .iter()
                    .enumerate()
                    .map(|(at, c)| (c.message.clone(), at))
                    .collect()
            })
            .collect();
        Causes {
            system: s.system,
            checks: s.checks,
            outputs: s.outputs,
            index,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_grouped_counted_and_broken_checks_found() {
        let mut c = Causes::new(2);
        c.add_call_error((0, 0), "connection refused");
        c.add_call_error((1, 0), "connection refused");
        c.add_call_error((1, 1), "HTTP 401");
        c.add_output((2, 0), [(1, "Function not found: lenght")]);
        c.add_output((2, 1), [(1, "Function not found: lenght"), (1, "again")]);
        let c = c.sorted();
        assert_eq!(c.system.total, 3);
        assert_eq!(c.system.causes[0].message, "connection refused");
        assert_eq!(c.system.causes[0].count, 2);
        assert_eq!(c.system.causes[0].first, (0, 0));
        assert_eq!(c.checks[0].total, 0);
        assert_eq!(c.checks[1].total, 2);
        let broken = c.broken();
        assert_eq!(broken.len(), 1);
        assert_eq!(broken[0].0, 1);
        assert_eq!(broken[0].1.message, "Function not found: lenght");
    }

    #[test]
    fn causes_read_back_from_json_count_on() {
        let mut c = Causes::new(1);
        c.add_call_error((0, 0), "HTTP 401");
        c.add_output((1, 0), [(0, "bad")]);
        let json = serde_json::to_string(&c.clone().sorted()).unwrap();
        let mut back: Causes = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c.clone().sorted());
        back.add_call_error((2, 0), "HTTP 401");
        back.add_output((3, 0), [(0, "bad")]);
        assert_eq!(back.system.causes.len(), 1);
        assert_eq!(back.system.causes[0].count, 2);
        assert_eq!(back.checks[0].causes[0].count, 2);
    }

    #[test]
    fn many_distinct_causes_are_bounded() {
        let mut c = Causes::new(0);
        for i in 0..(MAX_CAUSES + 5) {
            c.add_call_error((i, 0), &format!("cause {i}"));
        }
        assert_eq!(c.system.causes.len(), MAX_CAUSES);
        assert_eq!(c.system.other, 5);
        assert_eq!(c.system.total, (MAX_CAUSES + 5) as u64);
        let long = "x".repeat(MAX_CAUSE_CHARS * 2);
        c.add_call_error((0, 1), &long);
        assert!(c
            .system
            .causes
            .iter()
            .all(|k| k.message.chars().count() <= MAX_CAUSE_CHARS + 1));
    }
}
