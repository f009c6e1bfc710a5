//! Read-only collections read by ranges from a published segment set (`shoal serve --remote
//! NAME=MANIFEST`): a set `shoal publish` wrote to a bucket, a static host or a folder, searched
//! where it lies. Many servers can read one copy; none writes it. Opening reads the manifest
//! and every segment's bootstrap region; each search fetches the ranges it needs (a cache of
//! fetched bytes is kept in memory), so restarting a reader loses nothing and costs one open.
//!
//! A server can follow the publications at that location (`--remote-poll SECS`): it reads the
//! manifest every so often and, when another set is published there, opens it and serves it
//! from the next search on (searches under way finish on the set they started with); a set
//! that cannot be opened, or whose dimension or metric differs, is not served and the one
//! served is kept.
//!
//! Searches are answered as a local collection answers them (Shoal's route and Qdrant's query
//! and search routes). Writes, payload and vector reads are refused with `read_only`; a reader
//! failing to get the bytes it needs answers 502 with the remote error's code.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::json;
use shoal_core::{Metric, SearchRequest, SearchResponse};

use super::ApiError;
use super::store::{Meta, Store};
use crate::HostError;
use crate::remote::{ReadOptions, RemoteSetReader};
use shoal_core::remote::SetManifest;

/// A read-only collection over a published segment set.
#[derive(Debug)]
pub struct ServedSet {
    /// Where its manifest is (`s3://…/manifest.json`, `http://…`, a path).
    pub location: String,
    /// Its configuration as a local collection's (one unnamed dense vector, no payload fields).
    pub meta: Meta,
    options: ReadOptions,
    lanes: usize,
    /// The set served now (replaced whole when another is published).
    reader: RwLock<Arc<RemoteSetReader>>,
    /// The last manifest published there that is not served, and when it may be tried again.
    held: Mutex<Option<Held>>,
}

/// A published set not served: for good (another dimension or metric), or until `retry_at`
/// after it could not be opened (each failure doubling the wait, up to [`RETRY_HELD`]).
#[derive(Debug)]
struct Held {
    manifest: SetManifest,
    retry_at: Option<Instant>,
    wait: Duration,
}

/// The longest a published set that could not be opened waits before it is tried again (the
/// polls in between read only its manifest): the first retry is at the next poll, then after
/// 15 s, 30 s, … up to this.
pub const RETRY_HELD: Duration = Duration::from_secs(300);

/// What [`ServedSet::refresh`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refresh {
    /// The manifest there is the one served.
    Same,
    /// The manifest there names a set that is not served (and not tried again yet).
    Held,
    /// Another set was published there and is served from now on.
    Served,
}

/// A read-only collection as one request sees it: the set served when the request came (a
/// batch's searches all answer from it, whatever is published meanwhile).
#[derive(Clone)]
pub struct Snapshot {
    set: Arc<ServedSet>,
    reader: Arc<RemoteSetReader>,
}

impl Snapshot {
    /// The collection's configuration.
    pub fn meta(&self) -> &Meta {
        &self.set.meta
    }

    /// The points it holds.
    pub fn rows(&self) -> u64 {
        self.reader.set().rows()
    }

    /// Its segments.
    pub fn segments(&self) -> usize {
        self.reader.set().segments().len()
    }

    /// The metric of its vector.
    pub fn metric(&self) -> Metric {
        self.reader.set().metric()
    }

    /// Searches it (blocking: call off the async workers). A request the set cannot take is a
    /// 400 with the core's code; bytes the reader could not get or use, a 502 with the remote
    /// error's code (nothing wrong is ever answered).
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResponse, ApiError> {
        match self.reader.search(req) {
            Ok((res, _)) => Ok(res),
            Err(HostError::Segment { source, .. }) if !matches!(source, shoal_core::Error::Format(_)) => {
                Err(ApiError::core(source))
            }
            Err(e) => {
                let code = match &e {
                    HostError::Remote { error, .. } => error.code(),
                    HostError::Segment { source, .. } => source.code(),
                    _ => "remote",
                };
                Err(ApiError { status: StatusCode::BAD_GATEWAY, code, message: e.to_string() })
            }
        }
    }
}

impl ServedSet {
    /// Opens the set whose manifest is at `location`, read as `options` say (its memory cache
    /// shared by `lanes` searches that may read at once).
    pub fn open(location: &str, options: ReadOptions, lanes: usize) -> Result<ServedSet, HostError> {
        let reader = Self::open_reader(location, &options, lanes)?;
        let set = reader.set();
        let metric = match set.metric() {
            Metric::Cosine => "cosine",
            Metric::Dot => "dot",
            Metric::L2 => "l2",
        };
        let manifest = &reader.manifest().manifest;
        let meta = Meta {
            dim: set.dim(),
            metric: metric.into(),
            fields: manifest.fields.clone(),
            index: json!({}),
            on_disk: true,
            dynamic: false,
            payload: manifest.nested.then(|| "nested".to_string()),
            sparse_vectors: serde_json::Map::new(),
            vector_name: None,
            dense_vectors: serde_json::Map::new(),
        };
        let reader = RwLock::new(Arc::new(reader));
        let held = Mutex::new(None);
        Ok(ServedSet { location: location.to_string(), meta, options, lanes, reader, held })
    }

    fn open_reader(location: &str, options: &ReadOptions, lanes: usize) -> Result<RemoteSetReader, HostError> {
        let mut reader = RemoteSetReader::open(location, options)?;
        reader.set_lanes(lanes);
        Ok(reader)
    }

    /// The set served now.
    fn reader(&self) -> Arc<RemoteSetReader> {
        Arc::clone(&self.reader.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The collection as a request sees it: the set served now.
    pub fn snapshot(self: &Arc<Self>) -> Snapshot {
        Snapshot { set: Arc::clone(self), reader: self.reader() }
    }

    /// Reads the manifest at the set's location; when it is not the one served (another set
    /// was published there), opens the set it names and serves it from now on. A manifest that
    /// cannot be read, a set of another dimension or metric (refused from its manifest, never
    /// opened) or one that cannot be opened is an error, and the set served stays; while that
    /// manifest stays there it is [`Refresh::Held`]: for good when its vectors differ, else
    /// tried again at the next poll, then after 15 s, 30 s, … up to [`RETRY_HELD`].
    pub fn refresh(&self) -> Result<Refresh, HostError> {
        let manifest = RemoteSetReader::read_manifest(&self.location, false)?;
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if &manifest == self.reader().manifest() {
            *held = None;
            return Ok(Refresh::Same);
        }
        let mut wait = Duration::ZERO;
        if let Some(h) = &*held
            && h.manifest == manifest
        {
            match h.retry_at {
                Some(at) if Instant::now() >= at => wait = h.wait,
                _ => return Ok(Refresh::Held),
            }
        }
        let served = self.reader().set().metric();
        let vectors: Vec<(usize, Metric)> = manifest.manifest.vectors.iter().map(|v| (v.dim, v.metric)).collect();
        if vectors != [(self.meta.dim, served)] {
            let now = vectors.iter().map(|(d, m)| format!("{d}-d {m:?}")).collect::<Vec<_>>().join(", ");
            *held = Some(Held { manifest, retry_at: None, wait });
            return Err(HostError::Usage(format!(
                "{}: the set published there now has {now} vectors, the one served {}-d {served:?}: \
                 not served (a collection keeps its vectors' dimension and metric)",
                self.location, self.meta.dim,
            )));
        }
        let next = match Self::open_reader(&self.location, &self.options, self.lanes) {
            Ok(next) => next,
            Err(e) => {
                let retry = Instant::now() + wait;
                let wait = (wait * 2).clamp(Duration::from_secs(15), RETRY_HELD);
                *held = Some(Held { manifest, retry_at: Some(retry), wait });
                return Err(e);
            }
        };
        *held = None;
        let old = std::mem::replace(&mut *self.reader.write().unwrap_or_else(|e| e.into_inner()), Arc::new(next));
        // (The set replaced is freed here, outside the lock, once no search holds it.)
        drop(old);
        Ok(Refresh::Served)
    }
}

/// What a search route searches: a collection of this server, or one read from a published set.
#[derive(Clone)]
pub enum Target {
    /// A collection in the data folder.
    Local(Arc<Store>),
    /// A read-only collection read by ranges, as this request sees it.
    Remote(Snapshot),
}

impl Target {
    /// Its configuration.
    pub fn meta(&self) -> &Meta {
        match self {
            Target::Local(store) => &store.meta,
            Target::Remote(snap) => snap.meta(),
        }
    }
}

/// The refusal of anything but a search on a read-only collection.
pub fn read_only(name: &str) -> ApiError {
    ApiError {
        status: StatusCode::FORBIDDEN,
        code: "read_only",
        message: format!(
            "collection `{name}` is read-only: it is read from a published segment set (shoal serve --remote); \
             it answers searches and collection info"
        ),
    }
}

/// Parses `NAME=MANIFEST` (of `--remote`).
pub fn parse_spec(spec: &str) -> Result<(String, String), HostError> {
    let (name, location) = spec.split_once('=').ok_or_else(|| {
        HostError::Usage(format!(
            "--remote {spec:?}: expected NAME=MANIFEST (e.g. docs=s3://bucket/docs/manifest.json)"
        ))
    })?;
    if !super::valid_name(name) || name == "aliases" {
        return Err(HostError::Usage(format!(
            "--remote {spec:?}: collection name {name:?}: use 1-64 characters of A-Z a-z 0-9 _ - (not starting with -)"
        )));
    }
    if location.is_empty() {
        return Err(HostError::Usage(format!("--remote {spec:?}: no manifest location after `=`")));
    }
    Ok((name.to_string(), location.to_string()))
}

#[cfg(test)]
mod tests {
    use super::parse_spec;

    #[test]
    fn specs_name_a_collection_and_a_manifest() {
        assert_eq!(
            parse_spec("docs=s3://b/docs/manifest.json").unwrap(),
            ("docs".into(), "s3://b/docs/manifest.json".into())
        );
        assert_eq!(parse_spec("a=http://h/m.json?x=1").unwrap().1, "http://h/m.json?x=1");
        for bad in ["docs", "=s3://b/m.json", "docs=", "../x=m.json", "aliases=m.json", "-a=m.json"] {
            assert!(parse_spec(bad).is_err(), "{bad}");
        }
    }
}
