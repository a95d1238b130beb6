//! A minimal HTTP/1.1 server on csp: a process per connection, sockets from `csp::net`
//! (the runtime's own I/O driver), keep-alive, and the same fixed response
//! for every request. `http_hello_tokio` is the same server on tokio, sharing the
//! parser and the response (`shared/http.rs`); `scripts/load` runs `wrk` against both.
//!
//! ```text
//! cargo run --release --example http_hello                       # 127.0.0.1:0, a free port
//! cargo run --release --example http_hello -- 127.0.0.1:8080 --workers 2
//! curl http://127.0.0.1:8080/
//! ```
//!
//! It prints `listening on ADDR` once bound, then serves until killed. The address and
//! the worker count may also come from `HTTP_ADDR` and `HTTP_WORKERS`.

#[path = "shared/http.rs"]
#[allow(dead_code)]
pub mod http;

use std::io::{self, Write};

use csp::net::{AsyncReadExt, AsyncWriteExt, TcpListener, TcpStream};

fn main() -> io::Result<()> {
    let (addr, workers) = http::config();
    let mut builder = csp::Runtime::builder();
    if let Some(workers) = workers {
        builder.worker_threads(workers);
    }
    let rt = builder.thread_name("http").build()?;
    rt.block_on(async {
        let listener = TcpListener::bind(addr.as_str()).await?;
        let mut stdout = io::stdout();
        writeln!(stdout, "listening on {}", listener.local_addr()?)?;
        stdout.flush()?;
        // The accept loop is a process too, so that it runs on the workers.
        csp::spawn(serve(listener))
            .await
            .expect("the accept loop does not panic")
    })
}

/// Accepts connections for ever, serving each in a process of its own, with the default
/// [`http::Limits`].
pub async fn serve(listener: TcpListener) -> io::Result<()> {
    serve_with(listener, http::Limits::default()).await
}

/// As [`serve`], with `limits` on how long a connection's reads may wait. Out of file
/// descriptors (`EMFILE`), or on any other failed accept, it pauses and accepts again:
/// clients that close make room.
pub async fn serve_with(listener: TcpListener, limits: http::Limits) -> io::Result<()> {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                csp::sleep(http::ACCEPT_BACKOFF).await;
                continue;
            }
        };
        csp::spawn(async move {
            // A client that goes away mid-request (or is too slow) is no error of the
            // server's.
            let _ = connection(stream, limits).await;
        });
    }
}

/// Serves one connection until the client closes it, a request asks to close it or is
/// bad (answered with `400`), or the client keeps a read waiting past `limits`.
pub async fn connection(mut stream: TcpStream, limits: http::Limits) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut input = Vec::with_capacity(http::READ_CHUNK);
    let mut output = Vec::with_capacity(http::READ_CHUNK);
    let mut chunk = [0; http::READ_CHUNK];
    // When the request under way (if any) began.
    let mut started = None;
    loop {
        let wait = limits.next_read(started);
        let n = match csp::timeout(wait, stream.read(&mut chunk)).await {
            Ok(read) => read?,
            // Idle, or a request too slow in coming: close.
            Err(_elapsed) => return Ok(()),
        };
        if n == 0 {
            return Ok(());
        }
        started.get_or_insert_with(std::time::Instant::now);
        input.extend_from_slice(&chunk[..n]);
        let next = http::respond(&mut input, &mut output);
        if input.is_empty() {
            started = None;
        }
        if !output.is_empty() {
            stream.write_all(&output).await?;
            output.clear();
        }
        if next == http::Next::Close {
            return Ok(());
        }
    }
}
