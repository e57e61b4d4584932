//! One network cannot take every connection (issue 31 item 2, threat 46):
//! a network holds at most its share (`--max-connections-per-network`),
//! and at a cap the kept-alive connection idle longest makes room before
//! anyone is refused (`src/http/serve/served.rs`).
//!
//! Two networks on one machine: Linux routes all of 127/8 to the loopback
//! interface, so a client socket bound to 127.0.0.2 is another network to
//! the server than one bound to 127.0.0.1. The database plays no part in
//! accepting connections, so these run on SQLite only.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

use crate::helpers::{Engine, TestApp};
use crate::slow_clients::{Answer, Closed, authority, send_healthz, spawn, until_closed};

const FIRST: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
const SECOND: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// The fixed answer to a connection past its network's cap.
const NETWORK_SHED: &str = "HTTP/1.1 429 Too Many Requests\r\n\
Content-Length: 0\r\n\
Retry-After: 1\r\n\
Connection: close\r\n\r\n";

/// An app serving at most `max` connections, `per_network` from one
/// network, whose timeouts never fire during a test.
async fn with_caps(max: usize, per_network: usize) -> TestApp {
    spawn(Engine::Sqlite, |l| {
        l.max_connections = max;
        l.max_connections_per_network = per_network;
    })
    .await
}

/// A connection to `app` from the network `from`.
async fn connect_from(app: &TestApp, from: Ipv4Addr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(IpAddr::V4(from), 0)).unwrap();
    socket
        .connect(authority(app).parse().unwrap())
        .await
        .unwrap()
}

/// A connection from `from` that has been answered once and now sits
/// idle, kept alive.
async fn idle_from(app: &TestApp, from: Ipv4Addr) -> TcpStream {
    let mut stream = connect_from(app, from).await;
    assert_served(&mut stream, app).await;
    stream
}

/// A connection from `from` that has sent half a request head: in use,
/// never idle.
async fn busy_from(app: &TestApp, from: Ipv4Addr) -> TcpStream {
    let mut stream = connect_from(app, from).await;
    let half = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n", authority(app));
    stream.write_all(half.as_bytes()).await.unwrap();
    stream
}

/// `GET /healthz` on `stream` is answered 200 and the connection kept.
async fn assert_served(stream: &mut TcpStream, app: &TestApp) {
    send_healthz(stream, app).await;
    let answer = Answer::read(stream).await;
    assert_eq!(answer.status_line, "HTTP/1.1 200 OK");
    assert_eq!(answer.body, "ok");
}

/// The server's cap held by one network's idle kept-alive connections:
/// another network's newcomer is served, and the connection idle longest
/// is closed (quietly, as an idle timeout closes one) to make room; the
/// others still carry requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_servers_cap_the_connection_idle_longest_makes_room() {
    const CAP: usize = 8;
    let app = with_caps(CAP, CAP).await;
    let mut held = Vec::with_capacity(CAP);
    for _ in 0..CAP {
        held.push(idle_from(&app, FIRST).await);
    }

    let mut newcomer = connect_from(&app, SECOND).await;
    assert_served(&mut newcomer, &app).await;

    assert_eq!(until_closed(&mut held[0]).await, Closed::quietly());
    for stream in &mut held[1..] {
        assert_served(stream, &app).await;
    }
}

/// One network past its share (4 of 16) with connections in use is
/// refused with the fixed `429`, and another network is served. When one
/// of its own connections sits idle, the network's newcomer takes that
/// one's place instead of being refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_past_its_share_is_refused_and_another_is_served() {
    const SHARE: usize = 4;
    let app = with_caps(16, SHARE).await;
    let mut held = Vec::with_capacity(SHARE);
    for _ in 0..SHARE {
        held.push(busy_from(&app, FIRST).await);
    }

    let mut refused = connect_from(&app, FIRST).await;
    send_healthz(&mut refused, &app).await;
    assert_eq!(until_closed(&mut refused).await.received, NETWORK_SHED);

    let mut elsewhere = connect_from(&app, SECOND).await;
    assert_served(&mut elsewhere, &app).await;

    // One of the four finishes its request and sits idle.
    held[0].write_all(b"\r\n").await.unwrap();
    assert_eq!(
        Answer::read(&mut held[0]).await.status_line,
        "HTTP/1.1 200 OK"
    );
    let mut next = connect_from(&app, FIRST).await;
    assert_served(&mut next, &app).await;
    assert_eq!(until_closed(&mut held[0]).await, Closed::quietly());
}
