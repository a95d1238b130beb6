//! Foreign code that panics around channels: wakers run with no entry of a freed
//! future left linked, no value lost, and the rest of a batch still woken.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::{RecvError, SendError, Sender, TryRecvError};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

mod common;

use common::channels::*;
use common::{Counter, CountingWaker, Tracked, bounded, panic_message, runtime};
use common::{poll_noop, poll_with};

// ---------------------------------------------------------------------------------------
// Foreign code that panics: wakers run with no entry of a freed future left linked, no
// value lost, and the rest of a batch still woken
// ---------------------------------------------------------------------------------------

/// A send starts waiting and wakes a `poll_recv` reader whose waker panics: the panic
/// unwinds through the send's poll, and the send future dropped afterwards must leave no
/// entry in the channel (the channel would reach into freed memory).
#[test]
fn a_send_whose_registration_wakes_a_panicking_reader_leaves_no_entry_behind() {
    bounded(10, || {
        let drops = Counter::new();
        let (tx, mut rx) = csp::channel::<Tracked>();
        let (reader, panicking) = CountingWaker::panicking();
        assert!(
            rx.poll_recv(&mut Context::from_waker(&panicking))
                .is_pending()
        );

        let mut send = Box::pin(tx.send(Tracked::new(7, &drops)));
        let unwound = std::panic::catch_unwind(AssertUnwindSafe(|| poll_noop(send.as_mut())));
        let payload = unwound.expect_err("the reader's waker panics through the send's poll");
        assert_eq!(panic_message(&*payload).as_deref(), Some("waker panics"));
        assert_eq!(reader.wakes(), 1);
        drop(send);
        assert_eq!(
            drops.get(),
            1,
            "the unsent value drops with its future, once"
        );

        assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
        assert_eq!(
            drops.get(),
            1,
            "nothing was read from the dropped send's entry"
        );
    });
}

/// A receive takes a value from a waiting sender whose waker panics: the value the
/// receive took must not vanish with the unwinding poll. Dropped afterwards unread, the
/// receive gives it back to the channel, ahead of the others.
#[test]
fn a_receive_that_wakes_a_panicking_sender_loses_no_value() {
    bounded(10, || {
        let drops = Counter::new();
        let (tx, rx) = csp::channel::<Tracked>();
        let (sender, panicking) = CountingWaker::panicking();
        let mut send = Box::pin(tx.send(Tracked::new(3, &drops)));
        assert!(poll_with(send.as_mut(), &panicking).is_pending());

        let mut recv = Box::pin(rx.recv());
        let unwound = std::panic::catch_unwind(AssertUnwindSafe(|| poll_noop(recv.as_mut())));
        assert!(
            unwound.is_err(),
            "the sender's waker panics through the receive's poll"
        );
        assert_eq!(sender.wakes(), 1);
        drop(recv);
        assert_eq!(
            drops.get(),
            0,
            "the received value was given back, not dropped"
        );

        assert!(matches!(poll_noop(send.as_mut()), Poll::Ready(Ok(()))));
        assert_eq!(rx.try_recv().map(|t| t.value), Ok(3));
        assert_eq!(drops.get(), 1);
    });
}

/// `poll_recv` takes a waiting sender's value and that sender's waker panics: the value
/// stays in the receiver's node, and the next `poll_recv` returns it, rather than the
/// receiver failing from then on (and keeping the value from every other receiver).
#[test]
fn a_poll_recv_that_wakes_a_panicking_sender_returns_the_value_when_polled_again() {
    bounded(10, || {
        let drops = Counter::new();
        let (tx, mut rx) = csp::channel::<Tracked>();
        let (sender, panicking) = CountingWaker::panicking();
        let mut send = Box::pin(tx.send(Tracked::new(4, &drops)));
        assert!(poll_with(send.as_mut(), &panicking).is_pending());

        let noop = futures::task::noop_waker();
        let unwound = std::panic::catch_unwind(AssertUnwindSafe(|| {
            rx.poll_recv(&mut Context::from_waker(&noop)).is_ready()
        }));
        assert!(
            unwound.is_err(),
            "the sender's waker panics through the receiver's poll"
        );
        assert_eq!(sender.wakes(), 1);
        assert!(matches!(poll_noop(send.as_mut()), Poll::Ready(Ok(()))));

        let Poll::Ready(Ok(got)) = rx.poll_recv(&mut Context::from_waker(&noop)) else {
            panic!("the value taken before the panic is the next poll's");
        };
        assert_eq!(got.value, 4);
        drop(got);
        assert_eq!(drops.get(), 1);
        assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
    });
}

/// A `Select`'s send hands its value to a waiting receiver whose waker panics: the send
/// cannot be undone, so polling that `SelectFuture` again must not fire the spent arm
/// again (it would claim a second receiver with no value to give it, which would never
/// be woken). The re-poll panics and says so; the second receiver is untouched.
#[test]
fn a_select_future_whose_poll_unwound_is_not_polled_again() {
    bounded(10, || {
        let (tx, rx) = csp::channel::<u32>();
        let rx2 = rx.clone();
        let (first, panicking) = CountingWaker::panicking();
        let mut recv = Box::pin(rx.recv());
        assert!(poll_with(recv.as_mut(), &panicking).is_pending());
        let (second, counting) = CountingWaker::new();
        let mut recv2 = Box::pin(rx2.recv());
        assert!(poll_with(recv2.as_mut(), &counting).is_pending());

        let mut sel = csp::Select::new();
        sel.send(&tx, 5);
        {
            let mut select = Box::pin(sel.select());
            let unwound = std::panic::catch_unwind(AssertUnwindSafe(|| {
                poll_noop(select.as_mut()).is_ready()
            }));
            assert!(
                unwound.is_err(),
                "the receiver's waker panics through the select"
            );
            assert_eq!(first.wakes(), 1);
            let again = std::panic::catch_unwind(AssertUnwindSafe(|| {
                poll_noop(select.as_mut()).is_ready()
            }));
            let payload = again.expect_err("a second poll is refused");
            assert!(
                panic_message(&*payload).is_some_and(|m| m.contains("polled again after a panic")),
                "{:?}",
                panic_message(&*payload)
            );
        }
        assert!(matches!(poll_noop(recv.as_mut()), Poll::Ready(Ok(5))));
        assert_eq!(second.wakes(), 0, "the second receiver was not claimed");
        assert_eq!(tx.try_send(6), Ok(()), "the second receiver still waits");
        assert_eq!(second.wakes(), 1);
        assert!(matches!(poll_noop(recv2.as_mut()), Poll::Ready(Ok(6))));
        drop(sel);
    });
}

/// `try_recv` takes a waiting sender's value and that sender's waker panics: the value
/// goes back to the channel before the panic reaches the caller.
#[test]
fn a_try_recv_that_wakes_a_panicking_sender_loses_no_value() {
    bounded(10, || {
        let drops = Counter::new();
        let (tx, rx) = csp::channel::<Tracked>();
        let (_sender, panicking) = CountingWaker::panicking();
        let mut send = Box::pin(tx.send(Tracked::new(4, &drops)));
        assert!(poll_with(send.as_mut(), &panicking).is_pending());

        let unwound = std::panic::catch_unwind(AssertUnwindSafe(|| rx.try_recv()));
        assert!(unwound.is_err());
        assert_eq!(drops.get(), 0);
        assert_eq!(rx.try_recv().map(|t| t.value), Ok(4));
        assert_eq!(drops.get(), 1);
    });
}

/// A close fires every waiting entry; the first one's waker panics. Every process
/// waiting behind it must still be woken (and the panic reach the closer).
#[test]
fn a_panicking_waker_in_a_close_still_wakes_every_other_waiter() {
    bounded(20, || {
        let rt = runtime(2, "close-panic");
        let (tx, rx) = csp::channel::<u32>();
        let (first, panicking) = CountingWaker::panicking();
        let mut recv = Box::pin(rx.recv());
        assert!(poll_with(recv.as_mut(), &panicking).is_pending());
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let rx = rx.clone();
                rt.spawn(async move { rx.recv().await })
            })
            .collect();
        wait_all_sleeping_on(&rt, &handle_ids(&handles), "recv on channel");

        let closed = std::panic::catch_unwind(AssertUnwindSafe(move || drop(tx)));
        let payload = closed.expect_err("the panic of the first waker reaches the closer");
        assert_eq!(panic_message(&*payload).as_deref(), Some("waker panics"));
        assert_eq!(first.wakes(), 1);
        for handle in handles {
            assert_eq!(rt.block_on(handle).unwrap(), Err(RecvError));
        }
        assert!(matches!(
            poll_noop(recv.as_mut()),
            Poll::Ready(Err(RecvError))
        ));
    });
}

/// The thread of a blocking sender that a waker's clone lets in.
type SenderThread = Arc<Mutex<Option<std::thread::JoinHandle<Result<(), SendError<u32>>>>>>;

/// Lets a blocking sender into `tx`'s channel and waits until it is surely waiting there:
/// run from a waker's clone, while csp has dropped the channel's lock to make it. The
/// sender's thread goes into `thread`.
fn let_a_sender_in(
    tx: Sender<u32>,
    value: u32,
    thread: &SenderThread,
) -> impl FnOnce() + Send + use<> {
    let thread = thread.clone();
    move || {
        let (started, tid) = std::sync::mpsc::channel();
        *thread.lock().unwrap() = Some(std::thread::spawn(move || {
            started.send(thread_id()).unwrap();
            tx.send_blocking(value)
        }));
        // Asleep in the kernel after it started: parked in `send_blocking`, which is all
        // it does (but a thread waiting for valgrind's lock sleeps too, hence the pause
        // after).
        wait_until_asleep(tid.recv().unwrap());
        std::thread::sleep(Duration::from_millis(300 * common::scaled_secs(1)));
    }
}

/// The calling thread's id in the operating system (where it can be watched).
fn thread_id() -> i64 {
    #[cfg(target_os = "linux")]
    // SAFETY: `gettid` takes no arguments and cannot fail (the system call, as libc's
    // wrapper needs glibc 2.30).
    return unsafe { libc::syscall(libc::SYS_gettid) };
    #[cfg(not(target_os = "linux"))]
    return 0;
}

/// Waits until thread `tid` of this process sleeps in the kernel (Linux: `S` in its
/// `/proc` stat); elsewhere, or where `/proc` cannot be read, returns at once.
fn wait_until_asleep(tid: i64) {
    if cfg!(not(target_os = "linux")) || std::fs::metadata("/proc/self/task").is_err() {
        return;
    }
    let stat = format!("/proc/self/task/{tid}/stat");
    common::wait_until(10, "the blocking sender sleeps", || {
        std::fs::read_to_string(&stat).is_ok_and(|line| {
            // The state follows the command name, which is in parentheses.
            line.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('S'))
        })
    });
}

/// Joins the sender `let_a_sender_in` started: it must have been woken, its send done.
fn sender_finished(thread: &SenderThread) {
    let thread = thread.lock().unwrap().take().expect("the waker was cloned");
    assert_eq!(thread.join().unwrap(), Ok(()));
}

/// A receive whose (foreign) waker csp clones with the channel's lock dropped: a sender
/// comes meanwhile, the receive takes its value on the second try, and then the waker
/// clone it made, no longer needed, panics as it drops. The sender must still be woken,
/// and the value must not be lost.
#[test]
fn a_waker_clone_whose_drop_panics_loses_no_wake_of_a_receive() {
    bounded(20, || {
        let (tx, rx) = csp::channel::<u32>();
        let thread = SenderThread::default();
        let waker = common::waker_with_clone_hook(let_a_sender_in(tx.clone(), 7, &thread));
        let mut recv = Box::pin(rx.recv());
        let unwound =
            std::panic::catch_unwind(AssertUnwindSafe(|| poll_with(recv.as_mut(), &waker)));
        let payload = unwound.expect_err("the clone's drop panics through the poll");
        assert_eq!(
            panic_message(&*payload).as_deref(),
            Some("waker drop panics")
        );
        sender_finished(&thread);
        drop(recv);
        assert_eq!(
            rx.recv_blocking(),
            Ok(7),
            "the value went back to the channel"
        );
        drop(tx);
    });
}

/// The same through a `Select`'s registration pass.
#[test]
fn a_waker_clone_whose_drop_panics_loses_no_wake_of_a_select() {
    bounded(20, || {
        let (tx, rx) = csp::channel::<u32>();
        let (_tx2, rx2) = csp::channel::<u32>();
        let thread = SenderThread::default();
        let waker = common::waker_with_clone_hook(let_a_sender_in(tx.clone(), 8, &thread));
        let mut sel = csp::Select::new();
        sel.recv(&rx);
        sel.recv(&rx2);
        {
            let mut select = Box::pin(sel.select());
            let unwound = std::panic::catch_unwind(AssertUnwindSafe(|| {
                poll_with(select.as_mut(), &waker).is_ready()
            }));
            let payload = unwound.expect_err("the clone's drop panics through the poll");
            assert_eq!(
                panic_message(&*payload).as_deref(),
                Some("waker drop panics")
            );
        }
        sender_finished(&thread);
        drop(sel);
        assert_eq!(
            rx.recv_blocking(),
            Ok(8),
            "the value went back to the channel"
        );
        drop(tx);
    });
}

#[test]
fn the_last_receiver_dropped_with_a_watcher_whose_waker_panics_still_drops_the_buffer() {
    // The close that the last receiver's drop makes wakes the watchers of `closed()`; a
    // waker that panicked there skipped the drop of the values nobody can receive any
    // more, which then lived as long as the senders did.
    bounded(30, || {
        let drops = Counter::new();
        let (tx, rx) = csp::bounded::<Tracked>(4);
        tx.try_send(Tracked::new(1, &drops)).unwrap();
        let (_, panicking) = CountingWaker::panicking();
        let mut closed = Box::pin(tx.closed());
        assert!(poll_with(closed.as_mut(), &panicking).is_pending());
        let dropped = std::panic::catch_unwind(AssertUnwindSafe(|| drop(rx)));
        assert!(dropped.is_err(), "the watcher's waker panicked");
        assert_eq!(drops.get(), 1, "the buffered value was dropped");
        drop(closed);
        drop(tx);
        assert_eq!(drops.get(), 1);
    });
}
