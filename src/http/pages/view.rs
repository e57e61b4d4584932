//! What pages share: the navigation bar, and how instants, scopes and
//! clients are put into words a farmer reads at a glance.

use time::OffsetDateTime;
use time::macros::format_description;

use crate::domain::{ClientKind, Role, Scope, ScopeSet};
use crate::http::error::PageError;
use crate::http::session::{self, SignedIn};
use crate::storage::connected_apps::ConnectedApp;
use crate::storage::users::Account;

/// The top navigation (`templates/nav.html`). Farm administration is shown
/// to owners only; a suspended farm's members see why under it, on every
/// page.
pub struct Nav {
    /// The session's CSRF token, as the page writes it into its forms.
    pub csrf: String,
    pub is_owner: bool,
    /// Which entry is this page: "home", "apps", "admin", "password".
    pub current: &'static str,
    /// The farm is suspended: what its members are told.
    pub suspended: Option<String>,
}

impl Nav {
    pub async fn new(user: &SignedIn, current: &'static str) -> Result<Self, PageError> {
        Ok(Self {
            csrf: session::csrf_token(&user.session)
                .await?
                .expose()
                .to_owned(),
            is_owner: user.account.role == Role::Owner,
            current,
            suspended: suspension_notice(&user.account),
        })
    }
}

/// What a member of a suspended farm is told: that it is suspended, why
/// (when the operator said), and what that stops.
pub fn suspension_notice(account: &Account) -> Option<String> {
    if !account.farm_suspended {
        return None;
    }
    let why = match &account.farm_suspended_reason {
        Some(reason) => format!(": {reason}"),
        None => ". Ask them why".to_owned(),
    };
    Some(format!(
        "Your farm is suspended by the people who run Coop{why}. Until it is resumed, no app can connect to the farm or use its records, and nothing on the farm can be changed."
    ))
}

/// "30 Nov 2026, 09:40 UTC".
pub fn instant(unix: i64) -> String {
    let format =
        format_description!("[day padding:none] [month repr:short] [year], [hour]:[minute] UTC");
    OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| t.format(format).ok())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Last use, or "Not used yet".
pub fn last_used(unix: Option<i64>) -> String {
    unix.map(instant)
        .unwrap_or_else(|| "Not used yet".to_owned())
}

/// A scope in plain words.
pub fn scope_words(scope: Scope) -> &'static str {
    match scope {
        Scope::FarmRead => "Read the farm's records",
        Scope::DailyEntriesWrite => "Record daily entries",
    }
}

/// Each stored scope in plain words; "Nothing" for an empty grant.
pub fn scopes_in_words(scopes: &ScopeSet) -> Vec<&'static str> {
    let words: Vec<&'static str> = scopes.iter().map(scope_words).collect();
    if words.is_empty() {
        vec!["Nothing"]
    } else {
        words
    }
}

/// One connected app as a row of a page.
pub struct AppView {
    pub grant_id: String,
    pub client_name: String,
    /// Self-registered: its name is its own claim.
    pub unverified: bool,
    /// For a metadata-document client, the host that vouches for it.
    pub document_host: Option<String>,
    pub member: String,
    pub scopes: Vec<&'static str>,
    pub granted: String,
    pub last_used: String,
}

impl AppView {
    pub fn from_app(app: &ConnectedApp) -> Self {
        let document_host = if app.client_kind == ClientKind::MetadataDocument {
            url::Url::parse(&app.client_id)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
        } else {
            None
        };
        Self {
            grant_id: app.grant_id.to_string(),
            client_name: app.client_name.clone(),
            unverified: app.client_kind == ClientKind::Dynamic,
            document_host,
            member: app.email.clone(),
            scopes: scopes_in_words(&app.scope),
            granted: instant(app.created_at),
            last_used: last_used(app.last_used_at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_and_scopes_read_plainly() {
        assert_eq!(instant(1_796_029_200), "30 Nov 2026, 09:00 UTC");
        assert_eq!(last_used(None), "Not used yet");
        assert_eq!(
            scopes_in_words(&ScopeSet::from_stored("farm:read daily-entries:write")),
            ["Read the farm's records", "Record daily entries"]
        );
        assert_eq!(scopes_in_words(&ScopeSet::empty()), ["Nothing"]);
    }
}
