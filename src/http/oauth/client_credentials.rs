//! Reading client credentials off the wire: the HTTP Basic header of RFC
//! 6749 §2.3.1, where the id and secret are form-urlencoded before being
//! joined with `:` and base64-encoded.

use axum::http::{HeaderMap, header};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::secrets::ClientSecret;

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
