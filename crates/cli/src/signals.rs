//! The signals that stop a server (`probity serve`, `probity sim serve`).

/// Resolves on Ctrl-C or SIGTERM. The handlers are installed when this is
/// called, not when the future is first polled.
pub fn stop_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let interrupt = signal(SignalKind::interrupt()).ok();
        let terminate = signal(SignalKind::terminate()).ok();
        async move {
            match (interrupt, terminate) {
                (Some(mut i), Some(mut t)) => {
                    tokio::select! {
                        _ = i.recv() => {}
                        _ = t.recv() => {}
                    }
                }
                (Some(mut i), None) => {
                    i.recv().await;
                }
                (None, Some(mut t)) => {
                    t.recv().await;
                }
                (None, None) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
