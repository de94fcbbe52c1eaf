//! `logferry tap COMPONENT`: prints the records passing a component of a
//! running logferry, read from its `[api]` (`GET /tap`), one JSON object a
//! line, until Ctrl-C or the process stops.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::TokioIo;

use crate::api::access::resolve_token;
use crate::config::Secret;
use crate::topology::config::Config;

/// `logferry tap` options.
#[derive(Debug, clap::Args)]
pub struct TapArgs {
    /// The source, filter or sink whose records to show: what leaves a
    /// source or a filter, what a sink receives.
    pub component: String,
    /// Only records whose tag matches this pattern (e.g. `app.**`).
    #[arg(long, value_name = "PATTERN")]
    pub tag: Option<String>,
    /// At most this many records a second (1 to 10000); the rest are
    /// counted and announced as `{"skipped": N}` lines.
    #[arg(long, default_value_t = crate::router::tap::DEFAULT_RATE)]
    pub rate: u32,
    /// The `[api]` address of the logferry to tap (`host:port`; a leading
    /// `http://` is accepted).
    #[arg(long, default_value = "127.0.0.1:8686", conflicts_with = "config")]
    pub api: String,
    /// Read the `[api]` address and token from this configuration file
    /// instead of `--api`.
    #[arg(short, long)]
    pub config: Option<PathBuf>,
    /// The API token, when `[api]` has one (`--config` reads it from the
    /// file's token settings).
    #[arg(long, env = "LOGFERRY_API_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

pub fn main(args: TapArgs) -> ExitCode {
    let (api, token) = match target(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = rt.block_on(async {
        tokio::select! {
            r = tap(&api, token.as_ref(), &args) => r,
            _ = tokio::signal::ctrl_c() => Ok(()),
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The API address and token to use.
fn target(args: &TapArgs) -> Result<(String, Option<Secret>), String> {
    let given = args.token.clone().map(Secret::new);
    let Some(path) = &args.config else {
        let api = args.api.trim_start_matches("http://").trim_end_matches('/');
        return Ok((api.to_string(), given));
    };
    let config = Config::load(path).map_err(|e| e.to_string())?;
    let api = config
        .api
        .ok_or_else(|| format!("{}: no [api] table to tap through", path.display()))?;
    let token = match given {
        Some(t) => Some(t),
        None => resolve_token(&api)?,
    };
    Ok((api.address, token))
}

/// `%`-encodes a query value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

async fn tap(api: &str, token: Option<&Secret>, args: &TapArgs) -> Result<(), String> {
    let stream = tokio::net::TcpStream::connect(api)
        .await
        .map_err(|e| format!("cannot connect to the api at {api}: {e} (is [api] configured, and is --api its address?)"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("api {api}: {e}"))?;
    tokio::spawn(conn);
    let mut uri = format!(
        "/tap?component={}&rate={}",
        encode(&args.component),
        args.rate
    );
    if let Some(tag) = &args.tag {
        uri.push_str(&format!("&tag={}", encode(tag)));
    }
    let mut req = Request::get(uri).header(hyper::header::HOST, api);
    if let Some(t) = token {
        req = req.header(
            hyper::header::AUTHORIZATION,
            format!("Bearer {}", t.expose()),
        );
    }
    let req = req.body(Empty::<Bytes>::new()).map_err(|e| e.to_string())?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| format!("api {api}: {e}"))?;
    let status = resp.status();
    let mut body = resp.into_body();
    if !status.is_success() {
        let text = body
            .collect()
            .await
            .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
            .unwrap_or_default();
        return Err(format!(
            "api {api}: GET /tap answered {status}: {}",
            text.trim()
        ));
    }
    let mut stdout = std::io::stdout();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("api {api}: {e}"))?;
        if let Some(data) = frame.data_ref() {
            // a closed pipe (`logferry tap x | head`) ends the tap
            if stdout
                .write_all(data)
                .and_then(|()| stdout.flush())
                .is_err()
            {
                return Ok(());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    fn args(line: &[&str]) -> TapArgs {
        match crate::cli::Cli::parse_from(line).command {
            crate::cli::Command::Tap(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_address_and_token_come_from_the_flags_or_the_file() {
        let a = args(&[
            "logferry",
            "tap",
            "x",
            "--api",
            "http://10.0.0.1:9/",
            "--token",
            "t",
        ]);
        let (api, token) = target(&a).unwrap();
        assert_eq!(api, "10.0.0.1:9");
        assert_eq!(token.unwrap().expose(), "t");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\
             [sinks.out]\ntype = \"null\"\nmatch = \"**\"\n\
             [api]\naddress = \"127.0.0.1:8687\"\ntoken = \"from-file\"\n",
        )
        .unwrap();
        let c = path.to_str().unwrap();
        let (api, token) = target(&args(&["logferry", "tap", "x", "--config", c])).unwrap();
        assert_eq!(api, "127.0.0.1:8687");
        assert_eq!(token.unwrap().expose(), "from-file");
        // a file without [api] cannot be tapped through
        std::fs::write(
            &path,
            "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\
             [sinks.out]\ntype = \"null\"\nmatch = \"**\"\n",
        )
        .unwrap();
        let e = target(&args(&["logferry", "tap", "x", "--config", c])).unwrap_err();
        assert!(e.contains("no [api] table"), "{e}");
        assert_eq!(encode("app.** x/y"), "app.%2A%2A%20x%2Fy");
    }
}
