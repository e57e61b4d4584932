//! The TLS side of every fetch: rustls, verifying against the platform's
//! root certificates (`rustls-platform-verifier`: on Linux the system CA
//! bundle, `SSL_CERT_FILE`/`SSL_CERT_DIR` respected), plus, for tests and
//! development only, the CA certificates of `--cimd-test-extra-ca`.
//!
//! The configuration is built once at start: reading the system bundle
//! parses every root certificate, which no attacker-chosen URL should be
//! able to make Coop do again. A host without any CA certificate fails
//! here, at start, rather than running a fetcher that can never succeed.
//! Only HTTP/1.1 is offered (ALPN), the one protocol the transport speaks.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::{ClientConfig, RootCertStore, crypto};

use super::CimdError;

/// The setting that names the extra CA, quoted in its errors.
pub const EXTRA_CA_SETTING: &str = "--cimd-test-extra-ca / COOP_CIMD_TEST_EXTRA_CA";

/// A TLS client trusting the platform's roots and `extra_roots`.
pub fn connector(extra_roots: Vec<CertificateDer<'static>>) -> Result<TlsConnector, CimdError> {
    let provider = Arc::new(crypto::aws_lc_rs::default_provider());
    let cannot = |why: String| {
        CimdError::Settings(format!(
            "cannot set up TLS for fetching client metadata documents: {why}"
        ))
    };
    let verifier =
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra_roots, provider.clone())
            .map_err(|e| cannot(e.to_string()))?;
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| cannot(e.to_string()))?
        // The platform verifier is the ordinary, fully checking one; rustls
        // files every verifier it did not build itself under "dangerous".
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

/// Reads the extra CA bundle: at least one certificate, each a usable trust
/// anchor. Used to check the setting at start as well as to build the
/// connector.
pub fn load_extra_ca(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{} is not a PEM certificate bundle: {e}", path.display()))?;
    if certificates.is_empty() {
        return Err(format!(
            "{} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    let mut anchors = RootCertStore::empty();
    for certificate in &certificates {
        anchors.add(certificate.clone()).map_err(|e| {
            format!(
                "{} holds a certificate that is not a usable CA: {e}",
                path.display()
            )
        })?;
    }
    Ok(certificates)
}
