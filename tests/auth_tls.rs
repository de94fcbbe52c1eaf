//! Wrong keys, bad certificates and TLS/plain mismatches: a clear error on
//! both sides, counted, while a good client on the same receiver delivers
//! every record.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;

const GOOD: usize = 20_000;

fn q(p: &std::path::Path) -> String {
    format!("{:?}", p.display().to_string())
}

/// `tls` for a source presenting `cert`/`key` (and verifying clients
/// against `ca` if given).
fn server_tls(
    cert: &std::path::Path,
    key: &std::path::Path,
    verify_clients_with: Option<&std::path::Path>,
) -> String {
    match verify_clients_with {
        None => format!("tls = {{ cert_file = {}, key_file = {} }}", q(cert), q(key)),
        Some(ca) => format!(
            "tls = {{ cert_file = {}, key_file = {}, ca_file = {}, verify_client = true }}",
            q(cert),
            q(key),
            q(ca)
        ),
    }
}

/// `tls` for a sink trusting `ca` (and presenting a client certificate).
fn client_tls(ca: &std::path::Path, cert: Option<(&std::path::Path, &std::path::Path)>) -> String {
    match cert {
        None => format!("tls = {{ ca_file = {} }}", q(ca)),
        Some((c, k)) => format!(
            "tls = {{ ca_file = {}, cert_file = {}, key_file = {} }}",
            q(ca),
            q(c),
            q(k)
        ),
    }
}

fn receiver(extra: &str) -> (Logferry, SocketAddr) {
    let mut r = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{extra}\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/received.log\"\n\n[api]\naddress = \"127.0.0.1:0\"\n"
    ));
    let a = r.forward_addr("in");
    (r, a)
}

/// An agent sending `count` records with `tag` to `to`.
fn agent(to: SocketAddr, tag: &str, count: usize, extra: &str) -> Logferry {
    Logferry::start(&format!(
        "[sources.gen]\ntype = \"generator\"\ncount = {count}\nsize = 24\ntag = \"{tag}\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{to}\" }}]\nrequire_ack = true\nreconnect_min = \"50ms\"\nreconnect_max = \"200ms\"\ndrain_timeout = \"1s\"\n{extra}\n"
    ))
}

/// Runs a bad agent and a good one against the same receiver; returns the
/// logs of the bad agent and of the receiver.
fn bad_and_good(
    receiver_extra: &str,
    bad_extra: &str,
    good_extra: &str,
) -> (String, String, Logferry) {
    let (mut r, addr) = receiver(receiver_extra);
    let mut bad = agent(addr, "bad", 1000, bad_extra);
    let mut good = agent(addr, "good", GOOD, good_extra);
    assert!(
        good.wait(Duration::from_secs(60)).success(),
        "{}",
        good.log_text()
    );
    bad.wait_for_log("server connection failed", Duration::from_secs(20));
    // give the receiver a moment to log its side
    std::thread::sleep(Duration::from_millis(300));
    // its finite run could not deliver: it exits 1 once its drain_timeout
    // has passed, unless the stop signal comes first (then 0)
    let status = bad.stop();
    assert!(
        status.success() || status.code() == Some(1),
        "{}",
        bad.log_text()
    );
    let lines = read_lines(&r.path("received.log"));
    assert_eq!(
        lines.len(),
        GOOD,
        "only the good agent's records, all of them"
    );
    assert!(r.stop().success());
    assert_eq!(
        bad.final_counter("logferry_sink_rejected_records_total{component=\"out\"}"),
        1000,
        "the bad agent's records are not acknowledged upstream"
    );
    (bad.log_text(), r.log_text(), r)
}

#[test]
fn wrong_shared_key_is_refused_on_both_sides() {
    let (bad, recv, r) = bad_and_good(
        "shared_key = \"right\"",
        "shared_key = \"wrong\"",
        "shared_key = \"right\"",
    );
    assert!(
        bad.contains("server refused authentication: shared_key mismatch"),
        "{bad}"
    );
    assert!(bad.contains("kind=\"auth\""), "{bad}");
    assert!(
        recv.contains("authentication failed") && recv.contains("shared_key mismatch"),
        "{recv}"
    );
    assert!(
        r.final_counter("logferry_forward_connection_errors_total{component=\"in\",kind=\"auth\"}")
            >= 1
    );
}

#[test]
fn wrong_password_is_refused() {
    let users = "shared_key = \"k\"\nusers = [{ username = \"alice\", password = \"pw\" }]";
    let (bad, recv, _) = bad_and_good(
        users,
        "shared_key = \"k\"\nusername = \"alice\"\npassword = \"nope\"",
        "shared_key = \"k\"\nusername = \"alice\"\npassword = \"pw\"",
    );
    assert!(bad.contains("username/password mismatch"), "{bad}");
    assert!(recv.contains("username/password mismatch"), "{recv}");
}

#[test]
fn expired_certificate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    // one receiver presents an expired certificate: nobody can connect
    let (mut r, addr) = receiver(&server_tls(&pki.expired_cert, &pki.expired_key, None));
    let mut a = agent(addr, "x", 10, &client_tls(&pki.ca, None));
    let line = a.wait_for_log("server connection failed", Duration::from_secs(20));
    assert!(
        line.contains("kind=\"tls\"") && line.to_lowercase().contains("expired"),
        "{line}"
    );
    let status = a.stop();
    assert!(status.success() || status.code() == Some(1), "{status}");
    assert!(r.stop().success());
    assert!(
        r.log_text().contains("TLS handshake failed"),
        "{}",
        r.log_text()
    );
}

#[test]
fn unknown_ca_is_refused_and_good_clients_continue() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let tls = server_tls(&pki.server_cert, &pki.server_key, None);
    let (bad, recv, _) = bad_and_good(
        &tls,
        &client_tls(&pki.other_ca, None),
        &client_tls(&pki.ca, None),
    );
    assert!(
        bad.contains("kind=\"tls\"") && bad.contains("invalid peer certificate"),
        "{bad}"
    );
    assert!(recv.contains("TLS handshake failed"), "{recv}");
}

#[test]
fn tls_client_on_a_plain_port() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let (bad, recv, r) = bad_and_good("", &client_tls(&pki.ca, None), "");
    assert!(bad.contains("kind=\"tls\""), "{bad}");
    assert!(recv.contains("TLS handshake on a plain port"), "{recv}");
    assert!(
        r.final_counter(
            "logferry_forward_connection_errors_total{component=\"in\",kind=\"tls_on_plain_port\"}"
        ) >= 1
    );
}

#[test]
fn plain_client_on_a_tls_port() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let tls = server_tls(&pki.server_cert, &pki.server_key, None);
    let (bad, recv, _) = bad_and_good(&tls, "", &client_tls(&pki.ca, None));
    assert!(bad.contains("server connection failed"), "{bad}");
    assert!(recv.contains("TLS handshake failed"), "{recv}");
}

#[test]
fn client_certificates_are_verified_when_required() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let tls = server_tls(&pki.server_cert, &pki.server_key, Some(&pki.ca));
    let (bad, recv, _) = bad_and_good(
        &tls,
        &client_tls(&pki.ca, None),
        &client_tls(&pki.ca, Some((&pki.client_cert, &pki.client_key))),
    );
    assert!(bad.contains("server connection failed"), "{bad}");
    assert!(recv.contains("TLS handshake failed"), "{recv}");
}

#[test]
fn a_ca_certificate_used_as_the_server_certificate_is_explained() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let dir = tempfile::tempdir().unwrap();
    // what `openssl req -x509` makes: self-signed, with CA:TRUE
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    let cert_path = dir.path().join("self.pem");
    let key_path = dir.path().join("self.key");
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    let (_r, addr) = receiver(&server_tls(&cert_path, &key_path, None));
    let mut a = agent(addr, "x", 10, &client_tls(&cert_path, None));
    let line = a.wait_for_log("server connection failed", Duration::from_secs(20));
    assert!(
        line.contains("CA certificate") && line.contains("signed by that CA"),
        "{line}"
    );
}
