//! The bucket check at start: one signed `HEAD` on the bucket, so that a
//! wrong secret, a missing bucket or a store that does not answer shows
//! in `/ready` and the log at once, not at the first upload (up to
//! `max_object_age` later).
//!
//! `HEAD` on a bucket needs `s3:ListBucket`; a policy that grants only
//! `s3:PutObject` is answered 403 as a wrong secret is (a `HEAD` answer
//! has no body to tell them apart). Either way the sink stays not ready
//! only until an upload succeeds, and the records are uploaded as usual.

use object_store::aws::{AmazonS3, AwsAuthorizer};
use object_store::client::{
    HttpClient, HttpConnector, HttpRequest, HttpRequestBody, ReqwestConnector,
};
use object_store::ClientOptions;

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BucketCheck {
    /// The bucket answered 2xx: the credentials are good.
    Ready,
    /// 401 or 403: the store refuses the credentials (or lacks the grant).
    CredentialsRefused(String),
    /// 404: no such bucket.
    NoBucket(String),
    /// No answer, or another status.
    Failed(String),
}

impl BucketCheck {
    /// The `kind` label of `logferry_sink_s3_errors_total`; `None` when
    /// nothing is wrong.
    pub fn error_kind(&self) -> Option<&'static str> {
        match self {
            BucketCheck::Ready => None,
            BucketCheck::CredentialsRefused(_) => Some("auth"),
            BucketCheck::NoBucket(_) => Some("not_found"),
            BucketCheck::Failed(_) => Some("request"),
        }
    }
}

/// How to reach the bucket for the check: the store's client settings and
/// the bucket's URL.
pub struct BucketProbe {
    /// The same proxy, timeout and TLS settings as the uploads.
    client: HttpClient,
    /// `…/bucket` (path-style) or `https://bucket.host/` (virtual-hosted).
    url: String,
    region: String,
}

impl BucketProbe {
    pub fn new(options: &ClientOptions, url: String, region: &str) -> Result<BucketProbe, String> {
        let client = ReqwestConnector::default()
            .connect(options)
            .map_err(|e| format!("s3: {e}"))?;
        Ok(BucketProbe {
            client,
            url,
            region: region.to_string(),
        })
    }

    /// One signed `HEAD` on the bucket, with the store's own credentials.
    pub async fn check(&self, store: &AmazonS3) -> BucketCheck {
        let credential = match store.credentials().get_credential().await {
            Ok(c) => c,
            Err(e) => return BucketCheck::CredentialsRefused(format!("no credentials: {e}")),
        };
        let request = http::Request::head(&self.url).body(HttpRequestBody::empty());
        let mut request: HttpRequest = match request {
            Ok(r) => r,
            Err(e) => return BucketCheck::Failed(format!("{}: {e}", self.url)),
        };
        AwsAuthorizer::new(&credential, "s3", &self.region).authorize(&mut request, None);
        let answer = match self.client.execute(request).await {
            Ok(a) => a,
            Err(e) => return BucketCheck::Failed(format!("HEAD {}: {e}", self.url)),
        };
        let status = answer.status();
        let said = format!("HEAD {} answered {status}", self.url);
        match status.as_u16() {
            200..=299 => BucketCheck::Ready,
            401 | 403 => BucketCheck::CredentialsRefused(said),
            404 => BucketCheck::NoBucket(said),
            _ => BucketCheck::Failed(said),
        }
    }
}

/// The URL of `bucket`: under `endpoint` (path-style), or the bucket's own
/// host when `virtual_host` is that URL already; AWS's when there is no
/// endpoint.
pub fn bucket_url(endpoint: Option<&str>, bucket: &str, region: &str, path_style: bool) -> String {
    match (endpoint, path_style) {
        (Some(e), true) => format!("{}/{bucket}", e.trim_end_matches('/')),
        (Some(e), false) => format!("{}/", e.trim_end_matches('/')),
        (None, true) => format!("https://s3.{region}.amazonaws.com/{bucket}"),
        (None, false) => format!("https://{bucket}.s3.{region}.amazonaws.com/"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_url_follows_the_addressing() {
        assert_eq!(
            bucket_url(Some("http://127.0.0.1:9000/"), "logs", "r", true),
            "http://127.0.0.1:9000/logs"
        );
        // virtual-hosted: the endpoint is already the bucket's host
        assert_eq!(
            bucket_url(Some("http://logs.s3.test:9000"), "logs", "r", false),
            "http://logs.s3.test:9000/"
        );
        assert_eq!(
            bucket_url(None, "logs", "eu-west-1", false),
            "https://logs.s3.eu-west-1.amazonaws.com/"
        );
    }
}
