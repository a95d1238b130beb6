//! Dropping a runtime whose processes sleep (or wait under a timeout) leaves the
//! process-wide default runtime alone: its processes, woken as their timers are let go,
//! do not move their sleeps to the default runtime (starting it), since they are about
//! to be dropped. One test in a binary of its own: no other test may start the default
//! runtime.

mod common;

use std::time::Duration;

use common::{Counter, bounded, runtime, wait_until};

#[test]
fn dropping_a_runtime_whose_processes_sleep_does_not_start_the_default_one() {
    bounded(30, || {
        let rt = runtime(2, "sleepers");
        let rounds = Counter::new();
        for _ in 0..8 {
            let rounds = rounds.clone();
            rt.spawn(async move {
                loop {
                    csp::sleep(Duration::from_millis(1)).await;
                    rounds.incr();
                }
            });
            let rounds = Counter::new();
            rt.spawn(async move {
                let (_tx, rx) = csp::channel::<()>();
                loop {
                    // A timeout that its shutdown cuts short, then a fresh one.
                    let _ = csp::timeout(Duration::from_secs(3600), rx.recv()).await;
                    rounds.incr();
                }
            });
        }
        wait_until(10, "the sleepers are under way", || rounds.get() >= 100);
        drop(rt);
        // The default runtime can still be configured: nothing started it.
        csp::Builder::new()
            .worker_threads(1)
            .build_default()
            .expect("the default runtime was not started by the drop");
    });
}
