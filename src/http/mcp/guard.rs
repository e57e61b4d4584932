//! The middleware in front of rmcp on `/mcp`: it reads the request's
//! headers into [`admission::Inputs`], lets [`crate::mcp::admit`] run the
//! checks in their order (site, declared size, token, budgets, body, store,
//! message; the order and the reasons for it are documented there), and
//! answers a refusal as [`error::admission_refusal`] says. A request let
//! through goes to rmcp with its [`CallContext`](crate::mcp::CallContext)
//! and the reader the store look-up used in its extensions; a 415 from
//! rmcp for a JSON body (it could not read the message) becomes 400
//! -32600, a store outage during the call 503, and while DPoP nonces are
//! required the answer to a DPoP request carries the current one.
//!
//! The other endpoints keep the body-before-store order of the admission
//! by construction: their handlers take the body as an extractor
//! (`Bytes`, `Form`, [`crate::http::oauth::client_credentials`]'s
//! `ClientRequest`, the admin pages' `OwnerPost`), which axum runs before
//! the handler's first statement, and the extractors that run before it
//! (the signed-in person, the session) take a connection for one query
//! and give it back before the body is read.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, header};
use axum::middleware::Next;
use axum::response::Response;
use time::OffsetDateTime;

use super::{Guard, error};
use crate::mcp::StoreOutage;
use crate::mcp::admission::Inputs;
use crate::mcp::bearer::Scheme;

const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

fn header_str(headers: &HeaderMap, name: HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// What the admission needs to know of the request.
fn inputs(parts: &Parts, now: OffsetDateTime) -> Inputs<'_> {
    let headers = &parts.headers;
    let authority = parts.uri.authority().map(|a| a.as_str());
    Inputs {
        host: authority.or_else(|| header_str(headers, header::HOST)),
        origin: headers.get(header::ORIGIN).map(|v| v.as_bytes()),
        content_length: header_str(headers, header::CONTENT_LENGTH)
            .and_then(|v| v.trim().parse().ok()),
        authorization: header_str(headers, header::AUTHORIZATION),
        query: parts.uri.query(),
        proofs: crate::http::dpop::proofs(headers),
        method: parts.method.as_str(),
        protocol_version: header_str(headers, PROTOCOL_VERSION),
        now,
    }
}

/// Whether the body says it is JSON (`Content-Type` essence).
fn is_json(headers: &HeaderMap) -> bool {
    let essence = header_str(headers, header::CONTENT_TYPE).and_then(|v| v.split(';').next());
    essence.is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
}

pub async fn guard(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let (app, inputs) = (&guard.app, inputs(&parts, guard.app.clock.now()));
    let (resource, budgets, body) = (guard.resource(), guard.budgets(), body.into_data_stream());
    let admitted = match crate::mcp::admit(&resource, &budgets, &inputs, body).await {
        Ok(admitted) => admitted,
        Err(refusal) => return error::admission_refusal(&app.issuer, refusal),
    };
    let json_body = is_json(&parts.headers);
    let (outage, reader) = (StoreOutage::default(), admitted.reader);
    parts.extensions.insert(admitted.context);
    parts.extensions.insert(reader.clone());
    parts.extensions.insert(outage.clone());
    let body = Body::from(admitted.body);
    let response = next.run(Request::from_parts(parts, body)).await;
    // A reader the call did not use goes back before the answer is
    // written: the client may take its time reading it.
    drop(reader.take());
    let mut response = error::after_rmcp(response, outage.take(), admitted.id, json_body);
    if admitted.scheme == Scheme::Dpop && app.dpop.requires_nonce() {
        let nonce = app.dpop.fresh_nonce(app.clock.now());
        crate::http::dpop::offer_nonce(response.headers_mut(), &nonce);
    }
    response
}
