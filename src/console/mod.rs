//! The console (feature `console`): the running program, seen from a browser.
//!
//! [`Builder::console`](crate::Builder::console), `#[csp::main(console = "addr")]` or the
//! environment variable `CSP_CONSOLE=addr` start a thread of the runtime's own that serves
//! over HTTP/1.1 (`http.rs`, bounded in what any client can make it wait for or read):
//!
//! - `/`: one page, everything inline, that reloads itself every second: the processes
//!   (id, spawn site, state, what each waits on and for how long, polls, time spent
//!   polling, longest poll), the wait graph as a picture, plots of the runtime's counters
//!   over the last minutes, and warnings (long polls, processes woken again and again
//!   inside their own polls, channels with many waiters);
//! - `/api/processes` (JSON), `/api/graph.dot`, `/api/graph.svg`;
//! - `/metrics`, in the Prometheus text exposition format.
//!
//! The thread answers while every worker is stuck in a poll: it reads the registry, the
//! counters and the census of wait sites, never a worker's queue, and waits on no
//! process. It also samples, every [`CONSOLE_SAMPLE_PERIOD`](crate::tuning::CONSOLE_SAMPLE_PERIOD),
//! which process each worker is polling: that is how it times polls without a clock read
//! on the workers' path (`sampler.rs`).
//!
//! With the feature, `kill -QUIT` (or the signal named by `CSP_DUMP_SIGNAL`) prints the
//! process table and the wait graph of every runtime to standard error, and the program
//! goes on (`dump.rs`).
//!
//! Layout: `server.rs` (the thread and its routes), `http.rs` (requests and answers),
//! `sampler.rs` (poll timing, history,
//! wait ages), `snapshot.rs` (a consistent-enough view of the processes), `page.rs`,
//! `json.rs`, `prometheus.rs`, `graph.rs` (DOT to SVG), `warnings.rs`, `dump.rs`.

mod dump;
mod graph;
mod http;
mod json;
mod page;
mod prometheus;
mod sampler;
mod server;
mod snapshot;
mod warnings;

use crate::runtime::services;

// The console registers its start function and the dump's installer with the runtime as
// the program loads, so that the builder, a layer below, calls them without naming them.
// Registering two function pointers is all it does before `main`.
#[ctor::ctor(unsafe)]
fn register() {
    services::register_console(server::start);
    services::register_dump(dump::install);
}
