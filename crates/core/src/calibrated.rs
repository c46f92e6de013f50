//! Verdicts of verifier checks whose judge was calibrated on a labelled
//! set (paper §4; `stats::calibration`; `crates/core/STATISTICS.md`,
//! *Judges with known error rates*).

use crate::stats::calibration::judged_allowance;
use crate::stats::decision::{samples_of_inputs, unseen_minority_within};
use crate::stats::unseen::allowance;
use crate::stats::{
    corrected_rate, judge, outputs_to_settle, Calibrated, ClusterMethod, ClusterSum, CorrectedRate,
    Decision, JudgeAccuracy, LabelCounts, NotEstablished, RateEstimate, RunVariance, Scope,
    ThresholdVerdict, VerdictMode, MAX_SAMPLES,
};
use crate::summary::{CheckSummary, Summary};
use crate::tensor::ReliabilityTensor;

impl Summary {
    /// Correct the checks whose judge answered a labelled set: `labels[k]`
    /// is column k's counts (`None`: not calibrated). Each such check gets
    /// its [`Calibrated`] correction, and — in a fixed-size run — its
    /// verdict from the corrected rate and interval (the raw rate stays in
    /// `rate`): the decision by the verdict mode on the corrected estimate
    /// and interval, established iff the corrected interval is clear of
    /// the minimum (and the rate is about the population of inputs), the
    /// outputs that would settle it from [`outputs_to_settle`] (none when
    /// only more labels could). A correction that cannot be made leaves the
    /// verdict not established (three-way: inconclusive; otherwise a
    /// fail: compliance was not shown). A sequential run keeps its
    /// sequences' verdicts: the corrected interval is a fixed-sample one,
    /// not valid under optional stopping, and is shown beside them.
    pub fn with_calibration(
        mut self,
        t: &ReliabilityTensor,
        labels: &[Option<LabelCounts>],
    ) -> Summary {
        let opts = self.options;
        let sequential = self.sequential.is_some();
        for (k, check) in self.checks.iter_mut().enumerate() {
            let Some(counts) = labels.get(k).copied().flatten() else {
                continue;
            };
            let clusters: Vec<ClusterSum> = t
                .input_counts_for(k)
                .iter()
                .map(|c| ClusterSum::from_counts(c, opts.errors))
                .collect();
            let variance = if check.rate.scope == Scope::Population
                && opts.cluster != ClusterMethod::Binomial
            {
                RunVariance::Clustered
            } else {
                RunVariance::Binomial
            };
            let calibrated = match JudgeAccuracy::measure(counts, opts.confidence) {
                Err(problem) => Calibrated::Unusable {
                    judge: None,
                    problem,
                },
                Ok(a) => match corrected_rate(
                    &clusters,
                    &a,
                    check.info.minimum_success_percentage,
                    variance,
                ) {
                    Ok(c) => Calibrated::Corrected(c),
                    Err(problem) => Calibrated::Unusable {
                        judge: Some(a),
                        problem,
                    },
                },
            };
            if !sequential {
                corrected_verdict(
                    check,
                    &calibrated,
                    &clusters,
                    variance,
                    opts.verdict,
                    opts.interval,
                );
            }
            check.calibration = Some(calibrated);
        }
        self
    }
}

/// The corrected interval reaches past the unseen-minority allowance by the
/// judge's own uncertainty ([`judged_allowance`]):
/// where that is the end that keeps the verdict from being established, the
/// reason is the unseen minority (more inputs settle it), not a straddle
/// that more outputs would settle.
fn unseen_reason(v: &mut ThresholdVerdict, corrected: &RateEstimate, c: &CorrectedRate) {
    if v.established || !matches!(v.why_not, Some(NotEstablished::Straddles { .. })) {
        return;
    }
    let a = allowance(c.estimate, corrected.inputs, corrected.confidence);
    let reach = judged_allowance(
        c.estimate,
        c.labels_only,
        corrected.inputs,
        corrected.confidence,
    );
    let minimum = v.threshold;
    if let Some(u) = unseen_minority_within(corrected, minimum, a, reach) {
        if let NotEstablished::UnseenMinority { inputs_needed, .. } = &u {
            v.samples_needed = inputs_needed.map(|g| samples_of_inputs(corrected, g));
        }
        v.why_not = Some(u);
    }
}

fn corrected_verdict(
    check: &mut CheckSummary,
    calibrated: &Calibrated,
    clusters: &[ClusterSum],
    variance: RunVariance,
    mode: VerdictMode,
    method: crate::stats::IntervalMethod,
) {
    let minimum = check.info.minimum_success_percentage;
    let v = &mut check.verdict;
    match calibrated {
        Calibrated::Corrected(c) => {
            let corrected = RateEstimate {
                estimate: c.estimate,
                interval: c.interval,
                ..check.rate
            };
            *v = judge(&corrected, minimum, mode, method);
            unseen_reason(v, &corrected, c);
            // An unseen minority is settled by more inputs, which the
            // verdict's own count says; otherwise by more outputs.
            let unseen = matches!(v.why_not, Some(NotEstablished::UnseenMinority { .. }));
            // The verdict about these inputs alone is the corrected one
            // with the binomial variance (no model of how inputs differ),
            // the judge's errors still carried: never the raw
            // Clopper–Pearson of θ̂ as if it were a count.
            if let Some(NotEstablished::UnseenMinority {
                these_inputs,
                failing,
                ..
            }) = &mut v.why_not
            {
                if let Ok(b) = corrected_rate(clusters, &c.judge, minimum, RunVariance::Binomial) {
                    these_inputs.lower = b.interval.lower;
                    these_inputs.upper = b.interval.upper;
                    these_inputs.established = if *failing {
                        b.interval.lower >= minimum
                    } else {
                        b.interval.upper < minimum
                    };
                }
            }
            if !v.established && !unseen {
                let needed = outputs_to_settle(clusters, &c.judge, minimum, variance, MAX_SAMPLES);
                v.samples_needed = needed;
                if let Some(NotEstablished::Straddles { samples_needed, .. }) = &mut v.why_not {
                    *samples_needed = needed;
                }
            }
        }
        Calibrated::Unusable { .. } => {
            v.decision = match mode {
                VerdictMode::ThreeWay => Decision::Inconclusive,
                VerdictMode::Point | VerdictMode::LowerBound => Decision::Fail,
            };
            v.established = false;
            v.samples_needed = None;
            v.why_not = Some(NotEstablished::Straddles {
                lower: 0.0,
                upper: 1.0,
                samples_needed: None,
            });
        }
    }
}
