//! A tiny, portable hash and random generator for the simulator.
//!
//! The simulator's outputs must be a pure function of its seed and the call,
//! identical across platforms, Rust versions and crate versions. `std`'s
//! `DefaultHasher` and `rand`'s `SmallRng`/`StdRng` promise none of that, so
//! we use FNV-1a (64-bit) to hash and SplitMix64 (Steele, Lea & Flood, 2014)
//! to generate: both are fully specified by the few lines below.

/// FNV-1a, 64-bit, with a SplitMix64 finaliser on output.
#[derive(Debug, Clone)]
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        // Length prefix, so ("ab", "c") and ("a", "bc") hash differently.
        self.u64(bytes.len() as u64);
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    pub(crate) fn u64(&mut self, x: u64) -> &mut Self {
        for b in x.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    pub(crate) fn finish(&self) -> u64 {
        mix(self.0)
    }
}

/// The SplitMix64 output function: a strong 64-bit bit mixer.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// SplitMix64: a fast generator that passes BigCrush, seeded by a hash.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// Uniform in [0, 1), 53 bits.
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }

    /// Uniform in `0..n` (`n > 0`; 0 when `n == 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// One of `items` (which must not be empty to be useful; `""` if it is).
    pub(crate) fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items.get(self.below(items.len())).copied().unwrap_or("")
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64(); // (0, 1]
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Gamma(shape, 1) by Marsaglia & Tsang (2000), boosted for shape < 1.
    fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let u = 1.0 - self.next_f64();
            return self.gamma(shape + 1.0) * u.powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = 1.0 - self.next_f64();
            if u < 1.0 - 0.0331 * x * x * x * x || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
                return d * v;
            }
        }
    }

    /// Beta with mean `mean` and concentration `kappa` (α = mean·κ,
    /// β = (1 − mean)·κ). Degenerate means are returned as they are; when
    /// both gamma draws underflow (tiny κ) the limit, Bernoulli(mean), is used.
    pub(crate) fn beta_mean(&mut self, mean: f64, kappa: f64) -> f64 {
        if mean <= 0.0 || mean >= 1.0 {
            return mean.clamp(0.0, 1.0);
        }
        let x = self.gamma(mean * kappa);
        let y = self.gamma((1.0 - mean) * kappa);
        let s = x + y;
        if s > 0.0 && s.is_finite() {
            (x / s).clamp(0.0, 1.0)
        } else if self.chance(mean) {
            1.0
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_values_never_change() {
        // Pinned: changing these changes every simulated output.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(Fnv::new().finish(), mix(0xcbf2_9ce4_8422_2325));
        let a = Fnv::new().bytes(b"ab").bytes(b"c").finish();
        let b = Fnv::new().bytes(b"a").bytes(b"bc").finish();
        assert_ne!(a, b);
    }

    #[test]
    fn beta_has_the_right_mean_and_variance() {
        let mut r = SplitMix64::new(7);
        for (mean, kappa) in [(0.1, 4.0), (0.5, 0.5), (0.85, 50.0), (0.05, 0.2)] {
            let n = 40_000;
            let xs: Vec<f64> = (0..n).map(|_| r.beta_mean(mean, kappa)).collect();
            let m = xs.iter().sum::<f64>() / n as f64;
            let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
            let want_v = mean * (1.0 - mean) / (kappa + 1.0);
            let se = (want_v / n as f64).sqrt();
            assert!((m - mean).abs() < 5.0 * se, "mean {m} vs {mean}");
            assert!((v - want_v).abs() < 0.1 * want_v, "var {v} vs {want_v}");
        }
    }
}
