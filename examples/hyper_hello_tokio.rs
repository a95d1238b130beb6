//! `hyper_hello` on tokio: the same hyper HTTP/1 server (a task per connection, the same
//! header-read timeout and response), with hyper-util's `TokioIo` and `TokioTimer` as
//! tokio users write it, for `scripts/load` to compare with hyper on csp.
//!
//! ```text
//! cargo run --release --example hyper_hello_tokio -- 127.0.0.1:8080 --workers 2
//! ```
//!
//! It prints `listening on ADDR` once bound, then serves until killed; `HTTP_ADDR`,
//! `HTTP_WORKERS` and `HTTP_HEADER_READ_MS` work as for `hyper_hello`.

#[path = "shared/http.rs"]
#[allow(dead_code)]
mod http;

use std::convert::Infallible;
use std::io::{self, Write};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

fn main() -> io::Result<()> {
    let (addr, workers) = http::config();
    // Read (and checked) before anything is served.
    let header_read_timeout = http::header_read_timeout();
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
        // The accept loop is a task too, as in `hyper_hello`.
        tokio::spawn(serve(listener, header_read_timeout))
            .await
            .expect("the accept loop does not panic")
    })
}

/// Accepts connections for ever, serving each with hyper in a task of its own, a
/// request's head given `header_read_timeout` to arrive; a failed accept (out of file
/// descriptors) pauses the loop, as in `hyper_hello`.
async fn serve(listener: TcpListener, header_read_timeout: Duration) -> io::Result<()> {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(http::ACCEPT_BACKOFF).await;
                continue;
            }
        };
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_read_timeout)
                .serve_connection(TokioIo::new(stream), service_fn(hello))
                .await;
            // A client that goes away or misbehaves is no error of the server's.
            drop(served);
        });
    }
}

/// The one response.
async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(
        http::BODY.as_bytes(),
    ))))
}
