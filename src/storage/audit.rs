//! The audit log: who did what, through which client and grant.

use time::OffsetDateTime;
use uuid::Uuid;

use super::{Sql, Store, StoreError, Tx};
use crate::domain::{AutomationId, FarmId, GrantId, UserId};

/// What happened. The string form is what the log stores and filters on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditKind {
    SignIn,
    SignInFailed,
    SignOut,
    PasswordChanged,
    Consent,
    ConsentDenied,
    Disconnect,
    TokenReuseDetected,
    /// A grant ended through `/revoke` (its refresh token was revoked).
    GrantRevoked,
    /// One access token revoked through `/revoke`; its grant lives on.
    AccessTokenRevoked,
    ToolWrite,
    AdminAction,
}

impl AuditKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SignIn => "sign_in",
            Self::SignInFailed => "sign_in_failed",
            Self::SignOut => "sign_out",
            Self::PasswordChanged => "password_changed",
            Self::Consent => "consent",
            Self::ConsentDenied => "consent_denied",
            Self::Disconnect => "disconnect",
            Self::TokenReuseDetected => "token_reuse_detected",
            Self::GrantRevoked => "grant_revoked",
            Self::AccessTokenRevoked => "access_token_revoked",
            Self::ToolWrite => "tool_write",
            Self::AdminAction => "admin_action",
        }
    }
}

/// One audit entry. `detail` is a small JSON object that never holds a secret.
#[derive(Clone, Debug)]
pub struct AuditEvent<'a> {
    pub kind: AuditKind,
    pub farm: Option<FarmId>,
    pub user: Option<UserId>,
    pub client_id: Option<&'a str>,
    pub grant: Option<GrantId>,
    /// The automation that acted (its own tool writes), if one did.
    pub automation: Option<AutomationId>,
    pub detail: serde_json::Value,
}

impl<'a> AuditEvent<'a> {
    pub fn new(kind: AuditKind) -> Self {
        Self {
            kind,
            farm: None,
            user: None,
            client_id: None,
            grant: None,
            automation: None,
            detail: serde_json::json!({}),
        }
    }
}

/// Records `event` inside the caller's transaction: the change it
/// describes and its audit row commit together or not at all.
pub async fn record(
    tx: &mut Tx,
    event: &AuditEvent<'_>,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    Sql::new(
        "insert into audit_log (id, farm_id, user_id, client_id, grant_id, kind, detail, created_at,
             automation_id)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(Uuid::now_v7())
    .bind(event.farm.map(|f| f.0))
    .bind(event.user.map(|u| u.0))
    .bind(event.client_id)
    .bind(event.grant.map(|g| g.0))
    .bind(event.kind.as_str())
    .bind(event.detail.to_string())
    .bind(now)
    .bind(event.automation.map(|a| a.0))
    .execute(tx)
    .await?;
    Ok(())
}

/// Records an event that accompanies no other change (a sign-in, a failed
/// one, a sign-out), in a transaction of its own.
pub async fn record_alone(
    store: &Store,
    event: &AuditEvent<'_>,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    let mut tx = store.write().await?;
    record(&mut tx, event, now).await?;
    tx.commit().await
}
