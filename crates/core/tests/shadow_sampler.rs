//! InConDB's sampler on real workloads: sizes, ratios, overlap, determinism, coverage.

use std::path::PathBuf;

use pg_ask_core::shadow::delta::Encoding;
use pg_ask_core::shadow::sampler::{sample_all, sample_one, SamplerConfig, SamplerError, SplitMix64, Target};
use pg_ask_core::shadow::workload::{CommandKind, SelectCategory, Workload};

fn load(n: usize) -> Workload {
    let dir = match std::env::var_os("INCONDB_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets/incondb"),
    };
    let read = |s: &str| std::fs::read_to_string(dir.join(format!("{n}_{s}.json"))).expect("dataset (set INCONDB_DIR)");
    Workload::from_text(&n.to_string(), &read("sql"), Some(&read("nl"))).unwrap()
}

fn config(length: usize, b: f64, o: f64, seed: u64) -> SamplerConfig {
    SamplerConfig { length, insert_ratio: b, overlap: o, samples: 39, seed, targets: Target::all(), encoding: Encoding::Nl }
}

#[test]
fn samples_have_the_requested_shape() {
    let w = load(1);
    let cfg = config(10, 0.6, 0.5, 42);
    let samples = sample_all(&w, &cfg).unwrap();
    assert_eq!(samples.len(), 39);
    for (i, s) in samples.iter().enumerate() {
        assert_eq!(s.index, i);
        assert_eq!(s.target, Target::all()[i % 13], "round-robin targets");
        assert_eq!(s.commands.len(), 10);
        let inserts = s.commands.iter().filter(|c| c.kind == CommandKind::Insert).count();
        assert_eq!(inserts, 6, "b = 0.6 of l = 10");
        assert!((s.achieved_insert_ratio - 0.6).abs() < 1e-9);
        assert!(s.commands.iter().all(|c| matches!(c.kind, CommandKind::Insert | CommandKind::Delete | CommandKind::Update)));
        let query = s.query.resolve(&w).unwrap();
        match s.target {
            Target::Select(c) => assert_eq!(query.kind, CommandKind::Select(c)),
            Target::Insert => assert_eq!(query.kind, CommandKind::Insert),
            Target::Update => assert_eq!(query.kind, CommandKind::Update),
            Target::Delete => assert_eq!(query.kind, CommandKind::Delete),
        }
        // Overlap, recomputed from the definition: a command overlaps when it names a table the query names.
        let overlapping = s.commands.iter().filter(|c| !c.resolve(&w).unwrap().tables.is_disjoint(&query.tables)).count();
        assert!((s.achieved_overlap - overlapping as f64 / 10.0).abs() < 1e-9);
        // Single-table queries can always reach o exactly in workload 1 (three tables, commands on each).
        if query.tables.len() == 1 {
            assert_eq!(overlapping, 5, "sample {i} ({}) overlap", s.target);
        }
        assert!(s.commands.iter().chain([&s.query]).all(|c| c.resolve(&w).unwrap().text(Encoding::Nl).is_some()));
    }
}

#[test]
fn overlap_extremes_and_short_pools() {
    let w = load(1);
    for o in [0.0, 1.0] {
        let cfg = SamplerConfig { targets: vec![Target::Select(SelectCategory::NoFiltering)], ..config(20, 0.5, o, 7) };
        for s in sample_all(&w, &cfg).unwrap() {
            assert!((s.achieved_overlap - o).abs() < 1e-9, "o = {o}: achieved {}", s.achieved_overlap);
        }
    }
    // A three-table query reads every table: nothing can avoid it, so overlap is 1 whatever o says.
    let cfg = SamplerConfig { targets: vec![Target::Select(SelectCategory::ThreeTable)], ..config(12, 0.5, 0.0, 3) };
    let s = sample_one(&w, &cfg, 0).unwrap();
    assert_eq!(s.achieved_overlap, 1.0);
    // l larger than the pools: commands are reused, length still honoured.
    let s = sample_one(&w, &config(100, 1.0, 0.3, 1), 0).unwrap();
    assert_eq!(s.commands.len(), 100);
    assert!(s.commands.iter().all(|c| c.kind == CommandKind::Insert));
    // l = 0: the query alone.
    assert!(sample_one(&w, &config(0, 0.5, 0.5, 1), 4).unwrap().commands.is_empty());
}

#[test]
fn sampling_is_deterministic_per_seed_and_index() {
    let w = load(6);
    let a = sample_all(&w, &config(15, 0.4, 0.6, 2024)).unwrap();
    let b = sample_all(&w, &config(15, 0.4, 0.6, 2024)).unwrap();
    assert_eq!(a, b);
    let c = sample_all(&w, &config(15, 0.4, 0.6, 2025)).unwrap();
    assert_ne!(a, c);
    // Any sample can be regenerated alone (resuming a run).
    assert_eq!(sample_one(&w, &config(15, 0.4, 0.6, 2024), 17).unwrap(), a[17]);
    // SplitMix64's published first output for seed 0.
    assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
}

#[test]
fn bad_parameters_are_errors() {
    let w = load(2);
    assert!(matches!(sample_one(&w, &config(5, 1.5, 0.5, 0), 0), Err(SamplerError::OutOfRange { name: "insert_ratio", .. })));
    assert!(matches!(sample_one(&w, &config(5, 0.5, -0.1, 0), 0), Err(SamplerError::OutOfRange { name: "overlap", .. })));
    let none = SamplerConfig { targets: vec![], ..config(5, 0.5, 0.5, 0) };
    assert_eq!(sample_one(&w, &none, 0), Err(SamplerError::NoTargets));
    let mut empty = w.clone();
    empty.inserts.clear();
    assert!(matches!(sample_one(&empty, &config(5, 0.5, 0.5, 0), 0), Err(SamplerError::EmptyPool(_))));
}

#[test]
fn every_workload_can_be_sampled_for_every_target() {
    for n in 1..=20 {
        let w = load(n);
        for encoding in Encoding::ALL {
            let cfg = SamplerConfig { encoding, samples: 26, ..config(8, 0.5, 0.5, n as u64) };
            let samples = sample_all(&w, &cfg).unwrap_or_else(|e| panic!("workload {n}: {e}"));
            assert_eq!(samples.len(), 26);
        }
    }
}
