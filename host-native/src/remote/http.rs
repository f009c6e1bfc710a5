//! An object on an HTTP server read by byte ranges: one range per request, or — where the
//! server answers `Range: bytes=a-b,c-d` with `multipart/byteranges` (nginx, Apache, most
//! static servers; not S3) — a whole wave's ranges in one request.

use std::io::Read as _;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};

use super::{RETRIES, RangeSource, RemoteError, WHOLE_BODY_CAP};

/// The most ranges asked in one multipart request (its `Range` header stays a few KB).
const MAX_PARTS: usize = 64;

/// An object on an HTTP server, read with `Range` requests (a wave's requests on parallel
/// connections). The first response's ETag is pinned: every later request carries it as
/// `If-Match`, and a response with another ETag is [`RemoteError::Changed`].
pub struct HttpRanges {
    agent: ureq::Agent,
    url: String,
    /// The URL without its query (a presigned URL's signature stays out of messages).
    name: String,
    /// The object's ETag and length, as the first response gave them.
    pinned: Mutex<(Option<String>, Option<u64>)>,
    /// Connections used at once.
    concurrency: usize,
    /// The largest whole object taken when the server ignores `Range`.
    whole_body_cap: u64,
    /// The whole object, once a server that ignores `Range` has sent it.
    whole: Mutex<Option<std::sync::Arc<Vec<u8>>>>,
    /// Whether a wave's ranges go in one multipart request.
    multipart: bool,
    /// Requests sent.
    requests: AtomicU64,
}

impl std::fmt::Debug for HttpRanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpRanges").field("url", &self.name).finish()
    }
}

/// One part of an answer: the bytes `first..=last` of the object.
struct Part {
    first: u64,
    bytes: Vec<u8>,
}

/// The roots `https://` servers are checked against: the system's (`rustls-native-certs`:
/// the OS store, or the PEM file or folder `SSL_CERT_FILE` / `SSL_CERT_DIR` name), loaded
/// once. None found: every `https://` request fails its certificate check (`transport`).
fn system_roots() -> RootCerts {
    static ROOTS: OnceLock<RootCerts> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let certs: Vec<Certificate<'static>> =
                found.certs.iter().map(|c| Certificate::from_der(c.as_ref()).to_owned()).collect();
            RootCerts::Specific(Arc::new(certs))
        })
        .clone()
}

/// TLS for `https://`: rustls with the aws-lc-rs provider (the one `object_store`'s client
/// builds too) and the system's roots.
fn tls_config() -> TlsConfig {
    TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(system_roots())
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .build()
}

impl HttpRanges {
    /// Reads `url` (`http://` or `https://`), up to 16 requests at once.
    pub fn new(url: &str) -> HttpRanges {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .max_idle_connections_per_host(16)
            .tls_config(tls_config())
            .build()
            .into();
        HttpRanges {
            agent,
            url: url.to_string(),
            name: url.split('?').next().unwrap_or(url).to_string(),
            pinned: Mutex::new((None, None)),
            concurrency: 16,
            whole_body_cap: WHOLE_BODY_CAP,
            whole: Mutex::new(None),
            multipart: false,
            requests: AtomicU64::new(0),
        }
    }

    /// The largest whole object taken from a server that ignores `Range` (default
    /// [`WHOLE_BODY_CAP`]).
    pub fn with_whole_body_cap(mut self, cap: u64) -> HttpRanges {
        self.whole_body_cap = cap;
        self
    }

    /// Asks for a wave's ranges in one request (up to 64 per request), for servers that answer
    /// several ranges with `multipart/byteranges`. A server that does not is an error
    /// ([`RemoteError::BadResponse`] or [`RemoteError::RangeIgnored`]), never a wrong answer.
    pub fn with_multipart(mut self, on: bool) -> HttpRanges {
        self.multipart = on;
        self
    }

    /// Some ranges in one request, retried on 5xx and broken connections.
    fn read_some(&self, rs: &[Range<u64>]) -> Result<Vec<Vec<u8>>, RemoteError> {
        let mut tries = 0;
        loop {
            if let Some(whole) = self.whole.lock().unwrap_or_else(|e| e.into_inner()).clone() {
                return rs.iter().map(|r| slice_of(&whole, r)).collect();
            }
            match self.try_read(rs) {
                Err(RemoteError::Status(s)) if s >= 500 && tries < RETRIES => {}
                Err(RemoteError::Transport(_)) if tries < RETRIES => {}
                other => return other,
            }
            tries += 1;
            std::thread::sleep(Duration::from_millis(50 << tries));
        }
    }

    fn try_read(&self, rs: &[Range<u64>]) -> Result<Vec<Vec<u8>>, RemoteError> {
        let (etag, known_len) = self.pinned.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let spec: Vec<String> = rs.iter().map(|r| format!("{}-{}", r.start, r.end - 1)).collect();
        let mut req = self.agent.get(&self.url).header("Range", format!("bytes={}", spec.join(",")));
        // A weak ETag never matches `If-Match` (RFC 9110): it is compared, not sent.
        if let Some(tag) = etag.as_ref().filter(|t| !t.starts_with("W/")) {
            req = req.header("If-Match", tag);
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        let mut resp = req.call().map_err(|e| RemoteError::Transport(e.to_string()))?;
        let status = resp.status().as_u16();
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let tag = header("etag");
        let content_range = header("content-range");
        let content_type = header("content-type").unwrap_or_default();
        let length: Option<u64> = header("content-length").and_then(|v| v.parse().ok());
        match status {
            206 | 200 => {}
            412 => return Err(RemoteError::Changed("If-Match failed: 412".into())),
            s => return Err(RemoteError::Status(s)),
        }
        if let (Some(pinned), Some(tag)) = (&etag, &tag)
            && pinned != tag
        {
            return Err(RemoteError::Changed(format!("ETag {tag}, opened as {pinned}")));
        }
        let boundary = (status == 206)
            .then(|| {
                content_type.split(';').map(str::trim).find_map(|p| {
                    let (name, value) = p.split_once('=')?;
                    name.trim().eq_ignore_ascii_case("boundary").then_some(value)
                })
            })
            .flatten()
            .filter(|_| content_type.trim_start().to_ascii_lowercase().starts_with("multipart/byteranges"))
            .map(|b| b.trim_matches('"').to_string());
        if status == 200 && length.is_none_or(|n| n > self.whole_body_cap) {
            return Err(RemoteError::RangeIgnored { length });
        }
        // The most bytes an answer may hold: the span asked (a server may merge ranges into one
        // part) and, for multipart, the parts' headers.
        let span = rs.last().map_or(0, |l| l.end) - rs.first().map_or(0, |f| f.start);
        let cap = if status == 200 {
            self.whole_body_cap
        } else if boundary.is_some() {
            span + 256 * rs.len() as u64 + 256
        } else {
            span
        };
        let mut body = Vec::new();
        resp.body_mut()
            .as_reader()
            .take(cap + 1)
            .read_to_end(&mut body)
            .map_err(|e| RemoteError::Transport(format!("reading the body: {e}")))?;
        if length.is_some_and(|n| n != body.len() as u64) || body.len() as u64 > cap {
            return Err(RemoteError::BadResponse(format!("a body of {} bytes, Content-Length {length:?}", body.len())));
        }
        let (parts, total) = if status == 200 {
            let total = Some(body.len() as u64);
            (vec![Part { first: 0, bytes: body }], total)
        } else if let Some(boundary) = boundary {
            parse_multipart(&body, &boundary)?
        } else {
            let (first, last, total) = content_range
                .as_deref()
                .and_then(parse_content_range)
                .ok_or_else(|| RemoteError::BadResponse(format!("206 with Content-Range {content_range:?}")))?;
            if Some(body.len() as u64) != (last - first).checked_add(1) {
                return Err(RemoteError::BadResponse(format!("{} bytes for Content-Range {first}-{last}", body.len())));
            }
            (vec![Part { first, bytes: body }], total)
        };
        {
            let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
            // (Another answer may have pinned an ETag since this request was sent.)
            if let (Some(p), Some(t)) = (&pinned.0, &tag)
                && p != t
            {
                return Err(RemoteError::Changed(format!("ETag {t}, opened as {p}")));
            }
            if let (Some(known), Some(now)) = (known_len.or(pinned.1), total)
                && known != now
            {
                return Err(RemoteError::Changed(format!("{now} bytes, opened with {known}")));
            }
            if pinned.0.is_none() {
                pinned.0 = tag;
            }
            if pinned.1.is_none() {
                pinned.1 = total;
            }
        }
        if status == 200 {
            // Kept: the next ranges are cut from it, not downloaded whole again.
            let whole = std::sync::Arc::new(parts.into_iter().next().expect("one part").bytes);
            *self.whole.lock().unwrap_or_else(|e| e.into_inner()) = Some(whole.clone());
            return rs.iter().map(|r| slice_of(&whole, r)).collect();
        }
        // Each range asked, cut from the part that holds it (clipped where the object ends).
        rs.iter()
            .map(|r| {
                let end = r.end.min(total.unwrap_or(u64::MAX));
                parts
                    .iter()
                    .find(|p| p.first <= r.start && end <= p.first + p.bytes.len() as u64 && r.start < end)
                    .map(|p| p.bytes[(r.start - p.first) as usize..(end - p.first) as usize].to_vec())
                    .ok_or_else(|| {
                        let got: Vec<String> =
                            parts.iter().map(|p| format!("{} bytes at {}", p.bytes.len(), p.first)).collect();
                        RemoteError::BadResponse(format!(
                            "asked bytes {}-{}, got {}",
                            r.start,
                            r.end - 1,
                            got.join(",")
                        ))
                    })
            })
            .collect()
    }
}

impl RangeSource for HttpRanges {
    fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, RemoteError> {
        // The requests: each range alone, or up to MAX_PARTS ranges per multipart request.
        let per = if self.multipart { MAX_PARTS } else { 1 };
        let groups: Vec<&[Range<u64>]> = ranges.chunks(per).collect();
        if groups.len() <= 1 {
            return groups.first().map_or(Ok(Vec::new()), |g| self.read_some(g));
        }
        // Workers take requests in turn; each keeps its answers with their places.
        let next = AtomicUsize::new(0);
        type Answer = Result<Vec<Vec<u8>>, RemoteError>;
        let mut answers: Vec<(usize, Answer)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..self.concurrency.min(groups.len()))
                .map(|_| {
                    s.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(g) = groups.get(i) else { break mine };
                            mine.push((i, self.read_some(g)));
                        }
                    })
                })
                .collect();
            workers.into_iter().flat_map(|w| w.join().expect("a reader thread panicked")).collect()
        });
        answers.sort_by_key(|(i, _)| *i);
        let mut out = Vec::with_capacity(ranges.len());
        for (_, a) in answers {
            out.extend(a?);
        }
        Ok(out)
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

/// Range `r` of a whole object (shorter where the object ends).
fn slice_of(whole: &[u8], r: &Range<u64>) -> Result<Vec<u8>, RemoteError> {
    let end = r.end.min(whole.len() as u64);
    if r.start > end {
        return Err(RemoteError::BadResponse(format!("range at {} past the object's end", r.start)));
    }
    Ok(whole[r.start as usize..end as usize].to_vec())
}

/// `bytes FIRST-LAST/TOTAL` (TOTAL may be `*`).
fn parse_content_range(v: &str) -> Option<(u64, u64, Option<u64>)> {
    let rest = v.trim().strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let (first, last) = span.split_once('-')?;
    let total = if total == "*" { None } else { Some(total.parse().ok()?) };
    let (first, last): (u64, u64) = (first.parse().ok()?, last.parse().ok()?);
    (first <= last).then_some((first, last, total))
}

/// The parts of a `multipart/byteranges` body (RFC 9110, 14.6): each after a `--BOUNDARY`
/// line and its headers, exactly as long as its `Content-Range` says (so bytes inside a part
/// can never pass for a boundary). The object's length, when the parts agree on one.
fn parse_multipart(body: &[u8], boundary: &str) -> Result<(Vec<Part>, Option<u64>), RemoteError> {
    let bad = |what: &str| RemoteError::BadResponse(format!("multipart/byteranges: {what}"));
    if boundary.is_empty() {
        return Err(bad("an empty boundary"));
    }
    let delimiter = format!("--{boundary}");
    let find = |from: usize, needle: &[u8]| {
        body.get(from..).and_then(|b| b.windows(needle.len()).position(|w| w == needle)).map(|i| from + i)
    };
    let (mut parts, mut total) = (Vec::new(), None);
    let mut at = find(0, delimiter.as_bytes()).ok_or_else(|| bad("no boundary"))?;
    loop {
        at += delimiter.len();
        if body.get(at..at + 2) == Some(b"--") {
            break;
        }
        if body.get(at..at + 2) != Some(b"\r\n") {
            return Err(bad("a boundary not followed by a line end"));
        }
        let head_end = find(at, b"\r\n\r\n").ok_or_else(|| bad("a part without headers"))?;
        let head = std::str::from_utf8(&body[at..head_end]).map_err(|_| bad("headers not UTF-8"))?;
        let (first, last, t) = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.trim().eq_ignore_ascii_case("content-range").then(|| parse_content_range(value))?
            })
            .ok_or_else(|| bad("a part without a Content-Range"))?;
        if total.is_some_and(|n| t != Some(n)) {
            return Err(bad("parts of different objects"));
        }
        total = total.or(t);
        let start = head_end + 4;
        let end = (last - first)
            .checked_add(1)
            .and_then(|n| usize::try_from(n).ok())
            .and_then(|n| start.checked_add(n))
            .filter(|&e| e <= body.len());
        let end = end.ok_or_else(|| bad("a part shorter than its Content-Range"))?;
        parts.push(Part { first, bytes: body[start..end].to_vec() });
        at = find(end, delimiter.as_bytes()).ok_or_else(|| bad("no closing boundary"))?;
        if body[end..at].iter().any(|&b| b != b'\r' && b != b'\n') {
            return Err(bad("bytes between a part and the next boundary"));
        }
    }
    if parts.is_empty() {
        return Err(bad("no parts"));
    }
    Ok((parts, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_parse() {
        assert_eq!(parse_content_range("bytes 0-99/1000"), Some((0, 99, Some(1000))));
        assert_eq!(parse_content_range("bytes 5-5/*"), Some((5, 5, None)));
        assert_eq!(parse_content_range("bytes 9-3/10"), None);
        assert_eq!(parse_content_range("items 0-1/2"), None);
    }

    #[test]
    fn multipart_bodies_parse_by_their_lengths() {
        // A part's bytes may hold the boundary itself: they are taken by length.
        let body =
            b"\r\n--XYZ\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 0-6/100\r\n\r\n--XYZ\r\n\
\r\n--XYZ\r\ncontent-range: bytes 64-65/100\r\n\r\nab\r\n--XYZ--\r\n";
        let (parts, total) = parse_multipart(body, "XYZ").unwrap();
        assert_eq!(total, Some(100));
        assert_eq!(
            parts.iter().map(|p| (p.first, p.bytes.clone())).collect::<Vec<_>>(),
            [(0, b"--XYZ\r\n".to_vec()), (64, b"ab".to_vec())]
        );
        let short = b"--XYZ\r\nContent-Range: bytes 0-9/100\r\n\r\nabc\r\n--XYZ--";
        assert!(parse_multipart(short, "XYZ").is_err());
        let mixed = b"--XYZ\r\nContent-Range: bytes 0-0/100\r\n\r\na\r\n--XYZ\r\nContent-Range: bytes 1-1/99\r\n\r\nb\r\n--XYZ--";
        assert!(parse_multipart(mixed, "XYZ").is_err());
        assert!(parse_multipart(b"--XYZ--", "XYZ").is_err());
        assert!(parse_multipart(b"----\r\nContent-Range: bytes 0-0/1\r\n\r\na\r\n----", "").is_err());
        let glued = b"--XYZContent-Range: bytes 0-0/100\r\n\r\na\r\n--XYZ--";
        assert!(parse_multipart(glued, "XYZ").is_err());
        let huge = b"--XYZ\r\nContent-Range: bytes 0-18446744073709551615/*\r\n\r\na\r\n--XYZ--";
        assert!(parse_multipart(huge, "XYZ").is_err());
    }
}
