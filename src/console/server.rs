//! The console's thread: it serves the routes, samples the workers between requests (and
//! while a request waits on its client), and stops when the runtime drops (the
//! [`Service`] it returns).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::runtime::services::Service;
use crate::runtime::{Handle, Shared};
use crate::tuning::{CONSOLE_GRAPH_MAX_NODES, CONSOLE_SAMPLE_PERIOD, CONSOLE_TICK};

use super::http::{self, Listener, Method, Request, Response};
use super::page::{self, Page};
use super::sampler::Sampler;
use super::snapshot::{self, Row};
use super::warnings::{self, Warning};
use super::{graph, json, prometheus};

/// Stops the console when dropped.
struct Running {
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Relaxed: the flag orders nothing; the join below waits for the thread, which
        // looks at the flag at least once a sampling period, or an I/O slice while it
        // serves a client (`http.rs`).
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.get_mut().map_or(None, Option::take);
        if let Some(thread) = thread
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}

/// Starts the console of `handle`'s runtime on `addr` (`services.rs`).
pub(super) fn start(handle: &Handle, addr: &str) -> io::Result<Service> {
    let listener = Listener::bind(addr).map_err(|err| {
        io::Error::new(
            err.kind(),
            format!("csp: the console cannot serve on {addr}: {err}"),
        )
    })?;
    let local = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let thread = std::thread::Builder::new()
        .name("csp-console".to_owned())
        .spawn({
            let (shared, stop) = (handle.shared.clone(), stop.clone());
            move || serve(&shared, &listener, &stop)
        })?;
    // Once it serves: a console that could not start has no address to report.
    handle.shared.set_console_addr(local);
    eprintln!("csp: console on http://{local}/");
    Ok(Service::new(Running {
        stop,
        thread: Mutex::new(Some(thread)),
    }))
}

/// The thread's loop: a sample every period, a tick every second, the connections
/// waiting between, one at a time, in the order they speak.
fn serve(shared: &Shared, listener: &Listener, stop: &AtomicBool) {
    let loopback = listener
        .local_addr()
        .is_ok_and(|addr| addr.ip().is_loopback());
    let now = Instant::now();
    let mut console = Console {
        shared,
        stop,
        sampler: Sampler::new(shared),
        next_sample: now,
        next_tick: now,
    };
    let mut waiting = http::Waiting::default();
    // Relaxed: see `Running::drop`.
    while !stop.load(Ordering::Relaxed) {
        console.keep_time();
        match waiting.next(listener) {
            Some(stream) => http::serve_connection(stream, stop, loopback, &mut console),
            None => std::thread::sleep(
                console
                    .next_sample
                    .saturating_duration_since(Instant::now()),
            ),
        }
    }
}

/// What the console's thread keeps: the sampler, and when it next samples and ticks.
struct Console<'a> {
    shared: &'a Shared,
    stop: &'a AtomicBool,
    sampler: Sampler,
    next_sample: Instant,
    next_tick: Instant,
}

impl Console<'_> {
    /// Samples the workers, and ticks, where it is time to.
    fn keep_time(&mut self) {
        let now = Instant::now();
        if now >= self.next_sample {
            self.sampler.sample(self.shared, now);
            self.next_sample = (self.next_sample + CONSOLE_SAMPLE_PERIOD).max(now);
        }
        if now >= self.next_tick {
            self.sampler
                .tick(self.shared, &self.shared.processes(), now);
            self.next_tick = now + CONSOLE_TICK;
        }
    }
}

impl http::Handler for Console<'_> {
    fn route(&mut self, request: &Request) -> Response {
        route(self.shared, &self.sampler, self.stop, request)
    }

    fn between(&mut self) {
        self.keep_time();
    }
}

/// The answer to one request.
fn route(shared: &Shared, sampler: &Sampler, stop: &AtomicBool, request: &Request) -> Response {
    if request.method == Method::Other {
        let mut response = http::plain(http::METHOD_NOT_ALLOWED, "csp console: GET only\n");
        response.headers.push(("Allow", "GET, HEAD"));
        return response;
    }
    let now = Instant::now();
    let view = |sampler: &Sampler| -> (Vec<Row>, Vec<Warning>) {
        let rows = snapshot::rows(shared, sampler, now);
        let warnings = warnings::warnings(shared, &rows, sampler, now);
        (rows, warnings)
    };
    match request.path.as_str() {
        "/" | "/index.html" => {
            let (rows, warnings) = view(sampler);
            let history: Vec<_> = sampler.history().iter().cloned().collect();
            let metrics = shared.metrics();
            let page = Page {
                metrics: &metrics,
                graph: picture(shared, rows.len(), stop),
                rows: &rows,
                warnings: &warnings,
                history: &history,
                now,
            };
            Response::new(http::OK, "text/html; charset=utf-8", page::render(&page))
        }
        "/api/processes" => {
            let (rows, _) = view(sampler);
            Response::new(http::OK, "application/json", json::processes(&rows))
        }
        "/api/graph.dot" => Response::new(
            http::OK,
            "text/vnd.graphviz; charset=utf-8",
            shared.wait_graph(None),
        ),
        "/api/graph.svg" => {
            match picture(shared, shared.metrics().processes_alive as usize, stop) {
                Ok(svg) => Response::new(http::OK, "image/svg+xml", svg),
                Err(why) => http::plain(http::UNAVAILABLE, &format!("no picture: {why}\n")),
            }
        }
        "/metrics" => {
            let long_polls = sampler.long_polls().count();
            Response::new(
                http::OK,
                "text/plain; version=0.0.4; charset=utf-8",
                prometheus::exposition(&shared.metrics(), long_polls),
            )
        }
        path => http::plain(http::NOT_FOUND, &format!("csp console: no page {path}\n")),
    }
}

/// The wait graph as SVG, unless it is too large to draw (or the console stops first).
fn picture(shared: &Shared, processes: usize, stop: &AtomicBool) -> Result<String, String> {
    if processes > CONSOLE_GRAPH_MAX_NODES {
        return Err(format!(
            "{processes} processes are more than a picture shows ({CONSOLE_GRAPH_MAX_NODES} at \
             most); /api/graph.dot has the graph"
        ));
    }
    graph::svg(&shared.wait_graph(None), stop)
}
