//! A TCP proxy in front of the machine's PostgreSQL that a test can break:
//! the database "stopped" (connections refused, every open one closed),
//! connections cut (closed, new ones still accepted) and traffic held (the
//! network hangs). The real PostgreSQL is shared by every test and every
//! engineer on the machine, so it is never stopped: the app under test
//! reaches it only through this proxy.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coop::config::DatabaseUrl;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;

pub struct PgProxy {
    address: SocketAddr,
    upstream: SocketAddr,
    shared: Arc<Shared>,
}

struct Shared {
    /// The accept loop, while the proxy listens.
    listener: Mutex<Option<AbortHandle>>,
    /// One task per proxied connection; aborting it closes both sockets.
    connections: Mutex<Vec<AbortHandle>>,
    /// While true, bytes are read but not passed on.
    held: watch::Sender<bool>,
    /// Chunks read while held and not yet passed on.
    waiting: AtomicUsize,
}

impl PgProxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Self {
            address: listener.local_addr().unwrap(),
            upstream,
            shared: Arc::new(Shared {
                listener: Mutex::new(None),
                connections: Mutex::new(Vec::new()),
                held: watch::channel(false).0,
                waiting: AtomicUsize::new(0),
            }),
        };
        proxy.serve(listener);
        proxy
    }

    /// `url` (a PostgreSQL URL) with its host and port replaced by the
    /// proxy's.
    pub fn url_for(&self, url: &DatabaseUrl) -> DatabaseUrl {
        let DatabaseUrl::Postgres(raw) = url else {
            panic!("the proxy is for PostgreSQL");
        };
        let mut parsed = url::Url::parse(raw).unwrap();
        parsed.set_host(Some("127.0.0.1")).unwrap();
        parsed.set_port(Some(self.address.port())).unwrap();
        DatabaseUrl::Postgres(parsed.to_string())
    }

    fn serve(&self, listener: TcpListener) {
        let shared = self.shared.clone();
        let upstream = self.upstream;
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let task = tokio::spawn(forward(client, upstream, shared.clone()));
                shared.connections.lock().unwrap().push(task.abort_handle());
            }
        });
        *self.shared.listener.lock().unwrap() = Some(accept.abort_handle());
    }

    /// Closes every open connection; new ones are still accepted (a
    /// network blip, or PostgreSQL restarting in an instant).
    pub fn cut(&self) {
        for task in self.shared.connections.lock().unwrap().drain(..) {
            task.abort();
        }
        // An aborted pump never counts its held chunk out.
        self.shared.waiting.store(0, Ordering::Release);
    }

    /// PostgreSQL stopped: nothing listens (connections are refused) and
    /// every open connection is closed.
    pub async fn stop(&self) {
        if let Some(accept) = self.shared.listener.lock().unwrap().take() {
            accept.abort();
        }
        self.cut();
        // The aborted accept loop drops the listener at its next poll.
        for _ in 0..100 {
            if TcpStream::connect(self.address).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the proxy still accepts connections after stop");
    }

    /// PostgreSQL back: listening again on the same port.
    pub async fn restart(&self) {
        let listener = TcpListener::bind(self.address).await.unwrap();
        self.serve(listener);
    }

    /// Holds every byte in either direction until [`Self::release`].
    pub fn hold(&self) {
        self.shared.held.send_replace(true);
    }

    pub fn release(&self) {
        self.shared.held.send_replace(false);
    }

    /// Waits until some traffic is being held (a query is on its way).
    pub async fn until_traffic_is_held(&self) {
        for _ in 0..1000 {
            if self.shared.waiting.load(Ordering::Acquire) > 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("no traffic reached the proxy while it held");
    }
}

impl Drop for PgProxy {
    fn drop(&mut self) {
        if let Some(accept) = self.shared.listener.lock().unwrap().take() {
            accept.abort();
        }
        self.cut();
    }
}

async fn forward(client: TcpStream, upstream: SocketAddr, shared: Arc<Shared>) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    // Either direction ending ends the connection.
    tokio::select! {
        _ = pump(client_read, server_write, &shared) => {}
        _ = pump(server_read, client_write, &shared) => {}
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    shared: &Shared,
) {
    let mut held = shared.held.subscribe();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if *held.borrow_and_update() {
            shared.waiting.fetch_add(1, Ordering::AcqRel);
            let released = held.wait_for(|held| !*held).await.is_ok();
            shared.waiting.fetch_sub(1, Ordering::AcqRel);
            if !released {
                return;
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
