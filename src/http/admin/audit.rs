//! `/admin/audit`: the farm's audit log, newest first, 50 to a page,
//! filtered by member, app and kind ([`crate::admin::pages::audit`]).
//! Filters are a GET form, so a filtered page can be bookmarked; "Older
//! entries" carries the keyset cursor.

use askama::Template;
use axum::extract::{Query, State};
use axum::response::Response;
use serde::Deserialize;

use super::{Frame, RequireOwner};
use crate::admin::pages::audit::{self, AuditQuery, Choice, EntryView};
use crate::http::error::{PageError, render};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "admin_audit.html")]
struct AuditPage {
    frame: Frame,
    users: Vec<Choice>,
    clients: Vec<Choice>,
    kinds: Vec<Choice>,
    entries: Vec<EntryView>,
    filtered: bool,
    older: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct AuditForm {
    user: String,
    client: String,
    kind: String,
    before: String,
}

pub async fn show(
    State(state): State<AppState>,
    RequireOwner { owner, nav }: RequireOwner,
    Query(form): Query<AuditForm>,
) -> Result<Response, PageError> {
    let query = AuditQuery {
        user: &form.user,
        client: &form.client,
        kind: &form.kind,
        before: &form.before,
    };
    let view = audit::show(&state.store, &owner.account, &query).await?;
    let frame = Frame {
        nav,
        tab: "audit",
        notice: None,
    };
    Ok(render(&AuditPage {
        frame,
        users: view.users,
        clients: view.clients,
        kinds: view.kinds,
        entries: view.entries,
        filtered: view.filtered,
        older: view.older.map(|query| format!("/admin/audit?{query}")),
    }))
}
