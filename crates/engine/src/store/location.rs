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
        masked_url(&self.0)
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
    /// Read a location: a PostgreSQL URL, or a SQLite file's path. What
    /// looks like a mistyped URL is refused rather than taken for a file
    /// (a file named `postgress:/u:pw@host/db` would be created, the runs
    /// kept there, a CI baseline silently not found): a `scheme://` other
    /// than `postgres://` or `postgresql://`, `postgres:` without `//`, or
    /// libpq's `key=value` form (`host=db dbname=probity`). The error
    /// shows no more of the text than its scheme or first key: it may hold
    /// a password.
    pub fn parse(text: &str) -> Result<StoreLocation, String> {
        let trimmed = text.trim();
        let lower = trimmed.to_ascii_lowercase();
        const URL: &str = "a URL postgres://user@host/database";
        let url_form = format!("give a SQLite file's path or {URL}");
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            let scheme = &trimmed[..trimmed.find(':').unwrap_or(0)];
            if let Some(c) = userinfo(trimmed).and_then(|u| u.chars().find(|c| "@/#".contains(*c)))
            {
                return Err(format!(
                    "store {scheme}://…: the user or password holds an unescaped `{c}`, so the URL cannot be read as meant; percent-encode it (@ as %40, / as %2F, # as %23)"
                ));
            }
            return Ok(StoreLocation::Postgres(PostgresUrl(trimmed.to_string())));
        }
        for scheme in ["postgres", "postgresql"] {
            if lower.starts_with(&format!("{scheme}//")) {
                return Err(format!(
                    "store {}//…: a URL needs `{scheme}://`: {url_form}",
                    &trimmed[..scheme.len()]
                ));
            }
        }
        if lower.starts_with("file:") {
            return Err(format!(
                "store file:…: give the SQLite file's path itself, without `file:`, or {URL}"
            ));
        }
        if let Some((scheme, _)) = trimmed.split_once("://") {
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            {
                return Err(format!(
                    "store {scheme}://…: not a store this knows: {url_form}"
                ));
            }
        }
        if lower.starts_with("postgres:") || lower.starts_with("postgresql:") {
            let scheme = &trimmed[..trimmed.find(':').unwrap_or(0)];
            return Err(format!(
                "store {scheme}:…: a URL needs `{scheme}://`: {url_form}"
            ));
        }
        const LIBPQ_KEYS: [&str; 7] = [
            "host", "hostaddr", "port", "dbname", "user", "password", "sslmode",
        ];
        if let Some(key) = trimmed.split_whitespace().find_map(|word| {
            let (key, _) = word.split_once('=')?;
            LIBPQ_KEYS
                .contains(&key.to_ascii_lowercase().as_str())
                .then_some(key)
        }) {
            return Err(format!(
                "store \"{key}=…\": libpq's key=value form is not read here: {url_form}"
            ));
        }
        Ok(StoreLocation::Sqlite(PathBuf::from(text)))
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

/// The user part of a URL: what comes between `scheme://` and the last
/// `@` before the query (`None` without one). Taking the last `@` covers
/// the most: a password with an unescaped `@` or `/` is masked whole.
fn userinfo(url: &str) -> Option<&str> {
    let rest = &url[url.find("://")? + 3..];
    let before_query = &rest[..rest.find('?').unwrap_or(rest.len())];
    before_query.rfind('@').map(|at| &before_query[..at])
}

/// `url` with its password masked: `scheme://user:***@host…`, and any
/// `password=…` query parameter's value masked too (its key compared
/// percent-decoded and in any case: `pass%77ord` is `password` to libpq).
/// Any text with a `scheme://` in it may be given (a quoted `--set`
/// value); text without one is returned as it is.
pub fn masked_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let head = &url[..scheme_end];
    let (authority, tail) = match userinfo(url) {
        Some(user) => {
            let host_and_tail = &url[scheme_end + user.len()..];
            let shown = match user.find(':') {
                Some(colon) => format!("{}:***", &user[..colon]),
                None => user.to_string(),
            };
            (shown, host_and_tail)
        }
        None => (String::new(), &url[scheme_end..]),
    };
    let tail = match tail.find('?') {
        Some(q) => {
            let (path, query) = tail.split_at(q + 1);
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _))
                        if percent_encoding::percent_decode_str(k)
                            .decode_utf8_lossy()
                            .eq_ignore_ascii_case("password") =>
                    {
                        format!("{k}=***")
                    }
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
            StoreLocation::parse("postgres://db/probity").unwrap(),
            StoreLocation::Postgres(_)
        ));
        assert!(matches!(
            StoreLocation::parse("PostgreSQL://db/probity").unwrap(),
            StoreLocation::Postgres(_)
        ));
        assert_eq!(
            StoreLocation::parse(".probity/runs.db").unwrap(),
            StoreLocation::Sqlite(".probity/runs.db".into())
        );
    }

    #[test]
    fn a_mistyped_url_is_refused_without_its_secret() {
        for (text, says) in [
            ("postgress://u:hunter2@127.0.0.1/db", "store postgress://…"),
            ("mysql://u:hunter2@db/x", "store mysql://…"),
            ("postgres:/u:hunter2@db/x", "needs `postgres://`"),
            ("host=127.0.0.1 port=1 password=hunter2", "store \"host=…\""),
            ("  dbname=probity user=ci", "store \"dbname=…\""),
            ("postgres//u:hunter2@db/x", "needs `postgres://`"),
            ("PostgreSQL//u:hunter2@db/x", "needs `postgresql://`"),
            ("file:hunter2.db", "without `file:`"),
            // A password with an unescaped '@', '/' or '#': libpq would
            // read another host or path than the user meant.
            (
                "postgres://u:p@ss:w/rd#x%y@127.0.0.1:5432/db",
                "unescaped `@`",
            ),
            ("postgres://u:hunter2/x@127.0.0.1/db", "unescaped `/`"),
            ("postgres://u:hunter2#@127.0.0.1/db", "unescaped `#`"),
        ] {
            let e = StoreLocation::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
        // Paths that merely contain these characters are files.
        for path in ["runs=v2.db", "C:/probity/runs.db", "./a b/runs.db"] {
            assert_eq!(
                StoreLocation::parse(path).unwrap(),
                StoreLocation::Sqlite(path.into())
            );
        }
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
            (
                "postgres://db/probity?user=ann&pass%77ord=s3cret",
                "postgres://db/probity?user=ann&pass%77ord=***",
            ),
            (
                "postgres://db/probity?PASSWORD=s3cret&application_name=a@b",
                "postgres://db/probity?PASSWORD=***&application_name=a@b",
            ),
        ] {
            let loc = StoreLocation::parse(url).unwrap();
            assert_eq!(loc.to_string(), shown);
            assert!(!format!("{loc:?}").contains("s3cret"));
            assert!(!format!("{loc:?}").contains("p%40ss"));
        }
    }
}
