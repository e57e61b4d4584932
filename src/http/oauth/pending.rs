//! Authorization requests waiting in the browser session while the person
//! signs in again or reads the consent screen.
//!
//! Each checked request is stored under its own random id, and the consent
//! form names that id: two tabs connecting two apps (or one app twice) each
//! answer their own request. The map is bounded: at most [`MAX_PENDING`]
//! requests per session, none older than [`PENDING_TTL`]. A request is
//! taken out when answered, so a form cannot be submitted twice.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tower_sessions::Session;

use crate::http::error::PageError;
use crate::oauth::authorize::AuthorizationRequest;
use crate::secrets;

const KEY: &str = "oauth_pending";
pub const MAX_PENDING: usize = 8;
pub const PENDING_TTL: time::Duration = time::Duration::minutes(30);

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Pending {
    request: AuthorizationRequest,
    /// Whose request it is: another person signing in in the same browser
    /// cannot answer it.
    user_id: uuid::Uuid,
    created_at: i64,
}

async fn load(
    session: &Session,
    now: OffsetDateTime,
) -> Result<BTreeMap<String, Pending>, PageError> {
    let mut map: BTreeMap<String, Pending> = session.get(KEY).await?.unwrap_or_default();
    let oldest = now.unix_timestamp() - PENDING_TTL.whole_seconds();
    map.retain(|_, p| p.created_at >= oldest);
    Ok(map)
}

/// Stores `request`; returns its id.
pub async fn put(
    session: &Session,
    user_id: uuid::Uuid,
    request: &AuthorizationRequest,
    now: OffsetDateTime,
) -> Result<String, PageError> {
    let mut map = load(session, now).await?;
    while map.len() >= MAX_PENDING {
        let oldest = map
            .iter()
            .min_by_key(|(_, p)| p.created_at)
            .map(|(id, _)| id.clone());
        match oldest {
            Some(id) => map.remove(&id),
            None => break,
        };
    }
    let id = secrets::random_token(16);
    map.insert(
        id.clone(),
        Pending {
            request: request.clone(),
            user_id,
            created_at: now.unix_timestamp(),
        },
    );
    session.insert(KEY, map).await?;
    Ok(id)
}

/// The waiting request `id` of `user_id`, left in place.
pub async fn get(
    session: &Session,
    id: &str,
    user_id: uuid::Uuid,
    now: OffsetDateTime,
) -> Result<Option<AuthorizationRequest>, PageError> {
    let map = load(session, now).await?;
    Ok(map
        .get(id)
        .filter(|p| p.user_id == user_id)
        .map(|p| p.request.clone()))
}

/// Removes the request `id` (answered, or refused for good).
pub async fn remove(session: &Session, id: &str, now: OffsetDateTime) -> Result<(), PageError> {
    let mut map = load(session, now).await?;
    map.remove(id);
    session.insert(KEY, map).await?;
    Ok(())
}
