//! `JoinSet`: processes owned by a value. Joined in the order they end, each exactly
//! once; aborted (their futures dropped, counted) by `abort_all`, `abort`, `shutdown`,
//! `join_all`'s first failure and the set's drop; detached by `detach_all`; shown as a
//! group in dumps, the wait graph and deadlock reports; awaited from another executor.

mod common;

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::time::Duration;

use common::{Counter, Tracked, bounded, panic_message, poll_noop, runtime, wait_until};

/// A process body that counts its drop and never ends.
fn endless(drops: &Counter) -> impl Future<Output = u32> + Send + 'static {
    let guard = Tracked::new(0, drops);
    async move {
        let _guard = guard;
        std::future::pending::<u32>().await
    }
}

#[test]
fn join_next_hands_out_each_process_once_in_the_order_they_end() {
    bounded(30, || {
        let rt = runtime(2, "set-order");
        let (order, ids) = rt.block_on(async {
            let mut set = csp::JoinSet::new();
            let mut gates = Vec::new();
            let mut ids = Vec::new();
            for i in 0..5u32 {
                let (open, gate) = csp::channel::<()>();
                gates.push(open);
                ids.push(set.spawn(async move {
                    gate.recv().await.unwrap();
                    i
                }));
            }
            assert_eq!(set.len(), 5);
            assert!(set.try_join_next().is_none(), "none has ended");
            // Released in the order 3, 1, 4, 0, 2: joined in that order.
            let mut order = Vec::new();
            for i in [3, 1, 4, 0, 2] {
                gates[i].send(()).await.unwrap();
                let (id, output) = set.join_next_with_id().await.unwrap();
                assert_eq!(id, ids[i]);
                order.push(output.unwrap());
            }
            assert!(set.is_empty());
            assert!(set.join_next().await.is_none());
            (order, ids)
        });
        assert_eq!(order, [3, 1, 4, 0, 2]);
        assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 5);
    });
}

#[test]
fn processes_that_end_before_the_join_are_joined_in_the_order_they_ended() {
    // All five end, one after another, before the set is awaited: the set still hands
    // them out in that order (it queued them as they ended), oldest first.
    bounded(30, || {
        let rt = runtime(2, "set-batch-order");
        let order = rt.block_on(async {
            let mut set = csp::JoinSet::new();
            let mut gates = Vec::new();
            for i in 0..5u32 {
                let (open, gate) = csp::channel::<()>();
                gates.push(open);
                set.spawn(async move {
                    gate.recv().await.unwrap();
                    i
                });
            }
            // Polls every handle once: each process's end now queues its slot.
            assert!(set.try_join_next().is_none(), "none has ended");
            let alive = || csp::Handle::current().metrics().processes_alive;
            let before = alive();
            for (n, i) in [3, 1, 4, 0, 2].into_iter().enumerate() {
                gates[i].send(()).await.unwrap();
                while alive() > before - n as u64 - 1 {
                    csp::sleep(Duration::from_millis(1)).await;
                }
                // A process leaves the count just before its end queues its slot, on
                // its worker's thread: time for that before the next is let go.
                csp::sleep(Duration::from_millis(20)).await;
            }
            let mut order = Vec::new();
            while let Some(output) = set.join_next().await {
                order.push(output.unwrap());
            }
            order
        });
        assert_eq!(order, [3, 1, 4, 0, 2]);
    });
}

#[test]
fn many_processes_are_each_joined_once() {
    bounded(60, || {
        let rt = runtime(2, "set-many");
        let n = common::scaled(10_000u64);
        let sum = rt.block_on(async move {
            let mut set = csp::JoinSet::new();
            for i in 0..n {
                set.spawn(async move {
                    if i % 3 == 0 {
                        csp::yield_now().await;
                    }
                    i
                });
            }
            let mut sum = 0;
            let mut joined = 0;
            while let Some(done) = set.join_next().await {
                sum += done.unwrap();
                joined += 1;
            }
            assert_eq!(joined, n);
            sum
        });
        assert_eq!(sum, n * (n - 1) / 2);
    });
}

#[test]
fn dropping_the_set_aborts_every_process_in_it() {
    bounded(30, || {
        let rt = runtime(2, "set-drop");
        let drops = Counter::new();
        {
            let mut set = csp::JoinSet::new();
            for _ in 0..16 {
                set.spawn_on(endless(&drops), &rt.handle());
            }
            wait_until(10, "every process is alive", || {
                rt.metrics().processes_alive == 16
            });
            assert_eq!(drops.get(), 0);
        }
        wait_until(10, "every future is dropped", || drops.get() == 16);
        wait_until(10, "no process is left", || {
            rt.metrics().processes_alive == 0
        });
        assert_eq!(drops.get(), 16);
    });
}

#[test]
fn abort_all_abort_and_shutdown_cancel_exactly_what_they_name() {
    bounded(30, || {
        let rt = runtime(2, "set-abort");
        let drops = Counter::new();
        rt.block_on(async {
            let mut set = csp::JoinSet::new();
            let first = set.spawn(endless(&drops));
            let _second = set.spawn(endless(&drops));
            let done = set.spawn(async { 7 });
            // The finished one first (the others never end).
            let (id, output) = set.join_next_with_id().await.unwrap();
            assert_eq!((id, output.unwrap()), (done, 7));
            assert!(set.abort(first));
            assert!(!set.abort(done), "no longer in the set");
            let (id, output) = set.join_next_with_id().await.unwrap();
            assert_eq!(id, first);
            assert!(output.unwrap_err().is_cancelled());
            assert_eq!(drops.get(), 1);
            set.shutdown().await;
            assert!(set.is_empty());
            assert_eq!(drops.get(), 2, "shutdown waits for every future's drop");

            set.spawn(endless(&drops));
            set.spawn(endless(&drops));
            set.abort_all();
            let mut cancelled = 0;
            while let Some(done) = set.join_next().await {
                assert!(done.unwrap_err().is_cancelled());
                cancelled += 1;
            }
            assert_eq!(cancelled, 2);
            assert_eq!(drops.get(), 4);
        });
        assert_eq!(rt.metrics().processes_alive, 0);
    });
}

#[test]
fn join_all_drops_what_it_gathered_before_a_failure_with_each_drops_panic_caught() {
    // Two outputs gathered, whose drops panic, then a process panics: join_all resumes
    // that panic, the outputs dropped first, each drop's panic caught (the second,
    // while the first unwound, aborted the process).
    bounded(30, || {
        let rt = runtime(2, "set-join-all-drops");
        let dropped = Counter::new();
        let payload = catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(async {
                let mut set = csp::JoinSet::new();
                let (ended, both_ended) = csp::channel::<()>();
                for _ in 0..2 {
                    let (ended, dropped) = (ended.clone(), dropped.clone());
                    set.spawn(async move {
                        drop(ended);
                        common::PanicOnDrop(dropped)
                    });
                }
                drop(ended);
                set.spawn(async move {
                    // Once both have ended (their senders dropped with their futures).
                    let _ = both_ended.recv().await;
                    panic!("the third failed")
                });
                set.join_all().await
            })
        }))
        .expect_err("join_all resumes the panic");
        assert_eq!(
            panic_message(payload.as_ref()).as_deref(),
            Some("the third failed")
        );
        assert_eq!(dropped.get(), 2);
    });
}

#[test]
fn shutdown_waits_for_every_process_though_a_drop_of_what_one_left_panics() {
    bounded(30, || {
        let rt = runtime(2, "set-shutdown-drops");
        let (dropped, aborted) = (Counter::new(), Counter::new());
        let payload = catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(async {
                let mut set = csp::JoinSet::new();
                for _ in 0..2 {
                    let dropped = dropped.clone();
                    set.spawn(async move { Some(common::PanicOnDrop(dropped)) });
                }
                for _ in 0..3 {
                    let endless = endless(&aborted);
                    set.spawn(async move {
                        endless.await;
                        None
                    });
                }
                // Both quick ones have ended: their outputs wait to be dropped.
                while csp::Handle::current().metrics().processes_alive > 3 {
                    csp::sleep(Duration::from_millis(1)).await;
                }
                set.shutdown().await;
                unreachable!("the first drop's panic is resumed")
            })
        }))
        .expect_err("shutdown resumes the first drop's panic");
        assert_eq!(
            panic_message(payload.as_ref()).as_deref(),
            Some("panic in drop")
        );
        assert_eq!(dropped.get(), 2);
        assert_eq!(
            aborted.get(),
            3,
            "every process ended before shutdown returned"
        );
    });
}

#[test]
fn join_all_aborts_the_rest_at_the_first_panic_and_resumes_it() {
    bounded(30, || {
        let rt = runtime(2, "set-join-all");
        let drops = Counter::new();
        let payload = catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(async {
                let mut set = csp::JoinSet::new();
                for _ in 0..3 {
                    set.spawn(endless(&drops));
                }
                set.spawn(async { panic!("one of them failed") });
                set.join_all().await
            })
        }))
        .expect_err("join_all resumes the panic");
        assert_eq!(
            panic_message(payload.as_ref()).as_deref(),
            Some("one of them failed")
        );
        assert_eq!(
            drops.get(),
            3,
            "the others were aborted before join_all returned"
        );
        assert_eq!(rt.metrics().processes_alive, 0);

        let mut all = rt.block_on(async {
            let mut set = csp::JoinSet::new();
            for i in 0..4 {
                set.spawn(async move { i * 10 });
            }
            set.join_all().await
        });
        all.sort();
        assert_eq!(all, [0, 10, 20, 30]);
    });
}

#[test]
fn detached_processes_run_on_after_the_set_is_dropped() {
    bounded(30, || {
        let rt = runtime(2, "set-detach");
        let got = rt.block_on(async {
            let (tx, rx) = csp::channel::<u32>();
            let mut set = csp::JoinSet::new();
            for i in 0..3 {
                let tx = tx.clone();
                set.spawn(async move { tx.send(i).await.unwrap() });
            }
            set.detach_all();
            assert!(set.is_empty());
            drop((set, tx));
            let mut got = Vec::new();
            while let Ok(v) = rx.recv().await {
                got.push(v);
            }
            got.sort();
            got
        });
        assert_eq!(got, [0, 1, 2]);
    });
}

#[test]
fn a_dropped_join_next_takes_nothing_out_of_the_set() {
    bounded(30, || {
        let rt = runtime(1, "set-cancel-safe");
        rt.block_on(async {
            let mut set = csp::JoinSet::new();
            let (open, gate) = csp::channel::<()>();
            set.spawn(async move { gate.recv().await.unwrap() });
            {
                let next = pin!(set.join_next());
                assert!(poll_noop(next).is_pending());
            }
            open.send(()).await.unwrap();
            assert!(set.join_next().await.unwrap().is_ok());
            assert!(set.join_next().await.is_none());
        });
    });
}

#[test]
fn the_processes_of_a_set_show_as_its_group() {
    bounded(30, || {
        let rt = runtime(2, "set-group");
        let mut set = csp::JoinSet::new();
        let made_at = line!() - 1;
        let mut ids = BTreeSet::new();
        for _ in 0..3 {
            ids.insert(set.spawn_on(
                async {
                    let (_tx, rx) = csp::channel::<u8>();
                    rx.recv().await
                },
                &rt.handle(),
            ));
        }
        let outside = rt.spawn(std::future::pending::<()>());
        wait_until(10, "every process sleeps", || {
            rt.processes()
                .iter()
                .all(|p| p.state == csp::ProcessState::Sleeping)
                && rt.metrics().processes_alive == 4
        });
        for p in rt.processes() {
            let expected = ids.contains(&p.id).then_some(set.id());
            assert_eq!(p.group, expected, "process #{}", p.id);
        }
        let dot = rt.wait_graph();
        let cluster = format!("subgraph cluster_set{} {{", set.id());
        let start = dot
            .find(&cluster)
            .unwrap_or_else(|| panic!("no cluster in:\n{dot}"));
        let end = start + dot[start..].find("\n    }\n").unwrap();
        let inside = &dot[start..end];
        assert!(
            inside.contains(&format!("JoinSet #{}", set.id())),
            "{inside}"
        );
        assert!(
            inside.contains(&format!("join_set.rs:{made_at}:")),
            "{inside}"
        );
        for id in &ids {
            assert!(inside.contains(&format!("p{id} [shape=box")), "{inside}");
        }
        assert!(
            !inside.contains(&format!("p{} [", outside.id())),
            "{inside}"
        );
        drop(set);
        wait_until(10, "the set's processes are gone", || {
            rt.metrics().processes_alive == 1
        });
        assert!(rt.processes().iter().all(|p| p.group.is_none()));
    });
}

#[test]
fn a_deadlock_report_names_the_set_of_each_process() {
    bounded(30, || {
        let rt = csp::Runtime::builder()
            .worker_threads(2)
            .deadlock_grace(Duration::from_millis(100))
            .build()
            .unwrap();
        let payload = catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(async {
                let (_tx, rx) = csp::channel::<u8>();
                let mut set = csp::JoinSet::new();
                set.spawn(async move { rx.recv().await.unwrap() });
                set.join_next().await
            })
        }))
        .expect_err("the deadlock was not reported");
        let report = panic_message(&*payload).unwrap();
        assert!(report.contains(" in JoinSet #"), "{report}");
    });
}

#[test]
fn a_set_of_processes_on_the_default_runtime_is_joined_from_tokio() {
    bounded(30, || {
        let tokio = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let sum = tokio.block_on(async {
            let mut set = csp::JoinSet::new();
            for i in 1..=4u32 {
                set.spawn(async move {
                    csp::yield_now().await;
                    i
                });
            }
            let mut sum = 0;
            while let Some(done) = set.join_next().await {
                sum += done.unwrap();
            }
            sum
        });
        assert_eq!(sum, 10);
    });
}

/// A set on `rt` with one process that waits until `open` is sent on, polled once by
/// hand with a counting waker (pending): the set, `open`, the probe and the waker.
fn polled_while_a_process_waits(
    rt: &csp::Runtime,
) -> (
    csp::JoinSet<()>,
    csp::Sender<()>,
    std::sync::Arc<common::CountingWaker>,
    std::task::Waker,
) {
    let mut set = csp::JoinSet::new();
    let (open, gate) = csp::channel::<()>();
    set.spawn_on(async move { gate.recv().await.unwrap() }, &rt.handle());
    let (probe, waker) = common::CountingWaker::new();
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(set.poll_join_next(&mut cx).is_pending());
    (set, open, probe, waker)
}

#[test]
fn try_join_next_keeps_the_waker_of_a_pending_join_next() {
    bounded(30, || {
        let rt = runtime(1, "set-try-keeps-waker");
        let (mut set, open, probe, _waker) = polled_while_a_process_waits(&rt);
        assert!(set.try_join_next().is_none());
        open.send_blocking(()).unwrap();
        wait_until(10, "the pending join_next is woken", || probe.wakes() >= 1);
        assert!(set.try_join_next().unwrap().is_ok());
    });
}

#[test]
fn a_process_spawned_after_a_pending_poll_wakes_that_poll_when_it_ends() {
    // A hand-written future polls the set (pending: the running process waits for the
    // new one's result), then spawns into it. The new process has no waker of the
    // waiter until the set polls its handle, so its end must still wake the waiter.
    bounded(30, || {
        let rt = runtime(1, "set-spawn-after-poll");
        let (mut set, open, probe, waker) = polled_while_a_process_waits(&rt);
        let mut cx = std::task::Context::from_waker(&waker);
        set.spawn_on(async {}, &rt.handle());
        // Polled again at each wake, as an executor would, until the new process ends.
        let mut woken = 0;
        let ended = loop {
            wait_until(10, "the pending poll is woken", || probe.wakes() > woken);
            woken = probe.wakes();
            if let std::task::Poll::Ready(ended) = set.poll_join_next(&mut cx) {
                break ended;
            }
        };
        assert!(ended.expect("a process ended").is_ok());
        open.send_blocking(()).unwrap();
        assert!(rt.block_on(set.join_next()).unwrap().is_ok());
        assert!(set.is_empty());
    });
}

#[test]
fn processes_ending_while_the_set_detaches_them_leave_no_stale_slot() {
    bounded(60, || {
        let rt = runtime(2, "set-detach-race");
        for _ in 0..common::scaled(300u32) {
            let mut set = csp::JoinSet::new();
            for i in 0..8u32 {
                set.spawn_on(async move { i }, &rt.handle());
            }
            // Some end while the set lets go of them.
            std::thread::yield_now();
            set.detach_all();
            let id = set.spawn_on(async { 99 }, &rt.handle());
            let (joined, output) = rt.block_on(set.join_next_with_id()).unwrap();
            assert_eq!((joined, output.unwrap()), (id, 99));
            assert!(set.is_empty());
        }
    });
}
