//! `/admin`: farm administration, for the farm's owners only.
//!
//! | page | file |
//! |---|---|
//! | `/admin`: every active grant on the farm, Disconnect, the connected-apps switch | [`apps`] |
//! | `/admin/members`: role, flock restriction, sign out everywhere, require a password change, a password reset link, disable/enable | [`members`] |
//! | `/admin/automations`: machine clients (client credentials): add, disable/enable, delete | [`automations`] |
//! | `/admin/farm`: houses and flocks: add, rename, mark a flock depleted | [`records`] |
//! | `/admin/audit`: the audit log, newest first, paged and filtered | [`audit`] |
//!
//! [`RequireOwner`] lets owners through; anyone else signed in gets a 403
//! page (and never sees the links). A page takes an [`OwnerPage`] (the
//! owner and the `?done=` of the action that led to it) and renders in a
//! [`Frame`]: navigation, tabs and notice, the same on every page. Every action is a POST taken as an
//! [`OwnerPost`], which checks the session's CSRF token before a handler
//! sees a field, behind the same-origin check of every page; each action is
//! audited with who did it. While the farm is suspended every action is a
//! 403 page saying why: the owner may look, and change nothing. An id
//! naming something of another farm, or nothing, is a 404 page.
//!
//! What each page loads and decides is [`crate::admin::pages`]'s: a
//! handler here reads the request, calls one function there, and renders.

pub mod apps;
pub mod audit;
pub mod automations;
pub mod members;
pub mod records;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::de::DeserializeOwned;

use crate::domain::Role;
use crate::http::error::PageError;
use crate::http::form;
use crate::http::pages::apps::NoticeQuery;
use crate::http::pages::view::{Nav, suspension_notice};
use crate::http::session::{self, RequireUser, RequireUserRejection, SignedIn};
use crate::oauth::params::Params;
use crate::secrets::CsrfToken;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin", get(apps::show))
        .route("/admin/connected-apps", post(apps::switch))
        .route(
            "/admin/apps/{grant}/disconnect",
            get(apps::confirm).post(apps::disconnect),
        )
        .route("/admin/members", get(members::show))
        .route("/admin/members/{user}", post(members::change))
        .route(
            "/admin/members/{user}/password-reset",
            post(members::reset_link),
        )
        .route(
            "/admin/automations",
            get(automations::show).post(automations::add),
        )
        .route("/admin/automations/{automation}", post(automations::change))
        .route("/admin/farm", get(records::show))
        .route("/admin/houses", post(records::add_house))
        .route("/admin/houses/{house}", post(records::rename_house))
        .route("/admin/flocks", post(records::add_flock))
        .route("/admin/flocks/{flock}", post(records::change_flock))
        .route("/admin/audit", get(audit::show))
}

/// A signed-in owner of their farm, with the navigation bar of their
/// pages. Signed out: the sign-in redirect of [`RequireUser`]; signed in
/// with another role: 403.
pub struct RequireOwner {
    pub owner: SignedIn,
    pub nav: Nav,
}

impl FromRequestParts<AppState> for RequireOwner {
    type Rejection = RequireUserRejection;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let RequireUser(user) = RequireUser::from_request_parts(parts, state).await?;
        let owner = owner_only(user).map_err(RequireUserRejection::Page)?;
        let nav = Nav::new(&owner, "admin")
            .await
            .map_err(RequireUserRejection::Page)?;
        Ok(Self { owner, nav })
    }
}

/// What every admin page shows above its own content: the navigation bar,
/// the open tab, and the one-line notice of the action that led here.
pub struct Frame {
    pub nav: Nav,
    pub tab: &'static str,
    pub notice: Option<&'static str>,
}

/// An owner's page: [`RequireOwner`], and the `?done=` of the action that
/// redirected here, which the page words as its notice.
pub struct OwnerPage {
    pub owner: SignedIn,
    nav: Nav,
    done: Option<String>,
}

impl OwnerPage {
    /// The frame of the tab `tab`; `notice` words this page's `?done=`
    /// (anything it does not know shows nothing).
    pub fn frame(
        self,
        tab: &'static str,
        notice: fn(Option<&str>) -> Option<&'static str>,
    ) -> Frame {
        self.split(tab, notice).1
    }

    /// The owner and the frame, for a page that still needs the owner
    /// once its frame is made.
    pub fn split(
        self,
        tab: &'static str,
        notice: fn(Option<&str>) -> Option<&'static str>,
    ) -> (SignedIn, Frame) {
        let frame = Frame {
            nav: self.nav,
            tab,
            notice: notice(self.done.as_deref()),
        };
        (self.owner, frame)
    }
}

impl FromRequestParts<AppState> for OwnerPage {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let RequireOwner { owner, nav } = RequireOwner::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let Query(query) = Query::<NoticeQuery>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Self {
            owner,
            nav,
            done: query.done,
        })
    }
}

/// Lets owners through; anyone else signed in is refused.
fn owner_only(user: SignedIn) -> Result<SignedIn, PageError> {
    if user.account.role != Role::Owner {
        return Err(PageError::Forbidden(
            "Only the farm's owner can use farm administration.".to_owned(),
        ));
    }
    Ok(user)
}

/// An admin action: a signed-in owner, and a form body whose CSRF token
/// matched the session's. Every admin POST takes this, so no action can
/// reach its fields without the check; the owner check comes first, as for
/// the pages.
pub struct OwnerPost {
    pub owner: SignedIn,
    pub form: CheckedForm,
}

/// An admin action whose form is read as `T` ([`CheckedForm::fields`]),
/// for the actions whose fields are all single.
pub struct OwnerForm<T> {
    pub owner: SignedIn,
    pub form: T,
}

impl<T: DeserializeOwned> FromRequest<AppState> for OwnerForm<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let OwnerPost { owner, form } = OwnerPost::from_request(request, state).await?;
        let form = form.fields().map_err(IntoResponse::into_response)?;
        Ok(Self { owner, form })
    }
}

/// A form body that passed the CSRF check.
pub struct CheckedForm {
    params: Params,
    body: Bytes,
}

impl CheckedForm {
    /// The fields as `T` (unknown fields, the CSRF token among them, ignored).
    pub fn fields<T: DeserializeOwned>(&self) -> Result<T, PageError> {
        serde_urlencoded::from_bytes(&self.body)
            .map_err(|_| PageError::BadRequest("The form could not be read.".to_owned()))
    }

    /// The fields as name-value pairs, for a form with a repeated field.
    pub fn params(&self) -> &Params {
        &self.params
    }
}

impl FromRequest<AppState> for OwnerPost {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = request.into_parts();
        let RequireUser(user) = RequireUser::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let owner = owner_only(user).map_err(IntoResponse::into_response)?;
        // A suspended farm is frozen: its owner sees the pages and why
        // (the notice under the navigation), and changes nothing.
        if let Some(why) = suspension_notice(&owner.account) {
            return Err(PageError::Forbidden(why).into_response());
        }
        let body = Bytes::from_request(Request::from_parts(parts, body), state)
            .await
            .map_err(IntoResponse::into_response)?;
        let params = Params::parse(&body);
        let token = form::single(&params, "csrf").map_err(IntoResponse::into_response)?;
        session::verify_csrf(&owner.session, &CsrfToken::from(token))
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Self {
            owner,
            form: CheckedForm { params, body },
        })
    }
}
