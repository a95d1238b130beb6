//! `CancellationToken`: cancelled only by `cancel` (never by dropped clones), as a
//! future and as an `alt!` arm, children cancelled with their parents, cancels from a
//! plain thread, the race of a cancel against a choice taking a value (no value lost,
//! exactly one arm), and what deadlock detection makes of a wait on a token.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{Counter, bounded, panic_message, poll_noop, runtime, scaled, wait_until};

#[test]
fn dropping_every_other_clone_never_cancels() {
    bounded(30, || {
        let rt = runtime(2, "cancel-drops");
        let token = csp::CancellationToken::new();
        let clones: Vec<_> = (0..8).map(|_| token.clone()).collect();
        let waiter = rt.spawn({
            let token = token.clone();
            async move {
                csp::alt! {
                    cancelled(token) => "cancelled",
                    after(Duration::from_millis(20)) => "still waiting",
                }
            }
        });
        drop(clones);
        assert_eq!(rt.block_on(waiter).unwrap(), "still waiting");
        assert!(!token.is_cancelled());
    });
}

#[test]
fn cancel_wakes_every_waiter_on_every_clone_once() {
    bounded(30, || {
        let rt = runtime(2, "cancel-wakes");
        let token = csp::CancellationToken::new();
        let woken = Counter::new();
        let waiters: Vec<_> = (0..16)
            .map(|i| {
                let (token, woken) = (token.clone(), woken.clone());
                rt.spawn(async move {
                    if i % 2 == 0 {
                        token.cancelled().await;
                    } else {
                        csp::alt! { cancelled(token) => {} }
                    }
                    woken.incr();
                })
            })
            .collect();
        wait_until(10, "every waiter waits", || {
            rt.processes()
                .iter()
                .all(|p| p.state == csp::ProcessState::Sleeping)
                && rt.metrics().processes_alive == 16
        });
        assert_eq!(woken.get(), 0);
        token.cancel();
        token.cancel(); // a second cancel does nothing
        for waiter in waiters {
            rt.block_on(waiter).unwrap();
        }
        assert_eq!(woken.get(), 16);
        // Cancelled, it stays so: the future is ready at once.
        assert!(poll_noop(pin!(token.cancelled())).is_ready());
    });
}

#[test]
fn children_are_cancelled_with_their_ancestors_and_alone() {
    let root = csp::CancellationToken::new();
    let child = root.child_token();
    let grandchild = child.child_token();
    let sibling = root.child_token();

    grandchild.cancel();
    assert!(grandchild.is_cancelled());
    assert!(!child.is_cancelled() && !root.is_cancelled());

    child.cancel();
    assert!(!root.is_cancelled() && !sibling.is_cancelled());

    let late = child.child_token();
    assert!(
        late.is_cancelled(),
        "a child of a cancelled token is born cancelled"
    );

    let other = sibling.child_token().child_token();
    root.cancel();
    assert!(sibling.is_cancelled() && other.is_cancelled());
    // A dropped child is not kept alive by its parent, nor cancelled by the drop.
    let parent = csp::CancellationToken::new();
    for _ in 0..10_000 {
        drop(parent.child_token());
    }
    assert!(!parent.is_cancelled());
}

#[test]
fn a_cancel_from_a_plain_thread_wakes_a_process() {
    bounded(30, || {
        let rt = runtime(1, "cancel-thread");
        let token = csp::CancellationToken::new();
        let child = token.child_token();
        let waiter = rt.spawn(async move { child.cancelled().await });
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            token.cancel();
        });
        rt.block_on(waiter).unwrap();
        canceller.join().unwrap();
    });
}

#[test]
fn a_cancel_racing_a_send_loses_no_value_and_fires_one_arm() {
    // Each round: a choice waits on a value and a token, a sender and a canceller race
    // it. Exactly one arm fires; a value sent `Ok` is either received by the choice or
    // still in the channel afterwards.
    bounded(60, || {
        let rt = runtime(2, "cancel-race");
        let rounds = scaled(2_000u32);
        let (mut by_value, mut by_cancel) = (0, 0);
        for round in 0..rounds {
            let (tx, rx) = csp::bounded::<u32>(1);
            let token = csp::CancellationToken::new();
            let sender = rt.spawn(async move { tx.try_send(round).is_ok() });
            let canceller = rt.spawn({
                let token = token.clone();
                async move { token.cancel() }
            });
            let (fired, rx) = rt.block_on(async move {
                let fired = csp::alt! {
                    recv(rx) -> msg => Some(msg.unwrap()),
                    cancelled(token) => None,
                };
                (fired, rx)
            });
            let sent = rt.block_on(sender).unwrap();
            rt.block_on(canceller).unwrap();
            match fired {
                Some(value) => {
                    assert!(sent && value == round);
                    by_value += 1;
                }
                None => {
                    assert_eq!(
                        rx.try_recv().ok(),
                        sent.then_some(round),
                        "a value was lost"
                    );
                    by_cancel += 1;
                }
            }
        }
        assert_eq!(by_value + by_cancel, rounds);
    });
}

#[test]
fn a_process_waiting_on_a_token_only_processes_hold_is_a_deadlock() {
    bounded(30, || {
        let rt = csp::Runtime::builder()
            .worker_threads(2)
            .deadlock_grace(Duration::from_millis(100))
            .build()
            .unwrap();
        let payload = catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(async {
                let token = csp::CancellationToken::new();
                let waiter = csp::spawn({
                    let token = token.clone();
                    async move { token.cancelled().await }
                });
                waiter.await.unwrap();
                drop(token);
            })
        }))
        .expect_err("the deadlock was not reported");
        let report = panic_message(&*payload).unwrap();
        assert!(
            report.starts_with("csp: deadlock: all processes are asleep"),
            "{report}"
        );
    });
}

#[test]
fn a_wait_on_a_child_token_or_a_token_a_thread_holds_is_never_a_deadlock() {
    bounded(30, || {
        let rt = csp::Runtime::builder()
            .worker_threads(2)
            .deadlock_grace(Duration::from_millis(50))
            .build()
            .unwrap();
        // A child: its ancestors may be cancelled from anywhere.
        let root = csp::CancellationToken::new();
        let child = root.child_token();
        let late = std::thread::spawn({
            let root = root.clone();
            move || {
                std::thread::sleep(Duration::from_millis(300));
                root.cancel();
            }
        });
        rt.block_on(async move { child.cancelled().await });
        late.join().unwrap();
        // A clone made on a plain thread: the thread may cancel it.
        let token = rt.block_on(async { csp::CancellationToken::new() });
        let on_thread = std::thread::spawn({
            let token = token.clone();
            move || {
                std::thread::sleep(Duration::from_millis(300));
                token.cancel();
            }
        });
        rt.block_on(async move { token.cancelled().await });
        on_thread.join().unwrap();
    });
}

#[test]
fn a_waker_that_panics_as_cancel_wakes_it_leaves_no_child_uncancelled() {
    bounded(30, || {
        let rt = runtime(1, "cancel-panic");
        let token = csp::CancellationToken::new();
        let child = token.child_token();
        let grandchild = child.child_token();
        // A future of another executor waits on the token with a waker that panics.
        let (probe, waker) = common::CountingWaker::panicking();
        let mut foreign = Box::pin(token.cancelled());
        assert!(common::poll_with(foreign.as_mut(), &waker).is_pending());
        // A process waits on the grandchild.
        let waiter = rt.spawn({
            let grandchild = grandchild.clone();
            async move { grandchild.cancelled().await }
        });
        wait_until(10, "the process waits", || {
            rt.processes()
                .iter()
                .any(|p| p.id == waiter.id() && p.state == csp::ProcessState::Sleeping)
        });
        let payload = catch_unwind(AssertUnwindSafe(|| token.cancel()))
            .expect_err("the waker's panic is resumed");
        assert!(panic_message(payload.as_ref()).is_some());
        assert_eq!(probe.wakes(), 1);
        assert!(child.is_cancelled() && grandchild.is_cancelled());
        rt.block_on(waiter).unwrap();
        assert!(poll_noop(foreign.as_mut()).is_ready());
    });
}

#[test]
fn a_drop_guard_dropped_while_unwinding_survives_a_waker_that_panics() {
    // The guard cancels on the way out of a panicking scope; a waiter's waker panics as
    // the cancel wakes it. A second panic out of a drop during unwinding would abort the
    // whole process: the first panic must come out, the token cancelled.
    bounded(30, || {
        let token = csp::CancellationToken::new();
        let (probe, waker) = common::CountingWaker::panicking();
        let mut foreign = Box::pin(token.cancelled());
        assert!(common::poll_with(foreign.as_mut(), &waker).is_pending());
        common::drop_while_unwinding(token.clone().drop_guard());
        assert_eq!(probe.wakes(), 1, "the waiter was woken");
        assert!(token.is_cancelled());
        assert!(poll_noop(foreign.as_mut()).is_ready());
        // Not unwinding, the guard resumes the waker's panic, as `cancel` does.
        let token = csp::CancellationToken::new();
        let mut foreign = Box::pin(token.cancelled());
        assert!(common::poll_with(foreign.as_mut(), &waker).is_pending());
        let guard = token.clone().drop_guard();
        let payload = catch_unwind(AssertUnwindSafe(move || drop(guard)))
            .expect_err("the waker's panic is resumed");
        assert_ne!(
            panic_message(payload.as_ref()).as_deref(),
            Some("the scope's own panic")
        );
        assert!(token.is_cancelled());
    });
}

/// A waker that panics as it wakes, with a payload whose own drop panics.
struct PanicsWithPanickyPayload(Counter);

impl std::task::Wake for PanicsWithPanickyPayload {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        std::panic::panic_any(common::PanicOnDrop(self.0.clone()));
    }
}

#[test]
fn a_drop_guard_dropped_while_unwinding_lets_go_of_a_panic_whose_payload_panics_on_drop() {
    // As above, but the waker panics with a payload whose own drop panics: the guard,
    // unwinding already, must let that payload go without a panic out of its drop,
    // which would abort the process.
    bounded(30, || {
        let payload_drops = Counter::new();
        let waker = std::task::Waker::from(std::sync::Arc::new(PanicsWithPanickyPayload(
            payload_drops.clone(),
        )));
        let token = csp::CancellationToken::new();
        let mut foreign = Box::pin(token.cancelled());
        assert!(common::poll_with(foreign.as_mut(), &waker).is_pending());
        common::drop_while_unwinding(token.clone().drop_guard());
        assert_eq!(
            payload_drops.get(),
            1,
            "the waker's payload was let go once"
        );
        assert!(token.is_cancelled());
        assert!(poll_noop(foreign.as_mut()).is_ready());
    });
}

#[test]
fn a_cancel_whose_wakers_panic_in_two_tokens_still_cancels_the_whole_tree() {
    // The waiters of a token and of its child panic as they are woken, with payloads
    // whose own drops panic: `cancel` resumes the first panic, lets the second's payload
    // go with its drop's panic caught, and reaches the grandchild all the same (the
    // second payload's drop panicked out of `cancel` before it got there).
    bounded(30, || {
        let payload_drops = Counter::new();
        let waker = std::task::Waker::from(std::sync::Arc::new(PanicsWithPanickyPayload(
            payload_drops.clone(),
        )));
        let token = csp::CancellationToken::new();
        let child = token.child_token();
        let grandchild = child.child_token();
        let mut on_token = Box::pin(token.cancelled());
        let mut on_child = Box::pin(child.cancelled());
        let (probe, probe_waker) = common::CountingWaker::new();
        let mut on_grandchild = Box::pin(grandchild.cancelled());
        assert!(common::poll_with(on_token.as_mut(), &waker).is_pending());
        assert!(common::poll_with(on_child.as_mut(), &waker).is_pending());
        assert!(common::poll_with(on_grandchild.as_mut(), &probe_waker).is_pending());
        let payload = catch_unwind(AssertUnwindSafe(|| token.cancel()))
            .expect_err("the first waker's panic is resumed");
        assert_eq!(payload_drops.get(), 1, "the second payload was let go");
        assert!(grandchild.is_cancelled());
        assert_eq!(probe.wakes(), 1, "the grandchild's waiter was woken");
        // The first payload, resumed: its drop panics too, caught here.
        let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
        assert_eq!(payload_drops.get(), 2);
    });
}

#[test]
fn a_token_marked_foreign_is_never_a_deadlock_while_a_thread_may_cancel_it() {
    bounded(30, || {
        let rt = csp::Runtime::builder()
            .worker_threads(2)
            .deadlock_grace(Duration::from_millis(50))
            .build()
            .unwrap();
        let (clones, clone) = std::sync::mpsc::channel::<csp::CancellationToken>();
        // The clone reaches the thread unused, as a signal handler's would.
        let handler = std::thread::spawn(move || {
            let token = clone.recv().unwrap();
            std::thread::sleep(Duration::from_millis(300));
            token.cancel();
        });
        rt.block_on(async move {
            let token = csp::CancellationToken::new();
            token.mark_foreign();
            clones.send(token.clone()).unwrap();
            token.cancelled().await;
        });
        handler.join().unwrap();
    });
}

#[test]
fn tokens_dropped_while_the_wait_graph_is_drawn_leave_the_census_no_dangling_channel() {
    // A wait enrols its token's channel in the census, which the wait graph walks, by
    // address. When a child token that alone kept its parent alive goes, the parent's
    // node is moved out of its `Arc` and that memory freed before the channel leaves the
    // census: a drawing in between read freed memory (AddressSanitizer and valgrind
    // report it; without them it may pass by luck). The channel is boxed now.
    bounded(120, || {
        let rt = runtime(1, "census");
        let handle = rt.handle();
        // Many enrolled channels make each drawing long, so drops land inside one.
        let kept: Vec<_> = (0..scaled(300usize))
            .map(|_| enrolled(csp::CancellationToken::new()))
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let drawer = std::thread::spawn({
            let stop = stop.clone();
            move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = handle.wait_graph();
                }
            }
        });
        for _ in 0..scaled(3_000usize) {
            let root = enrolled(csp::CancellationToken::new());
            let child = root.child_token();
            drop(root);
            drop(child);
        }
        stop.store(true, Ordering::Relaxed);
        drawer.join().unwrap();
        drop(kept);
    });
}

/// `token`, its channel enrolled in the census by a wait that was polled once.
fn enrolled(token: csp::CancellationToken) -> csp::CancellationToken {
    assert!(poll_noop(pin!(token.cancelled())).is_pending());
    token
}
