//! csp's futures, guards and ends dropped by a thread that is unwinding from a panic
//! already, while they keep a waker of another executor whose drop panics, wake a waker
//! that panics with a payload whose drop panics too, or hold a caught panic nobody took:
//! a second panic out of a destructor would abort the whole process, so csp lets that
//! one go. Each test drops its value inside a panicking scope and checks that the
//! scope's own panic comes out and that the wait was undone; every one of them aborted
//! the test binary before csp caught these panics.

mod common;

use std::future::Future;
use std::time::Duration;

use common::{bounded, drop_while_unwinding, poll_with, waker_with_clone_hook};

/// Polls `future` once with a foreign waker whose clones panic when dropped (it must
/// wait), then drops it while the thread unwinds (`common::drop_while_unwinding`).
fn dropped_while_unwinding<F: Future>(future: F) {
    let mut future = Box::pin(future);
    let waker = waker_with_clone_hook(|| {});
    assert!(
        poll_with(future.as_mut(), &waker).is_pending(),
        "the future waits"
    );
    drop_while_unwinding(future);
}

#[test]
fn a_receive_and_a_send() {
    bounded(20, || {
        let (tx, rx) = csp::channel::<u8>();
        let receiving = rx.clone();
        dropped_while_unwinding(async move { receiving.recv().await });
        assert!(
            tx.try_send(1).unwrap_err().is_full(),
            "nobody waits to receive"
        );
        let sending = tx.clone();
        dropped_while_unwinding(async move { sending.send(2).await });
        assert_eq!(
            rx.try_recv(),
            Err(csp::TryRecvError::Empty),
            "nobody waits to send"
        );
    });
}

#[test]
fn a_receiver_as_a_stream_and_under_a_timeout() {
    use futures::StreamExt;
    bounded(20, || {
        let (tx, rx) = csp::channel::<u8>();
        let mut stream = rx.clone();
        dropped_while_unwinding(async move { stream.next().await });
        let receiving = rx.clone();
        dropped_while_unwinding(csp::timeout(Duration::from_secs(60), async move {
            receiving.recv().await
        }));
        assert!(
            tx.try_send(1).unwrap_err().is_full(),
            "nobody waits to receive"
        );
    });
}

#[test]
fn a_choice() {
    bounded(20, || {
        let (tx1, rx1) = csp::channel::<u8>();
        let (tx2, rx2) = csp::channel::<u8>();
        let (first, second) = (rx1.clone(), rx2.clone());
        dropped_while_unwinding(async move {
            csp::alt! {
                recv(first) -> _v => 1,
                recv(second) -> _v => 2,
            }
        });
        // The receivers are still open, and neither arm waits any longer.
        assert!(
            tx1.try_send(1).unwrap_err().is_full(),
            "the first arm is gone"
        );
        assert!(
            tx2.try_send(2).unwrap_err().is_full(),
            "the second arm is gone"
        );
        drop((rx1, rx2));
    });
}

#[test]
fn a_sleep_and_a_cancellation() {
    bounded(20, || {
        dropped_while_unwinding(csp::sleep(Duration::from_secs(60)));
        let token = csp::CancellationToken::new();
        let waiting = token.clone();
        dropped_while_unwinding(async move { waiting.cancelled().await });
        // Nobody left to wake: the dropped waiter left the token's list.
        token.cancel();
        assert!(token.is_cancelled());
    });
}

/// The set's waiter is dropped with the set's last reference to what its processes'
/// wakers share: with the only worker blocked, nothing runs the aborted process, so
/// that last reference is the set's own, dropped while the thread unwinds.
#[test]
fn a_join_set() {
    bounded(20, || {
        let rt = common::runtime(1, "unwinding-set");
        let (blocked_tx, blocked) = std::sync::mpsc::channel::<()>();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let blocker = rt.spawn(async move {
            blocked_tx.send(()).unwrap();
            // Blocks the worker thread on purpose, until the test lets it go.
            let _ = released.recv();
        });
        blocked.recv().unwrap();
        let mut set = csp::JoinSet::new();
        set.spawn_on(std::future::pending::<()>(), &rt.handle());
        dropped_while_unwinding(async move { set.join_next().await });
        release.send(()).unwrap();
        rt.block_on(blocker).unwrap();
        common::wait_until_no_process(&rt, 10);
    });
}

/// A `par!` whose branches have all ended holds the last reference to its group, and
/// with it the join's waker: both go while the thread unwinds.
#[test]
fn a_par_whose_branches_ended() {
    bounded(20, || {
        let rt = common::runtime(1, "unwinding-par");
        rt.block_on(async {
            let (tx, rx) = csp::channel::<u8>();
            let mut join =
                Box::pin(async move { csp::par!(async move { rx.recv().await }, async { 1 }) });
            let waker = waker_with_clone_hook(|| {});
            assert!(poll_with(join.as_mut(), &waker).is_pending());
            drop(tx);
            common::wait_until(10, "both branches ended", || {
                rt.metrics().processes_alive == 0
            });
            drop_while_unwinding(join);
        });
    });
}

/// A branch panicked with a payload whose own drop panics, and the join is dropped
/// before it takes that failure: the group lets the payload go (once) as it goes.
#[test]
fn a_par_whose_failure_was_never_taken() {
    bounded(20, || {
        let rt = common::runtime(1, "unwinding-par-failure");
        let payload_drops = common::Counter::new();
        rt.block_on(async {
            let drops = payload_drops.clone();
            let (gate, opened) = csp::channel::<()>();
            let mut join = Box::pin(async move {
                csp::par!(
                    async move {
                        let _ = opened.recv().await;
                        std::panic::panic_any(common::PanicOnDrop(drops))
                    },
                    async { 1 }
                )
            });
            let (probe, waker) = common::CountingWaker::new();
            assert!(poll_with(join.as_mut(), &waker).is_pending());
            gate.send(()).await.unwrap();
            common::wait_until(10, "both branches ended", || {
                rt.metrics().processes_alive == 0
            });
            assert_eq!(payload_drops.get(), 0, "the failure is kept for the join");
            assert!(probe.wakes() >= 1, "the failure woke the join");
            drop_while_unwinding(join);
        });
        assert_eq!(payload_drops.get(), 1, "the payload was let go once");
    });
}

#[test]
fn a_socket_read() {
    use futures::AsyncReadExt;
    use std::io::Read;
    bounded(20, || {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.set_nonblocking(true).unwrap();
        let mut stream = csp::net::TcpStream::from_std(client).unwrap();
        dropped_while_unwinding(async move {
            let mut buf = [0u8; 4];
            stream.read(&mut buf).await
        });
        let mut buf = [0u8; 4];
        assert_eq!(server.read(&mut buf).unwrap(), 0, "the socket was closed");
    });
}

/// The last end of a channel dropped while the thread unwinds wakes a foreign waiter on
/// the other side whose wake panics, with a payload whose own drop panics: the close
/// lets that payload go (its drop runs once, its panic is kept), and the waiter sees
/// the channel closed.
#[test]
fn a_last_end_whose_close_wakes_a_waker_that_panics() {
    bounded(20, || {
        let payload_drops = common::Counter::new();
        let waker = panics_with_a_panicky_payload(&payload_drops);
        let (tx, rx) = csp::channel::<u8>();
        let mut receiving = Box::pin(async move { rx.recv().await });
        assert!(poll_with(receiving.as_mut(), &waker).is_pending());
        drop_while_unwinding(tx);
        assert_eq!(payload_drops.get(), 1);
        assert_eq!(
            poll_with(receiving.as_mut(), std::task::Waker::noop()),
            std::task::Poll::Ready(Err(csp::RecvError))
        );

        let (tx, rx) = csp::channel::<u8>();
        let mut sending = Box::pin(async move { tx.send(1).await });
        assert!(poll_with(sending.as_mut(), &waker).is_pending());
        drop_while_unwinding(rx);
        assert_eq!(payload_drops.get(), 2);
        assert!(poll_with(sending.as_mut(), std::task::Waker::noop()).is_ready());
    });
}

/// A waker whose wake panics with a payload whose drop counts into `drops`, then
/// panics too.
fn panics_with_a_panicky_payload(drops: &common::Counter) -> std::task::Waker {
    struct PanicsWithPanickyPayload(common::Counter);

    impl std::task::Wake for PanicsWithPanickyPayload {
        fn wake(self: std::sync::Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            std::panic::panic_any(common::PanicOnDrop(self.0.clone()));
        }
    }

    std::task::Waker::from(std::sync::Arc::new(PanicsWithPanickyPayload(drops.clone())))
}

/// A `try_recv` made while the thread unwinds (in a `Drop`) takes a value and lets the
/// sender it frees into the buffer wake, whose waker panics with such a payload: the
/// payload is let go, and the value is the caller's.
#[test]
fn a_try_recv_while_unwinding_that_wakes_a_waker_that_panics() {
    struct TryRecvOnDrop(
        csp::Receiver<u8>,
        std::sync::mpsc::Sender<Result<u8, csp::TryRecvError>>,
    );

    impl Drop for TryRecvOnDrop {
        fn drop(&mut self) {
            let _ = self.1.send(self.0.try_recv());
        }
    }

    bounded(20, || {
        let payload_drops = common::Counter::new();
        let waker = panics_with_a_panicky_payload(&payload_drops);
        let (tx, rx) = csp::bounded::<u8>(1);
        tx.try_send(1).unwrap();
        let mut sending = Box::pin(async move { tx.send(2).await });
        assert!(
            poll_with(sending.as_mut(), &waker).is_pending(),
            "the buffer is full"
        );
        let (got_tx, got) = std::sync::mpsc::channel();
        drop_while_unwinding(TryRecvOnDrop(rx.clone(), got_tx));
        assert_eq!(got.recv().unwrap(), Ok(1));
        assert_eq!(
            payload_drops.get(),
            1,
            "the waker's payload was let go once"
        );
        assert!(poll_with(sending.as_mut(), std::task::Waker::noop()).is_ready());
        assert_eq!(rx.try_recv(), Ok(2), "the freed send's value is buffered");
    });
}
