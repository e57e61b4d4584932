//! Reading client credentials off the wire: the HTTP Basic header of RFC
//! 6749 §2.3.1, where the id and secret are form-urlencoded before being
//! joined with `:` and base64-encoded, and the body beside it; and, for
//! `/revoke` and `/introspect`, the client they authenticate (as at
//! `/token`): the [`ClientRequest`] extractor.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use time::OffsetDateTime;

use crate::oauth::client::Client;
use crate::oauth::client_auth::{self, Presented};
use crate::oauth::error::OAuthError;
use crate::oauth::params::Params;
use crate::secrets::ClientSecret;
use crate::state::AppState;

/// The form body, and the client credentials the request presented in it
/// and in its Basic header.
pub fn presented(headers: &HeaderMap, body: &[u8]) -> Result<(Params, Presented), OAuthError> {
    let form = Params::parse(body);
    let presented = client_auth::presented(basic(headers), &form)?;
    Ok((form, presented))
}

/// A request whose client authenticated as at `/token`: its form, the
/// credentials presented, the client they authenticate (stored, or
/// described by its metadata document, fetched for the peer's address),
/// and when it arrived.
pub struct ClientRequest {
    pub form: Params,
    pub presented: Presented,
    pub client: Client,
    pub now: OffsetDateTime,
}

impl FromRequest<AppState> for ClientRequest {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = request.into_parts();
        let ConnectInfo(peer) = ConnectInfo::<SocketAddr>::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let headers = parts.headers.clone();
        let body = Bytes::from_request(Request::from_parts(parts, body), state)
            .await
            .map_err(IntoResponse::into_response)?;
        let now = state.clock.now();
        let (form, presented) =
            self::presented(&headers, &body).map_err(IntoResponse::into_response)?;
        let cimd = state.cimd.for_peer(peer.ip());
        let client = client_auth::authenticate(&state.store, &cimd, &state.issuer, &presented, now)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Self {
            form,
            presented,
            client,
            now,
        })
    }
}

/// `None`: no Basic credentials. `Some(Err(()))`: a Basic header that
/// cannot be read. `Some(Ok((id, secret)))` otherwise. Another scheme (a
/// stray `Bearer`) is not client authentication and is ignored.
pub fn basic(headers: &HeaderMap) -> Option<Result<(String, ClientSecret), ()>> {
    let value = headers.get(header::AUTHORIZATION)?;
    let Ok(value) = value.to_str() else {
        return Some(Err(()));
    };
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    Some(decode(encoded.trim()))
}

fn decode(encoded: &str) -> Result<(String, ClientSecret), ()> {
    let bytes = STANDARD.decode(encoded).map_err(|_| ())?;
    let text = String::from_utf8(bytes).map_err(|_| ())?;
    let (id, secret) = text.split_once(':').ok_or(())?;
    let unescape = |s: &str| -> String {
        url::form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    let id = unescape(id);
    if id.is_empty() {
        return Err(());
    }
    Ok((id, ClientSecret::new(unescape(secret))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn basic_credentials_are_decoded_and_unescaped() {
        let encoded = STANDARD.encode("my%20id:s%3Acret+x");
        assert_eq!(
            basic(&headers(&format!("Basic {encoded}"))),
            Some(Ok(("my id".to_owned(), "s:cret x".into())))
        );
        let encoded = STANDARD.encode("plain:secret");
        assert_eq!(
            basic(&headers(&format!("basic {encoded}"))),
            Some(Ok(("plain".to_owned(), "secret".into())))
        );
        assert_eq!(basic(&headers("Bearer abc")), None);
        assert_eq!(basic(&HeaderMap::new()), None);
        assert_eq!(basic(&headers("Basic !!!")), Some(Err(())));
        let no_colon = STANDARD.encode("nocolon");
        assert_eq!(basic(&headers(&format!("Basic {no_colon}"))), Some(Err(())));
    }
}
