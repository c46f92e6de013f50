//! Connections to PostgreSQL: how one is opened (TLS as the URL's
//! `sslmode` asks, the password from the URL, the file named by
//! `PROBITY_STORE_PASSWORD_FILE` or `PGPASSWORD`, a connect timeout), and
//! [`Conn`], a connection on a thread of its own.
//!
//! The `postgres` client is synchronous, like the rest of the store, but
//! drives a runtime of its own: it cannot be called from a thread that is
//! inside tokio (the runner and `probity serve` are). So the store's main
//! connection lives on its own thread and every query is sent to it as a
//! job; the caller waits for the answer as it waits for SQLite's. The
//! writer thread, already a thread of its own, holds its connection
//! directly.

use crate::store::error::StoreError;
use crate::store::location::{PostgresUrl, StoreLocation};
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, Config, Row};
use std::str::FromStr;
use std::sync::mpsc;
use std::time::Duration;

/// How long a connection attempt may take when the URL does not say
/// (`connect_timeout`): a dead host is named within this, not after
/// minutes.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection tries to get a lost server back (a restart, a
/// failover, a network outage) before the error is the caller's: the
/// store's connection ([`Conn::call`]) and the writer's alike.
pub(super) const RECONNECT_FOR: Duration = Duration::from_secs(60);

/// Rows sent from the connection's thread at a time, when a reader visits
/// a large result one row at a time.
const CHUNK: usize = 4096;

/// Open a connection to `url`.
pub(super) fn connect(url: &PostgresUrl) -> Result<Client, StoreError> {
    let location = StoreLocation::Postgres(url.clone());
    let (text, verify) = tls_mode(url.secret());
    let mut config = Config::from_str(&text).map_err(|e| StoreError::BadUrl {
        store: location.clone(),
        // The parser's cause names the part it could not read (`invalid
        // value for option `port``), never the password's value.
        what: match std::error::Error::source(&e) {
            Some(cause) => cause.to_string(),
            None => e.to_string(),
        },
    })?;
    if config.get_password().is_none() {
        if let Some(pw) = password_from_env(&location)? {
            config.password(pw);
        }
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("probity");
    }
    config
        .connect(tls(verify))
        .map_err(|source| StoreError::Postgres {
            store: location,
            source,
        })
}

/// [`connect`], waiting (for up to [`RECONNECT_FOR`], backing off from
/// 100 ms to 5 s) while the server answers that it cannot take
/// connections now (SQLSTATE 57P03: starting up, shutting down, in
/// recovery): a process started during a restart waits for it. Any other
/// failure is the caller's at once — a refused connection may be a wrong
/// port, never waited on at a first connection.
pub(super) fn connect_when_up(url: &PostgresUrl) -> Result<Client, StoreError> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        match connect(url) {
            Err(StoreError::Postgres { source, .. })
                if source.code() == Some(&postgres::error::SqlState::CANNOT_CONNECT_NOW)
                    && started.elapsed() < RECONNECT_FOR =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            done => return done,
        }
    }
}

/// The password when the URL has none: the first line of the file named
/// by `PROBITY_STORE_PASSWORD_FILE` (a mounted secret: nothing in the
/// process list or the environment), else `PGPASSWORD`. A file that cannot
/// be read is an error naming it, never a silent connection without a
/// password.
fn password_from_env(location: &StoreLocation) -> Result<Option<String>, StoreError> {
    if let Some(path) = std::env::var_os("PROBITY_STORE_PASSWORD_FILE").filter(|p| !p.is_empty()) {
        let text = std::fs::read_to_string(&path).map_err(|e| StoreError::Unreachable {
            store: location.clone(),
            what: format!(
                "PROBITY_STORE_PASSWORD_FILE={}: cannot read the password: {e}",
                std::path::Path::new(&path).display()
            ),
        })?;
        return Ok(Some(text.lines().next().unwrap_or("").to_string()));
    }
    Ok(std::env::var("PGPASSWORD").ok())
}

/// `url` as the driver reads it, and whether the server's certificate is
/// verified. libpq's `sslmode=verify-ca` and `verify-full` (which the
/// driver does not parse) become `require` with verification against the
/// web's root certificates; `prefer` (the default) and `require` encrypt
/// without verifying, as libpq does.
fn tls_mode(url: &str) -> (String, bool) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), false);
    };
    let mut verify = false;
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, v))
                if k.eq_ignore_ascii_case("sslmode")
                    && (v.eq_ignore_ascii_case("verify-full")
                        || v.eq_ignore_ascii_case("verify-ca")) =>
            {
                verify = true;
                format!("{k}=require")
            }
            _ => p.to_string(),
        })
        .collect();
    (format!("{base}?{}", params.join("&")), verify)
}

/// TLS by rustls: with `verify`, the server's certificate must chain to
/// the web's roots and name the host; without, the connection is
/// encrypted but the certificate not checked (libpq's `prefer` and
/// `require`: a server's self-signed certificate is accepted).
fn tls(verify: bool) -> tokio_postgres_rustls::MakeRustlsConnect {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let builder = match rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
    {
        Ok(b) => b,
        // ring supports the default versions; kept total all the same.
        Err(_) => rustls::ClientConfig::builder_with_protocol_versions(rustls::ALL_VERSIONS),
    };
    let config = if verify {
        builder
            .with_root_certificates(rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            })
            .with_no_client_auth()
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(std::sync::Arc::new(EncryptOnly(provider)))
            .with_no_client_auth()
    };
    tokio_postgres_rustls::MakeRustlsConnect::new(config)
}

/// Accepts any certificate, checking only that the handshake's signatures
/// are the certificate's (libpq's `sslmode=require`: encrypted, not
/// authenticated).
#[derive(Debug)]
struct EncryptOnly(std::sync::Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Whether `e` may pass if the same work is tried again on a new
/// connection: the connection was lost (no answer from the server, or the
/// server shutting down: SQLSTATE class 08, 57P01–57P03), or a
/// serialization failure or deadlock (40001, 40P01).
pub(super) fn transient(e: &postgres::Error) -> bool {
    match e.as_db_error() {
        None => true,
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08")
                || matches!(code, "57P01" | "57P02" | "57P03" | "40001" | "40P01")
        }
    }
}

type Job = Box<dyn FnOnce(&mut Client, &PostgresUrl) + Send>;

/// `f` on `client`, done again for up to [`RECONNECT_FOR`] while it fails
/// because the server gave the transaction up (a deadlock or serialization
/// failure: at once) or the connection was lost (a closed client, SQLSTATE
/// class 08, 57P01–57P03: on a new connection, backing off from 100 ms to
/// 5 s between attempts to open one). Any other error is the caller's at
/// once (a constraint, a value that does not convert).
fn again_until_back<R>(
    client: &mut Client,
    url: &PostgresUrl,
    f: &mut impl FnMut(&mut Client) -> Result<R, postgres::Error>,
) -> Result<R, postgres::Error> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        let e = match f(client) {
            Ok(r) => return Ok(r),
            Err(e) => e,
        };
        let code = e.as_db_error().map(|db| db.code().code().to_string());
        let given_up = matches!(code.as_deref(), Some("40001" | "40P01"));
        let lost = client.is_closed()
            || code
                .as_deref()
                .is_some_and(|c| c.starts_with("08") || matches!(c, "57P01" | "57P02" | "57P03"));
        if !(given_up || lost) || started.elapsed() >= RECONNECT_FOR {
            return Err(e);
        }
        if !lost {
            continue;
        }
        // Until a connection is back or the time is up (the last error
        // is the caller's then).
        loop {
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(5));
            if let Ok(c) = connect(url) {
                *client = c;
                break;
            }
            if started.elapsed() >= RECONNECT_FOR {
                return Err(e);
            }
        }
    }
}

/// A connection on a thread of its own (see the module's documentation).
/// A lost connection is opened again before the next job.
pub(super) struct Conn {
    url: PostgresUrl,
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Conn {
    pub(super) fn open(url: &PostgresUrl) -> Result<Conn, StoreError> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready) = mpsc::sync_channel(1);
        let thread_url = url.clone();
        let thread = std::thread::Builder::new()
            .name("probity-postgres".into())
            .spawn(move || {
                let mut client = match connect_when_up(&thread_url) {
                    Ok(c) => {
                        let _ = ready_tx.send(Ok(()));
                        c
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                while let Ok(job) = rx.recv() {
                    if client.is_closed() {
                        if let Ok(c) = connect(&thread_url) {
                            client = c;
                        }
                    }
                    job(&mut client, &thread_url);
                }
            })
            .map_err(|e| StoreError::Unreachable {
                store: StoreLocation::Postgres(url.clone()),
                what: format!("cannot start the connection's thread: {e}"),
            })?;
        match ready.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(StoreError::Unreachable {
                    store: StoreLocation::Postgres(url.clone()),
                    what: "the connection's thread stopped while connecting".into(),
                })
            }
        }
        Ok(Conn {
            url: url.clone(),
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    fn location(&self) -> StoreLocation {
        StoreLocation::Postgres(self.url.clone())
    }

    fn gone(&self) -> StoreError {
        StoreError::Unreachable {
            store: self.location(),
            what: "the connection's thread has stopped".into(),
        }
    }

    /// Run `f` on the connection and wait for its answer. When the
    /// connection was lost (the server restarted or went away) or the
    /// server gave up the transaction (a deadlock, a serialization
    /// failure), `f` is run again — on a new connection, opened with
    /// backoff for up to [`RECONNECT_FOR`], when the old one was lost:
    /// every job is one transaction, rolled back when it did not commit.
    pub(super) fn call<R: Send + 'static>(
        &self,
        mut f: impl FnMut(&mut Client) -> Result<R, postgres::Error> + Send + 'static,
    ) -> Result<R, StoreError> {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |client, url| {
            let _ = tx.send(again_until_back(client, url, &mut f));
        });
        self.jobs
            .as_ref()
            .ok_or_else(|| self.gone())?
            .send(job)
            .map_err(|_| self.gone())?;
        rx.recv()
            .map_err(|_| self.gone())?
            .map_err(|source| StoreError::Postgres {
                store: self.location(),
                source,
            })
    }

    /// Every row of `sql` (whose one parameter is `run`) decoded by
    /// `decode` on the connection's thread and handed to `f` here, a
    /// chunk at a time: a large result is never in memory at once.
    pub(super) fn each<T: Send + 'static>(
        &self,
        sql: &'static str,
        run: i64,
        decode: fn(&Row) -> Result<T, postgres::Error>,
        f: &mut dyn FnMut(T),
    ) -> Result<(), StoreError> {
        let (tx, rx) = mpsc::sync_channel::<Result<Vec<T>, postgres::Error>>(2);
        let job: Job = Box::new(move |client, _| {
            let read = |client: &mut Client| -> Result<(), postgres::Error> {
                let mut rows = client.query_raw(sql, [&run as &(dyn ToSql + Sync)])?;
                let mut chunk = Vec::with_capacity(CHUNK);
                while let Some(row) = rows.next()? {
                    chunk.push(decode(&row)?);
                    if chunk.len() == CHUNK {
                        let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK));
                        if tx.send(Ok(full)).is_err() {
                            return Ok(());
                        }
                    }
                }
                let _ = tx.send(Ok(chunk));
                Ok(())
            };
            if let Err(e) = read(client) {
                let _ = tx.send(Err(e));
            }
        });
        self.jobs
            .as_ref()
            .ok_or_else(|| self.gone())?
            .send(job)
            .map_err(|_| self.gone())?;
        for chunk in rx {
            for row in chunk.map_err(|source| StoreError::Postgres {
                store: self.location(),
                source,
            })? {
                f(row);
            }
        }
        Ok(())
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
