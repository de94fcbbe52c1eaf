//! The optional handshake of the forward protocol: shared-key
//! authentication (and optional user authentication) before any event.
//!
//! ```text
//! server → client  ["HELO", {"nonce": n, "auth": salt_or_"", "keepalive": true}]
//! client → server  ["PING", client_hostname, shared_key_salt,
//!                   sha512_hex(shared_key_salt + client_hostname + n + shared_key),
//!                   username_or_"", sha512_hex(salt + username + password)_or_""]
//! server → client  ["PONG", auth_ok, reason, server_hostname,
//!                   sha512_hex(shared_key_salt + server_hostname + n + shared_key)]
//! ```
//!
//! The PONG digest proves to the client that the server knows the key too.
//! Every function here is pure: the connection code does the I/O.

use sha2::{Digest, Sha512};

use crate::protocol::msgpack::{write, Reader, Value};

/// A server's handshake settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerAuth {
    pub shared_key: String,
    /// `(username, password)` pairs; empty = no user authentication.
    pub users: Vec<(String, String)>,
    /// Name the server reports in PONG.
    pub hostname: String,
}

/// A client's handshake settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAuth {
    pub shared_key: String,
    pub username: String,
    pub password: String,
    /// Name the client reports in PING.
    pub hostname: String,
}

/// What a server sent in HELO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Helo {
    pub nonce: Vec<u8>,
    /// Salt for the password digest; empty when the server has no users.
    pub auth_salt: Vec<u8>,
    pub keepalive: bool,
}

/// What a client sent in PING.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ping {
    pub hostname: String,
    pub shared_key_salt: Vec<u8>,
    pub shared_key_digest: String,
    pub username: String,
    pub password_digest: String,
}

/// What a server answered in PONG.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pong {
    pub ok: bool,
    pub reason: String,
    pub hostname: String,
    pub shared_key_digest: String,
}

/// A handshake that did not succeed; the message says why, for logs and
/// for the PONG reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HandshakeError(pub String);

fn fail<T>(msg: impl Into<String>) -> Result<T, HandshakeError> {
    Err(HandshakeError(msg.into()))
}

/// Lower-case hex SHA-512 of the concatenated parts.
pub fn sha512_hex(parts: &[&[u8]]) -> String {
    let mut h = Sha512::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// `n` random bytes from the operating system.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    // the OS generator failing is not something a log forwarder can fix;
    // fall back to time-derived bytes rather than refusing every connection
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        for (i, x) in b.iter_mut().enumerate() {
            *x = (t >> ((i % 16) * 8)) as u8 ^ i as u8;
        }
    }
    b
}

/// Constant-time string comparison (digests are compared in full).
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

pub fn encode_helo(h: &Helo) -> Vec<u8> {
    let mut out = Vec::new();
    write::array_len(&mut out, 2);
    write::str(&mut out, b"HELO");
    write::map_len(&mut out, 3);
    write::str(&mut out, b"nonce");
    write::str(&mut out, &h.nonce);
    write::str(&mut out, b"auth");
    write::str(&mut out, &h.auth_salt);
    write::str(&mut out, b"keepalive");
    out.push(if h.keepalive { 0xc3 } else { 0xc2 });
    out
}

pub fn decode_helo(frame: &[u8]) -> Result<Helo, HandshakeError> {
    let mut r = Reader::new(frame);
    expect_kind(&mut r, "HELO", 2)?;
    let n = r
        .read_map_len()
        .or_else(|_| fail("HELO options must be a map"))?;
    let mut helo = Helo {
        nonce: Vec::new(),
        auth_salt: Vec::new(),
        keepalive: true,
    };
    for _ in 0..n {
        let key = r
            .read_bytes()
            .or_else(|_| fail("HELO option keys must be strings"))?;
        match (key, r.read().or_else(|_| fail("truncated HELO"))?) {
            (b"nonce", Value::Str(v) | Value::Bin(v)) => helo.nonce = v.to_vec(),
            (b"auth", Value::Str(v) | Value::Bin(v)) => helo.auth_salt = v.to_vec(),
            (b"keepalive", Value::Bool(k)) => helo.keepalive = k,
            (_, v) => crate::event::skip_rest(&mut r, v).or_else(|_| fail("truncated HELO"))?,
        }
    }
    if helo.nonce.is_empty() {
        return fail("HELO without a nonce");
    }
    Ok(helo)
}

/// The client's PING for `helo`.
pub fn encode_ping(auth: &ClientAuth, helo: &Helo) -> Vec<u8> {
    let salt = crate::protocol::hex(&random_bytes(16));
    let digest = sha512_hex(&[
        salt.as_bytes(),
        auth.hostname.as_bytes(),
        &helo.nonce,
        auth.shared_key.as_bytes(),
    ]);
    let password = if helo.auth_salt.is_empty() {
        String::new()
    } else {
        sha512_hex(&[
            &helo.auth_salt,
            auth.username.as_bytes(),
            auth.password.as_bytes(),
        ])
    };
    let mut out = Vec::new();
    write::array_len(&mut out, 6);
    write::str(&mut out, b"PING");
    write::str(&mut out, auth.hostname.as_bytes());
    write::str(&mut out, salt.as_bytes());
    write::str(&mut out, digest.as_bytes());
    write::str(&mut out, auth.username.as_bytes());
    write::str(&mut out, password.as_bytes());
    out
}

pub fn decode_ping(frame: &[u8]) -> Result<Ping, HandshakeError> {
    let mut r = Reader::new(frame);
    expect_kind(&mut r, "PING", 6)?;
    let mut text = || -> Result<Vec<u8>, HandshakeError> {
        r.read_bytes()
            .map(<[u8]>::to_vec)
            .or_else(|_| fail("PING fields must be strings"))
    };
    let hostname = String::from_utf8_lossy(&text()?).into_owned();
    let shared_key_salt = text()?;
    let shared_key_digest = String::from_utf8_lossy(&text()?).into_owned();
    let username = String::from_utf8_lossy(&text()?).into_owned();
    let password_digest = String::from_utf8_lossy(&text()?).into_owned();
    Ok(Ping {
        hostname,
        shared_key_salt,
        shared_key_digest,
        username,
        password_digest,
    })
}

/// Checks a PING against the server's settings and the nonce and salt it
/// sent in HELO; `Err` carries the reason for PONG and the logs.
pub fn verify_ping(auth: &ServerAuth, helo: &Helo, ping: &Ping) -> Result<(), HandshakeError> {
    let want = sha512_hex(&[
        &ping.shared_key_salt,
        ping.hostname.as_bytes(),
        &helo.nonce,
        auth.shared_key.as_bytes(),
    ]);
    if !same(&want, &ping.shared_key_digest) {
        return fail("shared_key mismatch");
    }
    if !auth.users.is_empty() {
        let ok = auth.users.iter().any(|(u, p)| {
            u == &ping.username
                && same(
                    &sha512_hex(&[&helo.auth_salt, u.as_bytes(), p.as_bytes()]),
                    &ping.password_digest,
                )
        });
        if !ok {
            return fail("username/password mismatch");
        }
    }
    Ok(())
}

/// The server's PONG: `result` is the outcome of [`verify_ping`].
pub fn encode_pong(
    auth: &ServerAuth,
    helo: &Helo,
    ping: &Ping,
    result: &Result<(), HandshakeError>,
) -> Vec<u8> {
    let (ok, reason) = match result {
        Ok(()) => (true, String::new()),
        Err(e) => (false, e.0.clone()),
    };
    let digest = if ok {
        sha512_hex(&[
            &ping.shared_key_salt,
            auth.hostname.as_bytes(),
            &helo.nonce,
            auth.shared_key.as_bytes(),
        ])
    } else {
        String::new()
    };
    let mut out = Vec::new();
    write::array_len(&mut out, 5);
    write::str(&mut out, b"PONG");
    out.push(if ok { 0xc3 } else { 0xc2 });
    write::str(&mut out, reason.as_bytes());
    write::str(&mut out, auth.hostname.as_bytes());
    write::str(&mut out, digest.as_bytes());
    out
}

pub fn decode_pong(frame: &[u8]) -> Result<Pong, HandshakeError> {
    let mut r = Reader::new(frame);
    expect_kind(&mut r, "PONG", 5)?;
    let ok = match r.read() {
        Ok(Value::Bool(b)) => b,
        _ => return fail("PONG auth result must be a boolean"),
    };
    let mut text = || -> Result<String, HandshakeError> {
        r.read_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .or_else(|_| fail("PONG fields must be strings"))
    };
    Ok(Pong {
        ok,
        reason: text()?,
        hostname: text()?,
        shared_key_digest: text()?,
    })
}

/// The client's check of PONG: the server accepted us and proved it knows
/// the shared key. `ping_salt` is the salt our PING carried.
pub fn verify_pong(
    auth: &ClientAuth,
    helo: &Helo,
    ping_salt: &[u8],
    pong: &Pong,
) -> Result<(), HandshakeError> {
    if !pong.ok {
        return fail(format!("server refused authentication: {}", pong.reason));
    }
    let want = sha512_hex(&[
        ping_salt,
        pong.hostname.as_bytes(),
        &helo.nonce,
        auth.shared_key.as_bytes(),
    ]);
    if !same(&want, &pong.shared_key_digest) {
        return fail("server's PONG digest does not match: it does not share our key");
    }
    Ok(())
}

/// The salt inside an encoded PING (the client keeps it to check PONG).
pub fn ping_salt(ping: &[u8]) -> Vec<u8> {
    decode_ping(ping)
        .map(|p| p.shared_key_salt)
        .unwrap_or_default()
}

fn expect_kind(r: &mut Reader<'_>, kind: &str, min_len: usize) -> Result<(), HandshakeError> {
    let n = r
        .read_array_len()
        .or_else(|_| fail(format!("{kind} must be an array")))?;
    if n < min_len {
        return fail(format!("{kind} must have at least {min_len} elements"));
    }
    match r.read_bytes() {
        Ok(k) if k == kind.as_bytes() => Ok(()),
        Ok(k) => fail(format!(
            "expected {kind}, got {:?}",
            String::from_utf8_lossy(k)
        )),
        Err(_) => fail(format!("expected {kind}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(users: Vec<(&str, &str)>) -> ServerAuth {
        ServerAuth {
            shared_key: "secret".into(),
            users: users
                .into_iter()
                .map(|(u, p)| (u.into(), p.into()))
                .collect(),
            hostname: "receiver".into(),
        }
    }

    fn client(key: &str, user: &str, password: &str) -> ClientAuth {
        ClientAuth {
            shared_key: key.into(),
            username: user.into(),
            password: password.into(),
            hostname: "agent".into(),
        }
    }

    /// Runs the whole exchange through the encoders and decoders.
    fn exchange(
        s: &ServerAuth,
        c: &ClientAuth,
    ) -> (Result<(), HandshakeError>, Result<(), HandshakeError>) {
        let helo = Helo {
            nonce: random_bytes(16),
            auth_salt: if s.users.is_empty() {
                Vec::new()
            } else {
                random_bytes(16)
            },
            keepalive: true,
        };
        let got_helo = decode_helo(&encode_helo(&helo)).unwrap();
        assert_eq!(got_helo, helo);
        let ping_bytes = encode_ping(c, &got_helo);
        let ping = decode_ping(&ping_bytes).unwrap();
        let server_result = verify_ping(s, &helo, &ping);
        let pong = decode_pong(&encode_pong(s, &helo, &ping, &server_result)).unwrap();
        let client_result = verify_pong(c, &got_helo, &ping_salt(&ping_bytes), &pong);
        (server_result, client_result)
    }

    #[test]
    fn matching_keys_authenticate_both_ways() {
        let (s, c) = exchange(&server(vec![]), &client("secret", "", ""));
        assert_eq!((s, c), (Ok(()), Ok(())));
        let (s, c) = exchange(
            &server(vec![("alice", "pw")]),
            &client("secret", "alice", "pw"),
        );
        assert_eq!((s, c), (Ok(()), Ok(())));
    }

    #[test]
    fn wrong_key_or_password_is_refused_with_a_reason() {
        let (s, c) = exchange(&server(vec![]), &client("wrong", "", ""));
        assert_eq!(s.unwrap_err().0, "shared_key mismatch");
        assert!(c.unwrap_err().0.contains("shared_key mismatch"));
        let (s, _) = exchange(
            &server(vec![("alice", "pw")]),
            &client("secret", "alice", "nope"),
        );
        assert_eq!(s.unwrap_err().0, "username/password mismatch");
    }

    #[test]
    fn a_server_without_the_key_is_detected_by_the_client() {
        let helo = Helo {
            nonce: b"n".to_vec(),
            auth_salt: vec![],
            keepalive: true,
        };
        let c = client("secret", "", "");
        let ping_bytes = encode_ping(&c, &helo);
        let ping = decode_ping(&ping_bytes).unwrap();
        let impostor = ServerAuth {
            shared_key: "other".into(),
            users: vec![],
            hostname: "x".into(),
        };
        // an impostor that claims success anyway
        let pong = decode_pong(&encode_pong(&impostor, &helo, &ping, &Ok(()))).unwrap();
        assert!(verify_pong(&c, &helo, &ping_salt(&ping_bytes), &pong).is_err());
    }

    #[test]
    fn known_digest() {
        // sha512("abc"), a published test vector
        assert!(sha512_hex(&[b"a", b"bc"]).starts_with("ddaf35a193617aba"));
    }

    #[test]
    fn malformed_messages_are_errors() {
        assert!(decode_helo(&[0x92, 0xa4, b'P', b'I', b'N', b'G', 0x80]).is_err());
        assert!(decode_ping(&[0x91, 0xa4, b'P', b'I', b'N', b'G']).is_err());
        assert!(decode_pong(&[0xc0]).is_err());
    }
}
