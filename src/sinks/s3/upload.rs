//! Storing one object: a single `PUT`, or a multipart upload (noted in
//! the [`Journal`] while it runs) when its body is larger than a part.
//! Each failure says whether another attempt can help.

use std::sync::Arc;

use bytes::Bytes;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{ObjectStore, PutPayload};

use super::journal::{Journal, Started};

/// Why an object was not stored.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// Another attempt may succeed: the store did not answer, answered
    /// 5xx, refused the credentials (they can be fixed) or has no such
    /// bucket (yet).
    #[error("{message}")]
    Retry {
        /// For the `kind` label: `auth`, `not_found`, `request`, `journal`.
        kind: &'static str,
        message: String,
    },
    /// The store will never take this object (a precondition, an
    /// unsupported request): its records are set aside.
    #[error("{message}")]
    Refused { kind: &'static str, message: String },
}

impl UploadError {
    pub fn kind(&self) -> &'static str {
        match self {
            UploadError::Retry { kind, .. } | UploadError::Refused { kind, .. } => kind,
        }
    }

    fn journal(e: std::io::Error) -> UploadError {
        UploadError::Retry {
            kind: "journal",
            message: format!("cannot write the multipart journal: {e}"),
        }
    }
}

impl From<object_store::Error> for UploadError {
    fn from(e: object_store::Error) -> UploadError {
        use object_store::Error as E;
        let message = e.to_string();
        match e {
            // a wrong secret or a missing grant is fixed outside: retried,
            // until `retry.max_attempts` (then dead-lettered)
            E::PermissionDenied { .. } | E::Unauthenticated { .. } => UploadError::Retry {
                kind: "auth",
                message,
            },
            E::NotFound { .. } => UploadError::Retry {
                kind: "not_found",
                message,
            },
            E::Precondition { .. }
            | E::AlreadyExists { .. }
            | E::NotModified { .. }
            | E::NotImplemented
            | E::NotSupported { .. }
            | E::InvalidPath { .. } => UploadError::Refused {
                kind: "refused",
                message,
            },
            _ => UploadError::Retry {
                kind: "request",
                message,
            },
        }
    }
}

/// The bucket, as the sink uses it.
pub struct Bucket {
    pub store: Arc<object_store::aws::AmazonS3>,
    /// Bodies larger than this go up in parts of this size.
    pub part_bytes: usize,
}

impl Bucket {
    /// Stores `body` at `key`; true if as a multipart upload.
    pub async fn store(
        &self,
        key: &str,
        body: Bytes,
        journal: &mut Journal,
    ) -> Result<bool, UploadError> {
        let path = Path::from(key);
        if body.len() <= self.part_bytes {
            self.store.put(&path, PutPayload::from(body)).await?;
            return Ok(false);
        }
        let id = self.store.create_multipart(&path).await?;
        journal
            .add(Started {
                key: key.to_string(),
                upload_id: id.clone(),
                abandoned: false,
            })
            .map_err(UploadError::journal)?;
        let sent = self.parts(&path, &id, body).await;
        match sent {
            Ok(()) => {
                // stored: a journal that still lists it only costs an
                // abort of a finished upload at the next start (refused)
                let _ = journal.remove(&id);
                Ok(true)
            }
            Err(e) => {
                // no part is left behind when it can be helped; if the
                // abort fails too (the store is down), it is aborted once
                // the store answers again (`abort_abandoned`)
                if self.store.abort_multipart(&path, &id).await.is_ok() {
                    let _ = journal.remove(&id);
                } else {
                    let _ = journal.abandon(&id);
                }
                Err(e)
            }
        }
    }

    async fn parts(&self, path: &Path, id: &String, body: Bytes) -> Result<(), UploadError> {
        let mut parts: Vec<PartId> = Vec::new();
        let mut at = 0;
        while at < body.len() {
            let end = (at + self.part_bytes).min(body.len());
            let part = self
                .store
                .put_part(path, id, parts.len(), PutPayload::from(body.slice(at..end)))
                .await?;
            parts.push(part);
            at = end;
        }
        self.store.complete_multipart(path, id, parts).await?;
        Ok(())
    }

    /// Aborts the uploads that failed attempts of this run abandoned and
    /// could not abort then; returns how many are still left.
    pub async fn abort_abandoned(&self, journal: &mut Journal, sink: &str) -> usize {
        let mut left = 0;
        for s in journal.abandoned() {
            let path = Path::from(s.key.as_str());
            match self.store.abort_multipart(&path, &s.upload_id).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                    tracing::info!(sink, key = %s.key, upload_id = %s.upload_id,
                        "aborted a multipart upload a failed attempt left while the store was down (its records went into a later attempt)");
                    if let Err(e) = journal.remove(&s.upload_id) {
                        tracing::error!(sink, error = %e, "cannot write the multipart journal");
                    }
                }
                Err(e) => {
                    left += 1;
                    tracing::warn!(sink, key = %s.key, upload_id = %s.upload_id, error = %e,
                        "cannot abort a multipart upload a failed attempt left; trying again after the next upload");
                }
            }
        }
        left
    }

    /// Aborts the uploads a previous run left; returns how many.
    pub async fn abort_left(&self, journal: &mut Journal, sink: &str) -> usize {
        let left = journal.left().to_vec();
        let mut aborted = 0;
        for s in left {
            let path = Path::from(s.key.as_str());
            match self.store.abort_multipart(&path, &s.upload_id).await {
                // gone already (completed or aborted): nothing to do
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                    aborted += 1;
                    if s.abandoned {
                        tracing::warn!(sink, key = %s.key, upload_id = %s.upload_id,
                            "aborted a multipart upload an earlier run abandoned after a failed attempt (the store was down); its records went into a later attempt of that run, not this upload");
                    } else {
                        tracing::warn!(sink, key = %s.key, upload_id = %s.upload_id,
                            "aborted a multipart upload the last run left unfinished (it stopped mid-upload); its records were not acknowledged and come again");
                    }
                    if let Err(e) = journal.remove(&s.upload_id) {
                        tracing::error!(sink, error = %e, "cannot write the multipart journal");
                    }
                }
                Err(e) => {
                    tracing::error!(sink, key = %s.key, upload_id = %s.upload_id, error = %e,
                        "cannot abort a multipart upload the last run left; trying again at the next start");
                }
            }
        }
        aborted
    }
}
