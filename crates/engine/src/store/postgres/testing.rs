//! A PostgreSQL database of its own for each test: created on the server
//! named by `PROBITY_TEST_PG` (a URL whose role may create databases;
//! `.ci/run` and `scripts/postgres.sh` start a server and set it), dropped
//! when the test ends; its tables are made before it is handed out. Without `PROBITY_TEST_PG` a test is skipped with a
//! note — except under CI (`CI` set), where that is an error: the
//! PostgreSQL tests run in CI, never skip.

use crate::store::location::{PostgresUrl, StoreLocation};

/// A fresh database, dropped (with its connections) on drop.
pub struct TestDatabase {
    admin: String,
    name: String,
    url: String,
}

/// Run `f` on a thread outside any tokio runtime (the client drives its
/// own).
fn outside<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    match std::thread::spawn(f).join() {
        Ok(r) => r,
        Err(e) => std::panic::resume_unwind(e),
    }
}

impl TestDatabase {
    /// A new database, or `None` (with a note on stderr) when no server is
    /// configured outside CI.
    pub fn create() -> Option<TestDatabase> {
        let admin = match std::env::var("PROBITY_TEST_PG") {
            Ok(url) if !url.is_empty() => url,
            _ => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "PROBITY_TEST_PG is not set: the PostgreSQL tests must run in CI (.ci/run starts a server and sets it)"
                );
                crate::stderr::line(format_args!("skipped: PROBITY_TEST_PG is not set (scripts/postgres.sh starts a server and prints it)"));
                return None;
            }
        };
        let name = format!("probity_t_{:016x}", rand::random::<u64>());
        let (a, n) = (admin.clone(), name.clone());
        outside(move || {
            let mut c = postgres::Client::connect(&a, postgres::NoTls)
                .unwrap_or_else(|e| panic!("PROBITY_TEST_PG: cannot connect: {e}"));
            c.batch_execute(&format!("CREATE DATABASE {n}"))
                .unwrap_or_else(|e| panic!("PROBITY_TEST_PG: cannot create a database: {e}"));
        });
        let url = with_dbname(&admin, &name);
        let db = TestDatabase { admin, name, url };
        // Its tables made, as the first probity to open it would.
        let location = db.location();
        outside(move || crate::store::Store::connect(&location).map(|_| ()))
            .unwrap_or_else(|e| panic!("PROBITY_TEST_PG: {e}"));
        Some(db)
    }

    /// The database's URL (password included: for the store only).
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn location(&self) -> StoreLocation {
        StoreLocation::parse(&self.url).expect("a postgres:// URL")
    }

    /// The URL's parsed form.
    pub fn postgres_url(&self) -> PostgresUrl {
        match self.location() {
            StoreLocation::Postgres(u) => u,
            StoreLocation::Sqlite(_) => unreachable!("a postgres:// URL"),
        }
    }

    /// Run `sql` on the test database (outside any runtime); its rows'
    /// first column as text.
    pub fn query(&self, sql: &str) -> Vec<String> {
        let (url, sql) = (self.url.clone(), sql.to_string());
        outside(move || {
            let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
            c.simple_query(&sql)
                .expect("query")
                .into_iter()
                .filter_map(|m| match m {
                    postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                    _ => None,
                })
                .collect()
        })
    }
}

/// `url` with its database name replaced by `name`.
fn with_dbname(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let (admin, name) = (self.admin.clone(), self.name.clone());
        let _ = std::thread::spawn(move || {
            if let Ok(mut c) = postgres::Client::connect(&admin, postgres::NoTls) {
                let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
            }
        })
        .join();
    }
}
