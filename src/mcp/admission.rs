//! The admission of one `/mcp` request: the order of its checks, written
//! once ([`admit`]), each step refusing before the next runs. The HTTP
//! edge (`http::mcp::guard`) reads the request's headers into [`Inputs`],
//! calls [`admit`] and turns a [`Refusal`] into its answer; it decides
//! nothing itself.
//!
//! 1. `Host` and `Origin` (DNS rebinding, threat 17): a `Host` other than
//!    the issuer's authority or one of `--allowed-hosts` (for a proxy that
//!    rewrites it), or an `Origin` present and not the issuer's origin, is
//!    refused before any token is looked at; the refused `Host` is logged;
//! 2. a declared `Content-Length` over [`MAX_BODY`]: refused, nothing read;
//! 3. the token ([`super::bearer`]): header present (`Bearer`, or `DPoP`
//!    with a proof), none in the query, signature and claims, then its
//!    binding: a DPoP-bound token only with a good proof by its key, for
//!    `<issuer>/mcp` (the configured issuer, never `Host`);
//! 4. the grant's request budget, then its subject's over all its grants
//!    ([`Budgets`]);
//! 5. the body, whatever the method, read up to [`MAX_BODY`];
//! 6. a DPoP proof's `jti` spent in the shared store (a replay is refused),
//!    then the one store look-up ([`super::bearer::authorize`]); the
//!    grant's (or automation's) `last_used_at` written at most once a
//!    minute. The store failing here is never a refusal of the token:
//!    [`Refusal::Store`], answered to the request's JSON-RPC id (a client
//!    told its token is bad would drop it);
//! 7. for a POST, the body checked by [`super::wire`] (batches, malformed
//!    JSON, protocol version header, `initialize` on the 2026 wire), then
//!    the step-up decision for a `tools/call` whose tool the role allows
//!    but the scopes do not.
//!
//! What is [`Admitted`] then goes to rmcp with its [`CallContext`].
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
//! only once the whole body is in (`tests/api/slow_bodies.rs`).
//!
//! # Why a refused request's body is read all the same
//!
//! A refusal sent before the body has arrived makes hyper close the
//! connection without saying so, and a client that reuses it (httpx does)
//! sees "server disconnected" instead of its 401. So a request refused at
//! steps 1 to 4 still has its (capped) body read, unless it declared one
//! over the cap, which is not worth reading; a store failure there is then
//! answered to the body's JSON-RPC id too.

use std::fmt::Display;
use std::time::Duration;

use futures::{Stream, StreamExt};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use super::bearer::{self, AuthError, Scheme};
use super::context::{CallContext, Caller, HeldReader};
use super::wire::{self, WireRefusal};
use crate::domain::{Issuer, ScopeSet};
use crate::oauth::access_token::{AccessClaims, TokenSubject};
use crate::oauth::dpop::{self, Proof};
use crate::oauth::keys::Keys;
use crate::storage::{Store, StoreError, automations, grants};

/// The largest `/mcp` request body (threat 24).
pub const MAX_BODY: usize = 64 * 1024;

/// What the HTTP edge read from the request, none of it trusted yet.
#[derive(Clone, Debug)]
pub struct Inputs<'a> {
    /// The request target's authority, else the `Host` header; `None` when
    /// there was neither, or it was not text.
    pub host: Option<&'a str>,
    /// The `Origin` header, when one came.
    pub origin: Option<&'a [u8]>,
    /// The declared `Content-Length`, when it is a number.
    pub content_length: Option<u64>,
    /// The `Authorization` header, when it is text.
    pub authorization: Option<&'a str>,
    /// The request target's query string.
    pub query: Option<&'a str>,
    /// The values of the `DPoP` headers.
    pub proofs: Vec<&'a str>,
    pub method: &'a str,
    /// The `MCP-Protocol-Version` header, when it is text.
    pub protocol_version: Option<&'a str>,
    /// The clock, read once for the whole admission.
    pub now: OffsetDateTime,
}

/// What the checks consult on the server's side.
#[derive(Clone, Copy)]
pub struct Resource<'a> {
    pub issuer: &'a Issuer,
    /// `--allowed-hosts`: `Host` values accepted besides the issuer's.
    pub allowed_hosts: &'a [String],
    pub keys: &'a Keys,
    pub dpop: &'a dpop::Policy,
    pub store: &'a Store,
}

/// One request budget, keyed by a grant or a subject id (threat 25); the
/// edge keeps it in memory, per replica.
pub trait Budget: Sync {
    /// Spends one request of `key`; `Err(wait)` when none is left.
    fn spend(&self, key: Uuid) -> Result<(), Duration>;
}

/// The two budgets a token spends from, in this order.
#[derive(Clone, Copy)]
pub struct Budgets<'a> {
    /// Per grant; an automation is its own app.
    pub per_grant: &'a dyn Budget,
    /// Per subject (the person, or the automation) over all its grants.
    pub per_subject: &'a dyn Budget,
}

/// Which budget was spent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spent {
    /// The grant's (or the automation's as an app).
    App,
    /// The subject's over all its apps.
    Account,
}

/// Why a request goes no further; each is answered as it is, nothing more
/// to decide.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// Step 1: the `Host` is neither the issuer's nor an allowed one.
    #[error("foreign Host")]
    ForeignHost,
    /// Step 1: an `Origin` other than the issuer's.
    #[error("foreign Origin")]
    ForeignOrigin,
    /// Steps 2 and 5: a body over [`MAX_BODY`].
    #[error("the body is larger than the cap")]
    BodyTooLarge,
    /// Steps 3, 6 and 7: the token, its proof or its scopes, with the
    /// scheme it came with (`Bearer` when it came with none).
    #[error("{refusal}")]
    Token {
        refusal: bearer::Refusal,
        scheme: Scheme,
    },
    /// Step 4: a budget is spent; retry after `wait`.
    #[error("rate limited")]
    RateLimited { wait: Duration, spent: Spent },
    /// Steps 5 and 7: the body is not one Coop takes.
    #[error("{0}")]
    Wire(WireRefusal),
    /// The store failed (at step 3 reloading keys, or at step 6): not the
    /// request's fault. `id` is its JSON-RPC id (`null` if none).
    #[error("{error}")]
    Store { error: StoreError, id: Value },
}

/// A request let through, for rmcp.
pub struct Admitted {
    pub context: CallContext,
    /// The reader the look-up used, for the tool to reuse (empty when it
    /// went back so that the last use could be written).
    pub reader: HeldReader,
    pub scheme: Scheme,
    /// A POST's JSON-RPC id (`null` otherwise), for an error answered
    /// after rmcp.
    pub id: Value,
    pub body: Vec<u8>,
}

/// Steps 1 to 7, in order: `body` is the request's body as it arrives.
pub async fn admit<S, C, E>(
    resource: &Resource<'_>,
    budgets: &Budgets<'_>,
    inputs: &Inputs<'_>,
    body: S,
) -> Result<Admitted, Refusal>
where
    S: Stream<Item = Result<C, E>> + Unpin,
    C: AsRef<[u8]>,
    E: Display,
{
    let checked = match check(resource, budgets, inputs).await {
        Ok(checked) => checked,
        Err(early) => return Err(refuse_unread(early, inputs, body).await),
    };
    let body = read_body(body).await?;
    let (context, reader) = settle(resource, &checked, inputs.now)
        .await
        .map_err(|denied| denied.answering(Some(&body)))?;
    let id = if inputs.method == "POST" {
        screen(inputs, &body, &context, checked.scheme)?
    } else {
        Value::Null
    };
    Ok(Admitted {
        context,
        reader,
        scheme: checked.scheme,
        id,
        body,
    })
}

/// A refusal, or the store failing before the request's id is known.
enum Denied {
    Refused(Refusal),
    Store(StoreError),
}

impl Denied {
    fn answering(self, body: Option<&[u8]>) -> Refusal {
        match self {
            Self::Refused(refusal) => refusal,
            Self::Store(error) => Refusal::Store {
                error,
                id: request_id(body),
            },
        }
    }
}

impl From<Refusal> for Denied {
    fn from(refusal: Refusal) -> Self {
        Self::Refused(refusal)
    }
}

/// What steps 1 to 4 found: a verified token, its proof still to spend,
/// and how it came.
struct Checked {
    claims: AccessClaims,
    proof: Option<Proof>,
    scheme: Scheme,
}

/// A token refusal or store failure, for a token that came with `scheme`.
fn token_denied(err: AuthError, scheme: Scheme) -> Denied {
    match err {
        AuthError::Refused(refusal) => Denied::Refused(Refusal::Token { refusal, scheme }),
        AuthError::Store(err) => Denied::Store(err),
    }
}

/// Steps 1 to 4: the request's site, declared size, token and budgets,
/// none of which holds a database connection.
async fn check(
    resource: &Resource<'_>,
    budgets: &Budgets<'_>,
    inputs: &Inputs<'_>,
) -> Result<Checked, Denied> {
    same_site(resource, inputs)?;
    if declared_over_cap(inputs) {
        return Err(Refusal::BodyTooLarge.into());
    }
    let presented =
        bearer::presented_token(inputs.authorization, inputs.query).map_err(|refusal| {
            Refusal::Token {
                refusal,
                scheme: Scheme::Bearer,
            }
        })?;
    let scheme = presented.scheme;
    let deny = |err| token_denied(err, scheme);
    let (issuer, now) = (resource.issuer, inputs.now);
    let claims = bearer::verify_token(resource.keys, issuer, presented.token, now)
        .await
        .map_err(deny)?;
    let proof = bearer::check_proof(
        &presented,
        &claims,
        &inputs.proofs,
        inputs.method,
        issuer,
        resource.dpop,
        now,
    )
    .map_err(|refusal| deny(refusal.into()))?;
    spend_budgets(budgets, &claims)?;
    Ok(Checked {
        claims,
        proof,
        scheme,
    })
}

/// Step 1: `Host` is the issuer's authority or an allowed host (exactly,
/// ignoring ASCII case); `Origin`, when present, the issuer's origin.
fn same_site(resource: &Resource<'_>, inputs: &Inputs<'_>) -> Result<(), Refusal> {
    let issuer = resource.issuer;
    let known = |h: &str| {
        h.eq_ignore_ascii_case(issuer.authority())
            || resource
                .allowed_hosts
                .iter()
                .any(|a| h.eq_ignore_ascii_case(a))
    };
    if !inputs.host.is_some_and(known) {
        // Named, so that an operator behind a proxy that rewrites Host
        // sees which value to allow. Debug-quoted and cut short: the
        // header is the client's.
        let host = inputs.host.map(|h| h.chars().take(100).collect::<String>());
        tracing::warn!(
            host = ?host,
            issuer = %issuer.authority(),
            "MCP request refused: its Host is neither the issuer's nor one of --allowed-hosts"
        );
        return Err(Refusal::ForeignHost);
    }
    match inputs.origin {
        None => Ok(()),
        Some(origin) if origin == issuer.as_str().as_bytes() => Ok(()),
        Some(_) => {
            tracing::info!("MCP request refused: foreign Origin");
            Err(Refusal::ForeignOrigin)
        }
    }
}

/// A declared `Content-Length` over [`MAX_BODY`].
fn declared_over_cap(inputs: &Inputs<'_>) -> bool {
    inputs.content_length.is_some_and(|n| n > MAX_BODY as u64)
}

/// Step 4: an automation is its own app and its own subject, so it spends
/// from both budgets under its own id.
fn spend_budgets(budgets: &Budgets<'_>, claims: &AccessClaims) -> Result<(), Refusal> {
    let (app_key, subject_key) = match claims.subject() {
        Some(TokenSubject::Member { user, grant }) => (Some(grant.0), Some(user.0)),
        Some(TokenSubject::Automation(id)) => (Some(id.0), Some(id.0)),
        None => (None, None),
    };
    if let Some(key) = app_key
        && let Err(wait) = budgets.per_grant.spend(key)
    {
        tracing::info!(grant = %key, "MCP rate limit reached");
        return Err(Refusal::RateLimited {
            wait,
            spent: Spent::App,
        });
    }
    if let Some(subject) = subject_key
        && let Err(wait) = budgets.per_subject.spend(subject)
    {
        tracing::info!(subject = %subject, "MCP rate limit reached for the subject over all its apps");
        return Err(Refusal::RateLimited {
            wait,
            spent: Spent::Account,
        });
    }
    Ok(())
}

/// Step 5: the whole body, up to [`MAX_BODY`].
async fn read_body<S, C, E>(mut body: S) -> Result<Vec<u8>, Refusal>
where
    S: Stream<Item = Result<C, E>> + Unpin,
    C: AsRef<[u8]>,
    E: Display,
{
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| {
            tracing::info!(error = %e, "MCP request body could not be read");
            Refusal::Wire(WireRefusal::Parse)
        })?;
        let chunk = chunk.as_ref();
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(Refusal::BodyTooLarge);
        }
        bytes.extend_from_slice(chunk);
    }
    Ok(bytes)
}

/// A refusal at steps 1 to 4, once the body is read (see the module doc).
async fn refuse_unread<S, C, E>(denied: Denied, inputs: &Inputs<'_>, body: S) -> Refusal
where
    S: Stream<Item = Result<C, E>> + Unpin,
    C: AsRef<[u8]>,
    E: Display,
{
    let bytes = if declared_over_cap(inputs) {
        None
    } else {
        read_body(body).await.ok()
    };
    denied.answering(bytes.as_deref())
}

/// Step 6, once the body is in: the proof spent and the store's word,
/// ending in the caller's context and the reader that answered, for the
/// tool to reuse.
async fn settle(
    resource: &Resource<'_>,
    checked: &Checked,
    now: OffsetDateTime,
) -> Result<(CallContext, HeldReader), Denied> {
    let deny = |err| token_denied(err, checked.scheme);
    if let Some(proof) = &checked.proof {
        bearer::spend_proof(resource.store, proof)
            .await
            .map_err(deny)?;
    }
    let mut db = resource.store.read().await.map_err(Denied::Store)?;
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
    if let Err(err) = touch_last_used(resource.store, &authorized.context.caller, now).await {
        // Bookkeeping for the connected-apps page; the call itself is fine.
        tracing::warn!(error = %err, "could not record the grant's last use");
    }
    Ok((authorized.context, HeldReader::default()))
}

async fn touch_last_used(
    store: &Store,
    caller: &Caller,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    let mut tx = store.write().await?;
    match caller {
        Caller::Member { grant, .. } => grants::touch_last_used(&mut tx, *grant, now).await?,
        Caller::Automation { id, .. } => automations::touch_last_used(&mut tx, *id, now).await?,
    };
    tx.commit().await
}

/// Step 7, for a POST: the message's envelope, then step-up. The JSON-RPC
/// id of a message let through.
fn screen(
    inputs: &Inputs<'_>,
    body: &[u8],
    context: &CallContext,
    scheme: Scheme,
) -> Result<Value, Refusal> {
    let envelope = wire::inspect(inputs.protocol_version, body).map_err(Refusal::Wire)?;
    if let Some(tool) = &envelope.tool
        && let Some(scope) = bearer::step_up_scope(context, tool)
    {
        tracing::info!(tool = %tool, scope = scope.as_str(), "MCP call needs step-up");
        return Err(Refusal::Token {
            refusal: bearer::Refusal::InsufficientScope(ScopeSet::from_scopes([scope])),
            scheme,
        });
    }
    Ok(envelope.id)
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

#[cfg(test)]
mod tests;
