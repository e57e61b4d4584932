//! `coop serve --demo`: a demo farm in an empty database.
use time::OffsetDateTime;

use super::AdminResult;
use crate::config::Issuer;
use crate::identity::Passwords;
use crate::storage::Store;

/// The demo's members and their generated passwords, printed once.
pub struct DemoFarm {
    pub members: Vec<(String, String, String)>,
}

impl DemoFarm {
    pub fn sign_in_instructions(&self, issuer: &Issuer) -> String {
        let mut out = format!("Demo farm ready. Sign in at {}/login as:\n", issuer);
        for (role, email, password) in &self.members {
            out.push_str(&format!("  {role:<8} {email:<28} {password}\n"));
        }
        out
    }
}

pub async fn seed_if_empty(
    _store: &Store,
    _passwords: &Passwords,
    _now: OffsetDateTime,
) -> AdminResult<Option<DemoFarm>> {
    Ok(None)
}
