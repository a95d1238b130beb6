//! `/`: the console's page. One HTML document with everything inline (styles, the
//! graph's SVG, the plots' SVG), no script and nothing fetched from elsewhere; it asks
//! the browser to reload it every second.

use std::fmt::Write;
use std::time::Instant;

use crate::runtime::Metrics;
use crate::tuning::CONSOLE_TICK;

use super::sampler::Point;
use super::snapshot::{Row, human};
use super::warnings::Warning;

/// What the page shows.
pub(super) struct Page<'a> {
    pub(super) metrics: &'a Metrics,
    pub(super) rows: &'a [Row],
    pub(super) warnings: &'a [Warning],
    /// The wait graph as SVG, or why there is none.
    pub(super) graph: Result<String, String>,
    pub(super) history: &'a [Point],
    pub(super) now: Instant,
}

const STYLE: &str = "
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin: 0 0 .2em; } h2 { font-size: 1.1em; margin: 1.4em 0 .4em; }
.summary span { margin-right: 1.5em; }
table { border-collapse: collapse; font: 12px/1.3 ui-monospace, monospace; }
th, td { border-bottom: 1px solid #ddd; padding: .2em .6em; text-align: left; vertical-align: top; }
td.n { text-align: right; }
tr.Running td, tr.Yielding td { background: #eef7ee; }
tr.warned td { background: #fff1e6; }
ul.warnings { padding-left: 1.2em; } li.long-poll { color: #a40000; } li.busy-waking, li.long-queue { color: #8a5a00; }
#graph svg { max-width: 100%; height: auto; border: 1px solid #eee; }
#plots { display: flex; flex-wrap: wrap; gap: 1em; }
figure.plot { margin: 0; } figure.plot figcaption { font-size: 12px; }
figure.plot svg { border: 1px solid #eee; background: #fcfcfc; }
";

/// The page as HTML.
pub(super) fn render(page: &Page<'_>) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{}\">\
         <title>csp console</title><style>{STYLE}</style></head><body>\n",
        CONSOLE_TICK.as_secs().max(1)
    );
    summary(&mut out, page.metrics);
    warnings(&mut out, page.warnings);
    processes(&mut out, page.rows);
    graph(&mut out, &page.graph);
    plots(&mut out, page.history, page.now);
    out.push_str("</body></html>\n");
    out
}

fn summary(out: &mut String, m: &Metrics) {
    let _ = write!(
        out,
        "<h1>csp console</h1><p class=\"summary\" id=\"summary\">\
         <span>{} workers</span><span>{} processes alive</span><span>{} spawned</span>\
         <span>{} polls</span><span>{} handoffs</span><span>{} steals</span>\
         <span>{} parks</span><span>{} timers armed</span><span>{} take-overs</span></p>\n\
         <p>Also: <a href=\"/api/processes\">/api/processes</a> (JSON), \
         <a href=\"/api/graph.dot\">/api/graph.dot</a>, <a href=\"/api/graph.svg\">/api/graph.svg</a>, \
         <a href=\"/metrics\">/metrics</a> (Prometheus).</p>\n",
        m.workers,
        m.processes_alive,
        m.spawned,
        m.polls,
        m.handoffs,
        m.steals,
        m.parks,
        m.timers_armed,
        m.takeovers
    );
}

fn warnings(out: &mut String, warnings: &[Warning]) {
    out.push_str("<section id=\"warnings\"><h2>Warnings</h2>");
    if warnings.is_empty() {
        out.push_str("<p>None.</p>");
    } else {
        out.push_str("<ul class=\"warnings\">");
        for w in warnings {
            let _ = write!(
                out,
                "<li class=\"warning {}\">{}</li>",
                w.kind.name(),
                escape(&w.text)
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>\n");
}

fn processes(out: &mut String, rows: &[Row]) {
    let _ = write!(
        out,
        "<section id=\"processes\"><h2>Processes ({})</h2><table><thead><tr>\
         <th>id</th><th>spawned at</th><th>state</th><th>waiting on</th><th>for</th>\
         <th>set</th><th>polls</th><th>woken in its poll</th><th>time polling</th>\
         <th>longest poll</th></tr></thead><tbody>",
        rows.len()
    );
    for r in rows {
        let warned = if r.busy_waking { " warned" } else { "" };
        let _ = write!(
            out,
            "<tr class=\"process {:?}{warned}\" data-id=\"{}\"><td class=\"n\">{}</td><td>{}</td>\
             <td>{:?}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            r.state,
            r.id,
            r.id,
            escape(&r.spawned_at.to_string()),
            r.state,
            escape(waiting_on(r)),
            r.waiting_for.map(human).unwrap_or_default(),
            r.group.map(|g| format!("#{g}")).unwrap_or_default(),
            r.polls,
            r.requeues,
            human(r.busy),
            human(r.longest_poll),
        );
    }
    out.push_str("</tbody></table></section>\n");
}

/// What a row's process waits on, as the table says it: asleep with no csp wait
/// recorded, it waits on something outside csp (another executor's future, a
/// `futures` channel).
fn waiting_on(row: &Row) -> &str {
    match (&row.waiting_on, row.state) {
        (Some(wait), _) => wait,
        (None, crate::runtime::ProcessState::Sleeping) => "a future outside csp",
        (None, _) => "",
    }
}

fn graph(out: &mut String, graph: &Result<String, String>) {
    out.push_str(
        "<section id=\"graph\"><h2>Wait graph</h2><p>An arrow runs from a waiter to what \
         it waits on; a deadlock's cycle is drawn in red.</p>",
    );
    match graph {
        Ok(svg) => out.push_str(strip_prolog(svg)),
        Err(why) => {
            let _ = write!(out, "<p>No picture: {}.</p>", escape(why));
        }
    }
    out.push_str("</section>\n");
}

/// An SVG document without its XML declaration and doctype, to sit inside HTML.
fn strip_prolog(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |at| &svg[at..])
}

/// One plotted series: a name, and its value at each point.
struct Series {
    name: &'static str,
    values: Vec<f64>,
    rate: bool,
}

fn plots(out: &mut String, history: &[Point], now: Instant) {
    let minutes = history.first().map_or(0.0, |p| {
        now.saturating_duration_since(p.at).as_secs_f64() / 60.0
    });
    let _ = write!(
        out,
        "<section id=\"plots\"><h2 style=\"width:100%\">The last {minutes:.1} minutes</h2>"
    );
    let rate = |name, f: fn(&Metrics) -> u64| Series {
        name,
        values: history
            .windows(2)
            .map(|w| {
                let dt = w[1].at.saturating_duration_since(w[0].at).as_secs_f64();
                let dv = f(&w[1].metrics).saturating_sub(f(&w[0].metrics)) as f64;
                if dt > 0.0 { dv / dt } else { 0.0 }
            })
            .collect(),
        rate: true,
    };
    let level = |name, f: fn(&Metrics) -> u64| Series {
        name,
        values: history.iter().map(|p| f(&p.metrics) as f64).collect(),
        rate: false,
    };
    let series = [
        rate("spawns", |m| m.spawned),
        rate("polls", |m| m.polls),
        rate("handoffs", |m| m.handoffs),
        rate("steals", |m| m.steals),
        rate("parks", |m| m.parks),
        level("processes alive", |m| m.processes_alive),
        level("timers armed", |m| m.timers_armed),
    ];
    for s in &series {
        plot(out, s);
    }
    out.push_str("</section>\n");
}

fn plot(out: &mut String, s: &Series) {
    const W: f64 = 300.0;
    const H: f64 = 80.0;
    let max = s.values.iter().copied().fold(0.0, f64::max);
    let last = s.values.last().copied().unwrap_or(0.0);
    let unit = if s.rate { "/s" } else { "" };
    let _ = write!(
        out,
        "<figure class=\"plot\" data-series=\"{}\"><figcaption>{}{unit}: {last:.0} \
         (max {max:.0})</figcaption><svg width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\">",
        s.name, s.name
    );
    if s.values.len() >= 2 {
        let step = W / (s.values.len() - 1) as f64;
        let scale = if max > 0.0 { (H - 4.0) / max } else { 0.0 };
        out.push_str("<polyline fill=\"none\" stroke=\"#2b6cb0\" stroke-width=\"1.5\" points=\"");
        for (i, v) in s.values.iter().enumerate() {
            let _ = write!(out, "{:.1},{:.1} ", i as f64 * step, H - 2.0 - v * scale);
        }
        out.push_str("\"/>");
    }
    out.push_str("</svg></figure>");
}

/// `text` inside HTML.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}
