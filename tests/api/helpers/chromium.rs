//! Headless Chromium for the browser tests, driven over WebDriver.
//!
//! Each test starts its own `chromedriver` on a free loopback port and
//! talks to it over plain HTTP (fantoccini without TLS). When Debian's
//! `chromium` and `chromium-driver` are not installed (tests/tools/chromium.sh
//! installs them) the tests skip, unless `COOP_TEST_REQUIRE_BROWSER=1`, as
//! CI sets it, makes that a failure.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;

pub struct Chromium {
    pub client: Client,
    _driver: tokio::process::Child,
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}

impl Chromium {
    /// A fresh headless Chromium, or `None` (skip) when it is not installed.
    pub async fn start() -> Option<Self> {
        let Some(driver) = on_path("chromedriver") else {
            if std::env::var("COOP_TEST_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
                panic!(
                    "chromedriver is required (COOP_TEST_REQUIRE_BROWSER=1); run tests/tools/chromium.sh"
                );
            }
            eprintln!("skipping: chromedriver not installed (tests/tools/chromium.sh installs it)");
            return None;
        };
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let child = tokio::process::Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let status = format!("{url}/status");
        for _ in 0..100 {
            if reqwest::get(&status).await.is_ok_and(|r| r.status() == 200) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut options = serde_json::json!({
            "args": [
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--window-size=1280,1000",
            ],
        });
        if let Some(binary) = on_path("chromium") {
            options["binary"] = binary.display().to_string().into();
        }
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("goog:chromeOptions".into(), options);
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&url)
            .await
            .unwrap();
        Some(Self {
            client,
            _driver: child,
        })
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap();
    }

    pub async fn fill(&self, css: &str, text: &str) {
        let field = self.client.find(Locator::Css(css)).await.unwrap();
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    pub async fn click(&self, css: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"))
            .click()
            .await
            .unwrap();
    }

    pub async fn source(&self) -> String {
        self.client.source().await.unwrap()
    }

    pub async fn path(&self) -> String {
        let url = self.client.current_url().await.unwrap();
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        }
    }

    /// Waits until the browser has left pages under `prefix`. A click that
    /// submits a form can return before the next page is in: sign-in
    /// hashes a password, which takes a while on a loaded machine.
    pub async fn wait_to_leave(&self, prefix: &str) {
        self.wait_for(&format!("to leave {prefix}"), |path| {
            !path.starts_with(prefix)
        })
        .await;
    }

    /// Waits until the browser is at `expected` (path and query), for the
    /// same reason: a click returns before the page it leads to is in.
    pub async fn wait_at(&self, expected: &str) {
        self.wait_for(&format!("to be at {expected}"), |path| path == expected)
            .await;
    }

    /// Waits until the path (with its query) passes `arrived`.
    pub async fn wait_for(&self, what: &str, arrived: impl Fn(&str) -> bool) {
        let mut path = String::new();
        for _ in 0..300 {
            path = self.path().await;
            if arrived(&path) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "waited 30 s {what}, still at {path}: {}",
            self.source().await
        );
    }

    /// Saves the page at phone (390 px) and desktop (1280 px) widths as
    /// `<screenshots>/<name>-phone.png` and `<name>-desktop.png`.
    pub async fn screenshots(&self, name: &str) {
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).unwrap();
        for (label, width, height) in [("phone", 390, 1500), ("desktop", 1280, 1000)] {
            self.client.set_window_size(width, height).await.unwrap();
            let png = self.client.screenshot().await.unwrap();
            std::fs::write(dir.join(format!("{name}-{label}.png")), png).unwrap();
        }
        self.client.set_window_size(1280, 1000).await.unwrap();
    }

    pub async fn close(self) {
        let _ = self.client.close().await;
    }
}

/// `<target dir>/screenshots`: beside the `debug` folder the test binary
/// and `coop` are built in.
pub fn screenshot_dir() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_coop"));
    bin.parent()
        .and_then(|debug| debug.parent())
        .map(|target| target.join("screenshots"))
        .unwrap_or_else(|| PathBuf::from("target/screenshots"))
}
