//! The PostgreSQL store's handle (its URL and main connection) and how
//! its rows are read ([`RowRead`]); the operations are in the sibling
//! modules.

use super::conn::Conn;
use crate::store::location::{PostgresUrl, StoreLocation};
use crate::store::rows::RowRead;
use postgres::types::Type;

/// A PostgreSQL run store.
pub struct Postgres {
    pub(super) url: PostgresUrl,
    pub(super) conn: Conn,
}

impl Postgres {
    pub(super) fn location(&self) -> StoreLocation {
        StoreLocation::Postgres(self.url.clone())
    }
}

/// `BYTEA` columns hold UTF-8 text (see `schema`): read back as text.
fn text_at(r: &postgres::Row, i: usize) -> Result<Option<String>, postgres::Error> {
    if r.columns().get(i).map(|c| c.type_()) == Some(&Type::BYTEA) {
        let bytes: Option<Vec<u8>> = r.try_get(i)?;
        Ok(bytes.map(|b| match String::from_utf8(b) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }))
    } else {
        r.try_get(i)
    }
}

impl RowRead for postgres::Row {
    type Error = postgres::Error;
    fn int(&self, i: usize) -> Result<i64, postgres::Error> {
        self.try_get(i)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, postgres::Error> {
        self.try_get(i)
    }
    fn text(&self, i: usize) -> Result<String, postgres::Error> {
        Ok(text_at(self, i)?.unwrap_or_default())
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, postgres::Error> {
        text_at(self, i)
    }
    fn opt_real(&self, i: usize) -> Result<Option<f64>, postgres::Error> {
        self.try_get(i)
    }
    fn bytes(&self, i: usize) -> Result<Vec<u8>, postgres::Error> {
        self.try_get(i)
    }
    fn flag(&self, i: usize) -> Result<bool, postgres::Error> {
        self.try_get(i)
    }
}
