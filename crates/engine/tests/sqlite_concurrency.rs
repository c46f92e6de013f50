//! Many processes opening one SQLite store at once (pytest-xdist workers,
//! parallel CI jobs): none is refused as "database is locked", and every
//! run each creates is kept, with its own id.

use crate::common;

use probity_engine::store::Store;
use std::path::Path;
use std::sync::{Arc, Barrier};

const OPENERS: usize = 8;

fn create(store: &mut Store, name: &str) -> i64 {
    store
        .create_run(&common::bare_run(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `OPENERS` threads, released together, each open the store at `path`
/// (each its own connection, as separate processes have) and create two
/// runs; returns every id.
fn open_at_once(path: &Path) -> Vec<i64> {
    let start = Arc::new(Barrier::new(OPENERS));
    let threads: Vec<_> = (0..OPENERS)
        .map(|t| {
            let (start, path) = (start.clone(), path.to_path_buf());
            std::thread::spawn(move || {
                start.wait();
                let mut store = Store::open(&path).unwrap_or_else(|e| panic!("opener {t}: {e}"));
                vec![
                    create(&mut store, &format!("t{t}a")),
                    create(&mut store, &format!("t{t}b")),
                ]
            })
        })
        .collect();
    threads
        .into_iter()
        .flat_map(|t| t.join().expect("an opener failed"))
        .collect()
}

#[test]
fn openers_of_a_new_store_at_once_all_create_their_runs() {
    // A fresh file each round: the race is in creating the schema.
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        let mut ids = open_at_once(&path);
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 2 * OPENERS, "every run has its own id");
        let kept = Store::open(&path).unwrap().runs(None).unwrap().len();
        assert_eq!(kept, 2 * OPENERS, "every run is kept");
    }
}
