//! The HTTP/1.1 part of `http_hello` (csp) and `http_hello_tokio` (tokio): parsing
//! requests with `httparse` and writing the fixed response, on byte buffers, so that the
//! two servers differ only in how they run connections and do I/O. The hyper examples
//! (`hyper_hello`, `hyper_hello_tokio`) take their configuration and body from here.
//!
//! Every request gets `200 OK` with [`BODY`], whatever its method and path. Keep-alive
//! follows the protocol version (HTTP/1.1 keeps the connection unless it says
//! `Connection: close`, HTTP/1.0 closes it unless it says `Connection: keep-alive`);
//! pipelined requests are answered in order. A request that does not parse, is larger
//! than [`MAX_REQUEST`], or has a body this server cannot skip (chunked) gets
//! `400 Bad Request` and the connection is closed.

/// The body of every response.
pub const BODY: &str = "Hello, world!\n";

/// The largest request head (and body) accepted, in bytes.
pub const MAX_REQUEST: usize = 16 * 1024;

/// Headers parsed per request, at most.
const MAX_HEADERS: usize = 32;

/// How many bytes one read asks for.
pub const READ_CHUNK: usize = 4096;

/// How long an accept loop pauses after a failed accept (out of file descriptors, say)
/// before it accepts again.
pub const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(10);

/// How long a connection's reads may wait, as the two servers apply them: the idle time
/// of a connection between requests, and the time a request that has begun has to
/// arrive whole, so that a client sending its request a byte at a time (slowloris) is
/// cut like an idle one.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// No request under way: the client has this long to start one.
    pub idle: std::time::Duration,
    /// A request has begun: it has this long, from its first byte, to arrive whole.
    pub request: std::time::Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            idle: std::time::Duration::from_secs(30),
            request: std::time::Duration::from_secs(10),
        }
    }
}

impl Limits {
    /// How long the next read may wait: the idle time if no request has begun
    /// (`started` is `None`), else what is left of the request's time.
    pub fn next_read(&self, started: Option<std::time::Instant>) -> std::time::Duration {
        match started {
            None => self.idle,
            Some(started) => self.request.saturating_sub(started.elapsed()),
        }
    }
}

const BAD_REQUEST: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// What to do once the responses are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Read more: the connection stays open.
    Read,
    /// Close the connection.
    Close,
}

/// Answers every complete request at the front of `input` (removing it) by appending its
/// response to `output`; what is left of `input` is the start of a request still
/// arriving.
pub fn respond(input: &mut Vec<u8>, output: &mut Vec<u8>) -> Next {
    let mut consumed = 0;
    let next = loop {
        match parse(&input[consumed..]) {
            Parsed::Request { len, keep_alive } => {
                consumed += len;
                write_ok(output, keep_alive);
                if !keep_alive {
                    break Next::Close;
                }
            }
            Parsed::Partial if input.len() - consumed > MAX_REQUEST => {
                output.extend_from_slice(BAD_REQUEST);
                break Next::Close;
            }
            Parsed::Partial => break Next::Read,
            Parsed::Invalid => {
                output.extend_from_slice(BAD_REQUEST);
                break Next::Close;
            }
        }
    };
    input.drain(..consumed);
    next
}

enum Parsed {
    /// A whole request of `len` bytes (head and body).
    Request {
        len: usize,
        keep_alive: bool,
    },
    /// The start of a request (or nothing yet).
    Partial,
    Invalid,
}

fn parse(input: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let head = match request.parse(input) {
        Ok(httparse::Status::Complete(head)) => head,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Invalid,
    };
    let mut keep_alive = request.version == Some(1);
    let mut body = 0;
    for header in request.headers.iter() {
        if header.name.eq_ignore_ascii_case("connection") {
            if header.value.eq_ignore_ascii_case(b"close") {
                keep_alive = false;
            } else if header.value.eq_ignore_ascii_case(b"keep-alive") {
                keep_alive = true;
            }
        } else if header.name.eq_ignore_ascii_case("content-length") {
            let parsed = std::str::from_utf8(header.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok());
            match parsed {
                Some(len) if len <= MAX_REQUEST => body = len,
                _ => return Parsed::Invalid,
            }
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            return Parsed::Invalid;
        }
    }
    if input.len() - head < body {
        return Parsed::Partial;
    }
    Parsed::Request {
        len: head + body,
        keep_alive,
    }
}

fn write_ok(output: &mut Vec<u8>, keep_alive: bool) {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: {connection}\r\n\r\n",
        BODY.len()
    );
    output.extend_from_slice(head.as_bytes());
    output.extend_from_slice(BODY.as_bytes());
}

/// How long hyper's servers (`hyper_hello` and its tokio twin) give a request's head to
/// arrive, from when they start waiting for it: `HTTP_HEADER_READ_MS` milliseconds, 10 s
/// by default.
pub fn header_read_timeout() -> std::time::Duration {
    let millis = match std::env::var("HTTP_HEADER_READ_MS") {
        Ok(ms) => ms.parse().unwrap_or_else(|_| {
            panic!("HTTP_HEADER_READ_MS must be a number of milliseconds, not {ms:?}")
        }),
        Err(_) => 10_000,
    };
    std::time::Duration::from_millis(millis)
}

/// The address to listen on and the worker threads to use, from the command line
/// (`[ADDR] [--workers N]`) or the environment (`HTTP_ADDR`, `HTTP_WORKERS`); by default
/// `127.0.0.1:0` (a free port, printed once bound) and one worker per core (`None`).
pub fn config() -> (String, Option<usize>) {
    let mut addr = std::env::var("HTTP_ADDR").unwrap_or_else(|_| "127.0.0.1:0".to_owned());
    let mut workers = std::env::var("HTTP_WORKERS")
        .ok()
        .map(|w| parse_workers(&w));
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--workers" {
            let n = args.next().expect("--workers takes a number");
            workers = Some(parse_workers(&n));
        } else {
            addr = arg;
        }
    }
    (addr, workers)
}

fn parse_workers(n: &str) -> usize {
    match n.parse() {
        Ok(n) if n >= 1 => n,
        _ => panic!("the number of workers must be an integer of at least 1, not {n:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelined_requests_are_answered_in_order() {
        let mut input =
            b"GET / HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nconnection: close\r\n\r\n".to_vec();
        let mut output = Vec::new();
        assert_eq!(respond(&mut input, &mut output), Next::Close);
        assert!(input.is_empty());
        let text = String::from_utf8(output).unwrap();
        assert_eq!(text.matches("200 OK").count(), 2);
    }
}
