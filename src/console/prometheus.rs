//! `/metrics`: the runtime's counters and gauges in the Prometheus text exposition
//! format (version 0.0.4), each with its `# HELP` and `# TYPE` lines, named `csp_*`.

use std::fmt::Write;

use crate::runtime::Metrics;

/// The exposition of `metrics`, plus the console's own count of long polls seen.
pub(super) fn exposition(metrics: &Metrics, long_polls: usize) -> String {
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, value: u64| {
        let _ = write!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
        );
    };
    family(
        "csp_workers",
        "gauge",
        "Worker threads of the runtime.",
        metrics.workers as u64,
    );
    family(
        "csp_processes_alive",
        "gauge",
        "Processes spawned and not yet finished.",
        metrics.processes_alive,
    );
    family(
        "csp_timers_armed",
        "gauge",
        "Timers armed in the runtime's wheel.",
        metrics.timers_armed,
    );
    family(
        "csp_spawned_total",
        "counter",
        "Processes spawned.",
        metrics.spawned,
    );
    family(
        "csp_polls_total",
        "counter",
        "Polls of processes.",
        metrics.polls,
    );
    family(
        "csp_handoffs_total",
        "counter",
        "Processes run next on the worker that woke them (the handoff slot).",
        metrics.handoffs,
    );
    family(
        "csp_steals_total",
        "counter",
        "Times an idle worker took processes from another's queue.",
        metrics.steals,
    );
    family(
        "csp_parks_total",
        "counter",
        "Times a worker went to sleep for lack of work.",
        metrics.parks,
    );
    family(
        "csp_takeovers_total",
        "counter",
        "Times the processes a worker held were moved off it because a poll held it past 5 ms.",
        metrics.takeovers,
    );
    family(
        "csp_console_long_polls",
        "gauge",
        "Polls that held their worker past the warning threshold, among the last ones the console keeps.",
        long_polls as u64,
    );
    out
}
