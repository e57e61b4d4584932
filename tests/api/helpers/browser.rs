//! A person's browser ([`Browser`]): a cookie jar of its own, redirects not
//! followed, pointed at one app. It signs in the one way a person does
//! (GET `/login`, read the form's CSRF token, POST), opens `/authorize` and
//! answers the consent form, fetches pages and posts their forms. It
//! dereferences to its `reqwest::Client`, so a test may send anything else a
//! browser could (`browser.get(app.url(path))`, a foreign `Origin`, …).

use std::collections::HashMap;

use super::app::{TestApp, TestUser};

/// A browser-like HTTP client (cookies on, redirects off) for one app.
#[derive(Clone)]
pub struct Browser {
    pub client: reqwest::Client,
    address: String,
    issuer: String,
}

/// A fresh cookie jar that does not follow redirects.
pub fn cookie_jar() -> reqwest::Client {
    cookie_jar_builder().build().unwrap()
}

/// A client that keeps no cookies and follows no redirects (a request
/// carries exactly the cookie a test gives it).
pub fn no_cookies() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The builder of [`cookie_jar`], for a browser that needs more (a local
/// address of its own, say).
pub fn cookie_jar_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .cookie_store(true)
}

impl Browser {
    /// A fresh browser for `app`.
    pub fn new(app: &TestApp) -> Self {
        Self::with_client(app, cookie_jar())
    }

    /// A browser for `app` that sends with `client` (one built with
    /// [`cookie_jar_builder`], or one without cookies).
    pub fn with_client(app: &TestApp, client: reqwest::Client) -> Self {
        Self {
            client,
            address: app.address.clone(),
            issuer: app.issuer.clone(),
        }
    }

    /// A fresh browser for the server at `address` whose public origin is
    /// `issuer`.
    pub fn at(address: &str, issuer: &str) -> Self {
        Self {
            client: cookie_jar(),
            address: address.to_owned(),
            issuer: issuer.to_owned(),
        }
    }

    /// This browser (its cookie jar) sending to `replica` instead: cookies
    /// are per host, not per port, so a session made on one replica's port
    /// reaches the other's, as behind a load balancer's one origin.
    pub fn on(&self, replica: &TestApp) -> Self {
        Self::with_client(replica, self.client.clone())
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    /// GETs `path`.
    pub async fn open(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    /// GETs `path`; its body, whatever the status.
    pub async fn text(&self, path: &str) -> String {
        self.open(path).await.text().await.unwrap()
    }

    /// GETs `path`; (status, body).
    pub async fn page(&self, path: &str) -> (u16, String) {
        let response = self.open(path).await;
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }

    /// The CSRF token the page at `path` carries (asserting a 200).
    pub async fn csrf(&self, path: &str) -> String {
        let (status, html) = self.page(path).await;
        assert_eq!(status, 200, "{path}: {html}");
        form_value(&html, "csrf").expect("a csrf field")
    }

    /// POSTs a form as the browser would (our own `Origin`).
    pub async fn submit(&self, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .header("origin", &self.issuer)
            .form(form)
            .send()
            .await
            .unwrap()
    }

    /// GETs `/login` (asserting a 200) and returns its CSRF token (the
    /// form cookie is set).
    pub async fn login_csrf(&self) -> String {
        let page = self.open("/login").await;
        assert_eq!(page.status(), 200, "the sign-in page");
        let html = page.text().await.unwrap();
        form_value(&html, "csrf").expect("login page has a csrf field")
    }

    /// The sign-in: GETs `/login`, reads its CSRF token and builds the POST
    /// of the form with `return_to` (left out when `None`), not yet sent
    /// (a test may add a header).
    pub async fn sign_in_request(
        &self,
        email: &str,
        password: &str,
        return_to: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let csrf = self.login_csrf().await;
        let mut form = vec![
            ("csrf", csrf.as_str()),
            ("email", email),
            ("password", password),
        ];
        if let Some(return_to) = return_to {
            form.push(("return_to", return_to));
        }
        self.client.post(self.url("/login")).form(&form)
    }

    /// Signs in with `return_to` (left out when `None`); returns the POST's
    /// answer.
    pub async fn sign_in_returning(
        &self,
        email: &str,
        password: &str,
        return_to: Option<&str>,
    ) -> reqwest::Response {
        self.sign_in_request(email, password, return_to)
            .await
            .send()
            .await
            .unwrap()
    }

    /// Signs in, returning to the start page; returns the POST's answer.
    pub async fn sign_in(&self, email: &str, password: &str) -> reqwest::Response {
        self.sign_in_returning(email, password, Some("/")).await
    }

    /// Signs out with the start page's sign-out form (and its CSRF
    /// token); returns the POST's answer.
    pub async fn sign_out(&self) -> reqwest::Response {
        let page = self.text("/").await;
        let csrf = form_value(&page, "csrf").unwrap();
        self.client
            .post(self.url("/logout"))
            .form(&[("csrf", csrf.as_str())])
            .send()
            .await
            .unwrap()
    }

    /// GETs an authorization path and returns the consent page's HTML
    /// (asserting it is one).
    pub async fn open_consent(&self, path: &str) -> String {
        let response = self.open(path).await;
        assert_eq!(
            response.status(),
            200,
            "expected the consent page for {path}"
        );
        let html = response.text().await.unwrap();
        assert!(
            html.contains("name=\"decision\""),
            "not a consent page: {html}"
        );
        html
    }

    /// Answers a consent page: `decision` is "approve" or "deny", `scopes`
    /// the ticked boxes. Returns the raw response (a 303 to the client on
    /// success).
    pub async fn answer_consent(
        &self,
        consent_html: &str,
        decision: &str,
        scopes: &[&str],
    ) -> reqwest::Response {
        let csrf = form_value(consent_html, "csrf").unwrap();
        let request = form_value(consent_html, "request").unwrap();
        let mut form: Vec<(&str, &str)> = vec![
            ("csrf", csrf.as_str()),
            ("request", request.as_str()),
            ("decision", decision),
        ];
        for scope in scopes {
            form.push(("scope", scope));
        }
        self.client
            .post(self.url("/authorize/consent"))
            .form(&form)
            .send()
            .await
            .unwrap()
    }

    /// Approves a consent page ticking `scopes` (see
    /// [`Self::answer_consent`]).
    pub async fn accept(&self, consent_html: &str, scopes: &[&str]) -> reqwest::Response {
        self.answer_consent(consent_html, "approve", scopes).await
    }

    /// Opens `path` and approves the consent page ticking exactly `scopes`
    /// (space-separated); returns the redirect's query (see
    /// [`super::oauth::callback`]).
    pub async fn approve(&self, path: &str, scopes: &str) -> HashMap<String, String> {
        let html = self.open_consent(path).await;
        let ticked: Vec<&str> = scopes.split_whitespace().collect();
        let response = self.answer_consent(&html, "approve", &ticked).await;
        super::oauth::callback(&response)
    }
}

impl std::ops::Deref for Browser {
    type Target = reqwest::Client;

    fn deref(&self) -> &reqwest::Client {
        &self.client
    }
}

impl TestApp {
    /// A fresh browser for this app, signed in as `user` (asserting the
    /// sign-in's 303).
    pub async fn signed_in(&self, user: &TestUser) -> Browser {
        let browser = Browser::new(self);
        let response = browser.sign_in(&user.email, &user.password).await;
        assert_eq!(response.status(), 303, "sign-in failed");
        browser
    }
}

/// The `value` of the first `<input name="NAME">` in an HTML page.
pub fn form_value(html: &str, name: &str) -> Option<String> {
    let document = scraper::Html::parse_document(html);
    let selector = scraper::Selector::parse(&format!(r#"input[name="{name}"]"#)).ok()?;
    document
        .select(&selector)
        .next()
        .and_then(|el| el.value().attr("value"))
        .map(str::to_owned)
}

/// The seconds a response's `Retry-After` asks to wait (asserting it has
/// one, a whole number).
pub fn retry_after(response: &reqwest::Response) -> u64 {
    response
        .headers()
        .get("retry-after")
        .unwrap_or_else(|| panic!("no Retry-After: {response:?}"))
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Asserts `Cache-Control: no-store` on a response (`what` names it).
pub fn assert_no_store(response: &reqwest::Response, what: &str) {
    assert_eq!(
        response
            .headers()
            .get("cache-control")
            .map(|v| v.to_str().unwrap()),
        Some("no-store"),
        "{what}: {}",
        response.status()
    );
}

/// The whole `Set-Cookie` header (value and attributes) a response sets for
/// the cookie `name`, if it sets one.
pub fn set_cookie_header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(str::to_owned)
}

/// The `name=value` of the cookie `name` a response sets (what a browser
/// sends back), if it sets one.
pub fn set_cookie(response: &reqwest::Response, name: &str) -> Option<String> {
    set_cookie_header(response, name).map(|v| v.split(';').next().unwrap_or_default().to_owned())
}

/// The `Location` of a response ("" when there is none).
pub fn location(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// The password page's two reasons for asking (`consent_password.html`):
/// the client asked (`prompt=login`, `max_age`), or the sign-in grew old.
pub const PASSWORD_ASKED_BY_THE_CLIENT: &str = "asks that you confirm it is you";
pub const PASSWORD_SIGN_IN_GREW_OLD: &str = "You signed in a while ago";

/// Asserts a page refusal: the status and words of the error page.
pub async fn assert_page(response: reqwest::Response, status: u16, words: &str) {
    assert_eq!(response.status(), status);
    let body = response.text().await.unwrap();
    assert!(body.contains(words), "expected {words:?} in {body}");
}
