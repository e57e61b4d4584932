//! The integration suite's one harness. A test spawns a [`TestApp`] on an
//! engine and drives it the way its clients do, one method per protocol
//! step:
//!
//! | step | where |
//! |---|---|
//! | spawn, the `coop` command, fixtures (farms, members, houses, flocks), database queries | [`app`]: `TestApp::spawn`, `with_member`/`with_flocks`/`with_farm` (spawn and a fixture), `cli`, `admin`, `farm_with_member`, `farm`, `farm_with_flocks`, `add_member`, `db_count`, … |
//! | sign in, pages and their forms, authorize and consent | [`browser`]: `Browser::sign_in`, `page`, `csrf`, `post`, `open_consent`, `answer_consent`, `approve`; `TestApp::signed_in` |
//! | register a client, exchange a code, refresh, revoke, the whole flow | [`oauth`]: `TestApp::register_public_client`, `authorize_path`, `exchange_code`, `refresh`, `revoke`, `connect`; [`oauth::TokenRequest`] builds any `/token` request (the tables of refusals) |
//! | call a tool, list tools, any JSON-RPC on any wire; the 401 challenge; forged tokens | [`mcp`]: `TestApp::call_tool`, `tool_ok`, `rpc`, `mcp_post_with`, `assert_invalid_token`, `assert_cut_off`, `forge` |
//! | DPoP proofs, bound tokens, calls with the DPoP scheme | [`dpop`] |
//! | `private_key_jwt` client keys and their key sets | [`client_keys`] |
//! | a second farm next door with look-alike records, and the check that an answer holds none of them | [`next_door`]: `TestApp::next_door`, `NextDoor::assert_absent` |
//! | a real headless browser | [`chromium`] |
//! | requests from several IPv6 addresses of one /64, and of another | [`ipv6`] |
//!
//! Databases, `on_both_engines!`, DPoP proof keys and client keys are
//! shared with the unit tests: `src/testing/` (mounted as `crate::testing`
//! by `main.rs`).

pub mod app;
pub mod browser;
pub mod chromium;
pub mod dpop;
pub mod ipv6;
pub mod mcp;
pub mod next_door;
pub mod oauth;

pub use crate::testing::client_keys::{self, ClientKey};
pub use crate::testing::databases::{self, Engine, TestDatabase, postgres_available};
pub use app::{Farm, PASSWORD, Printed, TestApp, TestUser, flock_add, init_logs, run_cli};
pub use browser::{
    Browser, PASSWORD_ASKED_BY_THE_CLIENT, PASSWORD_SIGN_IN_GREW_OLD, assert_no_store, assert_page,
    cookie_jar, cookie_jar_builder, form_value, location, no_cookies, retry_after, set_cookie,
    set_cookie_header,
};
