//! A throwaway HTTPS host for tests that need Coop to fetch something over
//! real TLS (Client ID Metadata Documents first of all).
//!
//! Each [`TlsHost::start`] generates, at test time, a fresh CA and a server
//! certificate for `localhost` and `127.0.0.1` signed by it, writes the CA
//! certificate as PEM to a temporary file, and serves HTTPS on
//! `127.0.0.1:<random port>` until the host is dropped. Nothing is
//! downloaded and nothing is shared between tests.
//!
//! ```ignore
//! let host = TlsHost::start().await;
//! // A valid metadata document whose client_id is its own URL:
//! let client_id = host.serve_client_document(
//!     "/app/client.json", "Example App", &["http://127.0.0.1:9999/cb"]);
//! // Anything else: a JSON body, headers, status, redirects, delays, sizes.
//! host.serve("/other.json", Reply::json(&json!({"a": 1})).header("cache-control", "max-age=600"));
//! host.serve("/moved", Reply::redirect(302, "/app/client.json"));
//! host.serve("/slow", Reply::json(&doc).delayed(Duration::from_secs(2)));
//! host.serve("/big", Reply::bytes("application/json", vec![b' '; 6000]).chunked());
//! // Coop trusting this host's CA and admitting loopback:
//! let app = TestApp::spawn_with(engine, |c| c.cimd_test = host.cimd_settings(true)).await;
//! assert_eq!(host.hits("/app/client.json"), 1);
//! ```
//!
//! - [`TlsHost::url`] is `https://localhost:<port><path>` (a host name, so the
//!   fetcher's resolver is exercised); [`TlsHost::ip_url`] is the
//!   `https://127.0.0.1:<port><path>` form. Both names are in the certificate.
//! - [`TlsHost::ca_pem_path`] is the CA file, e.g. for
//!   `coop serve --cimd-test-extra-ca PATH` or a non-Rust client under test
//!   (`SSL_CERT_FILE`, `NODE_EXTRA_CA_CERTS`, `REQUESTS_CA_BUNDLE`).
//! - Routes are matched on the exact path and query; they may be added or
//!   replaced at any time (the URL, with its port, is known only after
//!   start). An unknown path answers 404. [`TlsHost::hits`] counts requests
//!   per path, routed or not.
//!   [`TlsHost::hits_on`] counts per path whatever the query, and
//!   [`TlsHost::total_hits`] every request the host received.
//! - [`Reply`] builds a response: `json`, `bytes`, `status`, `redirect`, then
//!   `header` (repeatable), `delayed` (before the response head), `held`
//!   (no response until [`TlsHost::release`]), `chunked` (no
//!   Content-Length), `stalled_body` (part of the body, then a pause).
// Not every helper is used by every test module at every stage.
#![allow(dead_code)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode, Uri};
use axum::response::Response;
use coop::config::CimdTestSettings;
use futures::StreamExt;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// One canned response.
#[derive(Clone, Debug)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    delay: Duration,
    held: bool,
    chunked: bool,
    stall: Option<Duration>,
}

impl Reply {
    /// 200 with `body` and its content type.
    pub fn bytes(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".to_owned(), content_type.to_owned())],
            body: body.into(),
            delay: Duration::ZERO,
            held: false,
            chunked: false,
            stall: None,
        }
    }

    /// 200 with `value` as `application/json`.
    pub fn json(value: &serde_json::Value) -> Self {
        Self::bytes("application/json", value.to_string())
    }

    /// `code` with an empty body.
    pub fn status(code: u16) -> Self {
        Self {
            status: code,
            ..Self::bytes("text/plain", Vec::new())
        }
    }

    /// A redirect (`code` 301/302/303/307/308) to `location`.
    pub fn redirect(code: u16, location: &str) -> Self {
        Self::status(code).header("location", location)
    }

    /// Adds a response header (repeat for several values).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Waits `delay` before sending the response head.
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Sends nothing until [`TlsHost::release`] is called (a host whose
    /// answers are in flight for as long as a test needs).
    pub fn held(mut self) -> Self {
        self.held = true;
        self
    }

    /// Streams the body in 1 KiB chunks without a Content-Length.
    pub fn chunked(mut self) -> Self {
        self.chunked = true;
        self
    }

    /// Sends the head and the first bytes of the body, then pauses `pause`
    /// before the rest (a host that dribbles its answer).
    pub fn stalled_body(mut self, pause: Duration) -> Self {
        self.stall = Some(pause);
        self
    }
}

struct Routes {
    replies: Mutex<HashMap<String, Reply>>,
    hits: Mutex<HashMap<String, usize>>,
    /// Whether held replies may go.
    released: watch::Sender<bool>,
}

impl Default for Routes {
    fn default() -> Self {
        Self {
            replies: Mutex::default(),
            hits: Mutex::default(),
            released: watch::Sender::new(false),
        }
    }
}

/// A running HTTPS host; stops when dropped.
pub struct TlsHost {
    port: u16,
    ca_pem: String,
    ca_pem_path: PathBuf,
    routes: Arc<Routes>,
    stop: Option<oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

impl Drop for TlsHost {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl TlsHost {
    /// Generates the certificates and starts serving (no routes yet).
    pub async fn start() -> Self {
        let (ca_pem, chain, key) = certificates();
        let dir = tempfile::tempdir().unwrap();
        let ca_pem_path = dir.path().join("coop-test-ca.pem");
        std::fs::write(&ca_pem_path, &ca_pem).unwrap();

        let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(config));

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let routes = Arc::new(Routes::default());
        let router = axum::Router::new()
            .fallback(answer)
            .with_state(routes.clone());
        let (stop, mut stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = &mut stopped => break,
                };
                let Ok((tcp, _)) = accepted else { continue };
                let acceptor = acceptor.clone();
                let service = TowerToHyperService::new(router.clone());
                tokio::spawn(async move {
                    // A client that refuses our certificate ends here.
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self {
            port,
            ca_pem,
            ca_pem_path,
            routes,
            stop: Some(stop),
            _dir: dir,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `https://localhost:<port>`.
    pub fn base_url(&self) -> String {
        format!("https://localhost:{}", self.port)
    }

    /// `https://localhost:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url())
    }

    /// `https://127.0.0.1:<port><path>`.
    pub fn ip_url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The file holding the CA certificate (PEM).
    pub fn ca_pem_path(&self) -> &Path {
        &self.ca_pem_path
    }

    /// The CA certificate itself (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Coop's test settings trusting this host's CA.
    pub fn cimd_settings(&self, allow_loopback: bool) -> CimdTestSettings {
        CimdTestSettings {
            extra_ca_pem: Some(self.ca_pem_path.clone()),
            allow_loopback,
        }
    }

    /// Answers requests for `path_and_query` with `reply` from now on.
    pub fn serve(&self, path_and_query: &str, reply: Reply) {
        self.routes
            .replies
            .lock()
            .unwrap()
            .insert(path_and_query.to_owned(), reply);
    }

    /// Serves a valid public-client metadata document at `path` (on the
    /// `localhost` URL) and returns its `client_id`.
    pub fn serve_client_document(
        &self,
        path: &str,
        client_name: &str,
        redirect_uris: &[&str],
    ) -> String {
        let client_id = self.url(path);
        self.serve(
            path,
            Reply::json(&serde_json::json!({
                "client_id": client_id,
                "client_name": client_name,
                "redirect_uris": redirect_uris,
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            })),
        );
        client_id
    }

    /// How many requests reached `path_and_query`.
    pub fn hits(&self, path_and_query: &str) -> usize {
        self.routes
            .hits
            .lock()
            .unwrap()
            .get(path_and_query)
            .copied()
            .unwrap_or(0)
    }
}

impl TlsHost {
    /// How many requests reached `path`, whatever their query.
    pub fn hits_on(&self, path: &str) -> usize {
        self.routes
            .hits
            .lock()
            .unwrap()
            .iter()
            .filter(|(key, _)| key.split('?').next() == Some(path))
            .map(|(_, count)| count)
            .sum()
    }

    /// How many requests the host received in all.
    pub fn total_hits(&self) -> usize {
        self.routes.hits.lock().unwrap().values().sum()
    }

    /// Lets every held reply go, now and from now on.
    pub fn release(&self) {
        self.routes.released.send_replace(true);
    }
}

async fn answer(State(routes): State<Arc<Routes>>, uri: Uri) -> Response {
    let key = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |pq| pq.as_str().to_owned());
    *routes.hits.lock().unwrap().entry(key.clone()).or_default() += 1;
    let reply = routes.replies.lock().unwrap().get(&key).cloned();
    let Some(reply) = reply else {
        return Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Body::empty())
            .unwrap();
    };
    tokio::time::sleep(reply.delay).await;
    if reply.held {
        let mut released = routes.released.subscribe();
        let _ = released.wait_for(|go| *go).await;
    }
    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    response.body(body(reply)).unwrap()
}

fn body(reply: Reply) -> Body {
    if let Some(pause) = reply.stall {
        let split = reply.body.len().min(16);
        let rest = reply.body[split..].to_vec();
        let first = futures::stream::once(async move {
            Ok::<_, Infallible>(Bytes::from(reply.body[..split].to_vec()))
        });
        let later = futures::stream::once(async move {
            tokio::time::sleep(pause).await;
            Ok::<_, Infallible>(Bytes::from(rest))
        });
        return Body::from_stream(first.chain(later));
    }
    if reply.chunked {
        let chunks: Vec<Result<Bytes, Infallible>> = reply
            .body
            .chunks(1024)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        return Body::from_stream(futures::stream::iter(chunks));
    }
    Body::from(reply.body)
}

/// A CA, and a server certificate for localhost and 127.0.0.1 signed by it:
/// (CA PEM, server chain, server key).
fn certificates() -> (String, Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "Coop test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let ca = Issuer::new(ca_params, ca_key);

    let mut server_params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    server_params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_key = KeyPair::generate().unwrap();
    let server_cert = server_params.signed_by(&server_key, &ca).unwrap();

    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    (
        ca_cert.pem(),
        vec![server_cert.der().clone(), ca_cert.der().clone()],
        key,
    )
}
