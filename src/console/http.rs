//! The console's HTTP/1.1: a listener that the console thread looks at between samples,
//! and one request at a time, read and answered with a bound on everything a client
//! controls, so that no client can hold the thread or the runtime's shutdown, which
//! waits for the thread; the thread goes on sampling the workers while it waits on a
//! client ([`Handler::between`]):
//!
//! - a connection that has sent nothing waits aside ([`Waiting`]), at most
//!   [`CONSOLE_REQUEST_TIMEOUT`], while the others are served as they speak, so a
//!   silent one (a browser's speculative connection) holds up no one;
//! - the request's head: at most [`CONSOLE_HEAD_LIMIT`] bytes (431 past it), read within
//!   [`CONSOLE_REQUEST_TIMEOUT`] (the connection is closed unanswered past it);
//! - its body, which no route reads: never read as such, only drained, after the
//!   answer, within [`CONSOLE_LINGER`] and [`CONSOLE_LINGER_BYTES`], so that the close
//!   does not reset a connection whose client is still sending;
//! - the answer: written within [`CONSOLE_REQUEST_TIMEOUT`], then the connection closes
//!   (`Connection: close`: one request a connection);
//! - every read and write waits at most [`CONSOLE_IO_SLICE`] at a time, and gives up at
//!   once when the console stops;
//! - on a console that listens on a loopback address, a request whose `Host` names
//!   another host is refused (403): a web page whose name an attacker points at
//!   `127.0.0.1` (DNS rebinding) must not read the console through the browser;
//! - a failed `accept` (out of file descriptors, say) is tried again at the next look,
//!   never the end of the console.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::tuning::{
    CONSOLE_HEAD_LIMIT, CONSOLE_IO_SLICE, CONSOLE_LINGER, CONSOLE_LINGER_BYTES,
    CONSOLE_REQUEST_TIMEOUT, CONSOLE_WAITING_CONNECTIONS,
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

/// The connections accepted that have sent nothing yet, each with the instant it is
/// dropped at if it still has not; non-blocking.
#[derive(Default)]
pub(super) struct Waiting {
    streams: Vec<(TcpStream, Instant)>,
}

impl Waiting {
    /// Takes what the listener has waiting (while fewer than
    /// [`CONSOLE_WAITING_CONNECTIONS`] wait here: the rest wait in its backlog), drops
    /// the connections whose time is up or that failed, and returns one that has sent
    /// something, or closed (serving it finds that at once), if any has.
    pub(super) fn next(&mut self, listener: &Listener) -> Option<TcpStream> {
        while self.streams.len() < CONSOLE_WAITING_CONNECTIONS {
            let Some(stream) = listener.accept() else {
                break;
            };
            // Accepted sockets do not take the listener's non-blocking mode everywhere.
            if stream.set_nonblocking(true).is_ok() {
                self.streams
                    .push((stream, Instant::now() + CONSOLE_REQUEST_TIMEOUT));
            }
        }
        let now = Instant::now();
        let mut byte = [0u8; 1];
        let mut i = 0;
        while i < self.streams.len() {
            let (stream, until) = &self.streams[i];
            match stream.peek(&mut byte) {
                Ok(_) => return Some(self.streams.swap_remove(i).0),
                Err(err) if waits(&err) && now < *until => i += 1,
                // Silent too long, or reset: closed unanswered.
                Err(_) => drop(self.streams.swap_remove(i)),
            }
        }
        None
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
    /// The `Host` header's value, if the request has one.
    pub(super) host: Option<String>,
}

/// What serves the console's connections: answers a request, and does the thread's
/// other work while a connection waits on its client.
pub(super) trait Handler {
    /// The answer to `request`.
    fn route(&mut self, request: &Request) -> Response;
    /// Called before each read and write of a connection, each of which waits at most
    /// [`CONSOLE_IO_SLICE`].
    fn between(&mut self);
}

/// A status and its reason phrase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Status(pub(super) u16, pub(super) &'static str);

pub(super) const OK: Status = Status(200, "OK");
pub(super) const BAD_REQUEST: Status = Status(400, "Bad Request");
pub(super) const FORBIDDEN: Status = Status(403, "Forbidden");
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

/// Serves one connection: reads its request, has `handler` answer it, writes the answer
/// and closes. Gives up, unanswered, on a client that does not send its request in time
/// or goes away, and as soon as `stop` is set. `loopback`: the console listens on a
/// loopback address, and answers only requests for a loopback host.
pub(super) fn serve_connection(
    mut stream: TcpStream,
    stop: &AtomicBool,
    loopback: bool,
    handler: &mut impl Handler,
) {
    let deadline = Instant::now() + CONSOLE_REQUEST_TIMEOUT;
    // Blocking, with a timeout a slice long: the accepted socket may have inherited the
    // listener's non-blocking mode.
    // No delay: the answer's head and body go in two writes, which must not wait for
    // the client's delayed acknowledgement of the first.
    if stream.set_nonblocking(false).is_err()
        || stream.set_read_timeout(Some(CONSOLE_IO_SLICE)).is_err()
        || stream.set_write_timeout(Some(CONSOLE_IO_SLICE)).is_err()
        || stream.set_nodelay(true).is_err()
    {
        return;
    }
    let (response, head_only) = match read_head(&mut stream, stop, deadline, handler) {
        Ok(head) => match parse(&head) {
            Some(request) if loopback && !names_loopback(request.host.as_deref()) => (
                plain(
                    FORBIDDEN,
                    "csp console: it answers for a loopback host only (open it as \
                     http://127.0.0.1:PORT/ or http://localhost:PORT/)\n",
                ),
                false,
            ),
            Some(request) => (handler.route(&request), request.method == Method::Head),
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
    if write_response(&mut stream, &response, head_only, stop, deadline, handler).is_ok() {
        linger(&mut stream, stop, handler);
    }
}

/// Whether a request's `Host` names this machine's loopback interface (`localhost`, a
/// name under it, or a loopback address; with or without a port). A request without
/// one (HTTP/1.0) is let through: a browser always sends it.
fn names_loopback(host: Option<&str>) -> bool {
    let Some(host) = host else {
        return true;
    };
    // `[v6]:port`, `[v6]`, `name:port`, `v4:port`, `name`.
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
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
    handler: &mut impl Handler,
) -> Result<Vec<u8>, Refusal> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    // Where the blank line may begin in what came since the last look: the bytes
    // before were looked at already (a head trickled byte by byte costs no rescans).
    let mut from = 0;
    loop {
        if let Some(end) = head_end(&head[from..]) {
            head.truncate(from + end);
            return Ok(head);
        }
        // The blank line is at most 4 bytes, of which 3 may be in what came before.
        from = head.len().saturating_sub(3);
        if head.len() >= CONSOLE_HEAD_LIMIT {
            return Err(Refusal::TooLarge);
        }
        // Relaxed: a hint to give up early; the thread's join orders the rest.
        if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
            return Err(Refusal::Gone);
        }
        handler.between();
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

/// The request line of `head`, `METHOD TARGET HTTP/1.x`, and its `Host` header. `None`
/// if the line is not one.
fn parse(head: &[u8]) -> Option<Request> {
    let mut lines = head.split(|&b| b == b'\n');
    let line = lines.next()?;
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
    // path's `/` is the query's), and the host's part ends at the path, the query or
    // the fragment, whichever comes first.
    let target = match target.split_once("://") {
        Some((_, rest)) if !target.starts_with('/') => {
            let after_host = &rest[rest.find(['/', '?', '#']).unwrap_or(rest.len())..];
            if after_host.starts_with('/') {
                after_host
            } else {
                "/"
            }
        }
        _ if target.starts_with('/') => target,
        _ => return None,
    };
    let path = target.split(['?', '#']).next().unwrap_or("/").to_owned();
    let host = lines.find_map(|line| {
        let line = std::str::from_utf8(line).ok()?;
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("host")
            .then(|| value.trim().to_owned())
    });
    Some(Request { method, path, host })
}

/// Writes `response` (its head alone for a `HEAD`) within `deadline`.
fn write_response(
    stream: &mut TcpStream,
    response: &Response,
    head_only: bool,
    stop: &AtomicBool,
    deadline: Instant,
    handler: &mut impl Handler,
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
    let body = if head_only { "" } else { &response.body };
    for part in [bytes.as_bytes(), body.as_bytes()] {
        let mut written = 0;
        while written < part.len() {
            // Relaxed: as in `read_head`.
            if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
                return Err(io::ErrorKind::TimedOut.into());
            }
            handler.between();
            match stream.write(&part[written..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => written += n,
                Err(err) if waits(&err) => {}
                Err(err) => return Err(err),
            }
        }
    }
    stream.flush()
}

/// After the answer: says the connection is done writing, and reads what the client
/// still sends (a body no route reads) for a moment, so that the close does not reset
/// the connection before the client has read the answer. Bounded in time and bytes.
fn linger(stream: &mut TcpStream, stop: &AtomicBool, handler: &mut impl Handler) {
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
        handler.between();
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
                host: Some("x".to_owned()),
            })
        };
        for (line, method, path) in [
            ("GET / HTTP/1.1", Method::Get, "/"),
            ("HEAD /metrics?x=1 HTTP/1.0", Method::Head, "/metrics"),
            (
                "GET http://127.0.0.1:9/api/processes HTTP/1.1",
                Method::Get,
                "/api/processes",
            ),
            ("GET http://host HTTP/1.1", Method::Get, "/"),
            (
                "GET /metrics?from=http://grafana/x HTTP/1.1",
                Method::Get,
                "/metrics",
            ),
            ("GET http://host?x=/metrics HTTP/1.1", Method::Get, "/"),
            ("GET http://host#/x HTTP/1.1", Method::Get, "/"),
            ("POST / HTTP/1.1", Method::Other, "/"),
        ] {
            assert_eq!(request(line), at(method, path), "{line}");
        }
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
    fn the_host_header_is_found_in_any_case_and_may_be_missing() {
        let host = |head: &str| parse(head.as_bytes()).and_then(|r| r.host);
        assert_eq!(
            host("GET / HTTP/1.1\r\nAccept: */*\r\nhOsT:  127.0.0.1:9 \r\n"),
            Some("127.0.0.1:9".to_owned())
        );
        assert_eq!(host("GET / HTTP/1.0\r\nAccept: */*\r\n"), None);
    }

    #[test]
    fn only_loopback_hosts_are_answered_on_a_loopback_console() {
        for host in [
            "localhost",
            "LocalHost:8080",
            "localhost.",
            "app.localhost:1",
            "127.0.0.1",
            "127.0.0.1:9000",
            "127.8.9.10:1",
            "[::1]",
            "[::1]:9000",
        ] {
            assert!(names_loopback(Some(host)), "{host}");
        }
        assert!(names_loopback(None), "no Host: HTTP/1.0");
        for host in [
            "attacker.example",
            "attacker.example:9000",
            "localhost.attacker.example",
            "10.0.0.1:9000",
            "[::2]:9000",
            "",
        ] {
            assert!(!names_loopback(Some(host)), "{host}");
        }
    }

    #[test]
    fn a_head_sent_a_byte_at_a_time_is_read_whole_and_the_thread_does_its_work_meanwhile() {
        struct Counting(usize);
        impl Handler for Counting {
            fn route(&mut self, _: &Request) -> Response {
                unreachable!("read_head routes nothing")
            }
            fn between(&mut self) {
                self.0 += 1;
            }
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            let mut stream = TcpStream::connect(addr).unwrap();
            stream.set_nodelay(true).unwrap();
            // The blank line comes across four reads, the last byte after a pause.
            for &byte in b"GET / HTTP/1.1\r\nHost: x\r\n\r\nbody" {
                stream.write_all(&[byte]).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            stream
        });
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_read_timeout(Some(CONSOLE_IO_SLICE)).unwrap();
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        let mut handler = Counting(0);
        let head = read_head(&mut stream, &AtomicBool::new(false), deadline, &mut handler);
        let Ok(head) = head else {
            panic!("no head read");
        };
        assert_eq!(head, b"GET / HTTP/1.1\r\nHost: x");
        assert!(handler.0 > 0, "the thread's work waited for the client");
        drop(client.join().unwrap());
    }

    #[test]
    fn a_head_ends_at_its_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nbody"), Some(23));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\nbody"), Some(14));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
    }
}
