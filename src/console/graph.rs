//! The wait graph as a picture: laid out by Graphviz's `dot` when it is installed, by
//! `layout-rs` (in this process, in Rust) when it is not.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::tuning::CONSOLE_DOT_TIMEOUT;

use layout::backends::svg::SVGWriter;
use layout::gv;

/// `dot` as SVG, or why there is no picture. Gives up early once `stop` is set (the
/// console stops), while `dot` draws.
pub(super) fn svg(dot: &str, stop: &AtomicBool) -> Result<String, String> {
    if has_dot() {
        match with_dot(dot, stop) {
            Ok(svg) => return Ok(svg),
            Err(_) if stop.load(Ordering::Relaxed) => {
                return Err("the console stops".to_owned());
            }
            Err(_) => {}
        }
    }
    with_layout_rs(dot)
}

/// Whether Graphviz's `dot` runs here (looked up once).
fn has_dot() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        Command::new("dot")
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// The picture by `dot`, which has [`CONSOLE_DOT_TIMEOUT`] to draw it, and is killed
/// past that or once `stop` is set: a stuck `dot` must hold neither the console nor the
/// runtime's shutdown.
fn with_dot(dot: &str, stop: &AtomicBool) -> io::Result<String> {
    // The graph goes in through a file, not a pipe: a write to a pipe whose reader has
    // exited raises SIGPIPE, which ends a program that does not ignore it.
    let input = graph_file(dot)?;
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::from(input))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let output = child.stdout.take().map(|mut stdout| {
        std::thread::Builder::new()
            .name("csp-console-dot".to_owned())
            .spawn(move || {
                let mut svg = Vec::new();
                stdout.read_to_end(&mut svg).map(|_| svg)
            })
    });
    let deadline = Instant::now() + CONSOLE_DOT_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            // Relaxed: a hint to give up early, as the console's I/O takes it.
            Ok(None) if stop.load(Ordering::Relaxed) => {
                break Err(io::Error::other("the console stops"));
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(DOT_CHECK),
            Ok(None) => break Err(io::Error::other("dot took too long")),
            Err(err) => break Err(err),
        }
    };
    if let Err(err) = status {
        // Reaped whatever happens: no zombie per request. The reader is left to end
        // on its own: should something `dot` started still hold its output open, a
        // join would wait for that.
        let _ = child.kill();
        let _ = child.wait();
        return Err(err);
    }
    // `dot` is done: its output has ended, and the reader returns.
    let svg = match output {
        Some(Ok(reader)) => reader
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the reader of dot's output panicked"))),
        Some(Err(err)) => Err(err),
        None => Err(io::Error::other("dot's output was not piped")),
    };
    if !status.is_ok_and(|status| status.success()) {
        return Err(io::Error::other("dot failed"));
    }
    String::from_utf8(svg?).map_err(io::Error::other)
}

/// How often the console looks whether `dot` is done.
const DOT_CHECK: Duration = Duration::from_millis(2);

/// A file holding `dot`, open for reading from its start, and already unlinked where
/// the system allows (it goes with its last handle).
fn graph_file(dot: &str) -> io::Result<File> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    // Relaxed: only the numbers' uniqueness matters.
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("csp-console-{}-{n}.dot", std::process::id()));
    let mut file = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    let written = file
        .write_all(dot.as_bytes())
        .and_then(|()| file.seek(SeekFrom::Start(0)));
    let _ = std::fs::remove_file(&path);
    written.map(|_| file)
}

fn with_layout_rs(dot: &str) -> Result<String, String> {
    // The layout code may panic on a graph it cannot place: no picture then, and the
    // console goes on.
    catch_unwind(AssertUnwindSafe(|| {
        let mut parser = gv::DotParser::new(dot);
        let graph = parser.process()?;
        let mut builder = gv::GraphBuilder::new();
        builder.visit_graph(&graph);
        let mut visual = builder.get();
        let mut svg = SVGWriter::new();
        visual.do_it(false, false, false, &mut svg);
        Ok(svg.finalize())
    }))
    .unwrap_or_else(|_| Err("the layout of the graph failed".to_owned()))
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn layout_rs_draws_a_small_graph() {
        let svg = super::with_layout_rs(
            "digraph csp { p1 [shape=box, label=\"process #1\"]; p1 -> c2 [label=\"recv\"]; }",
        )
        .unwrap();
        assert!(svg.contains("<svg") && svg.contains("process #1"), "{svg}");
    }
}
