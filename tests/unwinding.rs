//! csp's futures and guards dropped by a thread that is unwinding from a panic already,
//! while they keep a waker of another executor whose drop panics: a second panic out of
//! a destructor would abort the whole process, so csp lets that one go. Each test drops
//! its future inside a panicking scope and checks that the scope's own panic comes out
//! and that the wait was undone (a test that fails here aborts the test binary).

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

#[test]
fn a_join_set_and_a_par() {
    bounded(20, || {
        let mut set = csp::JoinSet::new();
        set.spawn(std::future::pending::<()>());
        dropped_while_unwinding(async move { set.join_next().await });
        let (tx, rx) = csp::channel::<u8>();
        dropped_while_unwinding(
            async move { csp::par!(async move { rx.recv().await }, async { 1 }) },
        );
        common::wait_until(10, "the par!'s branch ended with its receiver", || {
            tx.try_send(1).is_err_and(|err| err.is_closed())
        });
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
/// the other side whose waker panics: that panic is let go, and the waiter sees the
/// channel closed.
#[test]
fn a_last_end_whose_close_wakes_a_panicking_waker() {
    use common::CountingWaker;
    bounded(20, || {
        let (tx, rx) = csp::channel::<u8>();
        let (probe, waker) = CountingWaker::panicking();
        let mut receiving = Box::pin(async move { rx.recv().await });
        assert!(poll_with(receiving.as_mut(), &waker).is_pending());
        drop_while_unwinding(tx);
        assert_eq!(probe.wakes(), 1);
        assert_eq!(
            poll_with(receiving.as_mut(), &waker),
            std::task::Poll::Ready(Err(csp::RecvError))
        );

        let (tx, rx) = csp::channel::<u8>();
        let mut sending = Box::pin(async move { tx.send(1).await });
        assert!(poll_with(sending.as_mut(), &waker).is_pending());
        drop_while_unwinding(rx);
        assert_eq!(probe.wakes(), 2);
        assert!(poll_with(sending.as_mut(), &waker).is_ready());
    });
}
