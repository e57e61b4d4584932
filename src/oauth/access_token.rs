//! JWT access tokens (RFC 9068 shape): minted at `/token`, verified on every
//! `/mcp` call before the store look-up.
//!
//! Verification accepts exactly one algorithm (ES256), looks the `kid` up
//! only in Coop's own key table, ignores header URLs (`jku`, `x5u`), and
//! requires `iss`, `aud`, `sub` and `exp`. The signature proves Coop made
//! the token; whether it is still good (grant active, epoch unchanged, user
//! and farm in order) is the store's answer, asked by the caller. A token
//! verified once is recognised by its hash until it expires or its key
//! leaves the set ([`super::verified`]), saving the signature check, never
//! the store's.

use jsonwebtoken::{Algorithm, Header, Validation};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use super::claim_time;
use super::keys::{KeyError, Keys};
use super::verified;
use crate::domain::{AutomationId, GrantId, ScopeSet, UserId};
use crate::secrets::AccessToken;

/// The claims of a Coop access token.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct AccessClaims {
    pub iss: String,
    /// The user id; for an automation's token (client credentials), the
    /// automation's `client_id` (RFC 9068 §2.2), never a bare UUID.
    pub sub: String,
    /// The resource the token is for: `<issuer>/mcp`.
    pub aud: String,
    pub client_id: String,
    /// Space-separated granted scopes.
    pub scope: String,
    pub iat: i64,
    pub exp: i64,
    pub jti: String,
    /// The grant (connected app) the token was issued under; none for an
    /// automation's token.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub grant_id: String,
    /// The user's (or automation's) credential epoch when the token was issued.
    pub epoch: i64,
    /// The key the token is bound to (RFC 9449 §6): only a request with a
    /// DPoP proof by that key may use it. Absent: a bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cnf: Option<Confirmation>,
    /// The key that signed the token (from its header), so the per-call
    /// store check can refuse a token whose key was withdrawn. Not a claim.
    #[serde(skip)]
    pub kid: String,
}

/// `cnf` (RFC 7800): what the token is bound to.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Confirmation {
    /// The RFC 7638 thumbprint of the DPoP proof key.
    pub jkt: String,
}

/// Whom a token speaks for. A person's token and an automation's are told
/// apart by their claims alone, and neither can be read as the other: an
/// automation's `sub` is its `client_id`, which is never a UUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenSubject {
    /// A person, through the grant (connected app) they approved.
    Member { user: UserId, grant: GrantId },
    /// An automation of a farm, through the client credentials grant.
    Automation(AutomationId),
}

impl AccessClaims {
    /// The thumbprint of the key the token is bound to, if it is bound.
    pub fn jkt(&self) -> Option<&str> {
        self.cnf.as_ref().map(|c| c.jkt.as_str())
    }

    pub fn user_id(&self) -> Option<UserId> {
        Uuid::parse_str(&self.sub).ok().map(UserId)
    }

    pub fn grant_id(&self) -> Option<GrantId> {
        Uuid::parse_str(&self.grant_id).ok().map(GrantId)
    }

    /// The automation whose token this is: its subject is its own client.
    pub fn automation(&self) -> Option<AutomationId> {
        AutomationId::from_client_id(&self.sub).filter(|_| self.sub == self.client_id)
    }

    /// The token's subject; `None` for claims that name neither a person
    /// with a grant nor an automation.
    pub fn subject(&self) -> Option<TokenSubject> {
        if let Some(automation) = self.automation() {
            return self
                .grant_id
                .is_empty()
                .then_some(TokenSubject::Automation(automation));
        }
        Some(TokenSubject::Member {
            user: self.user_id()?,
            grant: self.grant_id()?,
        })
    }

    pub fn scopes(&self) -> ScopeSet {
        ScopeSet::from_stored(&self.scope)
    }
}

/// What goes into a new access token.
pub struct NewAccessToken<'a> {
    pub issuer: &'a str,
    pub audience: &'a str,
    pub user: UserId,
    pub client_id: &'a str,
    pub scope: &'a ScopeSet,
    pub grant: GrantId,
    pub epoch: i64,
    pub lifetime: time::Duration,
    /// The DPoP key thumbprint to bind the token to, if a proof came.
    pub jkt: Option<&'a str>,
}

/// Signs a new access token; returns it with its claims.
pub async fn mint(
    keys: &Keys,
    new: &NewAccessToken<'_>,
    now: OffsetDateTime,
) -> Result<(AccessToken, AccessClaims), KeyError> {
    let claims = AccessClaims {
        iss: new.issuer.to_owned(),
        sub: new.user.to_string(),
        aud: new.audience.to_owned(),
        client_id: new.client_id.to_owned(),
        scope: new.scope.to_wire(),
        iat: now.unix_timestamp(),
        exp: (now + new.lifetime).unix_timestamp(),
        jti: Uuid::new_v4().to_string(),
        grant_id: new.grant.to_string(),
        epoch: new.epoch,
        cnf: confirmation(new.jkt),
        kid: String::new(),
    };
    sign(keys, claims).await
}

/// What goes into an automation's access token (client credentials).
pub struct NewAutomationToken<'a> {
    pub issuer: &'a str,
    pub audience: &'a str,
    pub automation: AutomationId,
    pub scope: &'a ScopeSet,
    /// The automation's credential epoch.
    pub epoch: i64,
    pub lifetime: time::Duration,
    /// The DPoP key thumbprint to bind the token to, if a proof came.
    pub jkt: Option<&'a str>,
}

/// `cnf` for a token bound to `jkt`, if any.
fn confirmation(jkt: Option<&str>) -> Option<Confirmation> {
    jkt.map(|jkt| Confirmation {
        jkt: jkt.to_owned(),
    })
}

/// Signs an automation's access token: its subject and client are the
/// automation, and it names no grant.
pub async fn mint_for_automation(
    keys: &Keys,
    new: &NewAutomationToken<'_>,
    now: OffsetDateTime,
) -> Result<(AccessToken, AccessClaims), KeyError> {
    let client_id = new.automation.client_id();
    let claims = AccessClaims {
        iss: new.issuer.to_owned(),
        sub: client_id.clone(),
        aud: new.audience.to_owned(),
        client_id,
        scope: new.scope.to_wire(),
        iat: now.unix_timestamp(),
        exp: (now + new.lifetime).unix_timestamp(),
        jti: Uuid::new_v4().to_string(),
        grant_id: String::new(),
        epoch: new.epoch,
        cnf: confirmation(new.jkt),
        kid: String::new(),
    };
    sign(keys, claims).await
}

/// Signs `claims` with the active key (whose id it records in them).
async fn sign(
    keys: &Keys,
    mut claims: AccessClaims,
) -> Result<(AccessToken, AccessClaims), KeyError> {
    let (kid, key) = keys.signing_key().await?;
    claims.kid = kid.clone();
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("at+jwt".to_owned());
    header.kid = Some(kid);
    let token = jsonwebtoken::encode(&header, &claims, &key)
        .map_err(|e| KeyError::Corrupt("signing".to_owned(), e.to_string()))?;
    Ok((AccessToken::new(token), claims))
}

/// Why a presented token is not acceptable. Every variant is answered the
/// same way on the wire (401 `invalid_token`); the variant is for the log.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenRejection {
    #[error("not a JWT")]
    Malformed,
    #[error("algorithm or type not accepted")]
    WrongAlgorithm,
    #[error("unknown key id")]
    UnknownKey,
    #[error("bad signature")]
    BadSignature,
    #[error("expired")]
    Expired,
    #[error("wrong issuer")]
    WrongIssuer,
    #[error("no audience or another audience")]
    WrongAudience,
    #[error("claims missing or malformed")]
    BadClaims,
}

/// Why a token was not verified: the token itself, or the key set that
/// could not be read to check it (the store out of reach while looking for
/// a key another replica made). The second is never a rejection: the token
/// may be perfectly good.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Rejected(#[from] TokenRejection),
    #[error("the signing keys could not be read: {0}")]
    Keys(#[from] KeyError),
}

/// Checks the token's form, signature, `iss`, `aud` and `exp` against `now`.
pub async fn verify(
    keys: &Keys,
    token: &str,
    issuer: &str,
    audience: &str,
    now: OffsetDateTime,
) -> Result<AccessClaims, VerifyError> {
    let hash = verified::token_hash(token);
    if let Some(claims) = keys.verified_claims(&hash, now).await
        && claims.iss == issuer
        && claims.aud == audience
    {
        return Ok((*claims).clone());
    }
    let header = jsonwebtoken::decode_header(token).map_err(|_| TokenRejection::Malformed)?;
    if header.alg != Algorithm::ES256 || header.typ.as_deref() != Some("at+jwt") {
        return Err(TokenRejection::WrongAlgorithm.into());
    }
    let kid = header.kid.ok_or(TokenRejection::UnknownKey)?;
    let key = keys
        .decoding_key(&kid, now)
        .await?
        .ok_or(TokenRejection::UnknownKey)?;

    let mut validation = Validation::new(Algorithm::ES256);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[audience]);
    // `exp` is checked below against the injected clock, not the system's.
    validation.validate_exp = false;
    validation.leeway = 0;

    let data = jsonwebtoken::decode::<AccessClaims>(token, &key, &validation).map_err(|err| {
        use jsonwebtoken::errors::ErrorKind;
        match err.kind() {
            ErrorKind::InvalidSignature => TokenRejection::BadSignature,
            ErrorKind::InvalidIssuer => TokenRejection::WrongIssuer,
            ErrorKind::InvalidAudience => TokenRejection::WrongAudience,
            _ => TokenRejection::BadClaims,
        }
    })?;
    if claim_time::compare(data.claims.exp, now, time::Duration::ZERO).is_le() {
        return Err(TokenRejection::Expired.into());
    }
    let mut claims = data.claims;
    claims.kid = kid;
    keys.remember_verified(hash, &claims.kid, claims.clone(), now);
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    use super::*;
    use crate::domain::Scope;
    use crate::testing::TestStore;

    const ISSUER: &str = "https://coop.example";
    const RESOURCE: &str = "https://coop.example/mcp";

    /// The rejection of a refused token (a key-set failure is a test bug).
    fn rejection(
        result: Result<AccessClaims, VerifyError>,
    ) -> Result<AccessClaims, TokenRejection> {
        result.map_err(|err| match err {
            VerifyError::Rejected(rejection) => rejection,
            VerifyError::Keys(err) => panic!("the key set failed: {err}"),
        })
    }

    /// Signing keys on a fresh store, and the time they were made at.
    async fn keys() -> (Keys, OffsetDateTime, TestStore) {
        let db = TestStore::sqlite().await;
        let now = OffsetDateTime::now_utc();
        let keys = Keys::load_or_create(db.store.clone(), time::Duration::hours(24), now)
            .await
            .unwrap();
        (keys, now, db)
    }

    fn new_token<'a>(scope: &'a ScopeSet, audience: &'a str) -> NewAccessToken<'a> {
        NewAccessToken {
            issuer: ISSUER,
            audience,
            user: UserId::new(),
            client_id: "client-1",
            scope,
            grant: GrantId::new(),
            epoch: 3,
            lifetime: time::Duration::minutes(15),
            jkt: None,
        }
    }

    /// A bearer token for `scope` at `RESOURCE`, minted at `now`.
    async fn minted(keys: &Keys, scope: &ScopeSet, now: OffsetDateTime) -> AccessToken {
        mint(keys, &new_token(scope, RESOURCE), now)
            .await
            .unwrap()
            .0
    }

    /// The claims of `token`, which must verify at `RESOURCE`.
    async fn verified(keys: &Keys, token: &AccessToken, now: OffsetDateTime) -> AccessClaims {
        verify(keys, token.expose(), ISSUER, RESOURCE, now)
            .await
            .unwrap()
    }

    /// The JSON of a JWT's payload (its second part).
    fn payload(token: &str) -> serde_json::Value {
        let payload = token.split('.').nth(1).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
    }

    #[tokio::test]
    async fn a_minted_token_verifies_with_its_claims() {
        let (keys, now, _db) = keys().await;
        let scope = ScopeSet::from_scopes([Scope::FarmRead]);
        let (token, claims) = mint(&keys, &new_token(&scope, RESOURCE), now)
            .await
            .unwrap();
        let header = jsonwebtoken::decode_header(token.expose()).unwrap();
        assert_eq!(header.typ.as_deref(), Some("at+jwt"));
        let verified = verified(&keys, &token, now).await;
        assert_eq!(verified, claims);
        assert_eq!(verified.epoch, 3);
        assert_eq!(verified.scopes(), scope);
    }

    #[tokio::test]
    async fn a_token_minted_for_a_proof_key_carries_its_thumbprint() {
        let (keys, now, _db) = keys().await;
        let scope = ScopeSet::from_scopes([Scope::FarmRead]);
        let mut new = new_token(&scope, RESOURCE);
        new.jkt = Some("thumb");
        let (token, _) = mint(&keys, &new, now).await.unwrap();
        let json = payload(token.expose());
        assert_eq!(json["cnf"], serde_json::json!({"jkt": "thumb"}));
        let verified = verified(&keys, &token, now).await;
        assert_eq!(verified.jkt(), Some("thumb"));
        // A bearer token has no cnf at all, not a null.
        let token = minted(&keys, &scope, now).await;
        let json = payload(token.expose());
        assert!(json.get("cnf").is_none());
    }

    #[tokio::test]
    async fn an_automations_token_names_it_and_no_person_or_grant() {
        let (keys, now, _db) = keys().await;
        let scope = ScopeSet::from_scopes([Scope::DailyEntriesWrite]);
        let automation = AutomationId::new();
        let new = NewAutomationToken {
            issuer: ISSUER,
            audience: RESOURCE,
            automation,
            scope: &scope,
            epoch: 4,
            lifetime: time::Duration::minutes(5),
            jkt: None,
        };
        let (token, _) = mint_for_automation(&keys, &new, now).await.unwrap();
        let claims = verified(&keys, &token, now).await;
        assert_eq!(claims.sub, automation.client_id());
        assert_eq!(claims.client_id, automation.client_id());
        assert_eq!(claims.subject(), Some(TokenSubject::Automation(automation)));
        assert_eq!(claims.user_id(), None);
        assert_eq!(claims.grant_id(), None);
        let raw = payload(token.expose());
        assert!(raw.get("grant_id").is_none(), "{raw}");

        // A person's token is a member's, even if its client were named
        // like an automation: the subject must be the client itself.
        let person = minted(&keys, &scope, now).await;
        let mut claims = verified(&keys, &person, now).await;
        assert!(matches!(
            claims.subject(),
            Some(TokenSubject::Member { .. })
        ));
        claims.client_id = automation.client_id();
        assert!(matches!(
            claims.subject(),
            Some(TokenSubject::Member { .. })
        ));
        // An automation's subject with a grant is neither.
        claims.sub = automation.client_id();
        assert_eq!(claims.subject(), None);
    }

    /// The same refusals for a token met for the first time and for one
    /// already verified (whose claims the cache remembers).
    #[tokio::test]
    async fn expiry_issuer_and_audience_are_enforced_seen_before_or_not() {
        let (keys, now, _db) = keys().await;
        let scope = ScopeSet::from_scopes([Scope::FarmRead]);
        let token = minted(&keys, &scope, now).await;
        let later = now + time::Duration::minutes(15);
        for remembered in [false, true] {
            // Remembered again before each check: the expired one drops
            // the entry, and the next would meet the token afresh.
            let refused = async |issuer, audience, at| {
                if remembered {
                    verified(&keys, &token, now).await;
                }
                rejection(verify(&keys, token.expose(), issuer, audience, at).await)
            };
            assert_eq!(
                refused(ISSUER, RESOURCE, later).await,
                Err(TokenRejection::Expired),
                "remembered: {remembered}"
            );
            assert_eq!(
                refused("https://other.example", RESOURCE, now).await,
                Err(TokenRejection::WrongIssuer),
                "remembered: {remembered}"
            );
            assert_eq!(
                refused(ISSUER, "https://coop.example/other", now).await,
                Err(TokenRejection::WrongAudience),
                "remembered: {remembered}"
            );
        }
    }

    /// `claims` signed with Coop's own key: a token it never minted.
    async fn signed(keys: &Keys, claims: &serde_json::Value) -> String {
        let (kid, key) = keys.signing_key().await.unwrap();
        let mut header = jsonwebtoken::Header::new(Algorithm::ES256);
        header.typ = Some("at+jwt".into());
        header.kid = Some(kid);
        jsonwebtoken::encode(&header, claims, &key).unwrap()
    }

    /// Coop's claims are read into a struct whose spec claims are not
    /// optional, so a token signed with Coop's own key but lacking one of
    /// them is refused before any of them is compared.
    #[tokio::test]
    async fn a_signed_token_lacking_a_required_claim_is_refused() {
        let (keys, now, _db) = keys().await;
        let token = minted(&keys, &ScopeSet::from_scopes([Scope::FarmRead]), now).await;
        let whole = payload(token.expose());
        assert!(
            verify(&keys, &signed(&keys, &whole).await, ISSUER, RESOURCE, now)
                .await
                .is_ok()
        );
        for claim in ["aud", "iss", "sub", "exp"] {
            let mut claims = whole.clone();
            claims.as_object_mut().unwrap().remove(claim);
            let token = signed(&keys, &claims).await;
            assert_eq!(
                rejection(verify(&keys, &token, ISSUER, RESOURCE, now).await),
                Err(TokenRejection::BadClaims),
                "{claim}"
            );
        }
    }

    #[tokio::test]
    async fn forged_and_altered_tokens_are_refused() {
        let (keys, now, _db) = keys().await;
        let scope = ScopeSet::from_scopes([Scope::FarmRead]);
        let token = minted(&keys, &scope, now).await;
        let parts: Vec<&str> = token.expose().split('.').collect();

        // Claims altered (scope widened): the signature no longer matches.
        let mut claims = payload(token.expose());
        claims["scope"] = "farm:read daily-entries:write".into();
        let altered = crate::testing::jose::with_claims(token.expose(), &claims);
        assert_eq!(
            rejection(verify(&keys, &altered, ISSUER, RESOURCE, now).await),
            Err(TokenRejection::BadSignature)
        );

        // alg: none, and HS256 "signed" with anything.
        for alg in ["none", "HS256"] {
            let header =
                URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"{alg}","typ":"at+jwt","kid":"x"}}"#));
            let forged = format!("{header}.{}.", parts[1]);
            let result = rejection(verify(&keys, &forged, ISSUER, RESOURCE, now).await);
            assert!(
                matches!(
                    result,
                    Err(TokenRejection::Malformed | TokenRejection::WrongAlgorithm)
                ),
                "alg {alg}: {result:?}"
            );
        }

        // A kid Coop never issued.
        let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256","typ":"at+jwt","kid":"foreign"}"#);
        let foreign = format!("{header}.{}.{}", parts[1], parts[2]);
        assert_eq!(
            rejection(verify(&keys, &foreign, ISSUER, RESOURCE, now).await),
            Err(TokenRejection::UnknownKey)
        );
    }
}
