//! Property tests: the tensor stores what it is given, and its marginals
//! add up to its totals.

use probity_core::{profile, AnalysisOptions, Cell, ErrorPolicy, Profile, ReliabilityTensor};
use proptest::prelude::*;

fn cell(b: u8) -> Cell {
    [Cell::Missing, Cell::Pass, Cell::Fail, Cell::Error][(b % 4) as usize]
}

proptest! {
    #[test]
    fn cells_round_trip_and_marginals_match_totals(
        (n, m, k, bytes) in (1usize..6, 1usize..6, 1usize..5)
            .prop_flat_map(|(n, m, k)| (Just(n), Just(m), Just(k), proptest::collection::vec(any::<u8>(), n * m * k)))
    ) {
        let mut t = ReliabilityTensor::new(n, m, k).unwrap();
        for (idx, &b) in bytes.iter().enumerate() {
            let (i, j, kk) = (idx / (m * k), (idx / k) % m, idx % k);
            t.set(i, j, kk, cell(b)).unwrap();
        }
        for (idx, &b) in bytes.iter().enumerate() {
            let (i, j, kk) = (idx / (m * k), (idx / k) % m, idx % k);
            prop_assert_eq!(t.get(i, j, kk), Some(cell(b)));
        }
        let total = t.counts();
        let marg = t.marginals();
        for axis in [&marg.by_input, &marg.by_repetition, &marg.by_validator] {
            let sum = axis.iter().fold(probity_core::Counts::default(), |a, &c| a + c);
            prop_assert_eq!(sum, total);
        }
        for errors in [ErrorPolicy::AsFailure, ErrorPolicy::Exclude] {
        let opts = AnalysisOptions { errors, ..AnalysisOptions::default() };
        // Errors are trials as failures, or not measured.
        let trials = total.pass + total.fail + if errors == ErrorPolicy::AsFailure { total.error } else { 0 };
        for which in [Profile::Input, Profile::Output, Profile::Validator] {
            let entries = profile(&t, which, &opts);
            let passes: u64 = entries.iter().map(|e| e.rate.counts.pass).sum();
            let evaluated: u64 = entries.iter().map(|e| e.rate.n).sum();
            prop_assert_eq!(passes, total.pass);
            prop_assert_eq!(evaluated, trials);
            for e in &entries {
                prop_assert!(e.rate.interval.lower >= 0.0 && e.rate.interval.upper <= 1.0);
                prop_assert!(e.rate.interval.lower <= e.rate.estimate + 1e-12);
                prop_assert!(e.rate.estimate <= e.rate.interval.upper + 1e-12);
            }
        }
        }
    }
}
