//! `/metrics`: request counters, latency histograms and process/collection gauges in the
//! Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use super::store::Gauges;

/// Upper bounds (seconds) of the latency histogram's buckets.
const BUCKETS: [f64; 14] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// A per-collection gauge: name, help, value.
type Gauge = (&'static str, &'static str, fn(&Gauges) -> u64);

/// Request counters and latency histograms by route.
#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    latency: Mutex<BTreeMap<String, Histogram>>,
}

impl Metrics {
    /// Counts one request.
    pub fn record(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        *self
            .requests
            .lock()
            .expect("lock poisoned")
            .entry((method.to_string(), route.to_string(), status))
            .or_default() += 1;
        let secs = elapsed.as_secs_f64();
        let mut latency = self.latency.lock().expect("lock poisoned");
        let h = latency.entry(route.to_string()).or_default();
        if let Some(i) = BUCKETS.iter().position(|&b| secs <= b) {
            h.counts[i] += 1;
        }
        h.count += 1;
        h.sum += secs;
    }

    /// The text of `/metrics`.
    pub fn render(&self, collections: &[(String, Gauges)]) -> String {
        let mut out = String::new();
        out.push_str("# HELP shoal_requests_total HTTP requests by method, route and status.\n");
        out.push_str("# TYPE shoal_requests_total counter\n");
        for ((method, route, status), n) in self.requests.lock().expect("lock poisoned").iter() {
            let _ =
                writeln!(out, "shoal_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}");
        }
        out.push_str("# HELP shoal_request_duration_seconds HTTP request latency by route.\n");
        out.push_str("# TYPE shoal_request_duration_seconds histogram\n");
        for (route, h) in self.latency.lock().expect("lock poisoned").iter() {
            let mut cumulative = 0;
            for (b, c) in BUCKETS.iter().zip(h.counts) {
                cumulative += c;
                let _ =
                    writeln!(out, "shoal_request_duration_seconds_bucket{{route=\"{route}\",le=\"{b}\"}} {cumulative}");
            }
            let _ = writeln!(out, "shoal_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(out, "shoal_request_duration_seconds_sum{{route=\"{route}\"}} {}", h.sum);
            let _ = writeln!(out, "shoal_request_duration_seconds_count{{route=\"{route}\"}} {}", h.count);
        }
        let gauges: [Gauge; 5] = [
            ("shoal_points", "Live points per collection.", |g| g.points),
            ("shoal_unsealed_points", "Points logged since the collection's last seal began.", |g| g.unsealed),
            ("shoal_segments", "Sealed segment files per collection.", |g| g.segments),
            ("shoal_background_jobs", "Background seals and merges running per collection.", |g| g.background),
            ("shoal_bytes_mapped", "Bytes of segment files memory-mapped per collection.", |g| {
                if g.mapped { g.segment_bytes } else { 0 }
            }),
        ];
        for (name, help, f) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for (c, g) in collections {
                let _ = writeln!(out, "{name}{{collection=\"{c}\"}} {}", f(g));
            }
        }
        if let Some(rss) = rss_bytes() {
            let _ = writeln!(
                out,
                "# HELP process_resident_memory_bytes Resident set size.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {rss}"
            );
        }
        out
    }
}

/// The process's resident set size (Linux), in bytes.
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}
