//! hyper's HTTP/1 server on csp, with no tokio in the program: the library people serve
//! HTTP with, run by csp's processes on csp's own sockets. The adapter is small: hyper
//! reads and writes through its own I/O traits (`hyper::rt::Read`, `Write`), which a
//! [`csp::net::TcpStream`] implements here through `futures`' `AsyncRead` and
//! `AsyncWrite`, and it times its header reads with a timer, which `csp::sleep` is (one
//! allocation each: hyper boxes every sleep, one a request).
//!
//! ```text
//! cargo run --release --example hyper_hello                       # 127.0.0.1:0, a free port
//! cargo run --release --example hyper_hello -- 127.0.0.1:8080 --workers 2
//! curl http://127.0.0.1:8080/
//! ```
//!
//! It prints `listening on ADDR` once bound, then serves `Hello, world!` to every
//! request until killed, a process per connection. The address and the worker count may
//! also come from `HTTP_ADDR` and `HTTP_WORKERS`. A request's head has 10 s to arrive
//! (`HTTP_HEADER_READ_MS` sets another limit), after which hyper closes the connection.

#[path = "shared/http.rs"]
#[allow(dead_code)]
pub mod http;

use std::convert::Infallible;
use std::future::Future;
use std::io::{self, Write};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use csp::net::{AsyncRead, AsyncWrite, TcpListener, TcpStream};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};

fn main() -> io::Result<()> {
    let (addr, workers) = http::config();
    // Read (and checked) before anything is served.
    let header_read_timeout = http::header_read_timeout();
    let mut builder = csp::Runtime::builder();
    if let Some(workers) = workers {
        builder.worker_threads(workers);
    }
    let rt = builder.thread_name("hyper").build()?;
    rt.block_on(async {
        let listener = TcpListener::bind(addr.as_str()).await?;
        let mut stdout = io::stdout();
        writeln!(stdout, "listening on {}", listener.local_addr()?)?;
        stdout.flush()?;
        csp::spawn(serve(listener, header_read_timeout))
            .await
            .expect("the accept loop does not panic")
    })
}

/// Accepts connections for ever, serving each with hyper in a process of its own, a
/// request's head given `header_read_timeout` to arrive; a failed accept (out of file
/// descriptors) pauses the loop.
pub async fn serve(listener: TcpListener, header_read_timeout: Duration) -> io::Result<()> {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                csp::sleep(http::ACCEPT_BACKOFF).await;
                continue;
            }
        };
        csp::spawn(async move {
            let _ = stream.set_nodelay(true);
            let served = http1::Builder::new()
                .timer(CspTimer)
                .header_read_timeout(header_read_timeout)
                .serve_connection(HyperIo(stream), service_fn(hello))
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

/// A csp stream as hyper's I/O.
struct HyperIo(TcpStream);

impl hyper::rt::Read for HyperIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        // Read into initialised memory and copy: no unsafe code in the adapter.
        let mut chunk = [0; http::READ_CHUNK];
        let want = chunk.len().min(buf.remaining());
        let n = std::task::ready!(Pin::new(&mut self.0).poll_read(cx, &mut chunk[..want]))?;
        buf.put_slice(&chunk[..n]);
        Poll::Ready(Ok(()))
    }
}

impl hyper::rt::Write for HyperIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_close(cx)
    }
}

/// csp's timers as hyper's.
#[derive(Clone, Copy)]
struct CspTimer;

impl hyper::rt::Timer for CspTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(CspSleep {
            sleep: csp::sleep(duration),
        })
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(CspSleep {
            sleep: csp::sleep_until(deadline),
        })
    }
}

pin_project_lite::pin_project! {
    /// A `csp::Sleep` as hyper's `Sleep`, in the box hyper asks for (no second one).
    struct CspSleep {
        #[pin]
        sleep: csp::Sleep,
    }
}

impl Future for CspSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.project().sleep.poll(cx)
    }
}

impl hyper::rt::Sleep for CspSleep {}
