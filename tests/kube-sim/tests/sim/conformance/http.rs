//! A minimal HTTP/1.1 client for replaying recorded requests exactly as written: the method,
//! path and headers of the transcript, nothing added but `Host`, `Content-Length` and
//! `Connection: close`. Watch answers are read event by event, so a replay can stop where
//! the recording stopped.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout_at};

/// One answer as the transcripts record it.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub warnings: Vec<String>,
    /// The body as JSON, the list of parsed event lines of a watch, or a JSON string for a
    /// body that is not JSON.
    pub body: Value,
}

/// A request as recorded.
#[derive(Debug)]
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub headers: Vec<(&'a str, &'a str)>,
    pub body: Option<String>,
}

/// Sends `request`; for a watch answered with 200, reads at most `events` events (or until
/// the stream ends, or `patience` passes).
pub async fn send(
    address: &str,
    request: &Request<'_>,
    watch_events: Option<usize>,
    patience: Duration,
) -> std::io::Result<Answer> {
    let deadline = Instant::now() + patience;
    let mut stream = TcpStream::connect(address).await?;
    let body = request.body.as_deref().unwrap_or_default();
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n",
        request.method, request.path
    );
    for (name, value) in &request.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if request.body.is_some() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;

    let mut raw = Vec::new();
    let header_end = loop {
        if let Some(end) = find(&raw, b"\r\n\r\n") {
            break end;
        }
        read_more(&mut stream, &mut raw, deadline)
            .await?
            .then_some(())
            .ok_or_else(closed)?;
    };
    let head = String::from_utf8_lossy(&raw[..header_end]).into_owned();
    let mut rest = raw[header_end + 4..].to_vec();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(closed)?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let content_type = header("content-type").unwrap_or_default();
    let warnings = headers
        .iter()
        .filter(|(n, _)| n == "warning")
        .map(|(_, v)| v.clone())
        .collect();
    let chunked = header("transfer-encoding").is_some_and(|v| v.contains("chunked"));
    let is_watch = watch_events.is_some() && status == 200;
    let mut decoded = Vec::new();
    let mut events = Vec::new();
    loop {
        let finished = if chunked {
            dechunk(&mut rest, &mut decoded)
        } else {
            decoded.append(&mut rest);
            false
        };
        if is_watch {
            while let Some(end) = decoded.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = decoded.drain(..=end).collect();
                if let Ok(event) = serde_json::from_slice::<Value>(&line) {
                    events.push(event);
                }
            }
            if watch_events.is_some_and(|n| events.len() >= n) {
                break;
            }
        }
        if finished {
            break;
        }
        match read_more(&mut stream, &mut rest, deadline).await {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut && is_watch => break,
            Err(e) => return Err(e),
        }
    }
    let body = if is_watch {
        Value::Array(events)
    } else if decoded.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&decoded)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&decoded).into_owned()))
    };
    Ok(Answer {
        status,
        content_type,
        warnings,
        body,
    })
}

/// Reads what is available; false at the end of the stream.
async fn read_more(
    stream: &mut TcpStream,
    into: &mut Vec<u8>,
    deadline: Instant,
) -> std::io::Result<bool> {
    let mut buf = [0u8; 16 * 1024];
    let n = timeout_at(deadline, stream.read(&mut buf))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time"))??;
    into.extend_from_slice(&buf[..n]);
    Ok(n > 0)
}

/// Moves the complete chunks of `raw` into `out`; true once the final chunk was read.
fn dechunk(raw: &mut Vec<u8>, out: &mut Vec<u8>) -> bool {
    loop {
        let Some(line_end) = find(raw, b"\r\n") else {
            return false;
        };
        let size_text = String::from_utf8_lossy(&raw[..line_end]).into_owned();
        let Ok(size) = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
        else {
            return false;
        };
        if size == 0 {
            return true;
        }
        let start = line_end + 2;
        if raw.len() < start + size + 2 {
            return false;
        }
        out.extend_from_slice(&raw[start..start + size]);
        raw.drain(..start + size + 2);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn closed() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::UnexpectedEof,
        "connection closed without a response",
    )
}
