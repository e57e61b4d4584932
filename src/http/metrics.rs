//! Prometheus metrics: requests by method, matched route and status, and a
//! latency histogram, served at `/metrics`.
//!
//! Each [`Application`](crate::startup::Application) owns its own
//! `PrometheusRecorder`, and nothing is installed as the process-wide
//! `metrics` recorder. The global recorder can be set once per process, and
//! the integration suite runs dozens of servers in one process (two
//! replicas on one database, in some tests): with a global recorder they
//! would all count into one registry and no test could tell its server's
//! figures from another's. So the middleware records through
//! [`metrics::with_local_recorder`], which points the `metrics` macros at
//! this server's recorder for the duration of one synchronous call.
//!
//! Labels are bounded so a client cannot grow the registry: the route is
//! the router's pattern (`/static/{*path}`), never the raw path, and a path
//! no route matched is `unmatched`; an unusual method is `other`.
//!
//! Histograms are exported as real Prometheus histograms (fixed buckets),
//! so replicas' figures can be summed; the samples behind them are folded
//! into the buckets by [`Metrics::spawn_upkeep`] every few seconds, which
//! keeps memory flat when nobody scrapes.
//!
//! `/metrics` is served on the public listener like `/healthz`: it holds
//! counts and timings only, no user data. Operators who would rather not
//! publish it block the path at their proxy (docs/configuration.md).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::{
    BuildError, Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

use crate::state::AppState;

/// Requests answered, labelled `method`, `route`, `status`.
pub const REQUESTS_TOTAL: &str = "coop_http_requests_total";
/// Time from the request reaching the router to the response head leaving
/// it, labelled `method`, `route`, `status`.
pub const REQUEST_DURATION: &str = "coop_http_request_duration_seconds";

/// From a cached page (about a millisecond) to a sign-in under a hashing
/// queue (seconds).
const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// One server's metrics registry.
#[derive(Clone, Debug)]
pub struct Metrics {
    recorder: Arc<PrometheusRecorder>,
    handle: PrometheusHandle,
}

impl Metrics {
    pub fn new() -> Result<Self, BuildError> {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(REQUEST_DURATION.to_owned()), &LATENCY_BUCKETS)?
            .build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            metrics::describe_counter!(
                REQUESTS_TOTAL,
                "HTTP requests answered, by method, matched route and status"
            );
            metrics::describe_histogram!(
                REQUEST_DURATION,
                metrics::Unit::Seconds,
                "Time to answer an HTTP request, by method, matched route and status"
            );
        });
        Ok(Self {
            recorder: Arc::new(recorder),
            handle,
        })
    }

    /// A counter of this registry (described by `help`), for what counts
    /// outside the HTTP layer.
    pub fn counter(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &'static str)],
    ) -> metrics::Counter {
        metrics::with_local_recorder(self.recorder.as_ref(), || {
            metrics::describe_counter!(name, help);
            metrics::counter!(name, labels)
        })
    }

    /// The Prometheus text exposition of everything recorded so far.
    pub fn render(&self) -> String {
        self.handle.render()
    }

    /// Folds recorded latency samples into their buckets until the returned
    /// task is aborted (when the server stops).
    pub fn spawn_upkeep(&self) -> tokio::task::JoinHandle<()> {
        let handle = self.handle.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(UPKEEP_INTERVAL);
            loop {
                tick.tick().await;
                handle.run_upkeep();
            }
        })
    }

    fn record(&self, method: &'static str, route: String, status: u16, elapsed: Duration) {
        metrics::with_local_recorder(self.recorder.as_ref(), || {
            let labels = [
                ("method", method.to_owned()),
                ("route", route),
                ("status", status.to_string()),
            ];
            metrics::counter!(REQUESTS_TOTAL, &labels).increment(1);
            metrics::histogram!(REQUEST_DURATION, &labels).record(elapsed.as_secs_f64());
        });
    }
}

/// `GET /metrics`.
pub fn router() -> Router<AppState> {
    Router::new().route("/metrics", get(render))
}

async fn render(State(state): State<AppState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(),
    )
        .into_response()
}

/// Middleware counting and timing every request. It must sit inside the
/// router (added with `Router::layer`) so the matched route is known.
pub async fn track(State(metrics): State<Metrics>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let response = next.run(request).await;
    metrics.record(method, route, response.status().as_u16(), started.elapsed());
    response
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_registries_count_apart() {
        let a = Metrics::new().unwrap();
        let b = Metrics::new().unwrap();
        a.record("GET", "/healthz".into(), 200, Duration::from_millis(3));
        a.record("GET", "/healthz".into(), 200, Duration::from_millis(4));
        let text = a.render();
        assert!(
            text.contains(
                r#"coop_http_requests_total{method="GET",route="/healthz",status="200"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"coop_http_request_duration_seconds_bucket{method="GET",route="/healthz",status="200",le="0.005"} 2"#
            ),
            "{text}"
        );
        assert!(!b.render().contains("/healthz"));
    }

    #[test]
    fn a_counter_handed_out_counts_into_its_registry() {
        let metrics = Metrics::new().unwrap();
        let counter = metrics.counter("coop_test_total", "A test counter", &[("kind", "a")]);
        counter.increment(2);
        let text = metrics.render();
        assert!(
            text.contains("# HELP coop_test_total A test counter"),
            "{text}"
        );
        assert!(text.contains(r#"coop_test_total{kind="a"} 2"#), "{text}");
    }

    #[test]
    fn unusual_methods_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
    }
}
