//! Verdict cells per second into the reliability tensor (issue target:
//! ≥ 50 M cells/s on one core), and the analysis passes over a full tensor.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use probity_core::{profile, AnalysisOptions, Cell, Profile, ReliabilityTensor, Summary, Verdict};

const N: usize = 100_000;
const M: usize = 10;
const K: usize = 10;

fn cell_for(x: usize) -> Cell {
    // Mostly passes, some failures and errors, cheap to compute.
    match x % 23 {
        0 | 7 => Cell::Fail,
        11 => Cell::Error,
        _ => Cell::Pass,
    }
}

fn fill(c: &mut Criterion) {
    let mut g = c.benchmark_group("tensor");
    g.throughput(Throughput::Elements((N * M * K) as u64));
    g.sample_size(10);
    g.bench_function("set 1M outputs × 10 validators", |b| {
        let mut t = ReliabilityTensor::new(N, M, K).unwrap();
        b.iter(|| {
            let mut x = 0usize;
            for i in 0..N {
                for j in 0..M {
                    for k in 0..K {
                        x = x.wrapping_add(1);
                        let _ = t.set(i, j, k, cell_for(x));
                    }
                }
            }
            black_box(&t);
        })
    });
    let verdicts: Vec<Verdict> = (0..K)
        .map(|k| if k == 3 { Verdict::Fail } else { Verdict::Pass })
        .collect();
    g.bench_function("set_output, K verdicts at a time", |b| {
        let mut t = ReliabilityTensor::new(N, M, K).unwrap();
        b.iter(|| {
            for i in 0..N {
                for j in 0..M {
                    let _ = t.set_output(i, j, &verdicts);
                }
            }
            black_box(&t);
        })
    });
    let mut t = ReliabilityTensor::new(N, M, K).unwrap();
    let mut x = 0usize;
    for i in 0..N {
        for j in 0..M {
            for k in 0..K {
                x += 1;
                let _ = t.set(i, j, k, cell_for(x));
            }
        }
    }
    let opts = AnalysisOptions::default();
    g.bench_function("validator profile (clustered)", |b| {
        b.iter(|| black_box(profile(&t, Profile::Validator, &opts)))
    });
    g.finish();
    let checks: Vec<_> = (0..K)
        .map(|k| probity_core::CheckInfo {
            name: format!("v{k}"),
            message: String::new(),
            minimum_success_percentage: 0.9,
            weight: 1.0,
            kind: Default::default(),
        })
        .collect();
    let mut g = c.benchmark_group("summary");
    g.sample_size(10);
    g.bench_function("full summary of 1M × 10", |b| {
        b.iter(|| {
            black_box(Summary::build(
                &t,
                &checks,
                probity_core::Strategy::All,
                probity_core::Aggregate::Min,
                &opts,
            ))
        })
    });
    g.finish();
}

criterion_group!(benches, fill);
criterion_main!(benches);
