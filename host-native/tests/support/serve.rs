//! `shoal serve` as the tests run it: the real binary on a free port, and a JSON client.
#![allow(dead_code)] // each test file uses part of it

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// A running `shoal serve`, killed on drop.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    /// Starts `shoal serve` over `data` with the arguments `extra`.
    pub fn start(data: &Path, extra: &[&str]) -> Server {
        Server::start_with_env(data, extra, &[]).unwrap_or_else(|log| panic!("server did not start:\n{log}"))
    }

    /// [`start`](Self::start) with environment variables; its log if it did not start.
    pub fn start_with_env(data: &Path, extra: &[&str], env: &[(&'static str, String)]) -> Result<Server, String> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(["serve", "--data"])
            .arg(data)
            .args(["--addr", "127.0.0.1:0", "--threads", "2"])
            .args(extra)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stderr(Stdio::piped())
            .spawn()
            .expect("start shoal serve");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let log = Arc::new(Mutex::new(String::new()));
        let mut addr = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            log.lock().unwrap().push_str(&format!("{line}\n"));
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && v["event"] == "listening"
            {
                addr = Some(v["addr"].as_str().unwrap().to_string());
                break;
            }
        }
        let Some(addr) = addr else {
            let _ = child.wait();
            return Err(log.lock().unwrap().clone());
        };
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        Ok(Server { child, base: format!("http://{addr}"), log })
    }

    /// Kills it (SIGKILL) and waits for it.
    pub fn kill9(mut self) {
        self.child.kill().unwrap(); // SIGKILL
        self.child.wait().unwrap();
    }

    /// What it wrote on standard error so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP client that returns error statuses as answers.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// Sends a request; returns the status and the JSON body (or the text as a JSON string).
pub fn call(
    s: &Server,
    method: &str,
    path: &str,
    body: Option<(&str, Vec<u8>)>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let url = format!("{}{path}", s.base);
    let a = agent();
    let mut resp = match (method, body) {
        ("GET", _) => {
            let mut r = a.get(&url);
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            r.call()
        }
        ("DELETE", _) => a.delete(&url).call(),
        (m, body) => {
            let mut r = if m == "PUT" { a.put(&url) } else { a.post(&url) };
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            let (ct, bytes) = body.unwrap_or(("application/json", b"{}".to_vec()));
            r.header("content-type", ct).send(&bytes[..])
        }
    }
    .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = resp.status().as_u16();
    let text = resp.body_mut().with_config().limit(1 << 30).read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// A JSON request; the status and the JSON body.
pub fn json_call(s: &Server, method: &str, path: &str, body: Value) -> (u16, Value) {
    call(s, method, path, Some(("application/json", body.to_string().into_bytes())), &[])
}

/// A successful JSON call's body.
pub fn okj(s: &Server, method: &str, path: &str, body: Value) -> Value {
    let (status, v) = json_call(s, method, path, body);
    assert_eq!(status, 200, "{method} {path}: {v}");
    v
}
