//! Deadlock detection: `block_on` reports a program whose processes and main future wait
//! on one another forever, naming each and what it waits on; it never fires while
//! anything csp cannot see (a timer, a foreign future, blocking work, a plain thread, a
//! runtime of its own) may still make progress.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

mod common;

use common::{bounded, panic_message};

/// Short, so the tests are quick; the false-positive tests wait several of them.
const GRACE: Duration = Duration::from_millis(100);
/// How long the false-positive tests keep everything blocked: several grace periods.
const QUIET: Duration = Duration::from_millis(400);

fn detecting_runtime(workers: usize) -> csp::Runtime {
    csp::Runtime::builder()
        .worker_threads(workers)
        .deadlock_grace(GRACE)
        .thread_name("deadlock-test")
        .build()
        .expect("failed to build the runtime")
}

/// Runs `future` on a detecting runtime and returns the deadlock report it panics with.
fn report_of<F: Future>(future: F) -> String {
    let rt = detecting_runtime(2);
    let payload = catch_unwind(AssertUnwindSafe(|| rt.block_on(future)))
        .err()
        .expect("the deadlock was not reported");
    let report = panic_message(&*payload).expect("the report is a string");
    assert!(
        report.starts_with("csp: deadlock: all processes are asleep"),
        "{report}"
    );
    assert!(report.contains("deadlock_detection(false)"), "{report}");
    report
}

/// The report's line for process `id`.
fn line_of(report: &str, id: u64) -> &str {
    report
        .lines()
        .find(|line| line.contains(&format!("process #{id} ")))
        .unwrap_or_else(|| panic!("no line for process #{id} in:\n{report}"))
}

// ---- True positives --------------------------------------------------------------------

#[test]
fn two_processes_each_waiting_for_the_other() {
    bounded(20, || {
        let made_on = line!() + 2;
        let report = report_of(async {
            let (to_a, from_b) = csp::channel::<u8>();
            let (to_b, from_a) = csp::channel::<u8>();
            let a = csp::spawn(async move {
                let _keep = to_b;
                from_b.recv().await
            });
            let _b = csp::spawn(async move {
                let _keep = to_a;
                from_a.recv().await
            });
            let _ = a.await;
        });
        assert_eq!(report.matches("recv on channel #").count(), 2, "{report}");
        // Each channel is named by its kind and where it was made.
        for (line, column) in [(made_on, 34), (made_on + 1, 34)] {
            let site = format!("(rendezvous, made at tests/deadlock.rs:{line}:{column})");
            assert_eq!(report.matches(&site).count(), 1, "{site} in {report}");
        }
        assert!(report.contains("the block_on future: waiting on join of process #"));
        for line in report
            .lines()
            .filter(|l| l.contains("process #") && l.contains("spawned"))
        {
            assert!(
                line.contains("(Sleeping), spawned at tests/deadlock.rs:"),
                "{line}"
            );
        }
    });
}

#[test]
fn a_channel_held_by_a_process_waiting_on_a_join() {
    bounded(20, || {
        let ids = std::sync::Arc::new(std::sync::Mutex::new((0, 0)));
        let seen = ids.clone();
        let made_on = line!() + 2;
        let report = report_of(async move {
            let (tx, rx) = csp::bounded::<u8>(3);
            // `receiver` waits for a value only `joiner` could send, and `joiner` waits
            // for `receiver` to end.
            let receiver = csp::spawn(async move { rx.recv().await });
            let receiver_id = receiver.id();
            let joiner = csp::spawn(async move {
                let _tx = tx;
                let _ = receiver.await;
            });
            *seen.lock().unwrap() = (receiver_id, joiner.id());
            let _ = joiner.await;
        });
        let (receiver, joiner) = *ids.lock().unwrap();
        let line = line_of(&report, receiver);
        assert!(line.contains("waiting on recv on channel #"), "{line}");
        assert!(
            line.ends_with(&format!(
                " (bounded(3), made at tests/deadlock.rs:{made_on}:28)"
            )),
            "{line}"
        );
        assert!(
            line_of(&report, joiner).contains(&format!("waiting on join of process #{receiver}"))
        );
    });
}

#[test]
fn the_main_future_waiting_for_a_process_that_waits_forever() {
    bounded(20, || {
        let report = report_of(async {
            let (tx, rx) = csp::channel::<u8>();
            let stuck = csp::spawn(async move {
                let _tx = tx;
                rx.recv().await
            });
            let _ = stuck.await;
        });
        assert!(report.contains("the block_on future: waiting on join of process #"));
        assert!(report.contains("recv on channel #"));
    });
}

#[test]
fn an_alt_that_nothing_can_fire() {
    bounded(20, || {
        let report = report_of(async {
            let (tx, rx) = csp::channel::<u8>();
            let (tx2, _rx2) = csp::channel::<u8>();
            let alt = csp::spawn(async move {
                let _tx = tx;
                csp::alt! {
                    recv(rx) -> _v => {},
                    closed(tx2) => {},
                }
            });
            let _ = alt.await;
        });
        assert!(
            report.contains("waiting on alt over 2 channels"),
            "{report}"
        );
    });
}

#[test]
fn a_spent_after_channel_never_fires_again() {
    bounded(20, || {
        let made_on = line!() + 2;
        let report = report_of(async {
            let timer = csp::after(Duration::from_millis(5));
            timer.recv().await.unwrap();
            // Spent: never ready again, and nothing else can send on it.
            timer.recv().await
        });
        assert!(report.contains("the block_on future: waiting on recv on channel #"));
        // A timer's channel is named by the call of `after` that made it.
        assert!(
            report.contains(&format!(
                " (bounded(1), made at tests/deadlock.rs:{made_on}:25)"
            )),
            "{report}"
        );
    });
}

#[test]
fn a_late_turn_to_foreign_of_another_channel_delays_the_report_only() {
    bounded(20, || {
        let report = report_of(async {
            let (tx, rx) = csp::channel::<u8>();
            let stuck = csp::spawn(async move {
                let _tx = tx;
                rx.recv().await
            });
            // Let `stuck` record its wait, then turn an unrelated channel of this runtime
            // foreign: every wait recorded before is stale until polled again.
            csp::yield_now().await;
            let (other, _other_rx) = csp::channel::<u8>();
            other.mark_foreign();
            let _ = stuck.await;
        });
        assert!(report.contains("recv on channel #"), "{report}");
    });
}

// ---- No false positives ----------------------------------------------------------------

/// Runs `future` on a detecting runtime: it must complete, whatever blocks meanwhile.
fn completes<F: Future>(future: F) -> F::Output {
    let rt = detecting_runtime(2);
    rt.block_on(future)
}

#[test]
fn not_while_a_process_waits_on_a_timer() {
    bounded(20, || {
        completes(async {
            let (tx, rx) = csp::channel::<u8>();
            csp::spawn(async move {
                csp::sleep(QUIET).await;
                tx.send(1).await.unwrap();
            });
            assert_eq!(rx.recv().await, Ok(1));
        });
    });
}

#[test]
fn not_while_a_process_waits_on_a_foreign_future() {
    bounded(20, || {
        // A `futures` oneshot completed by a plain thread, and a tokio timer.
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let tokio_handle = tokio.handle().clone();
        completes(async move {
            let (done, wait) = futures::channel::oneshot::channel::<u8>();
            std::thread::spawn(move || {
                std::thread::sleep(QUIET);
                done.send(1).unwrap();
            });
            let from_thread = csp::spawn(async move { wait.await.unwrap() });
            let from_tokio = csp::spawn(async move {
                tokio_handle
                    .spawn(async { tokio::time::sleep(QUIET).await })
                    .await
                    .unwrap();
                2
            });
            assert_eq!(from_thread.await.unwrap() + from_tokio.await.unwrap(), 3);
        });
    });
}

#[test]
fn not_while_blocking_work_runs() {
    bounded(20, || {
        completes(async {
            let work = csp::spawn_blocking(|| {
                std::thread::sleep(QUIET);
                5
            });
            assert_eq!(work.await.unwrap(), 5);
        });
    });
}

#[test]
fn not_while_blocking_work_drops_what_it_returned() {
    // A blocking task whose handle is gone drops its output itself, after it has left
    // the registry: a scan of the processes then found every one asleep and none of
    // them blocking work, and reported a deadlock while that drop was about to close
    // the channel the process waits on.
    struct SendsOnDrop(Option<csp::Sender<u8>>);
    impl Drop for SendsOnDrop {
        fn drop(&mut self) {
            std::thread::sleep(QUIET);
            let tx = self.0.take().unwrap();
            tx.send_blocking(1).unwrap();
        }
    }
    bounded(20, || {
        completes(async {
            let (tx, rx) = csp::channel::<u8>();
            let waiter = csp::spawn(async move { rx.recv().await });
            // The work returns only once its handle is gone, so the pool's thread drops
            // the output: had it finished first, the handle's drop would drop it here,
            // inside `block_on`, where its blocking send may not run.
            let (handle_gone, wait_for_handle) = std::sync::mpsc::channel::<()>();
            drop(csp::spawn_blocking(move || {
                wait_for_handle.recv().unwrap();
                SendsOnDrop(Some(tx))
            }));
            handle_gone.send(()).unwrap();
            assert_eq!(waiter.await.unwrap(), Ok(1));
        });
    });
}

/// A plain thread that, after a quiet spell, sends `values` on `tx` (blocking).
fn send_later(tx: csp::Sender<u8>, values: &'static [u8]) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(QUIET);
        for &v in values {
            tx.send_blocking(v).unwrap();
        }
    })
}

/// Waits, on the blocking pool (so detection holds off meanwhile), until a plain thread
/// says it has used its end.
async fn until_used(signal: std::sync::mpsc::Receiver<()>) {
    csp::spawn_blocking(move || signal.recv().unwrap())
        .await
        .unwrap();
}

#[test]
fn not_while_a_plain_thread_blocked_on_the_channel_may_still_act() {
    bounded(20, || {
        completes(async {
            let (tx, rx) = csp::channel::<u8>();
            let (used, signal) = std::sync::mpsc::channel();
            // A plain thread receives on the channel, blocked, while a process does too;
            // another thread sends to both, later.
            let thread_rx = rx.clone();
            let receiver = std::thread::spawn(move || {
                assert!(thread_rx.try_recv().is_err()); // its first use, before blocking
                used.send(()).unwrap();
                thread_rx.recv_blocking()
            });
            until_used(signal).await;
            let process = csp::spawn(async move { rx.recv().await });
            let sender = send_later(tx, &[1, 1]);
            assert_eq!(process.await.unwrap(), Ok(1));
            assert_eq!(receiver.join().unwrap(), Ok(1));
            sender.join().unwrap();
        });
    });
}

#[test]
fn not_while_a_plain_thread_is_blocked_in_send_blocking() {
    bounded(20, || {
        completes(async {
            let (tx, rx) = csp::channel::<u8>();
            let (used, signal) = std::sync::mpsc::channel();
            // A plain thread and a process both wait to send on the channel; its
            // receiver reaches a plain thread, which receives both values later.
            let thread_tx = tx.clone();
            let sender = std::thread::spawn(move || {
                // Its first use, before it blocks: nobody receives yet.
                assert!(thread_tx.try_send(0).unwrap_err().is_full());
                used.send(()).unwrap();
                thread_tx.send_blocking(1)
            });
            until_used(signal).await;
            let process = csp::spawn(async move { tx.send(2).await });
            let receiver = std::thread::spawn(move || {
                std::thread::sleep(QUIET);
                let a = rx.recv_blocking().unwrap();
                let b = rx.recv_blocking().unwrap();
                a + b
            });
            assert!(process.await.unwrap().is_ok());
            assert!(sender.join().unwrap().is_ok());
            assert_eq!(receiver.join().unwrap(), 3);
        });
    });
}

#[test]
fn not_while_a_channel_is_used_from_a_plain_thread() {
    bounded(20, || {
        completes(async {
            let (tx, rx) = csp::channel::<u8>();
            let (used, signal) = std::sync::mpsc::channel();
            let waiter = csp::spawn(async move { rx.recv().await });
            // A clone made outside the runtime makes the channel foreign, though the
            // thread sends only later.
            let thread = std::thread::spawn(move || {
                let tx2 = tx.clone();
                drop(tx);
                used.send(()).unwrap();
                std::thread::sleep(QUIET);
                tx2.send_blocking(3).unwrap();
            });
            until_used(signal).await;
            assert_eq!(waiter.await.unwrap(), Ok(3));
            thread.join().unwrap();
        });
    });
}

#[test]
fn not_while_one_of_several_waits_of_a_poll_is_on_a_foreign_channel() {
    bounded(20, || {
        // Made on this plain thread: foreign. A plain thread sends on it later.
        let (foreign_tx, foreign_rx) = csp::channel::<u8>();
        let sender = send_later(foreign_tx, &[7]);
        let got = completes(async move {
            let (_internal_tx, internal_rx) = csp::channel::<u8>();
            // One poll waits on both: the internal wait, recorded last, must not hide
            // the foreign one.
            let foreign = std::pin::pin!(foreign_rx.recv());
            let internal = std::pin::pin!(internal_rx.recv());
            match futures::future::select(foreign, internal).await {
                futures::future::Either::Left((v, _)) => v.unwrap(),
                futures::future::Either::Right(_) => unreachable!("nobody sends on it"),
            }
        });
        assert_eq!(got, 7);
        sender.join().unwrap();
    });
}

#[test]
fn not_while_a_pipeline_stage_reads_a_foreign_channel() {
    bounded(20, || {
        let (foreign_tx, foreign_rx) = csp::channel::<u8>();
        let sender = send_later(foreign_tx, &[3]);
        let got = completes(async move {
            // The producer's process waits on the foreign channel and on its output's
            // close in the same poll.
            let values = csp::pipe::producer(move |tx| async move {
                while let Ok(v) = foreign_rx.recv().await {
                    if tx.send(v).await.is_err() {
                        break;
                    }
                }
            });
            values.recv().await
        });
        assert_eq!(got, Ok(3));
        sender.join().unwrap();
    });
}

#[test]
fn not_while_the_main_future_waits_on_a_non_csp_future() {
    bounded(20, || {
        completes(async {
            let (done, wait) = futures::channel::oneshot::channel::<u8>();
            let (tx, rx) = csp::channel::<u8>();
            let process = csp::spawn(async move { rx.recv().await });
            std::thread::spawn(move || {
                std::thread::sleep(QUIET);
                done.send(4).unwrap();
            });
            let v = wait.await.unwrap();
            tx.send(v).await.unwrap();
            assert_eq!(process.await.unwrap(), Ok(4));
        });
    });
}

#[test]
fn not_while_a_process_joins_a_process_of_another_runtime() {
    bounded(20, || {
        let other = csp::Runtime::builder().worker_threads(1).build().unwrap();
        let slow = other.spawn(async {
            csp::sleep(QUIET).await;
            6
        });
        completes(async move {
            let joiner = csp::spawn(async move { slow.await.unwrap() });
            assert_eq!(joiner.await.unwrap(), 6);
        });
    });
}

#[test]
fn off_it_never_fires() {
    bounded(20, || {
        let rt = csp::Runtime::builder()
            .worker_threads(1)
            .deadlock_grace(GRACE)
            .deadlock_detection(false)
            .build()
            .unwrap();
        let (ends, ends_rx) = std::sync::mpsc::channel();
        let helper = std::thread::spawn(move || {
            let tx: csp::Sender<u8> = ends_rx.recv().unwrap();
            // Moved here unused: invisible to detection, which would report the main
            // future (as API.md warns) were it on.
            std::thread::sleep(QUIET);
            tx.try_send(8).unwrap();
        });
        let got = rt.block_on(async move {
            let (tx, rx) = csp::channel::<u8>();
            ends.send(tx).unwrap();
            rx.recv().await
        });
        assert_eq!(got, Ok(8));
        helper.join().unwrap();
    });
}

// ---- Without block_on: `Builder::on_deadlock` --------------------------------------------

/// A runtime that reports deadlocks through `on_deadlock`: the reports come out of the
/// receiver.
fn reporting_runtime() -> (csp::Runtime, std::sync::mpsc::Receiver<String>) {
    let (reports, reported) = std::sync::mpsc::channel();
    let rt = csp::Runtime::builder()
        .worker_threads(2)
        .deadlock_grace(GRACE)
        .thread_name("deadlock-hook")
        .on_deadlock(move |report| {
            let _ = reports.send(report.to_owned());
        })
        .build()
        .expect("failed to build the runtime");
    (rt, reported)
}

/// Spawns, from inside a process, two processes that each wait for the other; returns
/// their ids.
fn spawn_crossed_pair(rt: &csp::Runtime) -> (u64, u64) {
    rt.block_on(rt.spawn(async {
        let (to_a, from_b) = csp::channel::<u8>();
        let (to_b, from_a) = csp::channel::<u8>();
        let a = csp::spawn(async move {
            let _keep = to_b;
            from_b.recv().await
        });
        let b = csp::spawn(async move {
            let _keep = to_a;
            from_a.recv().await
        });
        (a.id(), b.id())
    }))
    .unwrap()
}

#[test]
fn on_deadlock_reports_once_with_no_block_on_and_the_runtime_goes_on() {
    bounded(20, || {
        let (rt, reported) = reporting_runtime();
        let (a, b) = spawn_crossed_pair(&rt);
        let report = reported
            .recv_timeout(Duration::from_secs(10))
            .expect("no report");
        assert!(
            report.starts_with("csp: deadlock: all processes are asleep"),
            "{report}"
        );
        assert!(!report.contains("block_on future"), "{report}");
        assert!(
            line_of(&report, a).contains("waiting on recv on channel #"),
            "{report}"
        );
        assert!(
            line_of(&report, b).contains("waiting on recv on channel #"),
            "{report}"
        );
        // Once per deadlock: several grace periods later, nothing more.
        std::thread::sleep(QUIET);
        assert!(
            reported.try_recv().is_err(),
            "the same deadlock was reported twice"
        );
        // The runtime goes on: it runs new work, and a new deadlock is reported anew.
        assert_eq!(
            rt.block_on(async { csp::spawn(async { 5 }).await.unwrap() }),
            5
        );
        let (c, _) = spawn_crossed_pair(&rt);
        // The work above was activity: if the new pair came a grace period after it, the
        // old pair alone may be reported again first.
        let again = loop {
            let report = reported
                .recv_timeout(Duration::from_secs(10))
                .expect("no report naming the new pair");
            if report.contains(&format!("process #{c} ")) {
                break report;
            }
        };
        assert!(line_of(&again, c).contains("waiting on"), "{again}");
        assert_eq!(rt.metrics().processes_alive, 4);
    });
}

#[test]
fn on_deadlock_never_reports_while_a_plain_thread_may_still_send() {
    bounded(20, || {
        let (rt, reported) = reporting_runtime();
        // The channel is made on a plain thread: foreign from the start.
        let (tx, rx) = csp::channel::<u8>();
        let waiter = rt.spawn(async move { rx.recv().await });
        std::thread::sleep(QUIET);
        assert!(reported.try_recv().is_err(), "a false report");
        tx.send_blocking(3).unwrap();
        assert_eq!(rt.block_on(waiter).unwrap(), Ok(3));
        // Nor while a process sleeps on a timer, nor with no process at all.
        let sleeper = rt.spawn(csp::sleep(QUIET));
        rt.block_on(sleeper).unwrap();
        std::thread::sleep(QUIET);
        assert!(reported.try_recv().is_err(), "a false report");
    });
}

#[test]
fn a_panicking_on_deadlock_hook_is_reported_and_the_runtime_goes_on() {
    bounded(20, || {
        let called = common::Counter::new();
        let rt = {
            let called = called.clone();
            csp::Runtime::builder()
                .worker_threads(1)
                .deadlock_grace(GRACE)
                .on_deadlock(move |_| {
                    called.incr();
                    panic!("the hook fails");
                })
                .build()
                .unwrap()
        };
        spawn_crossed_pair(&rt);
        common::wait_until(10, "the hook ran", || called.get() == 1);
        // Once per deadlock, though the hook panicked.
        std::thread::sleep(QUIET);
        assert_eq!(called.get(), 1);
        assert_eq!(
            rt.block_on(async { csp::spawn(async { 1 }).await.unwrap() }),
            1
        );
        // The work above was activity: the same pair may be reported again, until the
        // monitor thread is joined.
        drop(rt);
        let at_drop = called.get();
        std::thread::sleep(QUIET);
        assert_eq!(
            called.get(),
            at_drop,
            "the hook ran after the runtime's drop"
        );
    });
}

#[test]
fn shutdown_timeout_leaves_a_blocked_on_deadlock_hook_behind() {
    bounded(20, || {
        let (release, released) = std::sync::mpsc::channel::<()>();
        let released = std::sync::Mutex::new(released);
        let (entered, in_hook) = std::sync::mpsc::channel::<()>();
        let rt = csp::Runtime::builder()
            .worker_threads(1)
            .deadlock_grace(GRACE)
            .on_deadlock(move |_| {
                let _ = entered.send(());
                // Blocks until the test lets it go: after shutdown_timeout returned.
                let _ = released.lock().unwrap().recv();
            })
            .build()
            .unwrap();
        spawn_crossed_pair(&rt);
        in_hook
            .recv_timeout(Duration::from_secs(10))
            .expect("the hook ran");
        rt.shutdown_timeout(Duration::from_millis(50));
        release.send(()).unwrap();
    });
}
