//! The operator's actions, as the `coop admin …` commands run them, and
//! what the owner's and a person's pages load and decide ([`pages`]).
//!
//! Each function checks its input, changes the store, and returns what the
//! command prints. A refusal is an [`AdminError::Refused`] with a one-line
//! reason; multi-row changes run in one transaction so a refusal leaves
//! nothing half-written.

pub mod apps;
pub mod automations;
pub mod demo;
pub mod farm_records;
pub mod pages;
pub mod passwords;

use time::{Date, OffsetDateTime};

use crate::domain::name::MAX_NAME_CHARS;
use crate::domain::{Email, FarmId, FarmSlug, FlockId, HeadCount, Name, Role};
use crate::identity::Passwords;
use crate::identity::password::check_new_password;
use crate::secrets::Password;
use crate::storage::farms::{self, FarmRow};
use crate::storage::users::{self, NewMember};
use crate::storage::{Store, StoreError, Tx};
use farm_records::FlockForm;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The input was refused; the message is shown as is.
    #[error("{0}")]
    Refused(String),
    #[error("database: {0}")]
    Store(#[from] StoreError),
    #[error("password hashing: {0}")]
    Password(#[from] crate::identity::PasswordError),
}

fn refused(message: impl Into<String>) -> AdminError {
    AdminError::Refused(message.into())
}

/// A farm slug, refused with the reason [`FarmSlug::parse`] gives.
pub fn parse_slug(raw: &str) -> Result<FarmSlug, AdminError> {
    FarmSlug::parse(raw).map_err(refused)
}

/// The slug a farm name suggests: "Hillside Farm" → "hillside-farm".
pub fn slug_from_name(name: &str) -> String {
    let mut slug = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    slug.trim_end_matches('-')
        .chars()
        .take(48)
        .collect::<String>()
        .trim_end_matches('-')
        .to_owned()
}

/// An instant as the command line prints it (RFC 3339), or `never`.
pub(crate) fn rfc3339_or_never(unix: Option<i64>) -> String {
    unix.and_then(|t| OffsetDateTime::from_unix_timestamp(t).ok())
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "never".to_owned())
}

/// A name of a `what` (farm, house, flock, breed, automation).
pub(crate) fn check_name(what: &str, raw: &str) -> Result<Name, AdminError> {
    Name::parse(raw).map_err(|_| {
        refused(format!(
            "the {what} name must be 1 to {MAX_NAME_CHARS} printable characters"
        ))
    })
}

pub async fn farm(store: &Store, slug: &str) -> Result<FarmRow, AdminError> {
    farms::find_by_slug(&mut store.read().await?, slug)
        .await?
        .ok_or_else(|| refused(format!("no farm has the slug {slug:?}")))
}

/// Runs one change in its own transaction, committed only if it succeeds.
/// For the operator's one-statement commands (their futures need not be
/// `Send`: the command line runs them on its own).
async fn write<T>(
    store: &Store,
    change: impl AsyncFnOnce(&mut Tx) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut tx = store.write().await?;
    let done = change(&mut tx).await?;
    tx.commit().await?;
    Ok(done)
}

/// `coop admin farm add`: returns the new farm's slug.
pub async fn add_farm(
    store: &Store,
    name: &str,
    slug: Option<&str>,
    now: OffsetDateTime,
) -> Result<FarmSlug, AdminError> {
    let name = check_name("farm", name)?;
    let slug = match slug {
        Some(slug) => parse_slug(slug)?,
        None => parse_slug(&slug_from_name(&name))
            .map_err(|_| refused("cannot make a slug from that name; pass --slug"))?,
    };
    match write(store, async |tx| farms::create(tx, &slug, &name, now).await).await {
        Ok(_) => Ok(slug),
        Err(StoreError::Conflict(_)) => Err(refused(format!(
            "a farm with the slug {slug:?} already exists"
        ))),
        Err(err) => Err(err.into()),
    }
}

/// The longest suspension reason, in characters.
pub const MAX_SUSPENSION_REASON_CHARS: usize = 300;

/// Suspends a farm, with the reason its members are shown (if any), or
/// resumes it (which forgets the reason).
pub async fn set_farm_suspended(
    store: &Store,
    slug: &str,
    suspended: bool,
    reason: Option<&str>,
) -> Result<(), AdminError> {
    let reason = reason.map(str::trim);
    if let Some(reason) = reason
        && (reason.is_empty()
            || reason.chars().count() > MAX_SUSPENSION_REASON_CHARS
            || reason.chars().any(char::is_control))
    {
        return Err(refused(format!(
            "--reason must be 1 to {MAX_SUSPENSION_REASON_CHARS} characters on one line"
        )));
    }
    match write(store, async |tx| {
        farms::set_suspended(tx, slug, suspended, reason).await
    })
    .await
    {
        Ok(_) => Ok(()),
        Err(StoreError::NotFound) => Err(refused(format!("no farm has the slug {slug:?}"))),
        Err(err) => Err(err.into()),
    }
}

pub async fn set_connected_apps(
    store: &Store,
    slug: &str,
    enabled: bool,
) -> Result<(), AdminError> {
    match write(store, async |tx| {
        farms::set_connected_apps(tx, slug, enabled).await
    })
    .await
    {
        Ok(_) => Ok(()),
        Err(StoreError::NotFound) => Err(refused(format!("no farm has the slug {slug:?}"))),
        Err(err) => Err(err.into()),
    }
}

pub async fn add_house(
    store: &Store,
    farm_slug: &str,
    name: &str,
    now: OffsetDateTime,
) -> Result<(), AdminError> {
    let farm = farm(store, farm_slug).await?;
    let mut tx = store.write().await?;
    farm_records::add_house(&mut tx, farm.farm_id(), name, now).await?;
    tx.commit().await?;
    Ok(())
}

pub struct FlockInput<'a> {
    pub farm: &'a str,
    pub house: &'a str,
    pub name: &'a str,
    pub breed: &'a str,
    pub placed: &'a str,
    pub head_count: &'a str,
}

/// `coop admin flock add`: the farm and house by name, then the same checks
/// and insert as the owner's admin page.
pub async fn add_flock(
    store: &Store,
    input: &FlockInput<'_>,
    now: OffsetDateTime,
) -> Result<(), AdminError> {
    let farm = farm(store, input.farm).await?;
    let house = farms::find_house(&mut store.read().await?, farm.farm_id(), input.house)
        .await?
        .ok_or_else(|| refused(format!("the farm has no house named {:?}", input.house)))?;
    let form = FlockForm {
        house,
        name: input.name,
        breed: input.breed,
        placed: input.placed,
        head_count: input.head_count,
    };
    let mut tx = store.write().await?;
    farm_records::add_flock(&mut tx, farm.farm_id(), &form, now).await?;
    tx.commit().await?;
    Ok(())
}

pub(crate) fn parse_head_count(raw: &str) -> Result<HeadCount, AdminError> {
    HeadCount::parse(raw).map_err(refused)
}

pub fn parse_date(raw: &str) -> Result<Date, AdminError> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    Date::parse(raw.trim(), format)
        .map_err(|_| refused(format!("{raw:?} is not a date like 2026-03-01")))
}

pub struct UserInput<'a> {
    pub farm: &'a str,
    pub email: &'a str,
    pub role: &'a str,
    /// Comma-separated flock names, for a worker limited to them.
    pub flocks: Option<&'a str>,
    /// `None`: generate one and return it.
    pub password: Option<&'a Password>,
}

/// `coop admin user add`: returns the generated password, if one was made.
pub async fn add_user(
    store: &Store,
    passwords: &Passwords,
    input: &UserInput<'_>,
    now: OffsetDateTime,
) -> Result<Option<Password>, AdminError> {
    let farm = farm(store, input.farm).await?;
    let email = Email::parse(input.email).map_err(refused)?;
    let role = Role::parse(input.role).map_err(refused)?;
    let flocks = match input.flocks {
        None => None,
        Some(_) if !role.may_be_flock_restricted() => {
            return Err(refused("only a worker can be limited to some flocks"));
        }
        Some(list) => Some(resolve_flocks(store, farm.farm_id(), list).await?),
    };
    let (password, generated) = match input.password {
        Some(password) => {
            check_new_password(password).map_err(refused)?;
            (password.clone(), None)
        }
        None => {
            let password = crate::secrets::generate_password();
            (password.clone(), Some(password))
        }
    };
    let hash = passwords.hash(&password).await?;
    let member = NewMember {
        farm: farm.farm_id(),
        email: &email,
        password_hash: &hash,
        role,
        flocks: flocks.as_deref(),
        must_change_password: false,
    };
    match write(store, async |tx| {
        users::create_member(tx, &member, now).await
    })
    .await
    {
        Ok(_) => Ok(generated),
        Err(StoreError::Conflict(_)) => Err(refused(format!(
            "a user with the email {email} already exists"
        ))),
        Err(err) => Err(err.into()),
    }
}

/// The flocks a comma-separated list of names names; each name must match
/// exactly one flock of the farm.
pub async fn resolve_flocks(
    store: &Store,
    farm: FarmId,
    list: &str,
) -> Result<Vec<FlockId>, AdminError> {
    let mut ids = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let found = farms::find_flocks_named(&mut store.read().await?, farm, name).await?;
        match found.as_slice() {
            [one] => ids.push(*one),
            [] => return Err(refused(format!("the farm has no flock named {name:?}"))),
            _ => {
                return Err(refused(format!(
                    "several flocks are named {name:?}; rename one first"
                )));
            }
        }
    }
    if ids.is_empty() {
        return Err(refused("--flocks needs at least one flock name"));
    }
    Ok(ids)
}

/// What a user command does to the account.
#[derive(Clone, Copy, Debug)]
pub enum UserChange {
    Disable,
    Enable,
    SignOutEverywhere,
    RequirePasswordChange,
}

pub async fn change_user(
    store: &Store,
    email: &str,
    change: UserChange,
    now: OffsetDateTime,
) -> Result<(), AdminError> {
    let email = Email::parse(email).map_err(refused)?;
    let result = write(store, async |tx| match change {
        UserChange::Disable => users::set_disabled(tx, &email, true, now).await,
        UserChange::Enable => users::set_disabled(tx, &email, false, now).await,
        UserChange::SignOutEverywhere => users::move_epoch(tx, &email, now).await,
        UserChange::RequirePasswordChange => users::require_password_change(tx, &email, now).await,
    })
    .await;
    match result {
        Ok(_) => Ok(()),
        Err(StoreError::NotFound) => Err(refused(format!("no user has the email {email}"))),
        Err(err) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_come_from_names_and_bad_ones_are_refused() {
        assert_eq!(slug_from_name("Hillside Farm"), "hillside-farm");
        assert_eq!(slug_from_name("  Ågård & Sons!! "), "g-rd-sons");
        assert!(parse_slug("ok-slug-2").is_ok());
        for bad in ["", "UPPER", "-x", "x-", "a--b", "sp ace"] {
            assert!(parse_slug(bad).is_err(), "{bad:?}");
        }
    }
}
