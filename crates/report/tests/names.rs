//! The core's enums have one source of names: strum's `IntoStaticStr` /
//! `Display`, spelled like their serde names. Reports print these names
//! (and the JSON schemas document them), so they must not drift: each is
//! checked against serde and against the text reports have always printed.

use probity_core::compare::{Basis, Direction};
use probity_core::stats::{Decision, ErrorPolicy, IntervalMethod, VerdictMode};
use probity_core::{Aggregate, CheckKind, Strategy};
use serde::Serialize;

fn check<T>(cases: &[(T, &str)])
where
    T: Copy + Serialize + Into<&'static str> + std::fmt::Display,
{
    for &(v, printed) in cases {
        let serde = serde_json::to_value(v).unwrap();
        let name: &'static str = v.into();
        assert_eq!(serde.as_str(), Some(printed), "serde name of {printed}");
        assert_eq!(name, printed);
        assert_eq!(v.to_string(), printed);
    }
}

#[test]
fn enum_names_match_serde_and_what_reports_print() {
    check(&[
        (Decision::Pass, "pass"),
        (Decision::Fail, "fail"),
        (Decision::Inconclusive, "inconclusive"),
    ]);
    check(&[
        (IntervalMethod::Wald, "wald"),
        (IntervalMethod::Wilson, "wilson"),
        (IntervalMethod::ClopperPearson, "clopper-pearson"),
        (IntervalMethod::Jeffreys, "jeffreys"),
        (IntervalMethod::AgrestiCoull, "agresti-coull"),
    ]);
    check(&[
        (ErrorPolicy::AsFailure, "as-failure"),
        (ErrorPolicy::Exclude, "exclude"),
    ]);
    check(&[
        (VerdictMode::Point, "point"),
        (VerdictMode::LowerBound, "lower-bound"),
        (VerdictMode::ThreeWay, "three-way"),
    ]);
    check(&[
        (Strategy::Rows, "rows"),
        (Strategy::Columns, "columns"),
        (Strategy::All, "all"),
    ]);
    check(&[
        (Aggregate::Mean, "mean"),
        (Aggregate::Weighted, "weighted"),
        (Aggregate::Min, "min"),
    ]);
    check(&[
        (CheckKind::Validator, "validator"),
        (CheckKind::Verifier, "verifier"),
    ]);
    check(&[
        (Direction::Improved, "improved"),
        (Direction::Regressed, "regressed"),
        (Direction::NoDetectableChange, "no_detectable_change"),
        (Direction::NoData, "no_data"),
    ]);
    for d in [
        Direction::Improved,
        Direction::Regressed,
        Direction::NoDetectableChange,
        Direction::NoData,
    ] {
        assert_eq!(<&str>::from(d), d.name());
    }
    check(&[(Basis::Paired, "paired"), (Basis::Unpaired, "unpaired")]);
}
