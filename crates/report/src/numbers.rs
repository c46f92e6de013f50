//! Numbers, plurals and the names of the core's enums, written the same
//! way by every format.

use probity_core::stats::Decision;

/// Percentage figure of a rate, without the `%` sign: one decimal, more
/// when one decimal would round a rate below 100 % up to `100.0` (or one
/// above 0 % down to `0.0`). Non-finite values print as `–`.
pub fn pct_num(p: f64) -> String {
    if !p.is_finite() {
        return "–".to_string();
    }
    let v = p * 100.0;
    let one = format!("{v:.1}");
    if (one == "100.0" && p < 1.0) || (one == "0.0" && p > 0.0) {
        let two = format!("{v:.2}");
        if two == "100.00" {
            return ">99.99".to_string();
        }
        if two == "0.00" {
            return "<0.01".to_string();
        }
        return two;
    }
    one
}

/// A finite float, or `None` (JSON writes it as `null`).
pub fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// `96.2%`.
pub fn pct(p: f64) -> String {
    if !p.is_finite() {
        return "–".to_string();
    }
    format!("{}%", pct_num(p))
}

/// `[94.1, 97.6]`, in percent.
pub fn interval(lower: f64, upper: f64) -> String {
    format!("[{}, {}]", pct_num(lower), pct_num(upper))
}

/// A threshold as written by a person: `95%`, `97.5%`, `99.95%`.
pub fn threshold_pct(t: f64) -> String {
    if !t.is_finite() {
        return "–".to_string();
    }
    format!("{}%", trim_number(t * 100.0, 4))
}

/// `x` with at most `decimals` decimals, trailing zeros removed.
pub fn trim_number(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return "–".to_string();
    }
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        let t = s.trim_end_matches('0').trim_end_matches('.');
        if t == "-0" {
            "0".to_string()
        } else {
            t.to_string()
        }
    } else {
        s
    }
}

/// Seconds as `0.8s`, `12.3s`, `4m 05s`, `1h 02m`.
pub fn duration(s: f64) -> String {
    if !s.is_finite() || s < 0.0 {
        return "–".to_string();
    }
    if s < 60.0 {
        format!("{s:.1}s")
    } else if s < 3600.0 {
        let t = s.round() as u64;
        format!("{}m {:02}s", t / 60, t % 60)
    } else {
        let t = (s / 60.0).round() as u64;
        format!("{}h {:02}m", t / 60, t % 60)
    }
}

/// `word`, or its plural `words` when `n` is not 1.
/// A count that saturates at `u64::MAX` (a figure past what u64 holds,
/// as a cast from f64 leaves it): "2^64 or more" then, else the number.
pub fn count(n: u64) -> String {
    if n == u64::MAX {
        "2^64 or more".to_string()
    } else {
        n.to_string()
    }
}

/// `n × m` as a [`count`]: never a wrapped or saturated product passed
/// off as exact.
pub fn product(n: u64, m: u64) -> String {
    match n.checked_mul(m) {
        Some(p) if n != u64::MAX => count(p),
        _ => count(u64::MAX),
    }
}

pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// The name of one of the core's enums (a decision, an interval method,
/// an error policy, …) as reports print it: the name the enum derives from
/// strum, spelled as serde spells it (and as `SCHEMA.md` documents it).
pub fn name<T: Into<&'static str>>(v: T) -> &'static str {
    v.into()
}

/// A decision in capitals, as verdicts are shown: `PASS`, `FAIL`,
/// `INCONCLUSIVE`.
pub fn decision_word(d: Decision) -> String {
    name(d).to_ascii_uppercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages() {
        assert_eq!(pct(0.9623), "96.2%");
        assert_eq!(pct(1.0), "100.0%");
        assert_eq!(pct(0.0), "0.0%");
        assert_eq!(pct(0.9996), "99.96%");
        assert_eq!(pct(0.999_999), ">99.99%");
        assert_eq!(pct(0.0004), "0.04%");
        assert_eq!(pct(f64::NAN), "–");
        assert_eq!(interval(0.941, 0.976), "[94.1, 97.6]");
    }

    #[test]
    fn thresholds() {
        assert_eq!(threshold_pct(0.95), "95%");
        assert_eq!(threshold_pct(0.975), "97.5%");
        assert_eq!(threshold_pct(0.9995), "99.95%");
        assert_eq!(threshold_pct(1.0), "100%");
        assert_eq!(threshold_pct(0.0), "0%");
    }

    #[test]
    fn durations() {
        assert_eq!(duration(0.84), "0.8s");
        assert_eq!(duration(245.0), "4m 05s");
        assert_eq!(duration(3725.0), "1h 02m");
    }
}
