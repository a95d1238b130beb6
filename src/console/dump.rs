//! The dump on a signal, as Go does on SIGQUIT: `kill -QUIT <pid>` (or the signal named
//! by `CSP_DUMP_SIGNAL`: `USR1`, `USR2`, `QUIT`, or a number) prints every runtime's
//! process table and wait graph to standard error, and the program goes on. The handler
//! is installed when the program builds its first runtime, on a thread of its own
//! (`signal-hook`), so the dump is taken outside the signal handler and while every
//! worker is stuck.

use std::fmt::Write;
use std::io::Write as _;

use signal_hook::consts::{SIGQUIT, SIGUSR1, SIGUSR2};
use signal_hook::iterator::Signals;

use crate::runtime::services;

/// Installs the handler (`services::runtime_built` calls it once).
pub(super) fn install() {
    let signal = match std::env::var("CSP_DUMP_SIGNAL") {
        Ok(name) => match parse(&name) {
            Some(signal) => signal,
            None => {
                eprintln!(
                    "csp: CSP_DUMP_SIGNAL={name}: not a signal csp dumps on; use QUIT, USR1, \
                     USR2 or a signal number. Dumping on SIGQUIT"
                );
                SIGQUIT
            }
        },
        Err(_) => SIGQUIT,
    };
    let mut signals = match Signals::new([signal]) {
        Ok(signals) => signals,
        Err(err) => {
            eprintln!("csp: no process dump on signal {signal}: {err}");
            return;
        }
    };
    let started = std::thread::Builder::new()
        .name("csp-dump".to_owned())
        .spawn(move || {
            for _ in signals.forever() {
                let dump = dump();
                let _ = std::io::stderr().lock().write_all(dump.as_bytes());
            }
        });
    if let Err(err) = started {
        eprintln!("csp: no process dump on signal {signal}: {err}");
    }
}

/// A signal's number from `QUIT`, `SIGQUIT`, `usr1` or `3`.
fn parse(name: &str) -> Option<i32> {
    let upper = name.trim().to_ascii_uppercase();
    match upper.strip_prefix("SIG").unwrap_or(&upper) {
        "QUIT" => Some(SIGQUIT),
        "USR1" => Some(SIGUSR1),
        "USR2" => Some(SIGUSR2),
        number => number
            .parse::<i32>()
            .ok()
            .filter(|n| !signal_hook::consts::FORBIDDEN.contains(n)),
    }
}

/// Every live runtime's processes and wait graph.
pub(super) fn dump() -> String {
    let mut out = String::from("csp: process dump\n");
    for shared in services::runtimes() {
        let processes = shared.processes();
        let _ = writeln!(
            out,
            "runtime #{}: {} workers, {} processes",
            shared.id(),
            shared.workers(),
            processes.len()
        );
        for p in &processes {
            let _ = writeln!(
                out,
                "  process #{} {:?}, spawned at {}{}",
                p.id,
                p.state,
                p.spawned_at,
                p.waiting_on
                    .as_deref()
                    .map(|w| format!(", waiting on {w}"))
                    .unwrap_or_default()
            );
        }
        out.push_str(&shared.wait_graph(None));
    }
    out
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::parse;
    use signal_hook::consts::{SIGKILL, SIGQUIT, SIGUSR1};

    #[test]
    fn signal_names_and_numbers_parse_and_uncatchable_ones_do_not() {
        assert_eq!(parse("QUIT"), Some(SIGQUIT));
        assert_eq!(parse("sigusr1"), Some(SIGUSR1));
        assert_eq!(parse(&SIGUSR1.to_string()), Some(SIGUSR1));
        assert_eq!(parse(&SIGKILL.to_string()), None);
        assert_eq!(parse("HUP?"), None);
    }
}
