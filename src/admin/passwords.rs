//! The operator's password commands: `coop admin user password-reset`
//! (a one-time link for the person, printed) and `coop admin user
//! set-password` (a password typed on standard input). Both end every
//! session and app token of the person (the credential epoch moves when
//! the link is used, or at once) and are audited; what a link is and does
//! is [`crate::identity::reset`]'s.

use time::OffsetDateTime;

use super::{AdminError, refused};
use crate::domain::Email;
use crate::identity::password::check_new_password;
use crate::identity::reset::{self, Link};
use crate::identity::{Passwords, throttle};
use crate::secrets::Password;
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::users::{self, Account};
use crate::storage::{Store, StoreError};

/// Who the audit names for the operator's actions.
const OPERATOR: &str = "the operator";

/// The person with `email`, a member of `farm` when one is named.
async fn person(store: &Store, email: &str, farm: Option<&str>) -> Result<Account, AdminError> {
    let email = Email::parse(email).map_err(refused)?;
    if let Some(slug) = farm {
        super::farm(store, slug).await?;
    }
    let account = users::find_by_email(&mut store.read().await?, &email)
        .await?
        .ok_or_else(|| refused(format!("no user has the email {email}")))?;
    match farm {
        Some(slug) if account.farm_slug.as_str() != slug.trim() => Err(refused(format!(
            "{email} is not a member of the farm {:?}",
            slug.trim()
        ))),
        _ => Ok(account),
    }
}

/// `coop admin user password-reset`: a new link for the person (their older
/// links stop working), with its audit row.
pub async fn reset_link(
    store: &Store,
    email: &str,
    farm: Option<&str>,
    now: OffsetDateTime,
) -> Result<Link, AdminError> {
    let account = person(store, email, farm).await?;
    let mut tx = store.write().await?;
    let link = match reset::make(&mut tx, account.user_id(), account.farm(), now).await {
        Ok(link) => link,
        Err(StoreError::NotFound) => return Err(refused(format!("no user has the email {email}"))),
        Err(err) => return Err(err.into()),
    };
    let mut event = AuditEvent::new(AuditKind::AdminAction);
    event.farm = Some(account.farm());
    event.user = Some(account.user_id());
    event.detail = serde_json::json!({ "action": "password_reset_link", "by": OPERATOR });
    audit::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    Ok(link)
}

/// `coop admin user set-password`: the new password (the rules of every
/// new password), stored with the epoch moved, the account's sign-in
/// failures forgotten, and the change audited.
pub async fn set_password(
    store: &Store,
    passwords: &Passwords,
    email: &str,
    password: &Password,
    now: OffsetDateTime,
) -> Result<(), AdminError> {
    let account = person(store, email, None).await?;
    check_new_password(password).map_err(refused)?;
    let hash = passwords.hash(password).await?;
    let mut tx = store.write().await?;
    let changed = users::change_password(
        &mut tx,
        account.user_id(),
        account.credential_epoch,
        &hash,
        now,
    )
    .await;
    match changed {
        Ok(_) => {}
        Err(StoreError::NotFound) => {
            return Err(refused(format!(
                "{email} was changed meanwhile (signed out everywhere, or a new password); run the command again"
            )));
        }
        Err(err) => return Err(err.into()),
    }
    throttle::forget_account_failures(&mut tx, &account.email).await?;
    let mut event = AuditEvent::new(AuditKind::PasswordChanged);
    event.farm = Some(account.farm());
    event.user = Some(account.user_id());
    event.detail = serde_json::json!({ "via": "set by the operator" });
    audit::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    Ok(())
}
