//! An object in S3 (or anything speaking its API: MinIO, R2, Ceph), Google Cloud Storage or
//! Azure Blob Storage, read by byte ranges through the `object_store` crate — its credentials,
//! request signing and retries — one range per request, a wave's requests at once.
//!
//! Credentials and endpoints come from the environment, as each store's own tools read them:
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT` (and
//! `AWS_ALLOW_HTTP=true` for a plain-HTTP endpoint such as a local MinIO); `GOOGLE_*`;
//! `AZURE_*`. See the `object_store` crate's builders (`AmazonS3Builder::from_env`, …).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, RetryConfig};

use super::{RETRIES, RangeSource, RemoteError};
use crate::HostError;

/// Requests in flight at once for one wave.
const CONCURRENCY: usize = 16;

/// The URL schemes this source reads.
pub const SCHEMES: [&str; 4] = ["s3://", "gs://", "az://", "abfs://"];

/// The runtime the object stores' requests run on: one for the process, two threads (the work
/// is waiting on the network; `read` blocks the caller until its wave is in).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("shoal-object-store")
            .enable_all()
            .build()
            .expect("a tokio runtime for object storage")
    })
}

/// An object in a bucket, read with ranged GETs. The first answer's ETag and length are
/// pinned: every later request carries the ETag as `If-Match` (a replaced object answers 412:
/// [`RemoteError::Changed`]), and an answer with another ETag or length is refused too.
pub struct StoreRanges {
    store: Arc<dyn ObjectStore>,
    path: Path,
    name: String,
    pinned: Mutex<(Option<String>, Option<u64>)>,
    requests: AtomicU64,
}

impl std::fmt::Debug for StoreRanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreRanges").field("object", &self.name).finish()
    }
}

/// Splits `scheme://bucket[/key]` into the bucket's URL and the key (`""` for none; a
/// trailing `/` dropped).
fn split_bucket(url: &str) -> Option<(&str, &str)> {
    let scheme = SCHEMES.iter().find(|s| url.starts_with(*s))?;
    let rest = &url[scheme.len()..];
    let (len, key) = rest.find('/').map_or((rest.len(), ""), |i| (i, &rest[i + 1..]));
    (len > 0).then(|| (&url[..scheme.len() + len], key.trim_end_matches('/')))
}

/// Splits `scheme://bucket/key` (an object: the key not empty) into the bucket's URL and the key.
pub(crate) fn split(url: &str) -> Option<(&str, &str)> {
    split_bucket(url).filter(|(_, key)| !key.is_empty() && !url.ends_with('/'))
}

/// The store holding `url` (`scheme://bucket[/key]`) and the key (`""` for a bucket's root),
/// with the store's credentials and endpoint from the environment.
pub fn store_for(url: &str) -> Result<(Arc<dyn ObjectStore>, Path), HostError> {
    let usage = |why: String| HostError::Usage(format!("{url}: {why}"));
    let (bucket, key) =
        split_bucket(url).ok_or_else(|| usage("expected scheme://bucket/key (s3, gs, az or abfs)".into()))?;
    // The client options (timeouts, `AWS_ALLOW_HTTP`, proxies) stay the environment's: the
    // store's defaults otherwise (30 s per request).
    let retry =
        RetryConfig { max_retries: RETRIES as usize, retry_timeout: Duration::from_secs(60), ..Default::default() };
    let store: Arc<dyn ObjectStore> = match &bucket[..2] {
        "s3" => Arc::new(
            object_store::aws::AmazonS3Builder::from_env()
                .with_url(bucket)
                .with_retry(retry)
                .build()
                .map_err(|e| usage(e.to_string()))?,
        ),
        "gs" => Arc::new(
            object_store::gcp::GoogleCloudStorageBuilder::from_env()
                .with_url(bucket)
                .with_retry(retry)
                .build()
                .map_err(|e| usage(e.to_string()))?,
        ),
        _ => Arc::new(
            object_store::azure::MicrosoftAzureBuilder::from_env()
                .with_url(bucket)
                .with_retry(retry)
                .build()
                .map_err(|e| usage(e.to_string()))?,
        ),
    };
    let path = Path::parse(key).map_err(|e| usage(e.to_string()))?;
    Ok((store, path))
}

/// Runs `future` (object-store work) to completion on the shared runtime.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    runtime().block_on(future)
}

impl StoreRanges {
    /// The object at `url` (`s3://bucket/key`, `gs://bucket/key`, `az://container/key`),
    /// with the store's credentials and endpoint from the environment.
    pub fn open(url: &str) -> Result<StoreRanges, HostError> {
        if split(url).is_none() {
            return Err(HostError::Usage(format!("{url}: expected scheme://bucket/key (s3, gs, az or abfs)")));
        }
        let (store, path) = store_for(url)?;
        Ok(StoreRanges::new(store, path, url))
    }

    /// The object at `path` in `store` (named `name` in messages).
    pub fn new(store: Arc<dyn ObjectStore>, path: Path, name: &str) -> StoreRanges {
        StoreRanges {
            store,
            path,
            name: name.to_string(),
            pinned: Mutex::new((None, None)),
            requests: AtomicU64::new(0),
        }
    }

    /// Checks an answer's ETag and object length against the pinned ones (pinning them first).
    fn check_pinned(&self, etag: Option<&str>, size: u64) -> Result<(), RemoteError> {
        let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        if pinned.1.is_none() {
            *pinned = (etag.map(str::to_string), Some(size));
        }
        if pinned.0.as_deref() != etag {
            return Err(RemoteError::Changed(format!("ETag {:?}, pinned {:?}", etag, pinned.0)));
        }
        if pinned.1 != Some(size) {
            return Err(RemoteError::Changed(format!("{size} bytes, pinned {:?}", pinned.1)));
        }
        Ok(())
    }
}

/// The remote error of an `object_store` error.
fn error_of(e: object_store::Error) -> RemoteError {
    use object_store::Error as E;
    match e {
        E::NotFound { .. } => RemoteError::Status(404),
        E::PermissionDenied { .. } => RemoteError::Status(403),
        E::Unauthenticated { .. } => RemoteError::Status(401),
        E::Precondition { .. } => RemoteError::Changed("If-Match failed: the object was replaced".into()),
        other => RemoteError::Transport(other.to_string()),
    }
}

impl RangeSource for StoreRanges {
    fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, RemoteError> {
        let etag = self.pinned.lock().unwrap_or_else(|e| e.into_inner()).0.clone();
        // A weak ETag is compared, never sent: If-Match with one always fails.
        let if_match = etag.filter(|t| !t.starts_with("W/"));
        self.requests.fetch_add(ranges.len() as u64, Ordering::Relaxed);
        let answers = runtime().block_on(async {
            let permits = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
            let mut tasks = tokio::task::JoinSet::new();
            for (i, r) in ranges.iter().enumerate() {
                let (store, path, permits) = (self.store.clone(), self.path.clone(), permits.clone());
                let options = GetOptions {
                    range: Some(GetRange::Bounded(r.clone())),
                    if_match: if_match.clone(),
                    ..Default::default()
                };
                tasks.spawn(async move {
                    let _permit = permits.acquire_owned().await.expect("the semaphore is never closed");
                    let got = store.get_opts(&path, options).await?;
                    let (meta, range) = (got.meta.clone(), got.range.clone());
                    Ok::<_, object_store::Error>((i, meta, range, got.bytes().await?))
                });
            }
            let mut answers = vec![None; ranges.len()];
            while let Some(done) = tasks.join_next().await {
                let (i, meta, range, bytes) =
                    done.map_err(|e| RemoteError::Transport(e.to_string()))?.map_err(error_of)?;
                answers[i] = Some((meta, range, bytes));
            }
            Ok::<_, RemoteError>(answers)
        })?;
        ranges
            .iter()
            .zip(answers)
            .map(|(r, answer)| {
                let (meta, range, bytes) = answer.expect("every task answered");
                self.check_pinned(meta.e_tag.as_deref(), meta.size)?;
                if range.start != r.start || range.end > r.end || bytes.len() as u64 != range.end - range.start {
                    let message = format!("{} bytes at {:?} for the range {r:?}", bytes.len(), range);
                    return Err(RemoteError::BadResponse(message));
                }
                Ok(bytes.to_vec())
            })
            .collect()
    }

    fn object_len(&self) -> Option<u64> {
        self.pinned.lock().unwrap_or_else(|e| e.into_inner()).1
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    fn version(&self) -> Option<String> {
        super::pinned_version(&self.pinned.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::{split, split_bucket};

    #[test]
    fn urls_split_into_bucket_and_key() {
        assert_eq!(split_bucket("s3://b"), Some(("s3://b", "")));
        assert_eq!(split_bucket("s3://b/"), Some(("s3://b", "")));
        assert_eq!(split_bucket("s3://b/p/q/"), Some(("s3://b", "p/q")));
        assert_eq!(split_bucket("s3://"), None);
        assert_eq!(split("s3://b/k/seg.shoal"), Some(("s3://b", "k/seg.shoal")));
        assert_eq!(split("gs://bucket/x"), Some(("gs://bucket", "x")));
        assert_eq!(split("abfs://c/x"), Some(("abfs://c", "x")));
        assert_eq!(split("s3://bucket"), None);
        assert_eq!(split("s3://bucket/"), None);
        assert_eq!(split("s3://bucket/dir/"), None);
        assert_eq!(split("s3:///key"), None);
        assert_eq!(split("http://h/x"), None);
    }
}
