//! Where the run store is: a SQLite file (the embedded default) or a
//! PostgreSQL database shared by a team, CI machines and serve replicas.
//!
//! A location prints without its password: `postgres://ann:***@db/probity`.
//! That printed form is the only one errors, logs and reports see.

use std::fmt;
use std::path::{Path, PathBuf};

/// A run store's location, parsed from `--store`, `PROBITY_STORE` or the
/// `[store]` table: a `postgres://` or `postgresql://` URL names a
/// PostgreSQL database, anything else a SQLite file.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    Sqlite(PathBuf),
    Postgres(PostgresUrl),
}

/// A PostgreSQL connection URL (libpq's form). Its `Display` and `Debug`
/// mask the password; [`PostgresUrl::secret`] is the whole URL, for the
/// connection only.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresUrl(String);

impl PostgresUrl {
    /// The URL as given, password included: pass it to the driver, never
    /// print it.
    pub fn secret(&self) -> &str {
        &self.0
    }

    /// The URL with the password (in the user part, or a `password=`
    /// parameter) replaced by `***`.
    pub fn redacted(&self) -> String {
        redact_url(&self.0)
    }
}

impl fmt::Display for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PostgresUrl({})", self.redacted())
    }
}

impl StoreLocation {
    /// Read a location: a PostgreSQL URL, or a SQLite file's path.
    pub fn parse(text: &str) -> StoreLocation {
        let lower = text.trim_start().to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            StoreLocation::Postgres(PostgresUrl(text.trim().to_string()))
        } else {
            StoreLocation::Sqlite(PathBuf::from(text))
        }
    }

    /// The SQLite file, if this is one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            StoreLocation::Sqlite(p) => Some(p),
            StoreLocation::Postgres(_) => None,
        }
    }

    /// Whether several machines can share this store (and its runs'
    /// work, `probity work`).
    pub fn is_shared(&self) -> bool {
        matches!(self, StoreLocation::Postgres(_))
    }
}

impl From<&Path> for StoreLocation {
    fn from(p: &Path) -> Self {
        StoreLocation::Sqlite(p.to_path_buf())
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::Sqlite(p) => write!(f, "{}", p.display()),
            StoreLocation::Postgres(u) => write!(f, "{u}"),
        }
    }
}

impl fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// `url` with its password masked: `scheme://user:***@host…`, and any
/// `password=…` query parameter's value masked too.
fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let (head, rest) = url.split_at(scheme_end);
    // The authority ends at the first '/', '?' or '#'; its user part at
    // the last '@' inside it (a password may hold '@' only escaped, but
    // take the last to be safe).
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (user, host) = authority.split_at(at);
            match user.find(':') {
                Some(colon) => format!("{}:***{host}", &user[..colon]),
                None => authority.to_string(),
            }
        }
        None => authority.to_string(),
    };
    let tail = match tail.find('?') {
        Some(q) => {
            let (path, query) = tail.split_at(q + 1);
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_string(),
                })
                .collect();
            format!("{path}{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{head}{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_postgres_and_anything_else_a_file() {
        assert!(matches!(
            StoreLocation::parse("postgres://db/probity"),
            StoreLocation::Postgres(_)
        ));
        assert!(matches!(
            StoreLocation::parse("PostgreSQL://db/probity"),
            StoreLocation::Postgres(_)
        ));
        assert_eq!(
            StoreLocation::parse(".probity/runs.db"),
            StoreLocation::Sqlite(".probity/runs.db".into())
        );
    }

    #[test]
    fn the_password_never_prints() {
        for (url, shown) in [
            (
                "postgres://ann:s3cret@db:5432/probity",
                "postgres://ann:***@db:5432/probity",
            ),
            (
                "postgres://ann:p%40ss@db/probity?sslmode=require",
                "postgres://ann:***@db/probity?sslmode=require",
            ),
            (
                "postgresql://db/probity?user=ann&password=s3cret",
                "postgresql://db/probity?user=ann&password=***",
            ),
            ("postgres://ann@db/probity", "postgres://ann@db/probity"),
        ] {
            let loc = StoreLocation::parse(url);
            assert_eq!(loc.to_string(), shown);
            assert!(!format!("{loc:?}").contains("s3cret"));
            assert!(!format!("{loc:?}").contains("p%40ss"));
        }
    }
}
