//! `http_hello` on tokio: the same HTTP/1.1 server (a task per connection, keep-alive,
//! the same parser and response from `shared/http.rs`), for `scripts/load` to compare
//! with csp's.
//!
//! ```text
//! cargo run --release --example http_hello_tokio -- 127.0.0.1:8080 --workers 2
//! ```
//!
//! It prints `listening on ADDR` once bound, then serves until killed; `HTTP_ADDR` and
//! `HTTP_WORKERS` work as for `http_hello`.

#[path = "shared/http.rs"]
#[allow(dead_code)]
mod http;

use std::io::{self, Write};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn main() -> io::Result<()> {
    let (addr, workers) = http::config();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        builder.worker_threads(workers);
    }
    let rt = builder.enable_io().enable_time().build()?;
    rt.block_on(async {
        let listener = TcpListener::bind(addr.as_str()).await?;
        let mut stdout = io::stdout();
        writeln!(stdout, "listening on {}", listener.local_addr()?)?;
        stdout.flush()?;
        // The accept loop is a task too, as in `http_hello`.
        tokio::spawn(serve(listener))
            .await
            .expect("the accept loop does not panic")
    })
}

/// Accepts connections for ever, serving each in a task of its own; a failed accept
/// (out of file descriptors) pauses the loop, as in `http_hello`.
async fn serve(listener: TcpListener) -> io::Result<()> {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(http::ACCEPT_BACKOFF).await;
                continue;
            }
        };
        tokio::spawn(async move {
            let _ = connection(stream).await;
        });
    }
}

/// Serves one connection, as `http_hello`'s `connection` does (with the same
/// [`http::Limits`]).
async fn connection(mut stream: TcpStream) -> io::Result<()> {
    let limits = http::Limits::default();
    stream.set_nodelay(true)?;
    let mut input = Vec::with_capacity(http::READ_CHUNK);
    let mut output = Vec::with_capacity(http::READ_CHUNK);
    let mut chunk = [0; http::READ_CHUNK];
    let mut started = None;
    loop {
        let wait = limits.next_read(started);
        let n = match tokio::time::timeout(wait, stream.read(&mut chunk)).await {
            Ok(read) => read?,
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
