//! How instants, scopes and connected apps are put into words a farmer
//! reads at a glance, on every page that shows them.

use time::OffsetDateTime;
use time::macros::format_description;

use crate::domain::{ClientKind, Scope, ScopeSet};
use crate::storage::connected_apps::ConnectedApp;

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
