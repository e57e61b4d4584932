//! Who a person is: password hashing and verification, sign-in throttling,
//! and the rules a signed-in session must keep satisfying (credential epoch,
//! disabled, must-change-password).
//!
//! Nothing here knows about HTTP; `http::pages` calls it.

pub mod password;
pub mod throttle;

pub use password::{PasswordError, Passwords};
