//! The authorization server's protocol, with no HTTP types.
//!
//! Functions here take plain inputs and the current time and return results
//! or typed errors; `http::oauth` maps them to endpoints, one file each.
//!
//! ## The code flow, step by step
//!
//! ```text
//!  client            browser                   Coop
//!    | metadata, /register (or CIMD, or pre-registered)  metadata, registration
//!    |--- /authorize?client_id&redirect_uri&code_challenge&resource&scope&state -->
//!    |                  |   checks 1–8 in order                authorize::check_*
//!    |                  |   sign-in (return_to) / password again   consent::next_step
//!    |                  |   consent screen: per-scope boxes, Approve / Deny
//!    |                  |   POST consent → grant + code          approval::approve
//!    |<-- redirect_uri?code&state&iss ------|
//!    |--- POST /token grant_type=authorization_code&code&code_verifier ------>
//!    |                                      check all, sign, then spend   token::exchange
//!    |<-- access_token (JWT, 15 min), refresh_token, expires_in, scope ---
//!    |--- POST /token grant_type=refresh_token (rotated every use) --------->
//!    |--- POST /revoke (refresh token ends the grant) ---------------------->   revocation
//! ```
//!
//! - [`authorize`]: the authorization request's six ordered checks.
//! - [`consent`]: refuse / re-authenticate / skip / step-up / ask (and
//!   `prompt`, `max_age`), approving (grant + code), denying.
//! - [`approval`]: carrying out an answer (grant, code, audit), the
//!   redirects with `state` and `iss`.
//! - [`pending`]: requests waiting for the person, answered once.
//! - [`token`]: the two grants, "check everything, then spend", reuse
//!   detection that revokes the grant; [`token::client_credentials`] for
//!   automations.
//! - [`client_auth`]: `none`, `client_secret_basic`, `client_secret_post`,
//!   `private_key_jwt`; [`client_assertion`]: the one verifier of client
//!   assertions (RFC 7523), with its `jti` replay store.
//! - [`registration`]: RFC 7591 and the command line's pre-registration.
//! - [`revocation`]: RFC 7009. [`introspection`]: RFC 7662 (who may ask,
//!   the answer, refresh tokens; access tokens get `/mcp`'s own check in
//!   `mcp::introspection`).
//! - [`clients`], [`client`], [`redirect_uri`]: knowing a client and where
//!   it may be sent. [`cimd`]: Client ID Metadata Documents.
//! - [`pkce`], [`resource`], [`scopes`], [`params`], [`presented_token`]:
//!   the small rules.
//! - [`access_token`], [`keys`]: JWTs and the keys that sign them;
//!   [`claim_time`]: every JWT's time claims against the clock, with no
//!   arithmetic that can overflow.
//! - [`dpop`]: RFC 9449 proofs, key thumbprints, server nonces.
//! - [`metadata`]: RFC 8414. [`housekeeping`]: bounded tables.
//! - [`error`]: RFC error codes; storage failures become `server_error`.

pub mod access_token;
pub mod approval;
pub mod authorize;
pub mod cimd;
pub mod claim_time;
pub mod client;
pub mod client_assertion;
pub mod client_auth;
pub mod clients;
pub mod consent;
pub mod dpop;
pub mod error;
pub mod housekeeping;
pub mod introspection;
pub mod keys;
pub mod metadata;
pub mod params;
pub mod pending;
pub mod pkce;
pub mod presented_token;
pub mod redirect_uri;
pub mod registration;
pub mod resource;
pub mod revocation;
pub mod scopes;
pub mod token;
pub mod verified;

#[cfg(test)]
mod props;
