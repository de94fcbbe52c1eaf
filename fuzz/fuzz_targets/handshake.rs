//! The shared-key handshake decoders (`protocol::forward::handshake`): PING
//! comes from any client that connects to a source with `shared_key` set,
//! HELO and PONG from whatever server a forward sink connects to.
//!
//! The input is one message as `net::read_value` hands it over (the decoders
//! must not assume it is even msgpack).
//!
//! Checked:
//! * `decode_helo`, `decode_ping`, `decode_pong`, `ping_salt` never panic, and
//!   neither do `verify_ping` / `verify_pong` / `encode_pong` on what they
//!   decoded;
//! * a decoded HELO re-encodes to a HELO that decodes to the same value, and
//!   has a nonce;
//! * `ping_salt` is the salt `decode_ping` finds (or empty if it fails);
//! * the PONG a server builds for a decoded PING decodes, carries the
//!   verdict of `verify_ping`, and (on success) passes `verify_pong` for a
//!   client with the same key, while a client with another key rejects it;
//! * `parse_ack` (the forward sink's reading of `{"ack": id}` answers) never
//!   panics, and whatever id it finds round-trips through `ack_response`;
//! * stack use does not grow with the input (256 KiB stack, see `common.rs`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::protocol::forward::handshake::{
    decode_helo, decode_ping, decode_pong, encode_helo, encode_pong, ping_salt, verify_ping, verify_pong,
    ClientAuth, Helo, ServerAuth,
};

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

fn server(users: bool) -> ServerAuth {
    ServerAuth {
        shared_key: "fuzz-key".into(),
        users: if users { vec![("alice".into(), "pw".into())] } else { Vec::new() },
        hostname: "fuzz-server".into(),
    }
}

fn client(key: &str) -> ClientAuth {
    ClientAuth {
        shared_key: key.into(),
        username: "alice".into(),
        password: "pw".into(),
        hostname: "fuzz-client".into(),
    }
}

fn check(data: &[u8]) {
    // an ack, as a forward sink receives it
    if let Some(id) = logferry::protocol::forward::parse_ack(data) {
        let again = logferry::protocol::forward::ack_response(id.as_bytes());
        assert_eq!(logferry::protocol::forward::parse_ack(&again).as_deref(), Some(id.as_str()));
    }
    // HELO, as a forward sink receives it
    if let Ok(helo) = decode_helo(data) {
        assert!(!helo.nonce.is_empty(), "HELO accepted without a nonce");
        let again = decode_helo(&encode_helo(&helo)).expect("a re-encoded HELO does not decode");
        assert_eq!(again, helo, "HELO does not round-trip");
    }

    // PONG, as a forward sink receives it
    if let Ok(pong) = decode_pong(data) {
        let helo = Helo { nonce: b"n".to_vec(), auth_salt: Vec::new(), keepalive: true };
        let verdict = verify_pong(&client("fuzz-key"), &helo, b"salt", &pong);
        if !pong.ok {
            assert!(verdict.is_err(), "a refusing PONG was accepted");
        }
    }

    // PING, as a source with shared_key receives it
    let ping = decode_ping(data);
    assert_eq!(
        ping_salt(data),
        ping.as_ref().map(|p| p.shared_key_salt.clone()).unwrap_or_default(),
        "ping_salt disagrees with decode_ping"
    );
    if let Ok(ping) = ping {
        for users in [false, true] {
            let auth = server(users);
            let helo = Helo {
                nonce: b"fuzz-nonce".to_vec(),
                auth_salt: if users { b"fuzz-salt".to_vec() } else { Vec::new() },
                keepalive: true,
            };
            let verdict = verify_ping(&auth, &helo, &ping);
            let pong = decode_pong(&encode_pong(&auth, &helo, &ping, &verdict)).expect("our PONG does not decode");
            assert_eq!(pong.ok, verdict.is_ok(), "PONG does not carry the verdict");
            assert_eq!(pong.hostname, auth.hostname);
            if verdict.is_ok() {
                verify_pong(&client("fuzz-key"), &helo, &ping.shared_key_salt, &pong)
                    .expect("a client with the same key rejects the server's PONG");
                assert!(
                    verify_pong(&client("other-key"), &helo, &ping.shared_key_salt, &pong).is_err(),
                    "a client with another key accepts the server's PONG"
                );
            }
        }
    }
}
