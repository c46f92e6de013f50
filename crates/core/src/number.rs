//! A number as a person (or a configuration file) writes it: plain
//! decimals in the everyday range, exponent form outside it — so a value
//! such as `1e-300` reads `1e-300` in a message, not as three hundred
//! digits (Rust's `{}` of an `f64` writes every one of them).

/// The smallest magnitude written in plain decimals.
const PLAIN_FROM: f64 = 1e-4;
/// The magnitude from which a number is written with an exponent.
const PLAIN_BELOW: f64 = 1e15;

/// `x` as written: `1.5`, `0.95`, `600`, `1e-300`, `2.5e20`, `NaN`, `inf`.
/// The shortest text that reads back as `x` in both forms.
pub fn written(x: f64) -> String {
    let m = x.abs();
    if x == 0.0 || !x.is_finite() || (PLAIN_FROM..PLAIN_BELOW).contains(&m) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// A computed `x` [`written`] to `digits` significant digits (at least
/// 1), so that arithmetic's last-place noise does not show:
/// `significant(1e-300 * 100.0, 12)` is `1e-298`, not
/// `1.0000000000000001e-298`.
pub fn significant(x: f64, digits: usize) -> String {
    if !x.is_finite() || x == 0.0 {
        return written(x);
    }
    let rounded: f64 = format!("{:.*e}", digits.max(1) - 1, x).parse().unwrap_or(x);
    written(rounded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everyday_numbers_plain_extreme_ones_with_an_exponent() {
        for (x, want) in [
            (1.5, "1.5"),
            (0.95, "0.95"),
            (600.0, "600"),
            (0.0001, "0.0001"),
            (0.0, "0"),
            (-2.0, "-2"),
            (1e-300, "1e-300"),
            (-1e-300, "-1e-300"),
            (1.5e-7, "1.5e-7"),
            (2.5e20, "2.5e20"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(written(x), want);
            if x.is_finite() {
                assert_eq!(want.parse::<f64>().unwrap(), x, "reads back");
            }
        }
        assert!(written(f64::MIN_POSITIVE).len() < 30);
        assert_eq!(written(1e-300 * 100.0), "1.0000000000000001e-298");
        assert_eq!(significant(1e-300 * 100.0, 12), "1e-298");
        assert_eq!(significant(0.99 * 100.0, 12), "99");
        assert_eq!(significant(0.999 * 100.0, 12), "99.9");
        assert_eq!(significant(f64::NAN, 12), "NaN");
    }
}
