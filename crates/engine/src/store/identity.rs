//! Who this process is, as leases and claims record it: its process id,
//! its machine's name, and a token drawn once per process (two machines may
//! share a host name and pid — containers — never a token).

use std::path::Path;
use std::sync::OnceLock;

/// This process, as a lease or claim names it.
pub(super) struct Identity {
    pub pid: i64,
    pub host: String,
    /// 128 random bits, hex: what tells two holders apart.
    pub token: String,
}

/// This process's identity (drawn on first use).
pub(super) fn me() -> &'static Identity {
    static ME: OnceLock<Identity> = OnceLock::new();
    ME.get_or_init(|| Identity {
        pid: i64::from(std::process::id()),
        host: host_name(),
        token: format!("{:032x}", rand::random::<u128>()),
    })
}

/// This machine's name.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Whether process `pid` on host `host` is known to be gone: only on this
/// host, where `/proc` exists; elsewhere a holder goes stale by time alone.
pub(super) fn process_gone(host: &str, pid: i64) -> bool {
    host == me().host
        && Path::new("/proc/self").exists()
        && !Path::new(&format!("/proc/{pid}")).exists()
}
