//! Password reset links: how one is made, what state a presented one is
//! in, and choosing a new password with one.
//!
//! A link is `<issuer>/password-reset?token=<token>`: 256 random bits,
//! handed out once (shown to the owner, printed by the operator's command,
//! or later sent by mail) and stored only as its SHA-256 hash. It works
//! for [`LIFETIME`], once, and only while it is the person's newest link
//! and their credential epoch has not moved since it was made (another
//! link, a password change or a sign-out-everywhere voids it). The token
//! travels in the query, which the request log leaves out, and following
//! the link changes nothing: only the form's POST spends it, so a mail
//! client that opens links to preview them spends nothing.
//!
//! Choosing a password with a link: the link is checked, then the new
//! password against the rules, then hashed (argon2 off the runtime, as
//! every hash); then in one transaction the link is spent (a conditional
//! update, so two racing uses cannot both succeed), the password stored
//! with the epoch moved (every session and app token of the person stops
//! on its next call), the account's sign-in failures forgotten, and the
//! change audited.

use time::OffsetDateTime;

use super::password::check_new_password;
use super::{PasswordError, Passwords, throttle};
use crate::domain::{FarmId, Issuer, UserId};
use crate::secrets::{self, Password, ResetToken};
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::password_resets::{self, NewReset, ResetRow};
use crate::storage::{Store, StoreError, Tx, users};

/// How long a link works once made.
pub const LIFETIME: time::Duration = time::Duration::hours(24);

/// How long an ended link's row is kept after it expired, so following it
/// still says why it ended (then it is a link never made).
pub const KEPT_AFTER_EXPIRY: time::Duration = time::Duration::days(30);

/// The page a link opens.
pub const PATH: &str = "/password-reset";

#[derive(Debug, thiserror::Error)]
pub enum ResetError {
    #[error("storage: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Password(#[from] PasswordError),
}

/// A link just made: its token (shown once) and when it stops working.
#[derive(Debug)]
pub struct Link {
    pub token: ResetToken,
    pub expires_at: OffsetDateTime,
}

impl Link {
    /// The link as the person follows it.
    pub fn url(&self, issuer: &Issuer) -> String {
        issuer.url(&format!("{PATH}?token={}", self.token.expose()))
    }
}

/// Makes a link for `user` of `farm`, replacing the person's older ones,
/// in the caller's transaction (beside its audit row). `NotFound` when
/// there is no such person.
pub async fn make(
    tx: &mut Tx,
    user: UserId,
    farm: FarmId,
    now: OffsetDateTime,
) -> Result<Link, StoreError> {
    let token = ResetToken::new(secrets::random_token(32));
    let expires_at = now + LIFETIME;
    let hash = secrets::hash_secret(token.expose());
    let reset = NewReset {
        token_hash: &hash,
        user,
        farm,
        expires_at,
    };
    password_resets::replace(tx, &reset, now).await?;
    Ok(Link { token, expires_at })
}

/// What a presented link is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkState {
    /// It works: the person's email, and until when (Unix seconds).
    Usable { email: String, expires_at: i64 },
    /// A new password was chosen with it.
    Used,
    /// A newer link was made, or the password was changed (or the person
    /// signed out everywhere) since it was made.
    Replaced,
    /// Its day is over.
    Expired,
    /// The person's account is disabled: no password would let them in.
    Disabled,
    /// No such link (never made, or ended long ago).
    Unknown,
}

fn state_of(row: Option<&ResetRow>, now: OffsetDateTime) -> LinkState {
    let Some(row) = row else {
        return LinkState::Unknown;
    };
    if row.used_at.is_some() {
        LinkState::Used
    } else if row.replaced_at.is_some() || row.current_epoch != row.credential_epoch {
        LinkState::Replaced
    } else if row.expires_at <= now.unix_timestamp() {
        LinkState::Expired
    } else if row.disabled {
        LinkState::Disabled
    } else {
        LinkState::Usable {
            email: row.email.clone(),
            expires_at: row.expires_at,
        }
    }
}

async fn find(store: &Store, token: &ResetToken) -> Result<Option<ResetRow>, StoreError> {
    let hash = secrets::hash_secret(token.expose());
    password_resets::find(&mut store.read().await?, &hash).await
}

/// The state of the link with `token` at `now`.
pub async fn state(
    store: &Store,
    token: &ResetToken,
    now: OffsetDateTime,
) -> Result<LinkState, StoreError> {
    Ok(state_of(find(store, token).await?.as_ref(), now))
}

/// The new password as the form sent it, twice.
#[derive(Clone, Copy, Debug)]
pub struct NewPassword<'a> {
    pub new: &'a Password,
    pub confirm: &'a Password,
}

/// How choosing a password with a link ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Chosen {
    /// The new password is stored: the person's email, to sign in with.
    Done { email: String },
    /// The form again, saying why; the link still works.
    Refused(String),
    /// The link does not work (any state but `Usable`).
    Gone(LinkState),
}

/// Why a new password is refused, in the order a person fixes it.
fn refusal(password: NewPassword<'_>) -> Option<String> {
    if password.new != password.confirm {
        return Some("The two passwords are not the same.".to_owned());
    }
    check_new_password(password.new).err()
}

/// Chooses a new password with the link `token` at `now`.
pub async fn choose(
    store: &Store,
    passwords: &Passwords,
    token: &ResetToken,
    password: NewPassword<'_>,
    now: OffsetDateTime,
) -> Result<Chosen, ResetError> {
    let row = match find(store, token).await? {
        Some(row) if matches!(state_of(Some(&row), now), LinkState::Usable { .. }) => row,
        other => return Ok(Chosen::Gone(state_of(other.as_ref(), now))),
    };
    if let Some(why) = refusal(password) {
        return Ok(Chosen::Refused(why));
    }
    let hash = passwords.hash(password.new).await?;
    let mut tx = store.write().await?;
    let hash_of_token = secrets::hash_secret(token.expose());
    if !password_resets::spend(&mut tx, &hash_of_token, now).await? {
        drop(tx);
        return gone_now(store, token, now).await;
    }
    match users::change_password(&mut tx, row.user(), row.credential_epoch, &hash, now).await {
        Ok(_) => {}
        Err(StoreError::NotFound) => {
            drop(tx);
            return gone_now(store, token, now).await;
        }
        Err(err) => return Err(err.into()),
    }
    throttle::forget_account_failures(&mut tx, &row.email).await?;
    let mut event = AuditEvent::new(AuditKind::PasswordChanged);
    event.farm = Some(row.farm());
    event.user = Some(row.user());
    event.detail = serde_json::json!({ "via": "reset link" });
    audit::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    Ok(Chosen::Done { email: row.email })
}

/// The answer for a link that stopped working between its check and its
/// use (spent by a racing request, or the epoch moved): what it is now.
/// The transaction that found it so was dropped, so a link that still
/// reads usable lost its race to an epoch move.
async fn gone_now(
    store: &Store,
    token: &ResetToken,
    now: OffsetDateTime,
) -> Result<Chosen, ResetError> {
    Ok(Chosen::Gone(match state(store, token, now).await? {
        LinkState::Usable { .. } => LinkState::Replaced,
        other => other,
    }))
}

/// Deletes links that expired more than [`KEPT_AFTER_EXPIRY`] ago
/// (housekeeping); returns how many.
pub async fn forget_old(store: &Store, now: OffsetDateTime) -> Result<u64, StoreError> {
    let mut tx = store.write().await?;
    let deleted = password_resets::delete_expired(&mut tx, now - KEPT_AFTER_EXPIRY).await?;
    tx.commit().await?;
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn row() -> ResetRow {
        ResetRow {
            user_id: Uuid::nil(),
            farm_id: Uuid::nil(),
            email: "ann@farm.example".to_owned(),
            credential_epoch: 3,
            current_epoch: 3,
            disabled: false,
            expires_at: 1_000,
            used_at: None,
            replaced_at: None,
        }
    }

    fn at(unix: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(unix).unwrap()
    }

    #[test]
    fn a_link_works_until_used_replaced_voided_or_expired() {
        let usable = LinkState::Usable {
            email: "ann@farm.example".to_owned(),
            expires_at: 1_000,
        };
        assert_eq!(state_of(Some(&row()), at(999)), usable);
        assert_eq!(state_of(Some(&row()), at(1_000)), LinkState::Expired);
        assert_eq!(state_of(None, at(0)), LinkState::Unknown);
        let used = ResetRow {
            used_at: Some(10),
            replaced_at: Some(5),
            current_epoch: 4,
            ..row()
        };
        // Used says more than replaced or expired: it is what happened.
        assert_eq!(state_of(Some(&used), at(2_000)), LinkState::Used);
        let replaced = ResetRow {
            replaced_at: Some(5),
            ..row()
        };
        assert_eq!(state_of(Some(&replaced), at(2_000)), LinkState::Replaced);
        let voided = ResetRow {
            current_epoch: 4,
            ..row()
        };
        assert_eq!(state_of(Some(&voided), at(10)), LinkState::Replaced);
        let disabled = ResetRow {
            disabled: true,
            ..row()
        };
        assert_eq!(state_of(Some(&disabled), at(10)), LinkState::Disabled);
    }

    #[test]
    fn the_new_password_is_typed_twice_and_follows_the_rules() {
        let long = Password::from("a new password, long enough");
        let other = Password::from("another password, long enough");
        let short = Password::from("short");
        let form = |new, confirm| NewPassword { new, confirm };
        assert_eq!(
            refusal(form(&long, &other)).as_deref(),
            Some("The two passwords are not the same.")
        );
        assert!(refusal(form(&short, &short)).is_some());
        assert_eq!(refusal(form(&long, &long)), None);
    }

    #[test]
    fn a_link_is_the_issuer_the_page_and_the_token() {
        let link = Link {
            token: ResetToken::new("abc_-9"),
            expires_at: at(0),
        };
        let issuer = Issuer::parse("https://coop.example").unwrap();
        assert_eq!(
            link.url(&issuer),
            "https://coop.example/password-reset?token=abc_-9"
        );
        assert!(!format!("{link:?}").contains("abc_-9"));
    }
}
