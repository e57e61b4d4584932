//! `/account/password`: a person changes their own password. The current
//! password is checked under the sign-in throttle (it is a guessable secret
//! like any sign-in), then the new one against the rules; the change moves
//! the credential epoch, so every other session and every access token of
//! the person dies, and is audited in its transaction.

use std::net::IpAddr;

use time::OffsetDateTime;

use super::PageRefusal;
use crate::identity::password::check_new_password;
use crate::identity::{Passwords, SignIn};
use crate::secrets::{DeviceCookie, Password};
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::users::{self, Account};
use crate::storage::{Store, StoreError};

/// What the form sent, and from where.
#[derive(Clone, Copy, Debug)]
pub struct PasswordForm<'a> {
    pub current: &'a Password,
    pub new: &'a Password,
    pub confirm: &'a Password,
    pub address: IpAddr,
    pub device_cookie: Option<&'a DeviceCookie>,
}

/// How a change ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Changed {
    /// Changed: the session adopts the new credential epoch.
    Done { epoch: i64 },
    /// Not changed: the form again, saying why.
    Refused(String),
    /// The epoch moved meanwhile (signed out everywhere): this session is
    /// over.
    SignedOut,
}

/// The two services a change needs: the throttled check of the current
/// password, and the hasher of the new one.
#[derive(Clone, Copy)]
pub struct Checks<'a> {
    pub signin: &'a SignIn,
    pub passwords: &'a Passwords,
}

pub async fn change(
    store: &Store,
    checks: Checks<'_>,
    person: &Account,
    form: PasswordForm<'_>,
    now: OffsetDateTime,
) -> Result<Changed, PageRefusal> {
    let current_ok = checks
        .signin
        .confirm_password(person, form.current, form.address, form.device_cookie, now)
        .await?;
    if let Some(why) = refusal(current_ok, &form) {
        return Ok(Changed::Refused(why));
    }
    let hash = checks
        .passwords
        .hash(form.new)
        .await
        .map_err(|err| super::PageRefusal::Internal(err.to_string()))?;
    let mut tx = store.write().await?;
    let changed = users::change_password(
        &mut tx,
        person.user_id(),
        person.credential_epoch,
        &hash,
        now,
    )
    .await;
    let epoch = match changed {
        Ok(epoch) => epoch,
        Err(StoreError::NotFound) => return Ok(Changed::SignedOut),
        Err(err) => return Err(err.into()),
    };
    let mut event = AuditEvent::new(AuditKind::PasswordChanged);
    event.farm = Some(person.farm());
    event.user = Some(person.user_id());
    audit::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    Ok(Changed::Done { epoch })
}

/// Why the form is refused, in the order a person fixes it, if it is.
fn refusal(current_ok: bool, form: &PasswordForm<'_>) -> Option<String> {
    if !current_ok {
        return Some("Your current password is not right.".to_owned());
    }
    if form.new != form.confirm {
        return Some("The two new passwords are not the same.".to_owned());
    }
    if let Err(message) = check_new_password(form.new) {
        return Some(message);
    }
    if form.new == form.current {
        return Some("Choose a password different from the current one.".to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_thing_to_fix_is_said() {
        let old = Password::from("an old password, long enough");
        let new = Password::from("a new password, long enough");
        let other = Password::from("another password, long enough");
        let form = |new, confirm| PasswordForm {
            current: &old,
            new,
            confirm,
            address: IpAddr::from([127, 0, 0, 1]),
            device_cookie: None,
        };
        assert_eq!(
            refusal(false, &form(&new, &other)).as_deref(),
            Some("Your current password is not right.")
        );
        assert_eq!(
            refusal(true, &form(&new, &other)).as_deref(),
            Some("The two new passwords are not the same.")
        );
        assert_eq!(
            refusal(true, &form(&old, &old)).as_deref(),
            Some("Choose a password different from the current one.")
        );
        assert_eq!(refusal(true, &form(&new, &new)), None);
    }
}
