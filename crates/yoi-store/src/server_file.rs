//! `.yoi/local/server.json`: which server owns the workspace. Written atomically on start,
//! removed on exit. A start is refused while the file names a process that is alive *and*
//! answers on its address; a stale file (crashed server) is replaced.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    pub pid: u32,
    pub address: String,
    pub started_at: String,
    /// With TLS, the SHA-256 fingerprint of the server's certificate (`sha256:` and 64 hex
    /// digits): a local client speaks HTTPS to `address` and trusts exactly that certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_fingerprint: Option<String>,
}

impl ServerInfo {
    /// The base URL of the server: `https://ADDRESS` with TLS, else `http://ADDRESS`.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls_fingerprint.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.address)
    }
}

pub fn path(local_dir: &Path) -> PathBuf {
    local_dir.join("server.json")
}

pub fn read(local_dir: &Path) -> Option<ServerInfo> {
    let text = std::fs::read_to_string(path(local_dir)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The server named by server.json, if it is running and answering.
pub fn live(local_dir: &Path) -> Option<ServerInfo> {
    let info = read(local_dir)?;
    let alive = Path::new(&format!("/proc/{}", info.pid)).exists();
    let addr: SocketAddr = info.address.parse().ok()?;
    let answers = TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok();
    (alive && answers).then_some(info)
}

pub fn write(local_dir: &Path, info: &ServerInfo) -> std::io::Result<()> {
    std::fs::create_dir_all(local_dir)?;
    let text = serde_json::to_string_pretty(info).unwrap_or_default() + "\n";
    crate::fsutil::atomic_write(&path(local_dir), text.as_bytes())
}

/// Remove server.json if it still names this process.
pub fn remove_if_ours(local_dir: &Path) {
    if read(local_dir).is_some_and(|i| i.pid == std::process::id()) {
        let _ = std::fs::remove_file(path(local_dir));
    }
}
