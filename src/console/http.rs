//! The console's HTTP/1.1: a listener that the console thread looks at between samples,
//! and one request at a time, read and answered with a bound on everything a client
//! controls, so that no client can hold the thread (it also samples the workers) or the
//! runtime's shutdown, which waits for the thread:
//!
//! - the request's head: at most [`CONSOLE_HEAD_LIMIT`] bytes (431 past it), read within
//!   [`CONSOLE_REQUEST_TIMEOUT`] (the connection is closed unanswered past it);
//! - its body, which no route reads: never read as such, only drained, after the
//!   answer, within [`CONSOLE_LINGER`] and [`CONSOLE_LINGER_BYTES`], so that the close
//!   does not reset a connection whose client is still sending;
//! - the answer: written within [`CONSOLE_REQUEST_TIMEOUT`], then the connection closes
//!   (`Connection: close`: one request a connection);
//! - every read and write waits at most [`CONSOLE_IO_SLICE`] at a time, and gives up at
//!   once when the console stops;
//! - a failed `accept` (out of file descriptors, say) is tried again at the next look,
//!   never the end of the console.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::tuning::{
    CONSOLE_HEAD_LIMIT, CONSOLE_IO_SLICE, CONSOLE_LINGER, CONSOLE_LINGER_BYTES,
    CONSOLE_REQUEST_TIMEOUT,
};

/// The console's listening socket, non-blocking: the thread looks at it between
/// samples.
pub(super) struct Listener(TcpListener);

impl Listener {
    pub(super) fn bind(addr: &str) -> io::Result<Listener> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        Ok(Listener(listener))
    }

    pub(super) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }

    /// The next connection waiting, if any. A failed accept is taken as none: the
    /// next look tries again (a connection aborted before it was taken, or a process
    /// out of file descriptors, which frees some in time).
    pub(super) fn accept(&self) -> Option<TcpStream> {
        self.0.accept().ok().map(|(stream, _)| stream)
    }
}

/// A request's method, as far as the routes care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Method {
    Get,
    Head,
    Other,
}

/// What a route needs of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Request {
    pub(super) method: Method,
    /// The target's path, without its query (`/metrics`), from the origin form or the
    /// absolute form (`http://host:port/metrics`).
    pub(super) path: String,
}

/// A status and its reason phrase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Status(pub(super) u16, pub(super) &'static str);

pub(super) const OK: Status = Status(200, "OK");
pub(super) const BAD_REQUEST: Status = Status(400, "Bad Request");
pub(super) const NOT_FOUND: Status = Status(404, "Not Found");
pub(super) const METHOD_NOT_ALLOWED: Status = Status(405, "Method Not Allowed");
pub(super) const HEADERS_TOO_LARGE: Status = Status(431, "Request Header Fields Too Large");
pub(super) const UNAVAILABLE: Status = Status(503, "Service Unavailable");

/// An answer: its status, content type, extra headers and body.
pub(super) struct Response {
    pub(super) status: Status,
    pub(super) content_type: &'static str,
    pub(super) headers: Vec<(&'static str, &'static str)>,
    pub(super) body: String,
}

impl Response {
    pub(super) fn new(status: Status, content_type: &'static str, body: String) -> Response {
        Response {
            status,
            content_type,
            headers: Vec::new(),
            body,
        }
    }
}

/// Serves one connection: reads its request, has `route` answer it, writes the answer
/// and closes. Gives up, unanswered, on a client that does not send its request in time
/// or goes away, and as soon as `stop` is set.
pub(super) fn serve_connection(
    mut stream: TcpStream,
    stop: &AtomicBool,
    route: impl FnOnce(&Request) -> Response,
) {
    let deadline = Instant::now() + CONSOLE_REQUEST_TIMEOUT;
    // Blocking, with a timeout a slice long: the accepted socket may have inherited the
    // listener's non-blocking mode.
    if stream.set_nonblocking(false).is_err()
        || stream.set_read_timeout(Some(CONSOLE_IO_SLICE)).is_err()
        || stream.set_write_timeout(Some(CONSOLE_IO_SLICE)).is_err()
    {
        return;
    }
    let (response, head_only) = match read_head(&mut stream, stop, deadline) {
        Ok(head) => match parse(&head) {
            Some(request) => (route(&request), request.method == Method::Head),
            None => (
                plain(BAD_REQUEST, "csp console: a malformed request\n"),
                false,
            ),
        },
        Err(Refusal::TooLarge) => (
            plain(
                HEADERS_TOO_LARGE,
                "csp console: the request's head is too long\n",
            ),
            false,
        ),
        Err(Refusal::Gone) => return,
    };
    let deadline = Instant::now() + CONSOLE_REQUEST_TIMEOUT;
    if write_response(&mut stream, &response, head_only, stop, deadline).is_ok() {
        linger(&mut stream, stop);
    }
}

/// A plain-text answer.
pub(super) fn plain(status: Status, body: &str) -> Response {
    Response::new(status, "text/plain; charset=utf-8", body.to_owned())
}

/// Why a request goes unrouted.
enum Refusal {
    /// Its head is longer than [`CONSOLE_HEAD_LIMIT`]: answered with 431.
    TooLarge,
    /// The client went away, was too slow, or the console stops: closed unanswered.
    Gone,
}

/// Reads up to the blank line that ends a request's head; returns the head.
fn read_head(
    stream: &mut TcpStream,
    stop: &AtomicBool,
    deadline: Instant,
) -> Result<Vec<u8>, Refusal> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        if let Some(end) = head_end(&head) {
            head.truncate(end);
            return Ok(head);
        }
        if head.len() >= CONSOLE_HEAD_LIMIT {
            return Err(Refusal::TooLarge);
        }
        // Relaxed: a hint to give up early; the thread's join orders the rest.
        if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
            return Err(Refusal::Gone);
        }
        match stream.read(&mut buf) {
            Ok(0) => return Err(Refusal::Gone),
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(err) if waits(&err) => {}
            Err(_) => return Err(Refusal::Gone),
        }
    }
}

/// Where the head in `bytes` ends (at its blank line, `\r\n\r\n`, or `\n\n` from a
/// lenient client), if it is all there.
fn head_end(bytes: &[u8]) -> Option<usize> {
    let crlf = bytes.windows(4).position(|w| w == b"\r\n\r\n");
    let lf = bytes.windows(2).position(|w| w == b"\n\n");
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The request line of `head`: `METHOD TARGET HTTP/1.x`. `None` if it is not one.
fn parse(head: &[u8]) -> Option<Request> {
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    let method = match method {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "" => return None,
        _ => Method::Other,
    };
    // The absolute form names the scheme and host before the path (a `://` after the
    // path's `/` is the query's).
    let target = match target.split_once("://") {
        Some((_, rest)) if !target.starts_with('/') => rest.find('/').map_or("/", |at| &rest[at..]),
        _ if target.starts_with('/') => target,
        _ => return None,
    };
    let path = target.split(['?', '#']).next().unwrap_or("/").to_owned();
    Some(Request { method, path })
}

/// Writes `response` (its head alone for a `HEAD`) within `deadline`.
fn write_response(
    stream: &mut TcpStream,
    response: &Response,
    head_only: bool,
    stop: &AtomicBool,
    deadline: Instant,
) -> io::Result<()> {
    let Status(code, reason) = response.status;
    let mut bytes = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        response.content_type,
        response.body.len()
    );
    for (name, value) in &response.headers {
        bytes.push_str(&format!("{name}: {value}\r\n"));
    }
    bytes.push_str("\r\n");
    let mut bytes = bytes.into_bytes();
    if !head_only {
        bytes.extend_from_slice(response.body.as_bytes());
    }
    let mut written = 0;
    while written < bytes.len() {
        // Relaxed: as in `read_head`.
        if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
            return Err(io::ErrorKind::TimedOut.into());
        }
        match stream.write(&bytes[written..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(err) if waits(&err) => {}
            Err(err) => return Err(err),
        }
    }
    stream.flush()
}

/// After the answer: says the connection is done writing, and reads what the client
/// still sends (a body no route reads) for a moment, so that the close does not reset
/// the connection before the client has read the answer. Bounded in time and bytes.
fn linger(stream: &mut TcpStream, stop: &AtomicBool) {
    if stream.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let deadline = Instant::now() + CONSOLE_LINGER;
    let mut drained = 0;
    let mut buf = [0u8; 4096];
    // Relaxed: as in `read_head`.
    while drained < CONSOLE_LINGER_BYTES
        && !stop.load(Ordering::Relaxed)
        && Instant::now() < deadline
    {
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => drained += n,
            Err(err) if waits(&err) => {}
            Err(_) => return,
        }
    }
}

/// True for the errors of a read or write that timed out (or was interrupted): try
/// again, if there is time.
fn waits(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_line_gives_the_method_and_the_path() {
        let request = |line: &str| parse(format!("{line}\r\nHost: x\r\n").as_bytes());
        let at = |method, path: &str| {
            Some(Request {
                method,
                path: path.to_owned(),
            })
        };
        assert_eq!(request("GET / HTTP/1.1"), at(Method::Get, "/"));
        assert_eq!(
            request("HEAD /metrics?x=1 HTTP/1.0"),
            at(Method::Head, "/metrics")
        );
        assert_eq!(
            request("GET http://127.0.0.1:9/api/processes HTTP/1.1"),
            at(Method::Get, "/api/processes")
        );
        assert_eq!(request("GET http://host HTTP/1.1"), at(Method::Get, "/"));
        assert_eq!(
            request("GET /metrics?from=http://grafana/x HTTP/1.1"),
            at(Method::Get, "/metrics")
        );
        assert_eq!(request("POST / HTTP/1.1"), at(Method::Other, "/"));
        for malformed in [
            "",
            "GET",
            "GET /",
            "GET / HTTP/2",
            "GET x HTTP/1.1",
            " / HTTP/1.1",
        ] {
            assert_eq!(request(malformed), None, "{malformed:?}");
        }
    }

    #[test]
    fn a_head_ends_at_its_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nbody"), Some(23));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\nbody"), Some(14));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
    }
}
