//! `/`: who is signed in, on which farm, with which role.

use askama::Template;
use axum::response::Response;

use crate::http::error::{PageError, render};
use crate::http::session::{self, RequireUser};

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage<'a> {
    email: &'a str,
    farm_name: &'a str,
    role: &'a str,
    csrf: &'a str,
}

pub async fn show(RequireUser(user): RequireUser) -> Result<Response, PageError> {
    let csrf = session::csrf_token(&user.session).await?;
    Ok(render(&HomePage {
        email: &user.account.email,
        farm_name: &user.account.farm_name,
        role: user.account.role().as_str(),
        csrf: &csrf,
    }))
}
