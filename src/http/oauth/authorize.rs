//! `GET /authorize`: the authorization request.
//!
//! [`crate::oauth::authorize::begin`] runs the checks in their order, so a
//! bad request is refused the same way whether or not anyone is signed in,
//! and says what comes next; this handler renders it: a page for an
//! unknown client, an unusable client metadata document or an unregistered
//! redirect URI (never a redirect), a redirect carrying `error`, `state`
//! and `iss` for anything later, `/login?return_to=` the request to come
//! back with for a signed-out person, and for a signed-in one
//! [`super::consent::proceed`], which decides between refusing, the
//! change-password page, issuing a code at once, asking for the password
//! again and the consent screen (the last two store the request under its
//! own id to wait for the person).

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, RawQuery, State};
use axum::response::Response;

use super::consent;
use super::error::refusal_redirect;
use crate::http::error::PageError;
use crate::http::session::SignedIn;
use crate::oauth::authorize::{self, Outcome};
use crate::state::AppState;

pub async fn authorize(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    user: Option<SignedIn>,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let query = query.unwrap_or_default();
    let cimd = state.cimd.for_peer(peer.ip());
    let now = state.clock.now();
    match authorize::begin(&state.store, &cimd, &state.issuer, &query, user, now).await? {
        Outcome::Page(refusal) => Err(PageError::Authorization(refusal)),
        Outcome::DocumentNotFetched(throttle) => Err(PageError::DocumentNotFetched(throttle)),
        Outcome::Refused {
            redirect_uri,
            refusal,
            state: client_state,
        } => Ok(refusal_redirect(
            &redirect_uri,
            &refusal,
            client_state.as_deref(),
            &state.issuer,
        )),
        Outcome::SignIn { query } => Ok(consent::sign_in_first(&format!("/authorize?{query}"))),
        Outcome::Consent {
            person,
            client,
            request,
        } => consent::proceed(&state, &person, &client, &request).await,
    }
}
