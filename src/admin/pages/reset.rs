//! `/admin/members/{id}/password-reset`: the owner makes a password reset
//! link for a member of their farm, shown to them once. Making it replaces
//! the member's older links and is audited in its transaction; what a link
//! is and does is [`crate::identity::reset`]'s.

use time::OffsetDateTime;

use super::words::instant;
use super::{OwnerAction, PageRefusal, audit_action};
use crate::domain::{Issuer, UserId};
use crate::identity::reset;
use crate::storage::members;
use crate::storage::users::Account;
use crate::storage::{Store, StoreError};

/// The link just made, as the members page shows it once.
pub struct LinkView {
    pub email: String,
    pub url: String,
    pub expires: String,
}

/// Makes a reset link for the member `raw_id` of the owner's farm; a
/// member of another farm, or no one, is not found.
pub async fn make_link(
    store: &Store,
    owner: &Account,
    raw_id: &str,
    issuer: &Issuer,
    now: OffsetDateTime,
) -> Result<LinkView, PageRefusal> {
    let user = UserId::parse(raw_id).ok_or(PageRefusal::NotFound)?;
    let farm = owner.farm();
    let mut tx = store.write().await?;
    let member = members::find(&mut tx, farm, user)
        .await?
        .ok_or(PageRefusal::NotFound)?;
    let link = match reset::make(&mut tx, user, farm, now).await {
        Ok(link) => link,
        Err(StoreError::NotFound) => return Err(PageRefusal::NotFound),
        Err(err) => return Err(err.into()),
    };
    let mut done = OwnerAction::new("member_password_reset_link", serde_json::json!({}));
    done.about = Some(user);
    audit_action(&mut tx, owner, done, now).await?;
    tx.commit().await?;
    Ok(LinkView {
        email: member.email,
        url: link.url(issuer),
        expires: instant(link.expires_at.unix_timestamp()),
    })
}
