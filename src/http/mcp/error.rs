//! MCP clients' errors: where an `/mcp` refusal becomes a response (the
//! rule for every kind of client: [`crate::http`]).
//!
//! Authorization refusals follow RFC 6750 §3 and MCP's authorization rules:
//! every 401 carries `WWW-Authenticate: Bearer resource_metadata="…"` (the
//! URL built from the configured issuer), with `scope` when no token came
//! and `error="invalid_token"` when a bad one did; a token short of scope
//! gets 403 `error="insufficient_scope"` naming the scope. Everything else
//! (wire refusals, limits, Origin) is a JSON-RPC error body. The reason a
//! token was refused is logged here, never sent.
//!
//! The store failing is never a token refusal: a client told 401 would
//! throw its tokens away and send its user through consent again. A
//! database out of reach is 503 with `Retry-After` and a JSON-RPC error
//! body ([`unavailable`]), any other failure 500 ([`internal`]);
//! [`store_failure`] picks between them.
//!
//! DPoP (RFC 9449 §7.1): a refusal of a request that used the `DPoP`
//! scheme, and every proof refusal, carries a `DPoP algs="…"` challenge
//! with the error first, then a plain `Bearer resource_metadata="…"` one
//! for clients that only know bearer tokens; `use_dpop_nonce` comes with
//! the nonce in `DPoP-Nonce`. A DPoP-bound token sent as a bearer token is
//! the bearer `invalid_token` answer with the `DPoP` challenge after it,
//! saying how the token must be presented. Each challenge is its own
//! `WWW-Authenticate` field.

use std::time::Duration;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::domain::Issuer;
use crate::domain::ScopeSet;
use crate::mcp::admission::{self, MAX_BODY, Spent};
use crate::mcp::bearer::{InvalidToken, Refusal, Scheme};
use crate::mcp::resource_metadata;
use crate::mcp::wire::{self, WireRefusal, code};
use crate::storage::{RETRY_AFTER_UNAVAILABLE, StoreError};

/// The challenge of a request without a token: both scopes as the hint.
pub fn no_token_challenge(issuer: &Issuer) -> String {
    format!(
        r#"Bearer resource_metadata="{}", scope="{}""#,
        resource_metadata::url(issuer),
        ScopeSet::all().to_wire()
    )
}

/// The `DPoP` challenge: the accepted algorithms, the error (with the
/// scopes for `insufficient_scope`), the resource metadata.
fn dpop_challenge(issuer: &Issuer, error: &str, scopes: Option<&ScopeSet>) -> String {
    let scope = scopes
        .map(|s| format!(r#", scope="{}""#, s.to_wire()))
        .unwrap_or_default();
    format!(
        r#"DPoP algs="{}", error="{error}"{scope}, resource_metadata="{}""#,
        crate::oauth::dpop::algs(),
        resource_metadata::url(issuer)
    )
}

/// An admission refusal as its response.
pub fn admission_refusal(issuer: &Issuer, refusal: admission::Refusal) -> Response {
    match refusal {
        admission::Refusal::ForeignHost => forbidden_origin("Host"),
        admission::Refusal::ForeignOrigin => forbidden_origin("Origin"),
        admission::Refusal::BodyTooLarge => body_too_large(MAX_BODY),
        admission::Refusal::Token { refusal, scheme } => refusal_to(issuer, &refusal, scheme),
        admission::Refusal::RateLimited { wait, spent } => rate_limited(
            wait,
            match spent {
                Spent::App => "this app",
                Spent::Account => "this account",
            },
        ),
        admission::Refusal::Wire(refusal) => wire_refusal(&refusal),
        admission::Refusal::Store { error, id } => store_failure(id, &error),
    }
}

/// A refusal of a request whose token came with `scheme`, as its response.
pub fn refusal_to(issuer: &Issuer, refusal: &Refusal, scheme: Scheme) -> Response {
    let metadata = resource_metadata::url(issuer);
    let plain_bearer = || format!(r#"Bearer resource_metadata="{metadata}""#);
    let dpop = |response: Response, error: &str, scopes: Option<&ScopeSet>| {
        with_challenges(
            response,
            [dpop_challenge(issuer, error, scopes), plain_bearer()],
        )
    };
    match refusal {
        Refusal::InvalidDpopProof(why) => {
            tracing::info!(reason = %why, "MCP request refused: invalid_dpop_proof");
            dpop(
                body(
                    StatusCode::UNAUTHORIZED,
                    Some("invalid_dpop_proof"),
                    "the DPoP proof is malformed, expired, replayed, or does not match this request or token",
                ),
                "invalid_dpop_proof",
                None,
            )
        }
        Refusal::UseDpopNonce(nonce) => {
            let mut response = dpop(
                body(
                    StatusCode::UNAUTHORIZED,
                    Some("use_dpop_nonce"),
                    "the DPoP proof must carry the nonce in the DPoP-Nonce header",
                ),
                "use_dpop_nonce",
                None,
            );
            crate::http::dpop::offer_nonce(response.headers_mut(), nonce);
            response
        }
        Refusal::InvalidToken(why) if scheme == Scheme::Dpop => {
            tracing::info!(reason = %why, "MCP request refused: invalid_token");
            dpop(
                body(
                    StatusCode::UNAUTHORIZED,
                    Some("invalid_token"),
                    INVALID_TOKEN,
                ),
                "invalid_token",
                None,
            )
        }
        Refusal::InsufficientScope(scopes) if scheme == Scheme::Dpop => dpop(
            body(
                StatusCode::FORBIDDEN,
                Some("insufficient_scope"),
                INSUFFICIENT_SCOPE,
            ),
            "insufficient_scope",
            Some(scopes),
        ),
        Refusal::InvalidToken(InvalidToken::BoundTokenAsBearer) => {
            let mut response = bearer_refusal(issuer, refusal);
            let challenge = dpop_challenge(issuer, "invalid_token", None);
            if let Ok(value) = HeaderValue::from_str(&challenge) {
                response
                    .headers_mut()
                    .append(header::WWW_AUTHENTICATE, value);
            }
            response
        }
        _ => bearer_refusal(issuer, refusal),
    }
}

const INVALID_TOKEN: &str = "the access token is expired, revoked or otherwise invalid";
const INSUFFICIENT_SCOPE: &str = "the access token does not carry the scope this request needs";

/// A JSON error body with `status`.
fn body(status: StatusCode, error: Option<&str>, description: &str) -> Response {
    let mut body = json!({ "error_description": description });
    if let (Some(error), Some(object)) = (error, body.as_object_mut()) {
        object.insert("error".into(), Value::String(error.to_owned()));
    }
    (status, Json(body)).into_response()
}

/// Each challenge as its own `WWW-Authenticate` field, in order.
fn with_challenges<const N: usize>(mut response: Response, challenges: [String; N]) -> Response {
    for challenge in challenges {
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .append(header::WWW_AUTHENTICATE, value);
        }
    }
    response
}

fn bearer_refusal(issuer: &Issuer, refusal: &Refusal) -> Response {
    let metadata = resource_metadata::url(issuer);
    let (status, challenge, error, description) = match refusal {
        Refusal::NoToken => (
            StatusCode::UNAUTHORIZED,
            no_token_challenge(issuer),
            None,
            "a bearer token is required in the Authorization header",
        ),
        Refusal::TokenInQuery => (
            StatusCode::BAD_REQUEST,
            format!(r#"Bearer resource_metadata="{metadata}", error="invalid_request""#),
            Some("invalid_request"),
            "access tokens are accepted only in the Authorization header",
        ),
        Refusal::InvalidToken(why) => {
            tracing::info!(reason = %why, "MCP request refused: invalid_token");
            (
                StatusCode::UNAUTHORIZED,
                format!(r#"Bearer resource_metadata="{metadata}", error="invalid_token""#),
                Some("invalid_token"),
                INVALID_TOKEN,
            )
        }
        Refusal::InsufficientScope(scopes) => (
            StatusCode::FORBIDDEN,
            format!(
                r#"Bearer error="insufficient_scope", scope="{}", resource_metadata="{metadata}""#,
                scopes.to_wire()
            ),
            Some("insufficient_scope"),
            INSUFFICIENT_SCOPE,
        ),
        // Answered above with the DPoP challenge; kept whole here too.
        Refusal::InvalidDpopProof(_) | Refusal::UseDpopNonce(_) => {
            return refusal_to(issuer, refusal, Scheme::Dpop);
        }
    };
    with_challenges(body(status, error, description), [challenge])
}

fn jsonrpc(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}

pub fn wire_refusal(refusal: &WireRefusal) -> Response {
    let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::BAD_REQUEST);
    jsonrpc(status, refusal.body())
}

/// A present `Origin` (or a `Host`) that is not the issuer's: 403.
pub fn forbidden_origin(what: &str) -> Response {
    jsonrpc(
        StatusCode::FORBIDDEN,
        wire::error_body(
            Value::Null,
            code::INVALID_REQUEST,
            &format!("Forbidden: {what} header is not allowed"),
            None,
        ),
    )
}

pub fn body_too_large(limit: usize) -> Response {
    jsonrpc(
        StatusCode::PAYLOAD_TOO_LARGE,
        wire::error_body(
            Value::Null,
            code::INVALID_REQUEST,
            &format!(
                "Invalid Request: the body is larger than {} KiB",
                limit / 1024
            ),
            None,
        ),
    )
}

/// 429 with `Retry-After` (whole seconds, at least 1).
/// `whose` names the budget spent: "this app" or "this account".
pub fn rate_limited(wait: Duration, whose: &str) -> Response {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let seconds = seconds.max(1);
    let mut response = jsonrpc(
        StatusCode::TOO_MANY_REQUESTS,
        wire::error_body(
            Value::Null,
            code::INVALID_REQUEST,
            &format!("Too many requests for {whose}; retry in {seconds} s"),
            Some(json!({ "retryAfterSeconds": seconds })),
        ),
    );
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// A body rmcp could not read as a JSON-RPC message although it is JSON
/// (rmcp answers 415): 400, -32600.
pub fn not_a_message(id: Value) -> Response {
    jsonrpc(
        StatusCode::BAD_REQUEST,
        wire::error_body(
            id,
            code::INVALID_REQUEST,
            "Invalid Request: not a valid MCP message",
            None,
        ),
    )
}

/// rmcp's answer to an admitted request (`id`): 503 when the store was
/// out of reach during the call (`outage`, its cause), 400 -32600 for a
/// 415 to a JSON body (rmcp could not read the message), else as it is.
pub fn after_rmcp(response: Response, outage: Option<String>, id: Value, json: bool) -> Response {
    if let Some(cause) = outage {
        return unavailable(id, &cause);
    }
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE && json {
        return not_a_message(id);
    }
    response
}

/// 503 with `Retry-After` and a JSON-RPC error: the database is out of
/// reach, the caller's token is fine.
pub fn unavailable(id: Value, detail: &dyn std::fmt::Display) -> Response {
    tracing::warn!(error = %detail, "MCP request not served: the database is unavailable");
    let seconds = RETRY_AFTER_UNAVAILABLE.as_secs().max(1);
    let mut response = jsonrpc(
        StatusCode::SERVICE_UNAVAILABLE,
        wire::error_body(
            id,
            code::UNAVAILABLE,
            &format!(
                "Service unavailable: the farm records cannot be reached just now; retry in {seconds} s"
            ),
            Some(json!({ "retryAfterSeconds": seconds })),
        ),
    );
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// A storage failure as its response to the request `id`: 503 when the
/// database is out of reach, else 500.
pub fn store_failure(id: Value, err: &StoreError) -> Response {
    if err.is_unavailable() {
        unavailable(id, err)
    } else {
        internal(err)
    }
}

pub fn internal(detail: &dyn std::fmt::Display) -> Response {
    tracing::error!(%detail, "MCP request failed");
    jsonrpc(
        StatusCode::INTERNAL_SERVER_ERROR,
        wire::error_body(Value::Null, code::INTERNAL_ERROR, "Internal error", None),
    )
}
