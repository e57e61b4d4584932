//! Who a person is: password hashing and verification, the sign-in
//! decision (throttle, device cookies, password check), password reset
//! links, and the rules a signed-in session must keep satisfying
//! (credential epoch, disabled, must-change-password).
//!
//! Nothing here knows about HTTP; `http::pages` calls it.

pub mod device;
pub mod password;
pub mod reset;
pub mod signin;
pub mod throttle;

pub use password::{PasswordError, Passwords};
pub use signin::{Attempt, Outcome, SignIn, SignInError};
