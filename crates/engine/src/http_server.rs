//! Serving a router over HTTP/1 for `probity serve`, `probity view` and
//! `probity sim serve`. `axum::serve` sets no timer, so hyper's timeout on
//! reading a request's head never runs: a client that opens connections
//! and sends nothing (or half a head) held each forever, and enough of them
//! (the process's file limit) locked every other client out. Here each
//! connection is hyper's own, with [`HEAD_TIMEOUT`]; `TCP_NODELAY` is set,
//! so streamed events leave at once; shutdown is graceful (in-flight
//! requests finish, idle connections close).

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;

/// How long a connection may take to send a request's head (its line and
/// headers), from when it opens or its previous request was answered:
/// then it is closed. The body has its own limit (`body_timeout_s`).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve `router` on `listener` until `shutdown` completes, then wait for
/// the requests in flight. An error accepting a connection (the file
/// limit reached, a connection reset before it was taken) is waited out,
/// never the server's end.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEAD_TIMEOUT)
            .serve_connection(
                TokioIo::new(stream),
                TowerToHyperService::new(router.clone()),
            );
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    graceful.shutdown().await;
    Ok(())
}
