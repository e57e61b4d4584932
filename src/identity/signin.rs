//! Signing in, decided here and not in a handler: from an email and
//! password as typed, the client's address and its device cookie, to who is
//! signed in (or why not), with the time passed in.
//!
//! In order: the device cookie is recognised for the email typed (or not)
//! → the throttle reserves a cell of each budget the attempt is judged by
//! ([`super::throttle`]), before any hashing → the account is looked up and
//! one argon2 verification runs, against its hash or a decoy so an unknown
//! email costs the same → a disabled account is refused exactly as a wrong
//! password is, after the same verification, whichever password was typed:
//! a right one is a failure for the throttle too and clears nothing, so a
//! guesser learns nothing from a disabled account and cannot guess on it
//! faster than on any other (issue 31) → the reservation is settled and
//! the outcome audited (a right password: in one transaction).
//! What is left to the HTTP edge is the session (a new id, against
//! fixation) and the cookies.
//!
//! A signed-in person entering their password again (the step-up before
//! consent, a password change) goes through [`SignIn::confirm_password`]:
//! the same throttle, the same device rule.

use std::net::IpAddr;
use std::time::Duration;

use time::OffsetDateTime;

use super::device::{self, Device};
use super::throttle::{Judged, LoginThrottle};
use super::{PasswordError, Passwords};
use crate::config::SignInLimits;
use crate::domain::Email;
use crate::secrets::MacKey;
use crate::secrets::{DeviceCookie, Password};
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::users::{self, Account};
use crate::storage::{Store, StoreError};

/// Why a sign-in could not be decided.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// Too many failures for a budget the attempt is judged by: try again
    /// after this long. No password was checked.
    #[error("too many failed sign-ins; retry in {0:?}")]
    Throttled(Duration),
    #[error("storage: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Password(#[from] PasswordError),
}

/// One sign-in attempt, as the browser sent it.
#[derive(Clone, Copy, Debug)]
pub struct Attempt<'a> {
    /// As typed; trimmed and lower-cased here.
    pub email: &'a str,
    pub password: &'a Password,
    pub address: IpAddr,
    /// The browser's device cookie, if it sent one.
    pub device_cookie: Option<&'a DeviceCookie>,
}

/// What a decided attempt comes to.
#[derive(Debug)]
pub enum Outcome {
    /// The password is right and the account may sign in; the browser gets
    /// a fresh device cookie.
    SignedIn {
        account: Box<Account>,
        device_cookie: DeviceCookie,
    },
    /// The email and password do not match, there is no such account, or
    /// the account is disabled: one answer for all three.
    Refused,
}

/// Sign-in: the throttle, the password hasher and the device cookies' key.
#[derive(Clone, Debug)]
pub struct SignIn {
    store: Store,
    passwords: Passwords,
    throttle: LoginThrottle,
    device_key: MacKey,
}

/// An email as typed, the way accounts (and so their budgets) are named.
fn normalise(typed: &str) -> String {
    typed.trim().to_lowercase()
}

impl SignIn {
    pub fn new(
        store: Store,
        passwords: Passwords,
        limits: SignInLimits,
        device_key: MacKey,
    ) -> Self {
        Self {
            throttle: LoginThrottle::new(store.clone(), limits),
            store,
            passwords,
            device_key,
        }
    }

    pub fn throttle(&self) -> &LoginThrottle {
        &self.throttle
    }

    fn device(
        &self,
        cookie: Option<&DeviceCookie>,
        email: &str,
        now: OffsetDateTime,
    ) -> Option<Device> {
        cookie.and_then(|cookie| device::recognise(&self.device_key, cookie, email, now))
    }

    /// Decides one sign-in attempt at `now`.
    pub async fn attempt(
        &self,
        attempt: Attempt<'_>,
        now: OffsetDateTime,
    ) -> Result<Outcome, SignInError> {
        let email = normalise(attempt.email);
        let device = self.device(attempt.device_cookie, &email, now);
        let judged = match &device {
            Some(device) => Judged::Device(device),
            None => Judged::Untrusted {
                email: &email,
                address: attempt.address,
            },
        };
        let reservation = self.throttle.reserve(judged, now).await?;

        let account = match Email::parse(&email) {
            Ok(parsed) => users::find_by_email(&mut self.store.read().await?, &parsed).await?,
            Err(_) => None,
        };
        let password_ok = self
            .passwords
            .verify(
                attempt.password,
                account.as_ref().map(|a| a.password_hash.as_str()),
            )
            .await?;

        let address = attempt.address.to_string();
        match account {
            Some(account) if password_ok && !account.disabled => {
                let mut event = AuditEvent::new(AuditKind::SignIn);
                event.farm = Some(account.farm());
                event.user = Some(account.user_id());
                let mut tx = self.store.write().await?;
                reservation.password_right(&mut tx).await?;
                audit::record(&mut tx, &event, now).await?;
                tx.commit().await?;
                let device_cookie = device::issue(&self.device_key, &account.email, now);
                Ok(Outcome::SignedIn {
                    account: Box::new(account),
                    device_cookie,
                })
            }
            account => {
                // A disabled account's right password is spent like a wrong
                // one: otherwise the answer, or the budget it gives back,
                // would confirm the guess.
                reservation.password_wrong();
                let mut event = AuditEvent::new(AuditKind::SignInFailed);
                event.farm = account.as_ref().map(|a| a.farm());
                event.user = account.as_ref().map(|a| a.user_id());
                event.detail = match &account {
                    Some(account) if account.disabled => {
                        serde_json::json!({ "address": address, "disabled": true })
                    }
                    _ => serde_json::json!({ "address": address }),
                };
                audit::record_alone(&self.store, &event, now).await?;
                Ok(Outcome::Refused)
            }
        }
    }

    /// Checks the password of a signed-in person entering it again, under
    /// the same throttle as a sign-in: `Ok(false)` for a wrong one.
    pub async fn confirm_password(
        &self,
        account: &Account,
        password: &Password,
        address: IpAddr,
        device_cookie: Option<&DeviceCookie>,
        now: OffsetDateTime,
    ) -> Result<bool, SignInError> {
        let device = self.device(device_cookie, &account.email, now);
        let judged = match &device {
            Some(device) => Judged::Device(device),
            None => Judged::Untrusted {
                email: &account.email,
                address,
            },
        };
        let reservation = self.throttle.reserve(judged, now).await?;
        let ok = self
            .passwords
            .verify(password, Some(&account.password_hash))
            .await?;
        if ok {
            let mut tx = self.store.write().await?;
            reservation.password_right(&mut tx).await?;
            tx.commit().await?;
        } else {
            reservation.password_wrong();
        }
        Ok(ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_email_is_named_as_its_account() {
        assert_eq!(normalise("  Ann@Farm.Example "), "ann@farm.example");
        assert_eq!(
            normalise(" Ann@Farm.Example "),
            Email::parse(" Ann@Farm.Example ").unwrap().as_str()
        );
    }
}
