//! The query of a `probity view` page, checked before the page is made: a
//! parameter the page does not take, or a value it cannot mean (a check
//! or input the run does not have, a verdict that is none of the form's,
//! a date that is no date), is a bad request (HTTP 400) naming the
//! parameter, the value and what is allowed — never a page that silently
//! shows everything or nothing. An empty value is the form's "any".

use chrono::NaiveDate;
use probity_engine::view::Params;

/// Why a query is refused: the message of the 400 page.
#[derive(Debug)]
pub struct BadQuery(pub String);

/// `?token=` may reach any page: it is how a viewer beyond loopback is
/// first opened (the token check has already passed when a page is made).
const ALWAYS: &str = "token";

/// The value of `key`, `""` when absent.
pub fn param<'a>(q: &'a Params, key: &str) -> &'a str {
    q.get(key).map(String::as_str).unwrap_or("")
}

/// Refuse any parameter but `known` (and `token`).
pub fn only(q: &Params, known: &[&str]) -> Result<(), BadQuery> {
    let mut unknown: Vec<&str> = q
        .keys()
        .map(String::as_str)
        .filter(|k| *k != ALWAYS && !known.contains(k))
        .collect();
    unknown.sort_unstable();
    match unknown.first() {
        None => Ok(()),
        Some(k) => Err(BadQuery(format!(
            "unknown parameter {k:?}: this page takes {}",
            if known.is_empty() {
                "no parameter".to_string()
            } else {
                known.join(", ")
            }
        ))),
    }
}

/// `key`'s value when it is one of `allowed` (or empty: any).
pub fn choice<'a>(q: &'a Params, key: &str, allowed: &[&str]) -> Result<&'a str, BadQuery> {
    match param(q, key) {
        v if v.is_empty() || allowed.contains(&v) => Ok(v),
        v => Err(BadQuery(format!(
            "{key}={v:?} is not allowed: {key} is one of {} (or empty for any)",
            allowed.join(", ")
        ))),
    }
}

/// `key`'s value as a position below `count` (`None` when empty);
/// `what` names the things counted in the message, one and many
/// (`("check", "checks")`), `of` whose they are ("run 1").
pub fn position(
    q: &Params,
    key: &str,
    count: usize,
    what: (&str, &str),
    of: &str,
) -> Result<Option<usize>, BadQuery> {
    let v = param(q, key);
    if v.is_empty() {
        return Ok(None);
    }
    let range = match count {
        0 => format!("{of} has no {}", what.1),
        1 => format!("allowed: 0 ({of} has 1 {})", what.0),
        n => format!("allowed: 0 to {} ({of} has {n} {})", n - 1, what.1),
    };
    match v.parse::<usize>() {
        Ok(i) if i < count => Ok(Some(i)),
        Ok(_) => Err(BadQuery(format!(
            "{key}={v:?} is out of range; {range}, or empty for all"
        ))),
        Err(_) => Err(BadQuery(format!(
            "{key}={v:?} is not a position; {range}, or empty for all"
        ))),
    }
}

/// `key`'s value as one of run `r`'s inputs (`None` when empty): by its
/// id, the label every page shows (`q01`, or `#3` for an input without
/// one); a bare number no input has as its id is taken as a position, as
/// links made before ids were used say.
pub fn input(
    q: &Params,
    key: &str,
    r: &probity_report::RunReport,
    of: &str,
) -> Result<Option<usize>, BadQuery> {
    let v = param(q, key);
    if v.is_empty() {
        return Ok(None);
    }
    let n = r.summary.shape.0;
    if let Some(i) = (0..n).find(|&i| r.input_label(i) == v) {
        return Ok(Some(i));
    }
    match v.parse::<usize>() {
        Ok(i) if i < n => Ok(Some(i)),
        _ => {
            let some: Vec<String> = (0..n.min(3)).map(|i| r.input_label(i)).collect();
            let example = if some.is_empty() {
                format!("{of} has no inputs")
            } else {
                format!(
                    "{of}'s inputs are {}{}",
                    some.join(", "),
                    if n > 3 { ", …" } else { "" }
                )
            };
            Err(BadQuery(format!(
                "{key}={v:?} is no input of {of}: {key} is an input's id ({example}), or empty for all"
            )))
        }
    }
}

/// `key`'s value as a date `YYYY-MM-DD` (empty: any).
pub fn date<'a>(q: &'a Params, key: &str) -> Result<&'a str, BadQuery> {
    match param(q, key) {
        v if v.is_empty() || NaiveDate::parse_from_str(v, "%Y-%m-%d").is_ok() => Ok(v),
        v => Err(BadQuery(format!(
            "{key}={v:?} is not a date: {key} is a UTC date YYYY-MM-DD, such as 2026-11-20 (or empty for any)"
        ))),
    }
}

/// `key`'s value as a run id (required).
pub fn run_id(q: &Params, key: &str) -> Result<i64, BadQuery> {
    let v = param(q, key);
    v.parse::<i64>().ok().filter(|id| *id >= 1).ok_or_else(|| {
        BadQuery(format!(
            "{key}={v:?} is not a run id: {key} is a run's number, 1 or more"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Params {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const CHECKS: (&str, &str) = ("check", "checks");

    #[test]
    fn positions_below_the_count_and_nothing_else() {
        let p = q(&[("check", "1")]);
        assert_eq!(position(&p, "check", 2, CHECKS, "run 1").unwrap(), Some(1));
        assert_eq!(
            position(&q(&[]), "check", 2, CHECKS, "run 1").unwrap(),
            None
        );
        for bad in ["2", "99", "-1", "x", "1.0", "18446744073709551616"] {
            let e = position(&q(&[("check", bad)]), "check", 2, CHECKS, "run 1").unwrap_err();
            assert!(
                e.0.contains(&format!("check={bad:?}")) && e.0.contains("0 to 1"),
                "{bad}: {}",
                e.0
            );
        }
        let e = position(
            &q(&[("input", "0")]),
            "input",
            0,
            ("input", "inputs"),
            "run 1",
        );
        assert!(e.unwrap_err().0.contains("run 1 has no inputs"));
        let e = position(&q(&[("check", "1")]), "check", 1, CHECKS, "run 1").unwrap_err();
        assert!(e.0.contains("allowed: 0 (run 1 has 1 check)"), "{}", e.0);
    }

    #[test]
    fn choices_dates_ids_and_unknown_parameters() {
        let p = q(&[("verdict", "bogus"), ("since", "notadate"), ("a", "-1")]);
        let e = choice(&p, "verdict", &["pass", "fail"]).unwrap_err();
        assert!(e.0.contains("verdict=\"bogus\"") && e.0.contains("pass, fail"));
        assert_eq!(
            choice(&q(&[("verdict", "fail")]), "verdict", &["pass", "fail"]).unwrap(),
            "fail"
        );
        let e = date(&p, "since").unwrap_err();
        assert!(e.0.contains("since=\"notadate\"") && e.0.contains("YYYY-MM-DD"));
        assert!(date(&q(&[("since", "2026-02-30")]), "since").is_err());
        assert_eq!(
            date(&q(&[("since", "2026-02-28")]), "since").unwrap(),
            "2026-02-28"
        );
        assert!(run_id(&p, "a").unwrap_err().0.contains("a=\"-1\""));
        assert!(run_id(&q(&[]), "a").is_err());
        let e = only(&q(&[("chek", "1"), ("token", "t")]), &["check", "input"]).unwrap_err();
        assert!(
            e.0.contains("\"chek\"") && e.0.contains("check, input"),
            "{}",
            e.0
        );
        assert!(only(&q(&[("check", "1"), ("token", "t")]), &["check"]).is_ok());
    }
}
