//! The console's thread: it serves the routes, samples the workers between requests, and
//! stops when the runtime drops (the [`Service`] it returns).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use tiny_http::{Header, Request, Response, Server};

use crate::runtime::services::Service;
use crate::runtime::{Handle, Shared};
use crate::tuning::{CONSOLE_GRAPH_MAX_NODES, CONSOLE_SAMPLE_PERIOD, CONSOLE_TICK};

use super::page::{self, Page};
use super::sampler::Sampler;
use super::snapshot::{self, Row};
use super::warnings::{self, Warning};
use super::{graph, json, prometheus};

/// Stops the console when dropped.
struct Running {
    stop: Arc<AtomicBool>,
    server: Arc<Server>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Relaxed: the flag orders nothing; the join below waits for the thread.
        self.stop.store(true, Ordering::Relaxed);
        self.server.unblock();
        let thread = self.thread.get_mut().map_or(None, Option::take);
        if let Some(thread) = thread {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

/// Starts the console of `handle`'s runtime on `addr` (`services.rs`).
pub(super) fn start(handle: &Handle, addr: &str) -> io::Result<Service> {
    let server = Server::http(addr).map_err(|err| {
        io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            format!("csp: the console cannot serve on {addr}: {err}"),
        )
    })?;
    let server = Arc::new(server);
    let local = server.server_addr().to_ip().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("csp: the console serves on TCP addresses; {addr} is not one"),
        )
    })?;
    handle.shared.set_console_addr(local);
    let stop = Arc::new(AtomicBool::new(false));
    let thread = std::thread::Builder::new()
        .name("csp-console".to_owned())
        .spawn({
            let (shared, server, stop) = (handle.shared.clone(), server.clone(), stop.clone());
            move || serve(&shared, &server, &stop)
        })?;
    eprintln!("csp: console on http://{local}/");
    Ok(Service::new(Running {
        stop,
        server,
        thread: Mutex::new(Some(thread)),
    }))
}

/// The thread's loop: a sample every period, a tick every second, requests between.
fn serve(shared: &Shared, server: &Server, stop: &AtomicBool) {
    let mut sampler = Sampler::new(shared);
    let mut next_sample = Instant::now();
    let mut next_tick = next_sample;
    // Relaxed: see `Running::drop`.
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= next_sample {
            sampler.sample(shared, now);
            next_sample = (next_sample + CONSOLE_SAMPLE_PERIOD).max(now);
        }
        if now >= next_tick {
            sampler.tick(shared, &shared.processes(), now);
            next_tick = now + CONSOLE_TICK;
        }
        match server.recv_timeout(next_sample.saturating_duration_since(Instant::now())) {
            Ok(Some(request)) => respond(shared, &sampler, request),
            Ok(None) => {}
            // The listener failed (or was unblocked): nothing more to serve.
            Err(_) => return,
        }
    }
}

/// Answers one request.
fn respond(shared: &Shared, sampler: &Sampler, request: Request) {
    let path = request.url().split('?').next().unwrap_or("/").to_owned();
    if *request.method() != tiny_http::Method::Get && *request.method() != tiny_http::Method::Head {
        let _ = request.respond(text(
            405,
            "text/plain",
            "csp console: GET only\n".to_owned(),
        ));
        return;
    }
    let now = Instant::now();
    let view = |sampler: &Sampler| -> (Vec<Row>, Vec<Warning>) {
        let rows = snapshot::rows(shared, sampler, now);
        let warnings = warnings::warnings(shared, &rows, sampler, now);
        (rows, warnings)
    };
    let response = match path.as_str() {
        "/" | "/index.html" => {
            let (rows, warnings) = view(sampler);
            let history: Vec<_> = sampler.history().iter().cloned().collect();
            let metrics = shared.metrics();
            let page = Page {
                metrics: &metrics,
                graph: picture(shared, rows.len()),
                rows: &rows,
                warnings: &warnings,
                history: &history,
                now,
            };
            text(200, "text/html; charset=utf-8", page::render(&page))
        }
        "/api/processes" => {
            let (rows, _) = view(sampler);
            text(200, "application/json", json::processes(&rows))
        }
        "/api/graph.dot" => text(
            200,
            "text/vnd.graphviz; charset=utf-8",
            shared.wait_graph(None),
        ),
        "/api/graph.svg" => match picture(shared, shared.metrics().processes_alive as usize) {
            Ok(svg) => text(200, "image/svg+xml", svg),
            Err(why) => text(
                503,
                "text/plain; charset=utf-8",
                format!("no picture: {why}\n"),
            ),
        },
        "/metrics" => {
            let long_polls = sampler.long_polls().count();
            text(
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                prometheus::exposition(&shared.metrics(), long_polls),
            )
        }
        _ => text(404, "text/plain", format!("csp console: no page {path}\n")),
    };
    // The client may have gone: nothing to do about it.
    let _ = request.respond(response);
}

/// The wait graph as SVG, unless it is too large to draw.
fn picture(shared: &Shared, processes: usize) -> Result<String, String> {
    if processes > CONSOLE_GRAPH_MAX_NODES {
        return Err(format!(
            "{processes} processes are more than a picture shows ({CONSOLE_GRAPH_MAX_NODES} at \
             most); /api/graph.dot has the graph"
        ));
    }
    graph::svg(&shared.wait_graph(None))
}

/// A response with `body` of type `content_type`.
fn text(status: u16, content_type: &str, body: String) -> Response<io::Cursor<Vec<u8>>> {
    let header = Header::from_bytes("Content-Type", content_type)
        .unwrap_or_else(|()| unreachable!("a valid header"));
    Response::from_string(body)
        .with_status_code(status)
        .with_header(header)
}
