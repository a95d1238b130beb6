//! Misuse of `Selected`, unread outcomes, a select with no arm, and timeouts.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::TryRecvError;
use csp::{Select, Selected};
use std::panic::AssertUnwindSafe;
use std::time::Duration;

mod common;

use common::{Counter, Tracked, bounded, panic_message, runtime};

// ---------------------------------------------------------------------------------------
// Misuse of Selected; unread outcomes; no arm; timeout
// ---------------------------------------------------------------------------------------

#[test]
fn selected_read_with_another_channels_end_panics_and_drops_the_value() {
    bounded(30, || {
        let drops = Counter::new();
        let (tx, rx) = csp::bounded::<Tracked>(1);
        let (other_tx, other_rx) = csp::bounded::<Tracked>(1);
        let mut sel = Select::new();
        let r = sel.recv(&rx);

        tx.try_send(Tracked::new(1, &drops)).unwrap();
        let op = sel.try_select().expect("ready");
        assert_eq!(op.index(), r);
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| op.recv(&other_rx)))
            .expect_err("recv with another channel's end must panic");
        let msg = panic_message(&*payload).expect("a string message");
        assert!(
            msg.contains("index"),
            "the message should point at index(): {msg}"
        );
        assert_eq!(
            drops.get(),
            1,
            "the unread value was dropped with the Selected"
        );
        assert!(rx.is_empty(), "and not given back");

        // Right channel, wrong kind.
        tx.try_send(Tracked::new(2, &drops)).unwrap();
        let op = sel.try_select().expect("ready");
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| op.send(&tx)))
            .expect_err("send on a recv arm must panic");
        assert!(panic_message(&*payload).unwrap().contains("index"));
        assert_eq!(drops.get(), 2);

        // A send arm read as another channel's send.
        let mut sel2 = Select::new();
        sel2.send(&other_tx, Tracked::new(3, &drops));
        let op = sel2.try_select().expect("room");
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| op.send(&tx)))
            .expect_err("send with another channel's end must panic");
        assert!(panic_message(&*payload).unwrap().contains("index"));
        assert_eq!(other_rx.try_recv().unwrap().value, 3, "delivered anyway");
        assert_eq!(drops.get(), 3);
        drop(sel2);

        // The Select is still usable after the panics.
        tx.try_send(Tracked::new(4, &drops)).unwrap();
        let op = sel.try_select().expect("ready");
        assert_eq!(op.recv(&rx).unwrap().value, 4);
        assert_eq!(drops.get(), 4);

        // An unread Selected drops its received value (awaited, too).
        tx.try_send(Tracked::new(5, &drops)).unwrap();
        drop(sel.try_select().expect("ready"));
        assert_eq!(drops.get(), 5);
        assert!(rx.is_empty());
        tx.try_send(Tracked::new(6, &drops)).unwrap();
        let op = futures::executor::block_on(sel.select());
        assert_eq!(op.index(), r);
        drop(op);
        assert_eq!(drops.get(), 6);
        assert!(rx.is_empty());
        drop(sel);
        assert_eq!(drops.get(), 6);
    });
}

#[test]
fn select_with_no_arm_panics_unless_it_has_a_timeout() {
    bounded(30, || {
        let mut sel = Select::new();
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| {
            futures::executor::block_on(sel.select()).index()
        }))
        .expect_err("select() with no arm must panic");
        assert!(panic_message(&*payload).unwrap().contains("no arm"));

        // Every arm removed or spent.
        let (tx, rx) = csp::unbounded::<u8>();
        let mut sel = Select::new();
        let r = sel.recv(&rx);
        sel.send(&tx, 1);
        sel.remove(r);
        assert_eq!(sel.try_select().expect("unbounded").send(&tx), Ok(()));
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| {
            futures::executor::block_on(sel.select()).index()
        }))
        .expect_err("select() with every arm removed or spent must panic");
        assert!(panic_message(&*payload).unwrap().contains("no arm"));
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "sent once");

        // With a timeout, no arm means waiting for the deadline.
        let mut sel = Select::new();
        sel.timeout(Duration::from_millis(2));
        let op = futures::executor::block_on(sel.select());
        assert_eq!(op.index(), Select::TIMEOUT);
        assert_eq!(Select::TIMEOUT, usize::MAX);
        let (_tx, rx) = csp::channel::<u8>();
        let payload = std::panic::catch_unwind(AssertUnwindSafe(|| op.recv(&rx)))
            .expect_err("a timeout has no outcome to read");
        assert!(panic_message(&*payload).unwrap().contains("timeout"));

        let payload = std::panic::catch_unwind(|| {
            let mut sel = Select::new();
            sel.remove(0);
        })
        .expect_err("remove of an arm that does not exist");
        assert!(panic_message(&*payload).unwrap().contains("no arm 0"));
    });
}

/// A spawned process may hold a `Selected` across an await, as API.md's own pattern
/// does (`let op = sel.select().await; let v = match op.index() { .. }; x.await;`: the
/// compiler counts `op` as held until its scope ends), so `Selected` must be `Send`.
#[test]
fn selected_is_send_and_may_be_held_across_an_await() {
    fn assert_send<T: Send>() {}
    assert_send::<Selected<'static>>();
    bounded(10, || {
        let rt = runtime(2, "selected-send");
        let (tx, rx) = csp::bounded::<u8>(1);
        let (_tx2, rx2) = csp::bounded::<u8>(1);
        tx.try_send(4).unwrap();
        let got = rt.block_on(rt.spawn(async move {
            let mut sel = Select::new();
            let a = sel.recv(&rx);
            sel.recv(&rx2);
            let op = sel.select().await;
            let v = match op.index() {
                i if i == a => op.recv(&rx),
                _ => op.recv(&rx2),
            };
            csp::yield_now().await;
            v
        }));
        assert_eq!(got.unwrap(), Ok(4));
    });
}

#[test]
fn select_and_its_future_are_send() {
    bounded(10, || {
        fn assert_send<T: Send>(_: &T) {}
        let (tx, rx) = csp::channel::<Box<u8>>();
        let mut sel = Select::new();
        sel.recv(&rx);
        sel.send(&tx, Box::new(1));
        assert_send(&sel);
        {
            let fut = sel.select();
            assert_send(&fut);
        }
        assert!(format!("{sel:?}").contains("Select"));
    });
}

// ---------------------------------------------------------------------------------------
// Timeouts
// ---------------------------------------------------------------------------------------

#[test]
fn a_timeout_fires_when_no_arm_does_and_no_arm_takes_effect() {
    bounded(30, || {
        let rt = runtime(2, "select-timeout");
        rt.block_on(async {
            let (tx, rx) = csp::channel::<Tracked>();
            let (_keep, idle) = csp::channel::<u32>();
            let drops = Counter::new();
            let mut sel = Select::new();
            sel.recv(&idle);
            let send = sel.send(&tx, Tracked::new(1, &drops));
            sel.timeout(Duration::from_millis(3));
            let start = std::time::Instant::now();
            assert_eq!(sel.select().await.index(), Select::TIMEOUT);
            assert!(start.elapsed() >= Duration::from_millis(3));
            // The send arm kept its value: a later select delivers it.
            assert_eq!(drops.get(), 0);
            let receiver = csp::spawn(async move { rx.recv().await.map(|v| v.value) });
            let op = sel.select().await;
            assert_eq!(op.index(), send);
            assert_eq!(op.send(&tx).map_err(|_| ()), Ok(()));
            assert_eq!(receiver.await.unwrap(), Ok(1));
        });
        assert_eq!(rt.metrics().timers_armed, 0);
    });
}

#[test]
fn a_ready_arm_beats_an_expired_timeout() {
    bounded(30, || {
        let (tx, rx) = csp::bounded::<u32>(1);
        tx.try_send(5).unwrap();
        let mut sel = Select::new();
        let r = sel.recv(&rx);
        sel.timeout(Duration::ZERO);
        let op = futures::executor::block_on(sel.select());
        assert_eq!(op.index(), r);
        assert_eq!(op.recv(&rx), Ok(5));
    });
}

#[test]
fn timeouts_racing_senders_lose_no_value() {
    // A consumer selects with a timeout shorter than the producers' pauses, so
    // timeouts and deliveries race; every value sent is received exactly once.
    bounded(60, || {
        let rt = runtime(2, "select-timeout-race");
        let values = 2_000u32;
        let got = rt.block_on(async move {
            let (tx, rx) = csp::channel::<u32>();
            let producer = common::paused_producer(tx, values);
            let mut got = Vec::new();
            loop {
                let mut sel = Select::new();
                sel.recv(&rx);
                sel.timeout(Duration::from_micros(500));
                let op = sel.select().await;
                if op.index() == Select::TIMEOUT {
                    continue;
                }
                match op.recv(&rx) {
                    Ok(v) => got.push(v),
                    Err(_) => break,
                }
            }
            producer.await.unwrap();
            got
        });
        assert_eq!(got, (0..values).collect::<Vec<_>>());
    });
}

#[test]
fn an_alt_future_polled_again_after_its_poll_unwound_touches_no_channel() {
    // `alt!`'s own future, as the macro builds it (through the macros' hidden module,
    // which must stay sound whatever safe code does with it): a send arm fires, and the
    // woken receiver's waker panics out of the poll. Polled again, the future tried the
    // arm once more: it claimed the next waiting receiver, then found its value gone,
    // and left that receiver claimed and never woken.
    use std::pin::pin;
    use std::task::{Poll, Waker};

    use common::{CountingWaker, poll_with};

    bounded(30, || {
        let (tx, rx) = csp::channel::<u32>();
        let (_, panicking) = CountingWaker::panicking();
        let mut first = Box::pin(rx.recv());
        assert!(poll_with(first.as_mut(), &panicking).is_pending());
        let mut arm = pin!(csp::__private::SendArm::new(&tx, 1));
        let mut alt = Box::pin(csp::__private::alt::<1, _>(
            (Some(arm.as_mut()), ()),
            false,
            false,
        ));
        let unwound =
            std::panic::catch_unwind(AssertUnwindSafe(|| poll_with(alt.as_mut(), Waker::noop())));
        assert!(unwound.is_err(), "the woken receiver's waker panicked");
        let (probe, waker) = CountingWaker::new();
        let mut second = Box::pin(rx.recv());
        assert!(poll_with(second.as_mut(), &waker).is_pending());
        let again =
            std::panic::catch_unwind(AssertUnwindSafe(|| poll_with(alt.as_mut(), Waker::noop())));
        let message = panic_message(again.expect_err("polled again").as_ref()).unwrap();
        assert!(message.contains("after a panic unwound"), "{message}");
        drop(alt);
        assert_eq!(poll_with(first.as_mut(), Waker::noop()), Poll::Ready(Ok(1)));
        // The second receiver still waits, unclaimed: a send reaches it and wakes it.
        assert_eq!(tx.try_send(2), Ok(()));
        assert_eq!(probe.wakes(), 1);
        assert_eq!(poll_with(second.as_mut(), &waker), Poll::Ready(Ok(2)));
    });
}
