//! What process dumps say of processes blocked on channels.
//!
//! Every test runs under a watchdog (`common::bounded`) and counts the drops of its
//! payloads wherever a value could be lost or duplicated.

use csp::RecvError;
use std::collections::HashSet;

mod common;

use common::channels::*;
use common::{bounded, runtime};

// ---------------------------------------------------------------------------------------
// Process dumps
// ---------------------------------------------------------------------------------------

#[test]
fn a_process_blocked_in_recv_shows_in_the_dump() {
    bounded(20, || {
        let rt = runtime(2, "chan-dump-recv");
        for kind in KINDS {
            let (tx, rx) = make::<u8>(kind);
            let expected = format!("recv on channel #{}", channel_id(&rx));
            let receiver = rt.spawn(async move { rx.recv().await });
            let shown = wait_sleeping_on(&rt, receiver.id(), "recv on channel #");
            assert_eq!(shown, expected, "{kind:?}");
            tx.try_send(5).unwrap();
            assert_eq!(rt.block_on(receiver).unwrap(), Ok(5));
        }
    });
}

#[test]
fn a_process_blocked_in_send_shows_in_the_dump() {
    bounded(20, || {
        let rt = runtime(2, "chan-dump-send");
        for kind in [Kind::Rendezvous, Kind::Bounded(1)] {
            let (tx, rx) = make::<u8>(kind);
            let expected = format!("send on channel #{}", channel_id(&tx));
            let sender = rt.spawn(async move {
                for v in 0..2 {
                    tx.send(v).await.unwrap();
                }
            });
            let shown = wait_sleeping_on(&rt, sender.id(), "send on channel #");
            assert_eq!(shown, expected, "{kind:?}");
            assert_eq!(rx.recv_blocking(), Ok(0));
            assert_eq!(rx.recv_blocking(), Ok(1));
            let id = sender.id();
            rt.block_on(sender).unwrap();
            assert!(
                rt.processes().iter().all(|p| p.id != id),
                "finished: not live"
            );
        }
        // Two channels, two processes: each names its own channel.
        let (tx_a, _rx_a) = csp::channel::<u8>();
        let (_tx_b, rx_b) = csp::channel::<u8>();
        let (id_a, id_b) = (channel_id(&tx_a), channel_id(&rx_b));
        assert_ne!(id_a, id_b);
        let a = rt.spawn(async move { tx_a.send(1).await.is_ok() });
        let b = rt.spawn(async move { rx_b.recv().await.is_ok() });
        assert_eq!(
            wait_sleeping_on(&rt, a.id(), "send"),
            format!("send on channel #{id_a}")
        );
        assert_eq!(
            wait_sleeping_on(&rt, b.id(), "recv"),
            format!("recv on channel #{id_b}")
        );
        a.abort();
        b.abort();
        assert!(rt.block_on(a).unwrap_err().is_cancelled());
        assert!(rt.block_on(b).unwrap_err().is_cancelled());
    });
}

#[test]
fn a_process_awaiting_a_join_handle_shows_in_the_dump() {
    bounded(20, || {
        let rt = runtime(2, "chan-dump-join");
        let (tx, rx) = csp::channel::<u8>();
        let inner = rt.spawn(async move { rx.recv().await });
        let inner_id = inner.id();
        let outer = rt.spawn(inner); // a JoinHandle is a future: the process awaits it
        wait_sleeping_on(&rt, inner_id, "recv on channel #");
        let shown = wait_sleeping_on(&rt, outer.id(), "join of process #");
        assert_eq!(shown, format!("join of process #{inner_id}"));
        drop(tx);
        assert_eq!(rt.block_on(outer).unwrap().unwrap(), Err(RecvError));
        let ids: HashSet<u64> = rt.processes().iter().map(|p| p.id).collect();
        assert!(!ids.contains(&inner_id), "both finished: {ids:?}");
    });
}
