//! The wait graph as a picture: laid out by Graphviz's `dot` when it is installed, by
//! `layout-rs` (in this process, in Rust) when it is not.

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use layout::backends::svg::SVGWriter;
use layout::gv;

/// `dot` as SVG, or why there is no picture.
pub(super) fn svg(dot: &str) -> Result<String, String> {
    if has_dot() {
        if let Ok(svg) = with_dot(dot) {
            return Ok(svg);
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

fn with_dot(dot: &str) -> std::io::Result<String> {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(dot.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(std::io::Error::other("dot failed"));
    }
    String::from_utf8(out.stdout).map_err(std::io::Error::other)
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
