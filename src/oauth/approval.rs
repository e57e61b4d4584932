//! Carrying out the person's answer, each in one transaction with the
//! claim on the waiting request ([`crate::oauth::pending::claim`]):
//! approving records the consent (creating, narrowing or widening the
//! (user, client) grant), issues a code and writes the audit entries;
//! denying writes the audit entry. The
//! redirects that hand the client its code or the refusal, with `state`
//! and `iss` (RFC 9207), and [`replay`], which repeats a waiting request's
//! answer for a second submit of its form.
//!
//! Codes are 256-bit values stored only as hashes, single use, valid for
//! [`CODE_TTL`]: random for a request approved at once, derived from the
//! waiting request's id otherwise ([`crate::oauth::pending::code_for`]).

use time::OffsetDateTime;

use crate::domain::Issuer;
use crate::domain::{GrantId, Scope, ScopeSet};
use crate::oauth::authorize::{AuthorizationRequest, RedirectRefusal};
use crate::oauth::pending::{self, Decision, Pending};
use crate::secrets::{self, AuthorizationCode};
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::codes::{self, NewCode};
use crate::storage::grants::{self, Consent, ConsentOutcome};
use crate::storage::users::Account;
use crate::storage::{Store, StoreError, Tx};

/// How long a code may wait to be exchanged.
pub const CODE_TTL: time::Duration = time::Duration::seconds(60);

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("tick at least one of the permissions, or choose Deny")]
pub struct NothingGranted;

/// The scopes approved: the ticked boxes that were asked for (a box for a
/// scope not asked for is ignored, never granted). At least one.
pub fn approved_scopes(asked: &ScopeSet, ticked: &[&str]) -> Result<ScopeSet, NothingGranted> {
    let ticked = ScopeSet::from_scopes(ticked.iter().filter_map(|s| Scope::parse(s)));
    let approved = ticked.intersection(asked);
    if approved.is_empty() {
        Err(NothingGranted)
    } else {
        Ok(approved)
    }
}

/// The grant's scopes after a consent: an answer concerns only the scopes
/// that were asked, so those approved are added, those asked but left
/// unticked removed, and the others kept (two tabs asking for different
/// scopes must not undo each other).
pub fn grant_scope_after(
    before: Option<&ScopeSet>,
    asked: &ScopeSet,
    approved: &ScopeSet,
) -> ScopeSet {
    let kept = before
        .map(|b| ScopeSet::from_scopes(b.iter().filter(|s| !asked.contains(*s))))
        .unwrap_or_default();
    kept.union(approved)
}

/// Approves the waiting request `pending` for `scope`, in one
/// transaction: its claim, the grant, the audit rows and its code
/// ([`pending::code_for`]). `Ok(None)`: another submit of the same form
/// answered first, and nothing was written.
pub async fn approve(
    store: &Store,
    pending: &Pending,
    account: &Account,
    scope: &ScopeSet,
    now: OffsetDateTime,
) -> Result<Option<AuthorizationCode>, StoreError> {
    match approve_once(store, pending, account, scope, now).await {
        // PostgreSQL: a consent for the same (user, client), from another
        // request, committed between our read and our insert. Once more
        // finds its grant.
        Err(StoreError::Conflict(_)) => approve_once(store, pending, account, scope, now).await,
        other => other,
    }
}

async fn approve_once(
    store: &Store,
    pending: &Pending,
    account: &Account,
    scope: &ScopeSet,
    now: OffsetDateTime,
) -> Result<Option<AuthorizationCode>, StoreError> {
    let request = &pending.request;
    let wire = scope.to_wire();
    let asked = request.scopes();
    let scope_after = |before: Option<&ScopeSet>| grant_scope_after(before, &asked, scope);
    let mut tx = store.write().await?;
    if !pending::claim(
        &mut tx,
        &pending.id,
        account.user_id(),
        Decision::Approve,
        now,
    )
    .await?
    {
        return Ok(None);
    }
    let outcome = grants::record_consent(
        &mut tx,
        &Consent {
            farm: account.farm(),
            user: account.user_id(),
            client_id: &request.client_id,
            scope_after: &scope_after,
            resource: &request.resource,
            epoch: account.credential_epoch,
        },
        now,
    )
    .await?;
    let mut event = AuditEvent::new(AuditKind::Consent);
    event.farm = Some(account.farm());
    event.user = Some(account.user_id());
    event.client_id = Some(&request.client_id);
    event.grant = Some(outcome.grant());
    event.detail = serde_json::json!({
        "scope": wire,
        "asked": request.scope,
        "grant": match outcome {
            ConsentOutcome::Created(_) => "created",
            ConsentOutcome::Updated(_) => "updated",
            ConsentOutcome::Replaced { .. } => "replaced",
        },
    });
    audit::record(&mut tx, &event, now).await?;
    if let ConsentOutcome::Replaced { old, .. } = outcome {
        // The old grant ended here: a grant event of its own, so the log
        // shows when its tokens stopped working and why.
        let mut ended = AuditEvent::new(AuditKind::GrantRevoked);
        ended.farm = Some(account.farm());
        ended.user = Some(account.user_id());
        ended.client_id = Some(&request.client_id);
        ended.grant = Some(old);
        ended.detail = serde_json::json!({
            "via": "consent",
            "reason": "credential epoch moved",
            "replaced_by": outcome.grant().0,
        });
        audit::record(&mut tx, &ended, now).await?;
    }
    let code = pending::code_for(&pending.id);
    insert_code(
        &mut tx,
        request,
        account,
        outcome.grant(),
        scope,
        &code,
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(Some(code))
}

/// Denies the waiting request `pending`: its claim and the audit entry, in
/// one transaction. `false`: another submit answered first.
pub async fn deny(
    store: &Store,
    pending: &Pending,
    account: &Account,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    let request = &pending.request;
    let mut tx = store.write().await?;
    if !pending::claim(&mut tx, &pending.id, account.user_id(), Decision::Deny, now).await? {
        return Ok(false);
    }
    let mut event = AuditEvent::new(AuditKind::ConsentDenied);
    event.farm = Some(account.farm());
    event.user = Some(account.user_id());
    event.client_id = Some(&request.client_id);
    event.detail = serde_json::json!({ "asked": request.scope });
    audit::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    Ok(true)
}

/// A code under `grant` for a request approved without a screen: a fresh
/// random one for a request that just arrived, or, for one that waited
/// (for the password), its derived code once its claim is won in the same
/// transaction. `Ok(None)`: the waiting request was answered by another
/// submit first.
pub async fn issue_code(
    store: &Store,
    request: &AuthorizationRequest,
    waited: Option<&Pending>,
    account: &Account,
    grant: GrantId,
    now: OffsetDateTime,
) -> Result<Option<AuthorizationCode>, StoreError> {
    let mut tx = store.write().await?;
    let code = match waited {
        None => AuthorizationCode::new(secrets::random_token(32)),
        Some(pending) => {
            let user = account.user_id();
            if !pending::claim(&mut tx, &pending.id, user, Decision::Approve, now).await? {
                return Ok(None);
            }
            pending::code_for(&pending.id)
        }
    };
    insert_code(
        &mut tx,
        request,
        account,
        grant,
        &request.scopes(),
        &code,
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(Some(code))
}

/// Stores `code` under `grant`, bound to the client, redirect URI, PKCE
/// challenge, resource, scopes and the person's credential epoch.
async fn insert_code(
    tx: &mut Tx,
    request: &AuthorizationRequest,
    account: &Account,
    grant: GrantId,
    scope: &ScopeSet,
    code: &AuthorizationCode,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    codes::insert(
        tx,
        &NewCode {
            code_hash: &secrets::hash_secret(code.expose()),
            grant,
            client_id: &request.client_id,
            user: account.user_id(),
            redirect_uri: &request.redirect_uri,
            code_challenge: &request.code_challenge,
            resource: &request.resource,
            scope: &scope.to_wire(),
            epoch: account.credential_epoch,
            expires_at: now + CODE_TTL,
        },
        now,
    )
    .await
}

/// The refusal a denial sends back.
pub fn denied() -> RedirectRefusal {
    RedirectRefusal::new("access_denied", "the person refused access")
}

/// The answer already given to `pending`, for a second submit of its form
/// (or a reload): the same `access_denied` redirect, or the same code
/// redirect while the code is unspent and unexpired (a code already
/// exchanged is not handed out again: the client would present it twice
/// and lose its grant to reuse detection). The answer committed with its
/// claim, so its code is there to find. `None`: nothing to repeat.
pub async fn replay(
    store: &Store,
    pending: &Pending,
    issuer: &Issuer,
    now: OffsetDateTime,
) -> Result<Option<String>, StoreError> {
    let request = &pending.request;
    match pending.answered {
        None => Ok(None),
        Some(Decision::Deny) => Ok(error_redirect(
            &request.redirect_uri,
            &denied(),
            request.state.as_deref(),
            issuer,
        )),
        Some(Decision::Approve) => {
            let code = pending::code_for(&pending.id);
            let hash = secrets::hash_secret(code.expose());
            match codes::find(&mut store.read().await?, &hash).await? {
                Some(row) if row.consumed_at.is_none() && row.expires_at > now.unix_timestamp() => {
                    Ok(code_redirect(request, &code, issuer))
                }
                _ => Ok(None),
            }
        }
    }
}

/// The redirect that hands the code to the client: `code`, `state` (when
/// the client sent one) and `iss` (RFC 9207), added with the URL encoder to
/// whatever query the registered URI already has.
pub fn code_redirect(
    request: &AuthorizationRequest,
    code: &AuthorizationCode,
    issuer: &Issuer,
) -> Option<String> {
    redirect_with(
        &request.redirect_uri,
        &[("code", code.expose())],
        request.state.as_deref(),
        issuer,
    )
}

/// The redirect that reports a refusal to the client, with `state` and
/// `iss` as on success.
pub fn error_redirect(
    redirect_uri: &str,
    refusal: &RedirectRefusal,
    state: Option<&str>,
    issuer: &Issuer,
) -> Option<String> {
    redirect_with(
        redirect_uri,
        &[
            ("error", refusal.error),
            ("error_description", &refusal.description),
        ],
        state,
        issuer,
    )
}

fn redirect_with(
    redirect_uri: &str,
    pairs: &[(&str, &str)],
    state: Option<&str>,
    issuer: &Issuer,
) -> Option<String> {
    let mut url = url::Url::parse(redirect_uri).ok()?;
    {
        let mut query = url.query_pairs_mut();
        for (k, v) in pairs {
            query.append_pair(k, v);
        }
        if let Some(state) = state {
            query.append_pair("state", state);
        }
        query.append_pair("iss", issuer.as_str());
    }
    Some(url.into())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::oauth::authorize::Prompt;

    /// A checked request for `scope` (with a state, and a redirect URI
    /// that has a query of its own), shared with the consent rules' tests.
    pub(crate) fn request(scope: &str) -> AuthorizationRequest {
        AuthorizationRequest {
            client_id: "c1".into(),
            redirect_uri: "https://app.example/cb?keep=1".into(),
            state: Some("s t&".into()),
            code_challenge: "x".into(),
            resource: "https://coop.example/mcp".into(),
            scope: scope.into(),
            prompt: Prompt::default(),
            max_age: None,
        }
    }

    #[test]
    fn only_ticked_scopes_that_were_asked_for_are_approved() {
        let asked = ScopeSet::from_stored("farm:read daily-entries:write");
        assert_eq!(
            approved_scopes(&asked, &["farm:read"]).unwrap().to_wire(),
            "farm:read"
        );
        assert_eq!(approved_scopes(&asked, &[]), Err(NothingGranted));
        assert_eq!(approved_scopes(&asked, &["admin"]), Err(NothingGranted));
        let read_only = ScopeSet::from_stored("farm:read");
        assert_eq!(
            approved_scopes(&read_only, &["farm:read", "daily-entries:write"])
                .unwrap()
                .to_wire(),
            "farm:read"
        );
        assert_eq!(
            approved_scopes(&read_only, &["daily-entries:write"]),
            Err(NothingGranted)
        );
    }

    #[test]
    fn a_consent_changes_only_the_scopes_it_asked_about() {
        let both = ScopeSet::from_stored("farm:read daily-entries:write");
        let read = ScopeSet::from_stored("farm:read");
        let write = ScopeSet::from_stored("daily-entries:write");
        assert_eq!(grant_scope_after(None, &both, &read), read);
        // Asked read only: write, granted before, stays.
        assert_eq!(grant_scope_after(Some(&both), &read, &read), both);
        // Asked both, write left unticked: write goes.
        assert_eq!(grant_scope_after(Some(&both), &both, &read), read);
        assert_eq!(grant_scope_after(Some(&read), &write, &write), both);
    }

    #[test]
    fn redirects_carry_state_and_iss_and_keep_the_registered_query() {
        let issuer = Issuer::parse("https://coop.example").unwrap();
        let url = code_redirect(&request("farm:read"), &"abc".into(), &issuer).unwrap();
        assert_eq!(
            url,
            "https://app.example/cb?keep=1&code=abc&state=s+t%26&iss=https%3A%2F%2Fcoop.example"
        );
        let refusal = RedirectRefusal {
            error: "access_denied",
            description: "no".into(),
        };
        let url = error_redirect("https://app.example/cb", &refusal, None, &issuer).unwrap();
        assert_eq!(
            url,
            "https://app.example/cb?error=access_denied&error_description=no&iss=https%3A%2F%2Fcoop.example"
        );
    }
}
