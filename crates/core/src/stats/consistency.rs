//! Consistency of one input's outputs: pass^k (all k outputs pass) and
//! pass@k (at least one of k passes — the paper's success within k
//! attempts, §4.2), estimated without bias from the M outputs observed.
//!
//! For an input with c passes among n evaluated outputs and true pass rate
//! p_i, drawing k of the n outputs without replacement gives the unbiased
//! estimators (for k ≤ n)
//!
//! ```text
//! pass^k = C(c, k) / C(n, k)           E = p_i^k
//! pass@k = 1 − C(n − c, k) / C(n, k)   E = 1 − (1 − p_i)^k
//! ```
//!
//! Per-input intervals transform the interval [l, u] of p_i (the
//! `IntervalMethod` on c of n) monotonically: [l^k, u^k] and
//! [1 − (1 − l)^k, 1 − (1 − u)^k], widened if need be to contain the
//! estimate. The mean over inputs is the mean of the per-input estimates
//! v_i ∈ [0, 1] (unbiased for the population mean of p_i^k, resp.
//! 1 − (1 − p_i)^k); its interval is the score interval on the G inputs
//! with x = Σ v_i ([`beta_binomial_score`] with one value per input, i.e.
//! Wilson on G trials), which is valid because a [0, 1] value with mean μ
//! has variance at most μ(1 − μ) — conservative when the v_i are not 0/1.
//! When every v_i is 0 or 1 (one output per input: pass^1 is the rate
//! itself) it is the rate's own interval, Clopper–Pearson on the G inputs
//! ([`profile_likelihood`]'s with one output per input).

use super::betabin::{beta_binomial_score, profile_likelihood};
use super::cluster::ClusterSum;
use super::counts::Counts;
use super::error::{check_confidence, StatsError};
use super::interval::{try_proportion_interval, Interval, IntervalMethod};
use super::rate::{RateEstimate, Scope, MIN_INPUTS};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// C(c, k) / C(n, k) as a product (no overflow): Π_{t<k} (c − t)/(n − t).
fn ratio(c: u64, n: u64, k: u64) -> f64 {
    if k > c {
        return 0.0;
    }
    (0..k).map(|t| (c - t) as f64 / (n - t) as f64).product()
}

/// Unbiased pass^k from `c` passes of `n` outputs; `None` when k > n
/// (fewer outputs than k: not estimable without bias) or k = 0.
pub fn pass_all_k(c: u64, n: u64, k: u32) -> Option<f64> {
    let k = u64::from(k);
    (k >= 1 && k <= n && c <= n).then(|| ratio(c, n, k))
}

/// Unbiased pass@k from `c` passes of `n` outputs; `None` when k > n or
/// k = 0.
pub fn pass_any_k(c: u64, n: u64, k: u32) -> Option<f64> {
    let k = u64::from(k);
    (k >= 1 && k <= n && c <= n).then(|| 1.0 - ratio(n - c, n, k))
}

/// An input's (a task's) class over its evaluated outputs (episodes): what
/// agent builders triage by (issue 34; tau-bench #57 found 43–64% of
/// tasks flipping across identical trials).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskClass {
    /// Every evaluated output passed (c = n ≥ 1).
    AlwaysPasses,
    /// Some passed, some failed (0 < c < n).
    Flips,
    /// None passed (c = 0 < n).
    AlwaysFails,
    /// No evaluated output (n = 0: every episode erred or was spoiled).
    Unjudged,
}

impl TaskClass {
    /// The class of c passes among n evaluated outputs.
    pub fn of(c: u64, n: u64) -> TaskClass {
        match (c, n) {
            (_, 0) => TaskClass::Unjudged,
            (0, _) => TaskClass::AlwaysFails,
            (c, n) if c >= n => TaskClass::AlwaysPasses,
            _ => TaskClass::Flips,
        }
    }
}

/// How many inputs fall in each [`TaskClass`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClassCounts {
    pub always_passes: u64,
    pub flips: u64,
    pub always_fails: u64,
    pub unjudged: u64,
}

impl ClassCounts {
    /// Count the classes of per-input `(passes, outputs)`.
    pub fn of(per_input: impl IntoIterator<Item = (u64, u64)>) -> ClassCounts {
        let mut k = ClassCounts::default();
        for (c, n) in per_input {
            match TaskClass::of(c, n) {
                TaskClass::AlwaysPasses => k.always_passes += 1,
                TaskClass::Flips => k.flips += 1,
                TaskClass::AlwaysFails => k.always_fails += 1,
                TaskClass::Unjudged => k.unjudged += 1,
            }
        }
        k
    }
}

/// pass^k and pass@k of one input.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InputConsistency {
    /// The input's index.
    pub index: usize,
    /// Passes c and evaluated outputs n (under the error policy).
    pub passes: u64,
    pub outputs: u64,
    /// C(c,k)/C(n,k) with its interval; `None` when n < k.
    pub pass_all_k: Option<(f64, Interval)>,
    /// 1 − C(n−c,k)/C(n,k) with its interval; `None` when n < k.
    pub pass_any_k: Option<(f64, Interval)>,
}

/// Consistency of one check across inputs.
///
/// The per-input rows are not held: each is computed when asked for
/// ([`Consistency::input`], [`Consistency::per_input`]) from that input's
/// `(passes, outputs)`, which come from a function (for a run, read off
/// its tensor: no memory per input) or, for a consistency read back from
/// its JSON form, the rows as written. A million inputs × K checks would
/// otherwise hold K million rows of about 90 bytes.
#[derive(Clone)]
pub struct Consistency {
    /// The k used.
    pub k: u32,
    rows: Rows,
    /// Mean of pass^k over the inputs with at least k outputs (`inputs`
    /// says how many), with the interval described in the module docs.
    pub mean_pass_all_k: RateEstimate,
    /// Mean of pass@k over the same inputs.
    pub mean_pass_any_k: RateEstimate,
}

/// Per-input `(passes, outputs)` of input `i`.
pub type InputCounts = Arc<dyn Fn(usize) -> (u64, u64) + Send + Sync>;

/// Where the per-input rows come from.
#[derive(Clone)]
enum Rows {
    /// Computed on demand from the counts of input `i < inputs`.
    Counts {
        inputs: usize,
        counts: InputCounts,
        confidence: f64,
        method: IntervalMethod,
    },
    /// Given whole (read back, or built by hand).
    Given(Vec<InputConsistency>),
}

/// The row of input `index` with `c` passes of `n` evaluated outputs.
fn row(
    index: usize,
    (c, n): (u64, u64),
    k: u32,
    confidence: f64,
    method: IntervalMethod,
) -> Result<InputConsistency, StatsError> {
    if c > n {
        return Err(StatsError::Counts {
            successes: c as f64,
            trials: n as f64,
        });
    }
    let kf = i32::try_from(k).unwrap_or(i32::MAX);
    let (a, b) = match (pass_all_k(c, n, k), pass_any_k(c, n, k)) {
        (Some(a), Some(b)) => {
            let iv = try_proportion_interval(c as f64, n as f64, confidence, method)?;
            let ia = Interval {
                lower: iv.lower.powi(kf).min(a),
                upper: iv.upper.powi(kf).max(a),
            };
            let ib = Interval {
                lower: (1.0 - (1.0 - iv.lower).powi(kf)).min(b),
                upper: (1.0 - (1.0 - iv.upper).powi(kf)).max(b),
            };
            (Some((a, ia)), Some((b, ib)))
        }
        _ => (None, None),
    };
    Ok(InputConsistency {
        index,
        passes: c,
        outputs: n,
        pass_all_k: a,
        pass_any_k: b,
    })
}

impl Consistency {
    /// From per-input `(passes, outputs)` — e.g. `Counts::successes_of`
    /// for each input — at `confidence` with `method` for the per-input
    /// intervals. Errors: k = 0, confidence outside (0, 1), passes above
    /// outputs.
    pub fn new(
        per_input: &[(u64, u64)],
        k: u32,
        confidence: f64,
        method: IntervalMethod,
    ) -> Result<Consistency, StatsError> {
        let counts: Arc<[(u64, u64)]> = per_input.into();
        let inputs = counts.len();
        Consistency::from_fn(inputs, Arc::new(move |i| counts[i]), k, confidence, method)
    }

    /// [`Consistency::new`] with the counts of input `i < inputs` given by
    /// `counts` (called once per input here, and again for each row a
    /// report asks for): nothing per input is kept.
    pub fn from_fn(
        inputs: usize,
        counts: InputCounts,
        k: u32,
        confidence: f64,
        method: IntervalMethod,
    ) -> Result<Consistency, StatsError> {
        if k == 0 {
            return Err(StatsError::K(k));
        }
        check_confidence(confidence)?;
        let (mut all, mut any) = (Vec::new(), Vec::new());
        for i in 0..inputs {
            let r = row(i, counts(i), k, confidence, method)?;
            if let (Some(a), Some(b)) = (r.pass_all_k, r.pass_any_k) {
                all.push(a.0);
                any.push(b.0);
            }
        }
        Ok(Consistency {
            k,
            rows: Rows::Counts {
                inputs,
                counts,
                confidence,
                method,
            },
            mean_pass_all_k: mean_of(&all, confidence)?,
            mean_pass_any_k: mean_of(&any, confidence)?,
        })
    }

    /// A consistency with its per-input rows given whole (rows of inputs
    /// left out are simply not there).
    pub fn from_rows(
        k: u32,
        per_input: Vec<InputConsistency>,
        mean_pass_all_k: RateEstimate,
        mean_pass_any_k: RateEstimate,
    ) -> Consistency {
        Consistency {
            k,
            rows: Rows::Given(per_input),
            mean_pass_all_k,
            mean_pass_any_k,
        }
    }

    /// The number of per-input rows.
    pub fn inputs(&self) -> usize {
        match &self.rows {
            Rows::Counts { inputs, .. } => *inputs,
            Rows::Given(v) => v.len(),
        }
    }

    /// The `r`-th per-input row (input `r` unless the rows were given
    /// whole), `None` past the end.
    pub fn input(&self, r: usize) -> Option<InputConsistency> {
        match &self.rows {
            Rows::Counts {
                inputs,
                counts,
                confidence,
                method,
            } => (r < *inputs)
                .then(|| row(r, counts(r), self.k, *confidence, *method).ok())
                .flatten(),
            Rows::Given(v) => v.get(r).copied(),
        }
    }

    /// How many inputs always pass, flip, always fail or were not judged,
    /// read off the per-input rows.
    pub fn classes(&self) -> ClassCounts {
        ClassCounts::of(self.per_input().map(|r| (r.passes, r.outputs)))
    }

    /// pass^k and pass@k of each input, in order, computed as they are
    /// read.
    pub fn per_input(&self) -> impl ExactSizeIterator<Item = InputConsistency> + '_ {
        (0..self.inputs()).map(|r| {
            self.input(r)
                .expect("rows were checked when the consistency was built")
        })
    }
}

impl std::fmt::Debug for Consistency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consistency")
            .field("k", &self.k)
            .field("inputs", &self.inputs())
            .field("mean_pass_all_k", &self.mean_pass_all_k)
            .field("mean_pass_any_k", &self.mean_pass_any_k)
            .finish()
    }
}

impl PartialEq for Consistency {
    /// Equal when k, the means and every row are.
    fn eq(&self, other: &Self) -> bool {
        self.k == other.k
            && self.mean_pass_all_k == other.mean_pass_all_k
            && self.mean_pass_any_k == other.mean_pass_any_k
            && self.inputs() == other.inputs()
            && self.per_input().eq(other.per_input())
    }
}

/// The serialised form, as when the rows were a field: `{k, per_input:
/// [row], mean_pass_all_k, mean_pass_any_k}`; the rows are written one by
/// one as they are computed.
impl Serialize for Consistency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        struct Each<'a>(&'a Consistency);
        impl Serialize for Each<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.per_input())
            }
        }
        let mut st = s.serialize_struct("Consistency", 4)?;
        st.serialize_field("k", &self.k)?;
        st.serialize_field("per_input", &Each(self))?;
        st.serialize_field("mean_pass_all_k", &self.mean_pass_all_k)?;
        st.serialize_field("mean_pass_any_k", &self.mean_pass_any_k)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for Consistency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            k: u32,
            per_input: Vec<InputConsistency>,
            mean_pass_all_k: RateEstimate,
            mean_pass_any_k: RateEstimate,
        }
        let w = Wire::deserialize(d)?;
        Ok(Consistency::from_rows(
            w.k,
            w.per_input,
            w.mean_pass_all_k,
            w.mean_pass_any_k,
        ))
    }
}

/// The mean of per-input values in [0, 1] with the score interval on G
/// (Clopper–Pearson's when every value is 0 or 1: module docs).
fn mean_of(v: &[f64], confidence: f64) -> Result<RateEstimate, StatsError> {
    if v.is_empty() {
        return Ok(RateEstimate::empty(Counts::default(), confidence));
    }
    let clusters: Vec<ClusterSum> = v
        .iter()
        .map(|&x| ClusterSum::from_scores(&[x]))
        .collect::<Result<_, _>>()?;
    let s = if v.iter().all(|&x| x == 0.0 || x == 1.0) {
        profile_likelihood(&clusters, confidence)?
    } else {
        beta_binomial_score(&clusters, confidence)?
    };
    let g = v.len() as u64;
    Ok(RateEstimate {
        estimate: s.estimate,
        counts: Counts::default(),
        n: g,
        inputs: g,
        scope: if g >= MIN_INPUTS {
            Scope::Population
        } else {
            Scope::TheseInputs
        },
        design_effect: 1.0,
        effective_n: g as f64,
        confidence,
        interval: s.interval,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unbiased_estimators() {
        // 7 of 10 pass, k = 3: C(7,3)/C(10,3) = 35/120; 1 − C(3,3)/C(10,3) = 119/120.
        assert!((pass_all_k(7, 10, 3).unwrap() - 35.0 / 120.0).abs() < 1e-15);
        assert!((pass_any_k(7, 10, 3).unwrap() - 119.0 / 120.0).abs() < 1e-15);
        assert_eq!(pass_all_k(2, 10, 3), Some(0.0));
        assert_eq!(pass_any_k(10, 10, 3), Some(1.0));
        assert_eq!(pass_all_k(1, 2, 3), None);
        // k = 1 is the plain rate.
        assert_eq!(pass_all_k(3, 4, 1), Some(0.75));
        assert_eq!(pass_any_k(3, 4, 1), Some(0.75));
    }

    #[test]
    fn consistency_means_and_errors() {
        let c = Consistency::new(&[(10, 10); 6], 3, 0.95, IntervalMethod::Wilson).unwrap();
        assert_eq!(c.mean_pass_all_k.estimate, 1.0);
        assert_eq!(c.mean_pass_all_k.inputs, 6);
        assert!(c.mean_pass_all_k.interval.lower < 1.0);
        assert!(Consistency::new(&[(11, 10)], 3, 0.95, IntervalMethod::Wilson).is_err());
        assert!(Consistency::new(&[(1, 10)], 0, 0.95, IntervalMethod::Wilson).is_err());
    }

    /// With one output per input pass^1 is the rate, and its interval is
    /// the rate's: Clopper–Pearson on the inputs (19 of 20: scipy
    /// `beta.ppf(0.025, 19, 2)`, `beta.isf(0.025, 20, 1)`), not Wilson's.
    #[test]
    fn pass_one_of_one_output_per_input_has_the_rates_interval() {
        let counts: Vec<(u64, u64)> = (0..20).map(|i| (u64::from(i != 7), 1)).collect();
        let c = Consistency::new(&counts, 1, 0.95, IntervalMethod::Wilson).unwrap();
        let iv = c.mean_pass_all_k.interval;
        assert!((iv.lower - 0.7512672372279722).abs() < 1e-9, "{iv:?}");
        assert!((iv.upper - 0.9987349105020502).abs() < 1e-9, "{iv:?}");
        assert_eq!(c.mean_pass_any_k.interval, iv);
    }

    #[test]
    fn task_classes() {
        assert_eq!(TaskClass::of(5, 5), TaskClass::AlwaysPasses);
        assert_eq!(TaskClass::of(1, 5), TaskClass::Flips);
        assert_eq!(TaskClass::of(0, 5), TaskClass::AlwaysFails);
        assert_eq!(TaskClass::of(0, 0), TaskClass::Unjudged);
        let c = Consistency::new(
            &[(5, 5), (2, 5), (0, 5), (0, 0), (4, 4)],
            2,
            0.95,
            IntervalMethod::Wilson,
        )
        .unwrap();
        let k = c.classes();
        assert_eq!(
            (k.always_passes, k.flips, k.always_fails, k.unjudged),
            (2, 1, 1, 1)
        );
    }

    /// Rows computed on demand are the rows as they were held: written in
    /// the same JSON form, read back equal.
    #[test]
    fn rows_on_demand_serialise_as_held_rows() {
        let counts = [(7, 10), (1, 2), (10, 10)];
        let c = Consistency::new(&counts, 3, 0.95, IntervalMethod::Wilson).unwrap();
        assert_eq!(c.inputs(), 3);
        let r0 = c.input(0).unwrap();
        assert_eq!((r0.index, r0.passes, r0.outputs), (0, 7, 10));
        assert!((r0.pass_all_k.unwrap().0 - 35.0 / 120.0).abs() < 1e-15);
        // The interval of p (Wilson, 7 of 10) raised to the k-th power.
        let iv = try_proportion_interval(7.0, 10.0, 0.95, IntervalMethod::Wilson).unwrap();
        assert_eq!(r0.pass_all_k.unwrap().1.lower, iv.lower.powi(3));
        assert_eq!(c.input(1).unwrap().pass_all_k, None);
        assert_eq!(c.input(3), None);
        // Means over the inputs with ≥ k outputs: 35/120 and 1.
        assert!((c.mean_pass_all_k.estimate - (35.0 / 120.0 + 1.0) / 2.0).abs() < 1e-12);
        let v = serde_json::to_value(&c).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["k", "mean_pass_all_k", "mean_pass_any_k", "per_input"]
        );
        assert_eq!(v["per_input"].as_array().unwrap().len(), 3);
        assert_eq!(v["per_input"][2]["passes"], 10);
        assert!(v["per_input"][1]["pass_all_k"].is_null());
        let back: Consistency = serde_json::from_value(v).unwrap();
        assert_eq!(back, c);
        let held = Consistency::from_rows(
            3,
            c.per_input().collect(),
            c.mean_pass_all_k,
            c.mean_pass_any_k,
        );
        assert_eq!(held, c);
        // A row too many passes is an error when built, not when read.
        assert!(Consistency::new(&[(3, 10), (11, 10)], 3, 0.95, IntervalMethod::Wilson).is_err());
    }
}
