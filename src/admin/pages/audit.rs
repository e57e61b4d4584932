//! `/admin/audit`: the farm's audit log as the page shows it, newest
//! first, 50 to a page, filtered by member, app and kind, each entry put
//! into words. A tool's write shows the app and the grant it came through;
//! an automation's own write names the automation.

use super::PageRefusal;
use super::words::instant;
use crate::domain::UserId;
use crate::storage::audit_query::{self, AuditEntry, AuditFilter};
use crate::storage::users::Account;
use crate::storage::{Store, automations, connected_apps, members};

const PAGE_SIZE: i64 = 50;

/// Each kind: its stored name, the filter's words, one entry's words.
const KINDS: [(&str, &str, &str); 12] = [
    ("sign_in", "Sign-ins", "Signed in"),
    ("sign_in_failed", "Failed sign-ins", "Sign-in failed"),
    ("sign_out", "Sign-outs", "Signed out"),
    ("password_changed", "Password changes", "Changed password"),
    ("consent", "Consents", "Approved an app"),
    ("consent_denied", "Consents denied", "Denied an app"),
    ("disconnect", "Disconnects", "App disconnected"),
    (
        "token_reuse_detected",
        "Token reuse detected",
        "Token reuse detected: app stopped",
    ),
    (
        "grant_revoked",
        "Revoked by the app",
        "App revoked its access",
    ),
    (
        "access_token_revoked",
        "Access token revoked",
        "App revoked a token",
    ),
    ("tool_write", "Writes through apps", "Wrote through an app"),
    ("admin_action", "Admin actions", "Admin action"),
];

fn kind_words(kind: &str) -> String {
    KINDS
        .iter()
        .find(|(k, _, _)| *k == kind)
        .map(|(_, _, words)| (*words).to_owned())
        .unwrap_or_else(|| kind.to_owned())
}

/// What an admin action's `action` code means.
fn action_words(action: &str) -> &str {
    match action {
        "connected_apps_on" => "turned connected apps on",
        "connected_apps_off" => "turned connected apps off",
        "member_disabled" => "disabled the member",
        "member_enabled" => "enabled the member",
        "member_signed_out_everywhere" => "signed the member out everywhere",
        "member_must_change_password" => "required a password change",
        "member_role_changed" => "changed the role",
        "member_password_reset_link" => "made a password reset link",
        "password_reset_link" => "made a password reset link",
        "house_added" => "added a house",
        "house_renamed" => "renamed a house",
        "flock_added" => "added a flock",
        "flock_renamed" => "renamed a flock",
        "flock_depleted" => "marked a flock depleted",
        "automation_added" => "added an automation",
        "automation_disabled" => "disabled an automation",
        "automation_enabled" => "enabled an automation",
        "automation_deleted" => "deleted an automation",
        other => other,
    }
}

pub struct EntryView {
    pub when: String,
    pub what: String,
    pub member: String,
    pub app: String,
    pub grant: String,
    pub detail: String,
}

impl EntryView {
    fn from_entry(entry: &AuditEntry) -> Self {
        Self {
            when: instant(entry.created_at),
            what: kind_words(&entry.kind),
            // An automation's own write has no member: it is named instead.
            member: entry
                .user_email
                .clone()
                .or_else(|| {
                    entry
                        .automation_name
                        .as_ref()
                        .map(|name| format!("{name} (automation)"))
                })
                .unwrap_or_default(),
            app: entry
                .client_name
                .clone()
                .or_else(|| entry.client_id.clone())
                .unwrap_or_default(),
            grant: entry.grant_id.map(|g| g.to_string()).unwrap_or_default(),
            detail: detail_words(&entry.detail),
        }
    }
}

/// `{"action":"member_disabled","by":"a@b"}` → "disabled the member, by a@b";
/// other fields as "key: value". Ids of houses and flocks are left out.
fn detail_words(raw: &str) -> String {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(raw) else {
        return String::new();
    };
    let text = |value: &serde_json::Value| match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut words = Vec::new();
    if let Some(action) = map.get("action") {
        words.push(action_words(&text(action)).to_owned());
    }
    for (key, value) in &map {
        match key.as_str() {
            "action" | "by" | "house" | "flock" => {}
            _ => words.push(format!("{key}: {}", text(value))),
        }
    }
    if let Some(by) = map.get("by") {
        words.push(format!("by {}", text(by)));
    }
    words.join(", ")
}

/// One option of a filter's list.
pub struct Choice {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

/// The filters as the page's GET form sent them.
#[derive(Clone, Copy, Debug, Default)]
pub struct AuditQuery<'a> {
    pub user: &'a str,
    pub client: &'a str,
    pub kind: &'a str,
    /// `<unix seconds>.<entry id>` of the last entry of the page before.
    pub before: &'a str,
}

/// What the audit page shows.
pub struct AuditView {
    pub users: Vec<Choice>,
    pub clients: Vec<Choice>,
    pub kinds: Vec<Choice>,
    pub entries: Vec<EntryView>,
    pub filtered: bool,
    /// The query string of the next, older page, when there is one: the
    /// same filters and the cursor.
    pub older: Option<String>,
}

fn non_empty(raw: &str) -> Option<&str> {
    Some(raw.trim()).filter(|s| !s.is_empty())
}

/// `before=<unix seconds>.<entry id>`; anything else starts at the newest.
fn cursor(raw: &str) -> Option<(i64, uuid::Uuid)> {
    let (at, id) = raw.split_once('.')?;
    Some((at.parse().ok()?, uuid::Uuid::parse_str(id).ok()?))
}

/// The filter a query asks for: a filter it cannot read is no filter.
fn filter(query: &AuditQuery<'_>) -> AuditFilter {
    AuditFilter {
        user: non_empty(query.user).and_then(UserId::parse),
        client_id: non_empty(query.client).map(str::to_owned),
        kind: non_empty(query.kind)
            .filter(|k| KINDS.iter().any(|(known, _, _)| known == k))
            .map(str::to_owned),
        before: cursor(query.before),
    }
}

pub async fn show(
    store: &Store,
    owner: &Account,
    query: &AuditQuery<'_>,
) -> Result<AuditView, PageRefusal> {
    let farm = owner.farm();
    let filter = filter(query);
    let mut db = store.read().await?;
    let mut rows = audit_query::page(&mut db, farm, &filter, PAGE_SIZE + 1).await?;
    let more = rows.len() as i64 > PAGE_SIZE;
    rows.truncate(PAGE_SIZE as usize);
    let older = match rows.last() {
        Some(last) if more => {
            let params = [
                ("user", query.user),
                ("client", query.client),
                ("kind", query.kind),
                ("before", &format!("{}.{}", last.created_at, last.id)),
            ];
            Some(serde_urlencoded::to_string(params).unwrap_or_default())
        }
        _ => None,
    };

    let users = members::list(&mut db, farm)
        .await?
        .into_iter()
        .map(|m| Choice {
            selected: Some(m.id()) == filter.user,
            value: m.user_id.to_string(),
            label: m.email,
        })
        .collect();
    let mut apps = connected_apps::clients_of_farm(&mut db, farm).await?;
    apps.extend(
        automations::list(&mut db, farm)
            .await?
            .into_iter()
            .map(|a| (a.client_id(), format!("{} (automation)", a.name))),
    );
    let clients = apps
        .into_iter()
        .map(|(id, name)| Choice {
            selected: filter.client_id.as_deref() == Some(id.as_str()),
            label: name,
            value: id,
        })
        .collect();
    let kinds = KINDS
        .iter()
        .map(|(value, label, _)| Choice {
            selected: filter.kind.as_deref() == Some(*value),
            value: (*value).to_owned(),
            label: (*label).to_owned(),
        })
        .collect();
    Ok(AuditView {
        users,
        clients,
        kinds,
        entries: rows.iter().map(EntryView::from_entry).collect(),
        filtered: filter.user.is_some() || filter.client_id.is_some() || filter.kind.is_some(),
        older,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_read_as_words() {
        assert_eq!(
            detail_words(r#"{"action":"member_disabled","by":"o@f.example"}"#),
            "disabled the member, by o@f.example"
        );
        assert_eq!(
            detail_words(r#"{"action":"flock_renamed","flock":"x","name":"B"}"#),
            "renamed a flock, name: B"
        );
        assert_eq!(
            detail_words(r#"{"tool":"record_daily_entry"}"#),
            "tool: record_daily_entry"
        );
        assert_eq!(detail_words("not json"), "");
    }

    #[test]
    fn a_filter_that_cannot_be_read_is_no_filter() {
        let query = AuditQuery {
            user: "  ",
            client: " app ",
            kind: "unknown_kind",
            before: "12.not-a-uuid",
        };
        let filter = filter(&query);
        assert_eq!(filter.user, None);
        assert_eq!(filter.client_id.as_deref(), Some("app"));
        assert_eq!(filter.kind, None);
        assert_eq!(filter.before, None);
        let id = uuid::Uuid::new_v4();
        assert_eq!(cursor(&format!("12.{id}")), Some((12, id)));
    }
}
