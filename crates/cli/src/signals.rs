//! The signals that stop a server (`probity serve`, `probity sim serve`)
//! or a run (`probity run`, `probity work`): Ctrl-C and SIGTERM.

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

/// A run's cancel flag, set on Ctrl-C or SIGTERM (a CI job cancelled, a
/// `timeout` run out): the run stops, keeps what is stored and writes its
/// reports, as it does on Ctrl-C.
pub fn cancel_on_stop() -> tokio::sync::watch::Receiver<bool> {
    let (cancel, cancelled) = tokio::sync::watch::channel(false);
    let stop = stop_signal();
    tokio::spawn(async move {
        stop.await;
        probity_engine::stderr_line!(
            "\ninterrupted: stopping; what is stored is kept (resume with --resume)"
        );
        let _ = cancel.send(true);
    });
    cancelled
}
