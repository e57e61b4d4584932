//! The middleware in front of rmcp on `/mcp`: everything decided at the
//! HTTP level, in this order, each step refusing before the next runs.
//!
//! 1. `Host` and `Origin` (DNS rebinding, threat 17): a `Host` other than
//!    the issuer's authority or one of `--allowed-hosts` (for a proxy that
//!    rewrites it), or an `Origin` present and not the issuer's origin, is
//!    a 403 before any token is looked at; the refused `Host` is logged;
//! 2. a declared `Content-Length` over 64 KiB: 413, nothing read;
//! 3. the token ([`crate::mcp::bearer`]): header present (`Bearer`, or
//!    `DPoP` with a proof), none in the query, signature and claims, then
//!    its binding: a DPoP-bound token only with a good proof by its key,
//!    for `<issuer>/mcp` (the configured issuer, never `Host`);
//! 4. the grant's request budget, then its subject's over all its grants
//!    ([`super::rate_limit`]): 429;
//! 5. the body, whatever the method, read up to 64 KiB (413 beyond);
//! 6. a DPoP proof's `jti` spent in the shared store (a replay: 401), then
//!    the one store look-up; the grant's (or automation's) `last_used_at`
//!    written at most once a minute. The store failing here, or in the
//!    tool, is never a refusal: 503 with `Retry-After` and a JSON-RPC error
//!    body when the database is out of reach (a client told 401 would drop
//!    its tokens), else 500;
//! 7. for a POST, the body checked by [`crate::mcp::wire`] (batches,
//!    malformed JSON, protocol version header, `initialize` on the 2026
//!    wire), then the step-up decision for a `tools/call` whose tool the
//!    role allows but the scopes do not (403);
//! 8. the [`CallContext`](crate::mcp::CallContext) put in the request's
//!    extensions, and rmcp called. A 415 from rmcp for a JSON body (it could
//!    not read the message) becomes 400 -32600. While DPoP nonces are
//!    required, the answer to a DPoP request carries the current one.
//!
//! # Why the body comes before the store
//!
//! Steps 1 to 4 need no database connection (a key set reload at step 3
//! takes one and gives it back), step 6 takes one, and the tool reuses it.
//! A client sends its body at its own pace, up to the body timeout (20 s):
//! read after step 6, it would hold that connection all the while, and any
//! holder of any token (a viewer's, an automation's) sending a few dozen
//! slow bodies held every connection, so the owner's calls, refreshes at
//! `/token` and `/readyz` all waited (issue 31). So the store is asked
//! only once the whole body is in, and the reader goes back before the
//! answer is written, which a client may also read slowly
//! (`tests/api/slow_bodies.rs`). The other endpoints keep the same order
//! by construction: their handlers take the body as an extractor
//! (`Bytes`, `Form`, [`crate::http::oauth::client_credentials`]'s
//! `ClientRequest`, the admin pages' `OwnerPost`), which axum runs before
//! the handler's first statement, and the extractors that run before it
//! (the signed-in person, the session) take a connection for one query
//! and give it back before the body is read.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;
use serde_json::Value;
use time::OffsetDateTime;

use super::error;
use super::rate_limit::Budget;
use crate::domain::Issuer;
use crate::mcp::bearer::{self, AuthError, Scheme};
use crate::mcp::wire;
use crate::mcp::{CallContext, Caller, HeldReader, StoreOutage};
use crate::oauth::access_token::{AccessClaims, TokenSubject};
use crate::oauth::dpop::Proof;
use crate::state::AppState;
use crate::storage::{StoreError, automations, grants};

/// The largest `/mcp` request body (threat 24).
pub const MAX_BODY: usize = 64 * 1024;

const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

#[derive(Clone)]
pub struct Guard {
    pub app: AppState,
    pub per_grant: Budget,
    pub per_subject: Budget,
}

fn header_str(headers: &HeaderMap, name: HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Which header made a request foreign.
enum Foreign {
    /// The `Host` (or the request target's authority), as sent; `None`
    /// when there was none, or it was not text.
    Host(Option<String>),
    Origin,
}

/// `Host` is the issuer's authority or an allowed host (exactly, ignoring
/// ASCII case); `Origin`, when present, the issuer's origin.
fn same_site(issuer: &Issuer, allowed_hosts: &[String], request: &Parts) -> Result<(), Foreign> {
    let host = request
        .uri
        .authority()
        .map(|a| a.as_str())
        .or_else(|| header_str(&request.headers, header::HOST));
    let known = |h: &str| {
        h.eq_ignore_ascii_case(issuer.authority())
            || allowed_hosts.iter().any(|a| h.eq_ignore_ascii_case(a))
    };
    if !host.is_some_and(known) {
        return Err(Foreign::Host(host.map(str::to_owned)));
    }
    match request.headers.get(header::ORIGIN) {
        None => Ok(()),
        Some(origin) if origin.as_bytes() == issuer.as_str().as_bytes() => Ok(()),
        Some(_) => Err(Foreign::Origin),
    }
}

/// A `Content-Length` over [`MAX_BODY`].
fn declared_over_cap(headers: &HeaderMap) -> bool {
    header_str(headers, header::CONTENT_LENGTH)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > MAX_BODY as u64)
}

/// The body, or the response refusing it (413 past the cap).
async fn read_body(body: Body) -> Result<Vec<u8>, Response> {
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            tracing::info!(error = %e, "MCP request body could not be read");
            error::wire_refusal(&wire::WireRefusal::Parse)
        })?;
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(error::body_too_large(MAX_BODY));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The JSON-RPC id of a body, for an error answered before rmcp read it.
fn request_id(body: Option<&[u8]>) -> Value {
    body.and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok())
        .and_then(|message| match message.get("id") {
            Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
            _ => None,
        })
        .unwrap_or(Value::Null)
}

fn is_json(headers: &HeaderMap) -> bool {
    header_str(headers, header::CONTENT_TYPE).is_some_and(|v| {
        v.split(';')
            .next()
            .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
    })
}

/// Why [`check`] or [`admit`] let a request go no further.
enum Denied {
    /// The answer to send, as it is.
    Refused(Response),
    /// The store failed: answered once the body is read, so that the
    /// JSON-RPC error carries the request's id.
    Store(StoreError),
}

impl From<Response> for Denied {
    fn from(response: Response) -> Self {
        Self::Refused(response)
    }
}

/// What steps 1 to 4 found: a verified token, its proof still to spend,
/// and how it came.
struct Checked {
    claims: AccessClaims,
    proof: Option<Proof>,
    scheme: Scheme,
}

impl Checked {
    /// A refusal is the token's fault (401/403); a store failure never is.
    fn deny(&self, issuer: &Issuer, err: AuthError) -> Denied {
        match err {
            AuthError::Refused(refusal) => {
                Denied::Refused(error::refusal_to(issuer, &refusal, self.scheme))
            }
            AuthError::Store(err) => Denied::Store(err),
        }
    }
}

/// Steps 1 to 4: the request's site, declared size, token and budgets,
/// none of which holds a database connection.
async fn check(guard: &Guard, parts: &Parts, now: OffsetDateTime) -> Result<Checked, Denied> {
    let app = &guard.app;
    match same_site(&app.issuer, &app.config.allowed_hosts, parts) {
        Ok(()) => {}
        Err(Foreign::Host(host)) => {
            // Named, so that an operator behind a proxy that rewrites Host
            // sees which value to allow. Debug-quoted and cut short: the
            // header is the client's.
            let host = host.map(|h| h.chars().take(100).collect::<String>());
            tracing::warn!(
                host = ?host,
                issuer = %app.issuer.authority(),
                "MCP request refused: its Host is neither the issuer's nor one of --allowed-hosts"
            );
            return Err(error::forbidden_origin("Host").into());
        }
        Err(Foreign::Origin) => {
            tracing::info!("MCP request refused: foreign Origin");
            return Err(error::forbidden_origin("Origin").into());
        }
    }
    if declared_over_cap(&parts.headers) {
        return Err(error::body_too_large(MAX_BODY).into());
    }

    let presented = bearer::presented_token(
        header_str(&parts.headers, header::AUTHORIZATION),
        parts.uri.query(),
    )
    .map_err(|refusal| Denied::Refused(error::refusal(&app.issuer, &refusal)))?;
    let scheme = presented.scheme;
    let refuse = |refusal: &bearer::Refusal| error::refusal_to(&app.issuer, refusal, scheme);
    let claims = match bearer::verify_token(&app.keys, &app.issuer, presented.token, now).await {
        Ok(claims) => claims,
        Err(AuthError::Refused(refusal)) => return Err(Denied::Refused(refuse(&refusal))),
        Err(AuthError::Store(err)) => return Err(Denied::Store(err)),
    };
    let proof = bearer::check_proof(
        &presented,
        &claims,
        &crate::http::dpop::proofs(&parts.headers),
        parts.method.as_str(),
        &app.issuer,
        &app.dpop,
        now,
    )
    .map_err(|refusal| Denied::Refused(refuse(&refusal)))?;
    // An automation is its own app and its own subject: both budgets.
    let (app_key, subject_key) = match claims.subject() {
        Some(TokenSubject::Member { user, grant }) => (Some(grant.0), Some(user.0)),
        Some(TokenSubject::Automation(id)) => (Some(id.0), Some(id.0)),
        None => (None, None),
    };
    if let Some(key) = app_key
        && let Err(wait) = guard.per_grant.check(key)
    {
        tracing::info!(grant = %key, "MCP rate limit reached");
        return Err(error::rate_limited(wait, "this app").into());
    }
    if let Some(subject) = subject_key
        && let Err(wait) = guard.per_subject.check(subject)
    {
        tracing::info!(subject = %subject, "MCP rate limit reached for the subject over all its apps");
        return Err(error::rate_limited(wait, "this account").into());
    }
    Ok(Checked {
        claims,
        proof,
        scheme,
    })
}

/// Step 6, once the body is in: the proof spent and the store's word,
/// ending in the caller's context and the reader that answered, for the
/// tool to reuse.
async fn admit(
    app: &AppState,
    checked: &Checked,
    now: OffsetDateTime,
) -> Result<(CallContext, HeldReader), Denied> {
    let deny = |err| checked.deny(&app.issuer, err);
    if let Some(proof) = &checked.proof {
        bearer::spend_proof(&app.store, proof).await.map_err(deny)?;
    }
    let mut db = app.store.read().await.map_err(Denied::Store)?;
    let authorized = bearer::authorize(&mut db, &checked.claims, now)
        .await
        .map_err(deny)?;
    if !authorized.touch_last_used {
        return Ok((authorized.context, HeldReader::new(db)));
    }
    // One connection at a time: the reader goes back before the write waits
    // for its own (on PostgreSQL both come from one pool, and requests that
    // each held one while waiting for another could take every connection).
    // The tool then acquires a reader of its own.
    drop(db);
    if let Err(err) = touch_last_used(app, &authorized.context.caller, now).await {
        // Bookkeeping for the connected-apps page; the call itself is fine.
        tracing::warn!(error = %err, "could not record the grant's last use");
    }
    Ok((authorized.context, HeldReader::default()))
}

async fn touch_last_used(
    app: &AppState,
    caller: &Caller,
    now: OffsetDateTime,
) -> Result<(), crate::storage::StoreError> {
    let mut tx = app.store.write().await?;
    match caller {
        Caller::Member { grant, .. } => grants::touch_last_used(&mut tx, *grant, now).await?,
        Caller::Automation { id, .. } => automations::touch_last_used(&mut tx, *id, now).await?,
    };
    tx.commit().await
}

/// The answer to a request refused before its body was read. A refusal
/// sent before the body has arrived makes hyper close the connection
/// without saying so, and a client that reuses it (httpx does) sees
/// "server disconnected" instead of our 401. Reading the (capped) body
/// first keeps the connection usable; a body declared over the cap is not
/// worth reading.
async fn refuse_unread(denied: Denied, headers: &HeaderMap, body: Body) -> Response {
    let bytes = if declared_over_cap(headers) {
        None
    } else {
        read_body(body).await.ok()
    };
    match denied {
        Denied::Refused(response) => response,
        Denied::Store(err) => error::store_failure(request_id(bytes.as_deref()), &err),
    }
}

pub async fn guard(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let now = guard.app.clock.now();
    let checked = match check(&guard, &parts, now).await {
        Ok(checked) => checked,
        Err(denied) => return refuse_unread(denied, &parts.headers, body).await,
    };
    // The whole body before any connection is taken (see the module doc).
    let bytes = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let (context, reader) = match admit(&guard.app, &checked, now).await {
        Ok(admitted) => admitted,
        Err(Denied::Refused(response)) => return response,
        Err(Denied::Store(err)) => return error::store_failure(request_id(Some(&bytes)), &err),
    };

    let scheme = checked.scheme;
    let mut id = Value::Null;
    if parts.method == Method::POST {
        let version = header_str(&parts.headers, PROTOCOL_VERSION);
        let envelope = match wire::inspect(version, &bytes) {
            Ok(envelope) => envelope,
            Err(refusal) => return error::wire_refusal(&refusal),
        };
        if let Some(tool) = &envelope.tool
            && let Some(scope) = bearer::step_up_scope(&context, tool)
        {
            tracing::info!(tool = %tool, scope = scope.as_str(), "MCP call needs step-up");
            return error::step_up(&guard.app.issuer, scope, scheme);
        }
        id = envelope.id;
    }
    let json_body = is_json(&parts.headers);
    let outage = StoreOutage::default();
    parts.extensions.insert(context);
    parts.extensions.insert(reader.clone());
    parts.extensions.insert(outage.clone());
    let mut response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    // A reader the call did not use goes back before the answer is
    // written: the client may take its time reading it.
    drop(reader.take());
    if let Some(cause) = outage.take() {
        return error::unavailable(id, &cause);
    }
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE && json_body {
        response = error::not_a_message(id);
    }
    let dpop = &guard.app.dpop;
    if scheme == Scheme::Dpop && dpop.requires_nonce() {
        let nonce = dpop.fresh_nonce(guard.app.clock.now());
        crate::http::dpop::offer_nonce(response.headers_mut(), &nonce);
    }
    response
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::request_id;

    /// The id a store failure's JSON-RPC error answers to (on SQLite the
    /// guard's reads do not fail, so only PostgreSQL's fault tests reach
    /// it over HTTP).
    #[test]
    fn a_store_failure_answers_to_the_requests_own_id() {
        let id = |body: &[u8]| request_id(Some(body));
        assert_eq!(id(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#), json!(7));
        assert_eq!(
            id(br#"{"jsonrpc":"2.0","id":"a-1","method":"x"}"#),
            json!("a-1")
        );
        // No id JSON-RPC allows to answer to: null.
        for body in [
            &br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#[..],
            br#"{"jsonrpc":"2.0","id":{"n":1},"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#,
            b"not json",
        ] {
            assert_eq!(id(body), json!(null), "{}", String::from_utf8_lossy(body));
        }
        assert_eq!(request_id(None), json!(null), "a GET has no body");
    }
}
