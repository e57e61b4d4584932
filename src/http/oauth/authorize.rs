//! `GET /authorize`: the authorization request.
//!
//! The checks of [`crate::oauth::authorize`] run first, in their order, so
//! a bad request is refused the same way whether or not anyone is signed
//! in: an unknown client, an unusable client metadata document or an
//! unregistered redirect URI gets a page (never a redirect), anything later
//! a redirect carrying `error`, `state` and `iss`. A document client (its
//! `client_id` an https URL) is resolved through the fetcher and, once a
//! person is signed in, recorded in the store. Then: not signed in →
//! `/login?return_to=` this very request (without `prompt=login` and
//! `max_age`, which signing in answers), or `login_required` for
//! `prompt=none`; signed in → [`super::consent::proceed`] decides between
//! refusing, the change-password page, issuing a code at once, asking for
//! the password again and the consent screen (the last two store the
//! request under its own id to wait for the person).

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, RawQuery, State};
use axum::response::{IntoResponse, Redirect, Response};

use super::consent;
use super::error::refusal_redirect;
use crate::http::error::PageError;
use crate::http::session::SignedIn;
use crate::oauth::authorize::{self, AuthorizeParams, PageRefusal};
use crate::oauth::clients::{self, ClientLookupError};
use crate::oauth::consent as decide;
use crate::state::AppState;

pub async fn authorize(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    user: Option<SignedIn>,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let query = query.unwrap_or_default();
    let params = AuthorizeParams::parse(query.as_bytes());
    let now = state.clock.now();

    // 1. The client.
    let client_id = match authorize::client_id(&params) {
        Ok(id) => id,
        Err(refusal) => return Err(PageError::Authorization(refusal)),
    };
    let cimd = state.cimd.for_peer(peer.ip());
    let found = match clients::resolve(&state.store, &cimd, client_id, now).await {
        Ok(found) => found,
        Err(ClientLookupError::Document(why)) => {
            return Err(PageError::Authorization(PageRefusal::ClientDocument(why)));
        }
        Err(ClientLookupError::Throttled(throttle)) => {
            return Err(PageError::DocumentNotFetched(throttle));
        }
        Err(ClientLookupError::Store(err)) => return Err(err.into()),
    };
    let document = found.as_ref().and_then(|f| f.document.clone());
    let client = match authorize::check_client(found.map(|f| f.client)) {
        Ok(client) => client,
        Err(refusal) => return Err(PageError::Authorization(refusal)),
    };
    // 2. The redirect URI.
    let redirect_uri = match authorize::check_redirect_uri(&params, &client) {
        Ok(uri) => uri,
        Err(refusal) => return Err(PageError::Authorization(refusal)),
    };
    // 3–6, each refusal sent back to the client.
    let client_state = match authorize::state(&params) {
        Ok(s) => s,
        Err(refusal) => {
            return Ok(refusal_redirect(
                &redirect_uri,
                &refusal,
                None,
                &state.issuer,
            ));
        }
    };
    let request = match authorize::check_after_redirect(
        &params,
        &state.issuer,
        &client,
        redirect_uri.clone(),
        client_state.clone(),
    ) {
        Ok(request) => request,
        Err(refusal) => {
            return Ok(refusal_redirect(
                &redirect_uri,
                &refusal,
                client_state.as_deref(),
                &state.issuer,
            ));
        }
    };

    let Some(user) = user else {
        if let Some(refusal) = decide::signed_out(&request) {
            return Ok(refusal_redirect(
                &redirect_uri,
                &refusal,
                client_state.as_deref(),
                &state.issuer,
            ));
        }
        let here = if request.prompt.login || request.max_age.is_some() {
            format!("/authorize?{}", authorize::after_sign_in(&params))
        } else {
            format!("/authorize?{query}")
        };
        let login = format!(
            "/login?{}",
            serde_urlencoded::to_string([("return_to", here.as_str())]).unwrap_or_default()
        );
        return Ok(Redirect::to(&login).into_response());
    };
    // The copy of a document client that the consent page names and the
    // grant will reference, as of this request.
    if let Some(document) = &document {
        clients::record_document(&state.store, document, now).await?;
    }
    consent::proceed(&state, &user, &client, &request).await
}
