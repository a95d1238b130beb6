//! `Sender::sink`: a sender as a `futures::Sink`. `StreamExt::forward` into a channel,
//! the `poll_ready`/`start_send`/`poll_flush`/`poll_close` protocol step by step, and
//! closed channels, where every value the sink accepted is either delivered or given
//! back in the error.
//!
//! Every test runs under a watchdog (`common::bounded`).

mod common;

use std::pin::pin;
use std::task::Poll;

use common::{Counter, Tracked, bounded, panic_message};
use futures::{Sink, SinkExt, StreamExt, stream};

const LIMIT: u64 = 20;

/// `Sink::poll_ready` etc. with a waker that does nothing.
fn ready<S: Sink<T> + ?Sized, T>(sink: std::pin::Pin<&mut S>) -> Poll<Result<(), S::Error>> {
    let waker = futures::task::noop_waker();
    sink.poll_ready(&mut std::task::Context::from_waker(&waker))
}

fn flush<S: Sink<T> + ?Sized, T>(sink: std::pin::Pin<&mut S>) -> Poll<Result<(), S::Error>> {
    let waker = futures::task::noop_waker();
    sink.poll_flush(&mut std::task::Context::from_waker(&waker))
}

fn close<S: Sink<T> + ?Sized, T>(sink: std::pin::Pin<&mut S>) -> Poll<Result<(), S::Error>> {
    let waker = futures::task::noop_waker();
    sink.poll_close(&mut std::task::Context::from_waker(&waker))
}

#[test]
fn forward_delivers_a_stream_in_order() {
    for cap in [0, 1, 4, 1000] {
        let got = bounded(LIMIT, move || {
            csp::block_on(async move {
                let (tx, rx) = csp::bounded::<u32>(cap);
                let forwarder =
                    csp::spawn(
                        async move { stream::iter(0..1000).map(Ok).forward(tx.sink()).await },
                    );
                let got: Vec<u32> = rx.collect().await;
                forwarder.await.unwrap().unwrap();
                got
            })
        });
        assert_eq!(got, (0..1000).collect::<Vec<_>>(), "capacity {cap}");
    }
}

#[test]
fn forward_from_another_executor() {
    let got = bounded(LIMIT, || {
        let (tx, rx) = csp::channel::<u32>();
        let forwarder = std::thread::spawn(move || {
            futures::executor::block_on(stream::iter(1..=50).map(Ok).forward(tx.sink()))
        });
        let sum: u32 = csp::block_on(rx.fold(0, |sum, v| async move { sum + v }));
        forwarder.join().unwrap().unwrap();
        sum
    });
    assert_eq!(got, 50 * 51 / 2);
}

#[test]
fn the_sink_holds_one_value_until_the_channel_has_room() {
    let (tx, rx) = csp::bounded::<u8>(1);
    let mut sink = pin!(tx.sink());
    assert!(matches!(ready(sink.as_mut()), Poll::Ready(Ok(()))));
    sink.as_mut().start_send(1).unwrap(); // straight into the buffer
    assert!(matches!(ready(sink.as_mut()), Poll::Ready(Ok(()))));
    sink.as_mut().start_send(2).unwrap(); // the buffer is full: held
    assert_eq!(rx.len(), 1);
    assert!(ready(sink.as_mut()).is_pending());
    assert!(flush(sink.as_mut()).is_pending());
    assert_eq!(rx.try_recv(), Ok(1));
    // The held value goes into the room made.
    assert!(matches!(flush(sink.as_mut()), Poll::Ready(Ok(()))));
    assert_eq!(rx.try_recv(), Ok(2));
    assert!(matches!(ready(sink.as_mut()), Poll::Ready(Ok(()))));
    // Close: nothing held, so the sink closes at once; the channel stays open for the
    // other senders (and this one), and the sink refuses further values.
    let other = tx.clone();
    assert!(matches!(close(sink.as_mut()), Poll::Ready(Ok(()))));
    assert!(!other.is_closed());
    assert_eq!(sink.as_mut().start_send(3), Err(csp::SendError(3)));
    other.try_send(4).unwrap();
    assert_eq!(rx.try_recv(), Ok(4));
}

#[test]
fn close_sends_the_held_value_before_closing_the_sink() {
    let (tx, rx) = csp::channel::<&str>(); // rendezvous: nothing goes in without a receiver
    let mut sink = pin!(tx.sink());
    assert!(matches!(ready(sink.as_mut()), Poll::Ready(Ok(()))));
    sink.as_mut().start_send("held").unwrap();
    assert!(close(sink.as_mut()).is_pending());
    assert!(!rx.is_closed());
    let kept = rx.clone(); // the channel stays open after the receiving thread's end goes
    let got = bounded(LIMIT, move || csp::block_on(rx.recv()));
    assert_eq!(got, Ok("held"));
    assert!(matches!(close(sink.as_mut()), Poll::Ready(Ok(()))));
    assert!(!tx.is_closed());
    // Refused by the closed sink, not by the channel, which is still open.
    assert_eq!(
        sink.as_mut().start_send("late"),
        Err(csp::SendError("late"))
    );
    assert_eq!(kept.try_recv(), Err(csp::TryRecvError::Empty));
}

#[test]
fn a_closed_channel_gives_every_accepted_value_back() {
    let drops = Counter::new();
    let (tx, rx) = csp::bounded::<Tracked>(1);
    {
        let mut sink = pin!(tx.sink());
        sink.as_mut().start_send(Tracked::new(1, &drops)).unwrap();
        sink.as_mut().start_send(Tracked::new(2, &drops)).unwrap(); // the buffer is full: held
        drop(rx); // closes the channel, dropping the buffered value
        assert_eq!(drops.get(), 1);
        let Poll::Ready(Err(csp::SendError(held))) = flush(sink.as_mut()) else {
            panic!("the held value comes back");
        };
        assert_eq!(held.value, 2);
        // Further values come straight back.
        let Err(csp::SendError(refused)) = sink.as_mut().start_send(Tracked::new(3, &drops)) else {
            panic!("a closed channel refuses");
        };
        assert_eq!(refused.value, 3);
        assert!(matches!(ready(sink.as_mut()), Poll::Ready(Ok(()))));
        drop((held, refused));
        assert_eq!(drops.get(), 3);
    }
    drop(tx);
    assert_eq!(drops.get(), 3);
}

#[test]
fn forward_into_a_channel_closed_midway_loses_no_value() {
    let (delivered, returned, pulled) = bounded(LIMIT, || {
        let pulled = Counter::new();
        let counting = pulled.clone();
        csp::block_on(async move {
            let (tx, rx) = csp::bounded::<u32>(2);
            let forwarder = csp::spawn(async move {
                let values = stream::iter(0..1000u32).map(move |v| {
                    counting.incr();
                    Ok(v)
                });
                values.forward(tx.sink()).await
            });
            let mut delivered = Vec::new();
            for _ in 0..10 {
                delivered.push(rx.recv().await.unwrap());
            }
            drop(rx); // closes: values buffered in it are dropped with it
            let returned = forwarder.await.unwrap().unwrap_err().0;
            (delivered, returned, pulled.get())
        })
    });
    assert_eq!(delivered, (0..10).collect::<Vec<_>>());
    // After the 10 delivered: up to 2 buffered when the channel closed (dropped with
    // it), then the one the sink held, given back. `forward` itself may have pulled one
    // more from the stream, waiting for the sink to be ready: that one the sink never
    // accepted.
    assert!((10..=12).contains(&returned), "{returned} given back");
    let pulled = pulled as u32;
    assert!(
        pulled == returned + 1 || pulled == returned + 2,
        "{pulled} pulled"
    );
}

#[test]
fn sink_ext_send_waits_for_the_receiver() {
    let got = bounded(LIMIT, || {
        csp::block_on(async {
            let (tx, rx) = csp::channel::<u32>();
            let receiver = csp::spawn(async move {
                let mut got = Vec::new();
                while let Ok(v) = rx.recv().await {
                    got.push(v);
                }
                got
            });
            {
                let mut sink = pin!(tx.sink());
                for v in 0..5 {
                    sink.send(v).await.unwrap();
                }
                sink.close().await.unwrap();
            }
            drop(tx); // the last sender: the channel closes
            receiver.await.unwrap()
        })
    });
    assert_eq!(got, [0, 1, 2, 3, 4]);
}

#[test]
fn start_send_while_holding_a_value_panics_with_advice() {
    let (tx, _rx) = csp::channel::<u8>();
    let mut sink = pin!(tx.sink());
    sink.as_mut().start_send(1).unwrap();
    let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = sink.as_mut().start_send(2);
    }))
    .unwrap_err();
    let message = panic_message(&*payload).unwrap();
    assert!(
        message.contains("poll_ready must return Ready(Ok)"),
        "{message}"
    );
}
