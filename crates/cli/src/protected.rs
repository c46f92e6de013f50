//! Files a command reads and keeps — the run store's database, the
//! configuration, its inputs file — which no file it writes (`--output`,
//! `--junit`, `--markdown`, `export --out`, `plan --classes`, the trend's
//! `-o`) may replace: `probity report 1 -o .probity/runs.db` would
//! otherwise turn the history into a text report. Each is registered
//! where it is opened ([`protect`]) and every write asks first
//! ([`check`]). One list per process: a command is one process.

use crate::failure::Failure;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

static PROTECTED: Mutex<Vec<(&'static str, PathBuf)>> = Mutex::new(Vec::new());

/// Keep `path` (`what` names it in the error) from being written over.
pub fn protect(what: &'static str, path: &Path) {
    if let Ok(mut list) = PROTECTED.lock() {
        list.push((what, path.to_path_buf()));
    }
}

/// The run store's SQLite file and the files SQLite keeps beside it.
pub fn protect_sqlite(path: &Path) {
    protect("the run store", path);
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        protect("the run store", Path::new(&side));
    }
}

/// An error when `target` is a protected file.
pub fn check(target: &Path) -> Result<(), Failure> {
    let Some(t) = normal(target) else {
        return Ok(());
    };
    let list = PROTECTED.lock().map(|l| l.clone()).unwrap_or_default();
    match list.iter().find(|(_, p)| normal(p).as_ref() == Some(&t)) {
        Some((what, p)) => Err(Failure::usage(format!(
            "{}: is {what} ({}); writing there would destroy it: choose another path",
            target.display(),
            p.display()
        ))),
        None => Ok(()),
    }
}

/// `path` made absolute with its links resolved, whether or not the file
/// exists yet (its directory's real path, then its name).
fn normal(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = path.canonicalize() {
        return Some(p);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(dir.canonicalize().ok()?.join(path.file_name()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protected_file_is_refused_by_any_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("runs.db");
        std::fs::write(&db, "db").unwrap();
        protect_sqlite(&db);
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let e = check(&dir.path().join("sub/../runs.db")).err().unwrap();
        assert!(e.message.contains("is the run store"), "{}", e.message);
        assert_eq!(e.code, 2);
        // The WAL beside it too, though it does not exist yet.
        assert!(check(&dir.path().join("runs.db-wal")).is_err());
        assert!(check(&dir.path().join("report.html")).is_ok());
        assert_eq!(std::fs::read_to_string(&db).unwrap(), "db");
    }
}
