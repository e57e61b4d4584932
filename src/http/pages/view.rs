//! What pages share: the navigation bar and the suspended farm's notice
//! under it. The words pages put things in are
//! [`crate::admin::pages::words`].

use crate::domain::Role;
use crate::http::error::PageError;
use crate::http::session::{self, SignedIn};
use crate::storage::users::Account;

/// The top navigation (`templates/nav.html`). Farm administration is shown
/// to owners only; a suspended farm's members see why under it, on every
/// page.
pub struct Nav {
    /// The session's CSRF token, as the page writes it into its forms.
    pub csrf: String,
    pub is_owner: bool,
    /// Which entry is this page: "home", "apps", "admin", "password".
    pub current: &'static str,
    /// The farm is suspended: what its members are told.
    pub suspended: Option<String>,
}

impl Nav {
    pub async fn new(user: &SignedIn, current: &'static str) -> Result<Self, PageError> {
        Ok(Self {
            csrf: session::csrf_token(&user.session)
                .await?
                .expose()
                .to_owned(),
            is_owner: user.account.role == Role::Owner,
            current,
            suspended: suspension_notice(&user.account),
        })
    }
}

/// What a member of a suspended farm is told: that it is suspended, why
/// (when the operator said), and what that stops.
pub fn suspension_notice(account: &Account) -> Option<String> {
    if !account.farm_suspended {
        return None;
    }
    let why = match &account.farm_suspended_reason {
        Some(reason) => format!(": {reason}"),
        None => ". Ask them why".to_owned(),
    };
    Some(format!(
        "Your farm is suspended by the people who run Coop{why}. Until it is resumed, no app can connect to the farm or use its records, and nothing on the farm can be changed."
    ))
}
