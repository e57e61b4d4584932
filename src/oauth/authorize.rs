//! The authorization request's checks, in the order they run.
//!
//! | # | check                      | refusal                                    |
//! |---|----------------------------|--------------------------------------------|
//! | 1 | [`check_client`]           | error page (no trusted redirect yet)       |
//! | 2 | [`check_redirect_uri`]     | error page (never redirect to an unknown URI, threat 1) |
//! | 3 | [`check_response_type`]    | redirect `unsupported_response_type` / `invalid_request` |
//! | 4 | [`check_pkce`]             | redirect `invalid_request` (S256 only, threat 2) |
//! | 5 | [`check_resource`]         | redirect `invalid_target`                  |
//! | 6 | [`check_scope`]            | redirect `invalid_scope`                   |
//! | 7 | [`check_prompt`]           | redirect `invalid_request`                 |
//! | 8 | [`check_max_age`]          | redirect `invalid_request`                 |
//!
//! Once step 2 has passed, every refusal is a redirect to the client's URI
//! carrying `error`, `state` (when sent) and `iss` (RFC 9207, threat 4). A
//! parameter sent twice is refused (RFC 6749 §3.1): as a page when it is
//! `client_id` or `redirect_uri`, as `invalid_request` otherwise. A `state`
//! sent twice or longer than [`MAX_STATE_BYTES`] is `invalid_request` too,
//! redirected without it (RFC 6749 §4.1.2.1 sends every error after the
//! redirect URI is known back to the client): it is echoed in the redirect
//! and kept while the person signs in, so its size is bounded like the
//! other parameters Coop keeps.
//!
//! `prompt` (OpenID Connect Core §3.1.2.1) takes `none`, `login` and
//! `consent`; any other value, and `none` with another, is refused
//! (`select_account` included: Coop has one account per browser and no
//! chooser to show). `max_age` is a count of seconds. What they make Coop
//! do is decided in [`crate::oauth::consent`].
//!
//! [`begin`] runs them in this order and says what comes next
//! ([`Outcome`]): a page, a redirect back to the client, signing in first
//! (or `login_required` for `prompt=none`), or the consent step of
//! [`crate::oauth::consent`] for the person signed in. Client resolution
//! (store, metadata document) lives in [`crate::oauth::clients`];
//! [`check_client`] judges its answer, and a document client is recorded
//! in the store once a person is signed in. The HTTP handler renders the
//! outcome and decides nothing.

use serde::{Deserialize, Serialize};

use time::OffsetDateTime;

use crate::domain::Issuer;
use crate::domain::ScopeSet;
use crate::oauth::cimd::{CimdRequest, Throttle};
use crate::oauth::client::Client;
use crate::oauth::clients::{self, ClientLookupError};
use crate::oauth::params::Params;
use crate::oauth::pkce::CodeChallenge;
use crate::oauth::resource::{self, Resource};
use crate::oauth::scopes;
use crate::storage::{Store, StoreError};

/// The query of an authorization request.
pub type AuthorizeParams = Params;

/// A refusal that must not redirect: shown to the person as a page.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PageRefusal {
    #[error("the request names no client (client_id is missing)")]
    MissingClientId,
    #[error("the parameter {0} is repeated")]
    Repeated(&'static str),
    #[error("the application asking for access is not known to Coop")]
    UnknownClient,
    #[error("the application's description could not be used: {0}")]
    ClientDocument(String),
    #[error(
        "the application did not say where to return you, and it has several addresses registered"
    )]
    MissingRedirectUri,
    #[error("the return address the application gave is not one it registered")]
    RedirectUriMismatch,
}

/// A refusal sent back to the client's (validated) redirect URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedirectRefusal {
    pub error: &'static str,
    pub description: String,
}

impl RedirectRefusal {
    pub fn new(error: &'static str, description: impl Into<String>) -> Self {
        Self {
            error,
            description: description.into(),
        }
    }
}

/// A request that passed every check: what the consent page shows and the
/// code will be bound to. Serialisable, so it can wait in the browser
/// session while the person signs in or confirms their password.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorizationRequest {
    pub client_id: String,
    /// Exactly as the client sent it (or the sole registered one); the code
    /// is bound to this string.
    pub redirect_uri: String,
    pub state: Option<String>,
    pub code_challenge: String,
    pub resource: String,
    /// Space-separated, as [`ScopeSet::to_wire`] writes it.
    pub scope: String,
    /// What the client asked Coop to show (or never show).
    #[serde(default)]
    pub prompt: Prompt,
    /// The oldest sign-in the client accepts, in seconds (`max_age`).
    #[serde(default)]
    pub max_age: Option<u32>,
}

/// The `prompt` values Coop honours. `none` never comes with another.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    /// Show no page at all: answer with an error when one would be needed.
    pub none: bool,
    /// Ask for the password again, however fresh the sign-in.
    pub login: bool,
    /// Show the consent screen, even where a grant would approve silently.
    pub consent: bool,
}

impl AuthorizationRequest {
    pub fn scopes(&self) -> ScopeSet {
        ScopeSet::from_stored(&self.scope)
    }
}

/// Step 1a: the request names exactly one client.
pub fn client_id(params: &AuthorizeParams) -> Result<&str, PageRefusal> {
    params
        .single("client_id")
        .map_err(PageRefusal::Repeated)?
        .ok_or(PageRefusal::MissingClientId)
}

/// Step 1b: the client is known (registered, self-registered and not
/// expired, or described by a usable metadata document).
pub fn check_client(found: Option<Client>) -> Result<Client, PageRefusal> {
    found.ok_or(PageRefusal::UnknownClient)
}

/// Step 2: the redirect URI is one the client registered (exactly, or a
/// loopback URI differing only in port). Absent: the sole registered URI.
pub fn check_redirect_uri(
    params: &AuthorizeParams,
    client: &Client,
) -> Result<String, PageRefusal> {
    match params
        .single("redirect_uri")
        .map_err(PageRefusal::Repeated)?
    {
        Some(requested) if client.allows_redirect(requested) => Ok(requested.to_owned()),
        Some(_) => Err(PageRefusal::RedirectUriMismatch),
        None => client
            .sole_redirect_uri()
            .map(str::to_owned)
            .ok_or(PageRefusal::MissingRedirectUri),
    }
}

/// The longest `state` echoed, in bytes: the size of the longest
/// `client_id`. Clients send a random value of a few dozen characters, or
/// at most an encoded return address; no client needs kilobytes echoed.
pub const MAX_STATE_BYTES: usize = 2048;

/// The `state` to echo; a repeated `state` cannot be echoed faithfully,
/// and an over-long one is not kept.
pub fn state(params: &AuthorizeParams) -> Result<Option<String>, RedirectRefusal> {
    let state = params
        .single("state")
        .map_err(|_| RedirectRefusal::new("invalid_request", "state is repeated"))?;
    if state.is_some_and(|s| s.len() > MAX_STATE_BYTES) {
        return Err(RedirectRefusal::new(
            "invalid_request",
            format!("state is longer than {MAX_STATE_BYTES} bytes"),
        ));
    }
    Ok(state.map(str::to_owned))
}

/// Step 3: `response_type=code`, the only flow Coop runs.
pub fn check_response_type(params: &AuthorizeParams) -> Result<(), RedirectRefusal> {
    match params.single("response_type") {
        Ok(Some("code")) => Ok(()),
        Ok(Some(_)) => Err(RedirectRefusal::new(
            "unsupported_response_type",
            "only response_type=code is supported",
        )),
        Ok(None) => Err(RedirectRefusal::new(
            "invalid_request",
            "response_type is required",
        )),
        Err(name) => Err(repeated(name)),
    }
}

/// Step 4: a PKCE challenge with method `S256`; `plain` or none refused.
pub fn check_pkce(params: &AuthorizeParams) -> Result<CodeChallenge, RedirectRefusal> {
    let challenge = params.single("code_challenge").map_err(repeated)?;
    let method = params.single("code_challenge_method").map_err(repeated)?;
    CodeChallenge::parse(challenge, method)
        .map_err(|why| RedirectRefusal::new("invalid_request", why.to_string()))
}

/// Step 5: the resource is Coop's MCP endpoint (or absent).
pub fn check_resource(
    params: &AuthorizeParams,
    issuer: &Issuer,
) -> Result<Resource, RedirectRefusal> {
    resource::resolve(issuer, &params.all("resource"))
        .map_err(|why| RedirectRefusal::new("invalid_target", why.to_string()))
}

/// Step 6: the scopes are Coop's (absent: `farm:read`).
pub fn check_scope(params: &AuthorizeParams) -> Result<ScopeSet, RedirectRefusal> {
    let raw = params.single("scope").map_err(repeated)?;
    scopes::requested(raw).map_err(|why| RedirectRefusal::new("invalid_scope", why.to_string()))
}

/// Step 7: `prompt` is a space-separated set of `none`, `login`,
/// `consent`; `none` alone or not at all.
pub fn check_prompt(params: &AuthorizeParams) -> Result<Prompt, RedirectRefusal> {
    let Some(raw) = params.single("prompt").map_err(repeated)? else {
        return Ok(Prompt::default());
    };
    let mut prompt = Prompt::default();
    for value in raw.split(' ').filter(|v| !v.is_empty()) {
        match value {
            "none" => prompt.none = true,
            "login" => prompt.login = true,
            "consent" => prompt.consent = true,
            other => {
                return Err(RedirectRefusal::new(
                    "invalid_request",
                    format!(
                        "prompt value {other:.40} is not supported; supported: none, login, consent"
                    ),
                ));
            }
        }
    }
    if prompt.none && (prompt.login || prompt.consent) {
        return Err(RedirectRefusal::new(
            "invalid_request",
            "prompt=none cannot be combined with another value",
        ));
    }
    Ok(prompt)
}

/// Step 8: `max_age` is a whole number of seconds. `0` means what
/// `prompt=login` means (OpenID Connect Core §3.1.2.1).
pub fn check_max_age(params: &AuthorizeParams) -> Result<Option<u32>, RedirectRefusal> {
    let Some(raw) = params.single("max_age").map_err(repeated)? else {
        return Ok(None);
    };
    if !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(RedirectRefusal::new(
            "invalid_request",
            "max_age must be a whole number of seconds",
        ));
    }
    raw.parse::<u32>().map(Some).map_err(|_| {
        RedirectRefusal::new(
            "invalid_request",
            "max_age must be a whole number of seconds",
        )
    })
}

/// The query to come back to after signing in. Signing in is entering the
/// password, so it answers `prompt=login` and any `max_age`: both are taken
/// out, or the person would be asked for the password twice in a row.
/// Anyone who could remove them could equally have left them out: `prompt`
/// is the client's wish, not a protection against the browser.
pub fn after_sign_in(params: &AuthorizeParams) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in params.pairs() {
        match name {
            "max_age" => {}
            "prompt" => {
                let kept: Vec<&str> = value
                    .split(' ')
                    .filter(|v| !v.is_empty() && *v != "login")
                    .collect();
                if !kept.is_empty() {
                    query.append_pair(name, &kept.join(" "));
                }
            }
            _ => {
                query.append_pair(name, value);
            }
        }
    }
    query.finish()
}

fn repeated(name: &'static str) -> RedirectRefusal {
    RedirectRefusal::new("invalid_request", format!("{name} is repeated"))
}

/// Steps 3–6 for a client whose redirect URI is already trusted.
pub fn check_after_redirect(
    params: &AuthorizeParams,
    issuer: &Issuer,
    client: &Client,
    redirect_uri: String,
    state: Option<String>,
) -> Result<AuthorizationRequest, RedirectRefusal> {
    check_response_type(params)?;
    let challenge = check_pkce(params)?;
    let resource = check_resource(params, issuer)?;
    let scope = check_scope(params)?;
    let prompt = check_prompt(params)?;
    let max_age = check_max_age(params)?;
    Ok(AuthorizationRequest {
        client_id: client.client_id.clone(),
        redirect_uri,
        state,
        code_challenge: challenge.as_str().to_owned(),
        resource: resource.as_str().to_owned(),
        scope: scope.to_wire(),
        prompt,
        max_age,
    })
}

/// What [`begin`] found the request to need next.
#[derive(Debug)]
pub enum Outcome<P> {
    /// Refused with a page, never a redirect: no redirect URI is trusted
    /// yet.
    Page(PageRefusal),
    /// The client names a metadata document that may not be fetched now
    /// (threat 33).
    DocumentNotFetched(Throttle),
    /// Refused back to the client's (checked) redirect URI, with `state`
    /// when it can be echoed.
    Refused {
        redirect_uri: String,
        refusal: RedirectRefusal,
        state: Option<String>,
    },
    /// No one is signed in: sign in, then come back with this query
    /// ([`after_sign_in`]'s, when the request asked for a fresh sign-in).
    SignIn { query: String },
    /// A checked request from a known client, and the person signed in,
    /// for [`crate::oauth::consent::proceed`].
    Consent {
        person: P,
        client: Client,
        request: AuthorizationRequest,
    },
}

/// The authorization request `query` (its raw query string), from `person`
/// if someone is signed in: steps 1 to 8 in their order, then signing in
/// or consent. The store failing is an error, never an outcome.
pub async fn begin<P>(
    store: &Store,
    cimd: &CimdRequest<'_>,
    issuer: &Issuer,
    query: &str,
    person: Option<P>,
    now: OffsetDateTime,
) -> Result<Outcome<P>, StoreError> {
    let params = AuthorizeParams::parse(query.as_bytes());
    let client_id = match client_id(&params) {
        Ok(id) => id,
        Err(refusal) => return Ok(Outcome::Page(refusal)),
    };
    let found = match clients::resolve(store, cimd, client_id, now).await {
        Ok(found) => found,
        Err(ClientLookupError::Document(why)) => {
            return Ok(Outcome::Page(PageRefusal::ClientDocument(why)));
        }
        Err(ClientLookupError::Throttled(throttle)) => {
            return Ok(Outcome::DocumentNotFetched(throttle));
        }
        Err(ClientLookupError::Store(err)) => return Err(err),
    };
    let document = found.as_ref().and_then(|f| f.document.clone());
    let checked = check_client(found.map(|f| f.client))
        .and_then(|client| check_redirect_uri(&params, &client).map(|uri| (client, uri)));
    let (client, redirect_uri) = match checked {
        Ok(checked) => checked,
        Err(refusal) => return Ok(Outcome::Page(refusal)),
    };
    // From here on, every refusal goes back to the client.
    let refused = |refusal, state| Outcome::Refused {
        redirect_uri: redirect_uri.clone(),
        refusal,
        state,
    };
    let client_state = match state(&params) {
        Ok(s) => s,
        Err(refusal) => return Ok(refused(refusal, None)),
    };
    let checked = check_after_redirect(
        &params,
        issuer,
        &client,
        redirect_uri.clone(),
        client_state.clone(),
    );
    let request = match checked {
        Ok(request) => request,
        Err(refusal) => return Ok(refused(refusal, client_state)),
    };
    let Some(person) = person else {
        if let Some(refusal) = signed_out(&request) {
            return Ok(refused(refusal, client_state));
        }
        let query = if request.prompt.login || request.max_age.is_some() {
            after_sign_in(&params)
        } else {
            query.to_owned()
        };
        return Ok(Outcome::SignIn { query });
    };
    // The copy of a document client that the consent page names and the
    // grant will reference, as of this request.
    if let Some(document) = &document {
        clients::record_document(store, document, now).await?;
    }
    Ok(Outcome::Consent {
        person,
        client,
        request,
    })
}

/// For a signed-out person: `Some` error for the client when the request
/// forbids showing the sign-in page (`prompt=none`).
fn signed_out(request: &AuthorizationRequest) -> Option<RedirectRefusal> {
    request
        .prompt
        .none
        .then(|| RedirectRefusal::new("login_required", "the person is not signed in"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::client::{ClientKind, Origin};

    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    fn issuer() -> Issuer {
        Issuer::parse("https://coop.example").unwrap()
    }

    fn client(uris: &[&str]) -> Client {
        Client {
            client_id: "c1".into(),
            kind: ClientKind::Public {
                origin: Origin::Dynamic,
            },
            name: "Test".into(),
            redirect_uris: uris.iter().map(|u| (*u).to_owned()).collect(),
            may_refresh: true,
            native: false,
        }
    }

    fn params(query: &str) -> AuthorizeParams {
        AuthorizeParams::parse(query.as_bytes())
    }

    fn good() -> String {
        format!(
            "client_id=c1&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&response_type=code\
             &code_challenge={CHALLENGE}&code_challenge_method=S256&state=xyz"
        )
    }

    /// `begin` against a registered client: each query fails two steps
    /// (or one, and the person is signed out), and the earlier answers.
    #[tokio::test]
    async fn begin_answers_at_the_first_failing_step_then_signs_in_or_consents() {
        use crate::config::CimdTestSettings;
        use crate::oauth::cimd::CimdFetcher;
        use crate::oauth::registration::{self, PreregisteredAuth, Preregistration};
        use std::net::Ipv4Addr;

        let now = time::macros::datetime!(2026-03-10 12:00 UTC);
        let db = crate::testing::TestStore::sqlite().await;
        let public = Preregistration {
            auth: PreregisteredAuth::Public,
            introspection: false,
        };
        let uris = ["https://app.example/cb".to_owned()];
        let id = registration::register_preregistered(&db.store, "App", &uris, &public, now)
            .await
            .unwrap()
            .client_id;
        let fetcher = CimdFetcher::new(CimdTestSettings::default()).unwrap();
        let cimd = fetcher.for_peer(Ipv4Addr::LOCALHOST.into());
        let issuer = issuer();
        let run = async |query: &str, person: Option<&'static str>| {
            begin(&db.store, &cimd, &issuer, query, person, now)
                .await
                .unwrap()
        };
        let good = good().replace("client_id=c1", &format!("client_id={id}"));
        let token = good.replace("response_type=code", "response_type=token");
        let page = |outcome| match outcome {
            Outcome::Page(refusal) => refusal,
            other => panic!("{other:?}"),
        };
        let refused = |outcome| match outcome {
            Outcome::Refused {
                redirect_uri,
                refusal,
                state,
            } => {
                assert_eq!(redirect_uri, "https://app.example/cb");
                (refusal.error, refusal.description, state)
            }
            other => panic!("{other:?}"),
        };

        let no_client = token.replace(&format!("client_id={id}"), "");
        assert_eq!(
            page(run(&no_client, None).await),
            PageRefusal::MissingClientId
        );
        let unknown = token.replace(&format!("client_id={id}"), "client_id=unknown");
        assert_eq!(page(run(&unknown, None).await), PageRefusal::UnknownClient);
        let elsewhere = token.replace("app.example", "evil.example");
        assert_eq!(
            page(run(&elsewhere, None).await),
            PageRefusal::RedirectUriMismatch
        );
        // A state that cannot be echoed is not.
        let (error, description, state) = refused(run(&format!("{token}&state=b"), None).await);
        assert_eq!((error, state), ("invalid_request", None));
        assert_eq!(description, "state is repeated");
        // The request's own faults come before anything about the person.
        let (error, _, state) = refused(run(&format!("{token}&prompt=none"), None).await);
        assert_eq!(error, "unsupported_response_type");
        assert_eq!(state.as_deref(), Some("xyz"));
        let (error, _, state) = refused(run(&format!("{good}&prompt=none"), None).await);
        assert_eq!((error, state.as_deref()), ("login_required", Some("xyz")));

        let fresh = format!("{good}&prompt=login&max_age=0");
        match run(&fresh, None).await {
            Outcome::SignIn { query } => assert_eq!(query, after_sign_in(&params(&fresh))),
            other => panic!("{other:?}"),
        }
        match run(&good, None).await {
            Outcome::SignIn { query } => assert_eq!(query, good),
            other => panic!("{other:?}"),
        }
        match run(&good, Some("someone")).await {
            Outcome::Consent {
                person,
                client,
                request,
            } => {
                assert_eq!(
                    (person, client.client_id.as_str()),
                    ("someone", id.as_str())
                );
                assert_eq!(request.state.as_deref(), Some("xyz"));
                assert_eq!(request.redirect_uri, "https://app.example/cb");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn step_1_the_client_id_is_present_once_and_known() {
        assert_eq!(client_id(&params(&good())), Ok("c1"));
        assert_eq!(
            client_id(&params("client_id=")),
            Err(PageRefusal::MissingClientId)
        );
        assert_eq!(
            client_id(&params("response_type=code")),
            Err(PageRefusal::MissingClientId)
        );
        assert_eq!(
            client_id(&params("client_id=a&client_id=b")),
            Err(PageRefusal::Repeated("client_id"))
        );
        assert_eq!(check_client(None).unwrap_err(), PageRefusal::UnknownClient);
    }

    #[test]
    fn step_2_the_redirect_uri_matches_a_registered_one() {
        let c = client(&["https://app.example/cb", "http://127.0.0.1/cb"]);
        assert_eq!(
            check_redirect_uri(&params(&good()), &c).unwrap(),
            "https://app.example/cb"
        );
        assert_eq!(
            check_redirect_uri(
                &params("redirect_uri=http%3A%2F%2F127.0.0.1%3A5555%2Fcb"),
                &c
            )
            .unwrap(),
            "http://127.0.0.1:5555/cb"
        );
        assert_eq!(
            check_redirect_uri(&params("redirect_uri=https%3A%2F%2Fevil.example%2Fcb"), &c),
            Err(PageRefusal::RedirectUriMismatch)
        );
        assert_eq!(
            check_redirect_uri(&params(""), &c),
            Err(PageRefusal::MissingRedirectUri)
        );
        assert_eq!(
            check_redirect_uri(&params(""), &client(&["https://app.example/cb"])).unwrap(),
            "https://app.example/cb"
        );
        assert_eq!(
            check_redirect_uri(
                &params("redirect_uri=https%3A%2F%2Fapp.example%2Fcb&redirect_uri=x"),
                &c
            ),
            Err(PageRefusal::Repeated("redirect_uri"))
        );
    }

    #[test]
    fn state_is_echoed_unless_repeated_or_longer_than_its_cap() {
        assert_eq!(state(&params("client_id=c1")), Ok(None));
        assert_eq!(state(&params("state=")), Ok(None));
        assert_eq!(state(&params("state=a+b%26c")), Ok(Some("a b&c".into())));
        let longest = "s".repeat(MAX_STATE_BYTES);
        assert_eq!(
            state(&params(&format!("state={longest}"))),
            Ok(Some(longest.clone()))
        );
        let refused = state(&params(&format!("state={longest}s"))).unwrap_err();
        assert_eq!(refused.error, "invalid_request");
        assert_eq!(refused.description, "state is longer than 2048 bytes");
        // Bytes as decoded: 683 three-byte characters are 2049 bytes.
        let wide = "%E2%82%AC".repeat(683);
        assert!(state(&params(&format!("state={wide}"))).is_err());
        assert!(state(&params(&format!("state={}", "%E2%82%AC".repeat(682)))).is_ok());
        let repeated = state(&params("state=a&state=b")).unwrap_err();
        assert_eq!(
            repeated,
            RedirectRefusal::new("invalid_request", "state is repeated")
        );
    }

    #[test]
    fn step_3_only_the_code_flow_is_served() {
        assert_eq!(check_response_type(&params("response_type=code")), Ok(()));
        assert_eq!(
            check_response_type(&params("response_type=token"))
                .unwrap_err()
                .error,
            "unsupported_response_type"
        );
        assert_eq!(
            check_response_type(&params("")).unwrap_err().error,
            "invalid_request"
        );
        assert_eq!(
            check_response_type(&params("response_type=code&response_type=code"))
                .unwrap_err()
                .error,
            "invalid_request"
        );
    }

    #[test]
    fn step_4_pkce_s256_is_required() {
        let ok = format!("code_challenge={CHALLENGE}&code_challenge_method=S256");
        assert!(check_pkce(&params(&ok)).is_ok());
        for bad in [
            String::new(),
            format!("code_challenge={CHALLENGE}"),
            format!("code_challenge={CHALLENGE}&code_challenge_method=plain"),
            "code_challenge=short&code_challenge_method=S256".to_owned(),
            "code_challenge_method=S256".to_owned(),
        ] {
            assert_eq!(
                check_pkce(&params(&bad)).unwrap_err().error,
                "invalid_request",
                "{bad}"
            );
        }
    }

    #[test]
    fn step_5_the_resource_is_the_mcp_endpoint() {
        assert_eq!(
            check_resource(&params(""), &issuer()).unwrap().as_str(),
            "https://coop.example/mcp"
        );
        assert!(
            check_resource(
                &params("resource=https%3A%2F%2Fcoop.example%2Fmcp%2F"),
                &issuer()
            )
            .is_ok()
        );
        assert_eq!(
            check_resource(
                &params("resource=https%3A%2F%2Fother.example%2Fmcp"),
                &issuer()
            )
            .unwrap_err()
            .error,
            "invalid_target"
        );
    }

    #[test]
    fn step_6_scopes_are_coops_own() {
        assert_eq!(check_scope(&params("")).unwrap().to_wire(), "farm:read");
        assert_eq!(
            check_scope(&params("scope=farm%3Aread+offline_access"))
                .unwrap()
                .to_wire(),
            "farm:read"
        );
        assert_eq!(
            check_scope(&params("scope=admin")).unwrap_err().error,
            "invalid_scope"
        );
    }

    #[test]
    fn step_7_prompt_is_none_login_or_consent() {
        assert_eq!(check_prompt(&params("")), Ok(Prompt::default()));
        assert_eq!(check_prompt(&params("prompt=")), Ok(Prompt::default()));
        let p = check_prompt(&params("prompt=login+consent")).unwrap();
        assert!(p.login && p.consent && !p.none);
        assert!(check_prompt(&params("prompt=none")).unwrap().none);
        for bad in [
            "prompt=none+login",
            "prompt=consent+none",
            "prompt=select_account",
            "prompt=create",
            "prompt=Login",
            "prompt=login&prompt=consent",
        ] {
            assert_eq!(
                check_prompt(&params(bad)).unwrap_err().error,
                "invalid_request",
                "{bad}"
            );
        }
    }

    #[test]
    fn step_8_max_age_is_whole_seconds() {
        assert_eq!(check_max_age(&params("")), Ok(None));
        assert_eq!(check_max_age(&params("max_age=0")), Ok(Some(0)));
        assert_eq!(check_max_age(&params("max_age=3600")), Ok(Some(3600)));
        for bad in [
            "max_age=-1",
            "max_age=1.5",
            "max_age=%2B5",
            "max_age=ten",
            "max_age=99999999999",
            "max_age=1&max_age=2",
        ] {
            assert_eq!(
                check_max_age(&params(bad)).unwrap_err().error,
                "invalid_request",
                "{bad}"
            );
        }
    }

    #[test]
    fn signing_in_answers_prompt_login_and_max_age() {
        assert_eq!(
            after_sign_in(&params(
                "client_id=c1&prompt=login+consent&max_age=0&state=a+b"
            )),
            "client_id=c1&prompt=consent&state=a+b"
        );
        assert_eq!(
            after_sign_in(&params("prompt=login&client_id=c1")),
            "client_id=c1"
        );
    }

    #[test]
    fn the_checks_run_in_order() {
        let c = client(&["https://app.example/cb"]);
        // Bad response type AND bad resource: the response type is reported.
        let p = params("response_type=token&resource=https%3A%2F%2Fother.example&scope=admin");
        let err = check_after_redirect(&p, &issuer(), &c, "https://app.example/cb".into(), None)
            .unwrap_err();
        assert_eq!(err.error, "unsupported_response_type");
        // PKCE before resource before scope.
        let p = params("response_type=code&resource=https%3A%2F%2Fother.example&scope=admin");
        let err = check_after_redirect(&p, &issuer(), &c, "https://app.example/cb".into(), None)
            .unwrap_err();
        assert_eq!(err.error, "invalid_request");
        let p = params(&format!(
            "response_type=code&code_challenge={CHALLENGE}&code_challenge_method=S256\
             &resource=https%3A%2F%2Fother.example&scope=admin"
        ));
        let err = check_after_redirect(&p, &issuer(), &c, "https://app.example/cb".into(), None)
            .unwrap_err();
        assert_eq!(err.error, "invalid_target");
        // Scope before prompt before max_age.
        let p = params(&format!(
            "response_type=code&code_challenge={CHALLENGE}&code_challenge_method=S256\
             &scope=admin&prompt=bogus&max_age=x"
        ));
        let err = check_after_redirect(&p, &issuer(), &c, "https://app.example/cb".into(), None)
            .unwrap_err();
        assert_eq!(err.error, "invalid_scope");
        let p = params(&format!(
            "response_type=code&code_challenge={CHALLENGE}&code_challenge_method=S256\
             &prompt=bogus&max_age=x"
        ));
        let err = check_after_redirect(&p, &issuer(), &c, "https://app.example/cb".into(), None)
            .unwrap_err();
        assert!(err.description.contains("prompt"), "{err:?}");
        let p = params(&format!(
            "response_type=code&code_challenge={CHALLENGE}&code_challenge_method=S256&max_age=x"
        ));
        let err = check_after_redirect(&p, &issuer(), &c, "https://app.example/cb".into(), None)
            .unwrap_err();
        assert!(err.description.contains("max_age"), "{err:?}");

        let ok = check_after_redirect(
            &params(&good()),
            &issuer(),
            &c,
            "https://app.example/cb".into(),
            Some("xyz".into()),
        )
        .unwrap();
        assert_eq!(ok.resource, "https://coop.example/mcp");
        assert_eq!(ok.scope, "farm:read");
        assert_eq!(ok.state.as_deref(), Some("xyz"));
    }
}
