//! A small real HTTP proxy that opens tunnels with `CONNECT` (RFC 9110
//! §9.3.6), for the tests of `--outbound-proxy`: it records every target it
//! was asked for, connects to it, answers `200`, and relays bytes both ways
//! until either side closes. A target it cannot reach gets `502`.
//!
//! ```ignore
//! let proxy = ConnectProxy::start().await;
//! let app = TestApp::spawn_with(engine, |c| c.outbound_proxy = Some(proxy.setting())).await;
//! assert_eq!(proxy.targets(), vec![format!("127.0.0.1:{port}")]);
//! ```

use std::sync::{Arc, Mutex};

use coop::oauth::cimd::OutboundProxy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// A running proxy; stops accepting when dropped.
pub struct ConnectProxy {
    port: u16,
    targets: Arc<Mutex<Vec<String>>>,
    _stop: oneshot::Sender<()>,
}

impl ConnectProxy {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let targets = Arc::new(Mutex::new(Vec::new()));
        let (stop, mut stopped) = oneshot::channel::<()>();
        let recorded = targets.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = &mut stopped => break,
                };
                let Ok((client, _)) = accepted else { continue };
                tokio::spawn(tunnel(client, recorded.clone()));
            }
        });
        Self {
            port,
            targets,
            _stop: stop,
        }
    }

    /// The `--outbound-proxy` value that points Coop here.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The setting, parsed as `coop serve` parses it.
    pub fn setting(&self) -> OutboundProxy {
        OutboundProxy::parse(&self.url()).unwrap()
    }

    /// Every `CONNECT` target asked for, in order.
    pub fn targets(&self) -> Vec<String> {
        self.targets.lock().unwrap().clone()
    }
}

async fn tunnel(mut client: TcpStream, targets: Arc<Mutex<Vec<String>>>) {
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 8192 || client.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut request_line = head.lines().next().unwrap_or_default().split(' ');
    let (Some("CONNECT"), Some(target)) = (request_line.next(), request_line.next()) else {
        let _ = client
            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            .await;
        return;
    };
    targets.lock().unwrap().push(target.to_owned());
    let Ok(mut upstream) = TcpStream::connect(target).await else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
        return;
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}
