//! How a worker that the driver's events woke comes out of its park, driven by hand on
//! the test's thread with real sockets: the word it sends a sibling about a batch does
//! not wake the poll it has just left.

use std::future::poll_fn;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::runtime::driver::Registration;
use crate::runtime::driver::readiness::Direction;
use crate::runtime::worker::Local;
use crate::runtime::{Shared, context};

/// Reads one byte from `socket` through the driver of the runtime it runs in.
async fn read_one(socket: StdUnixStream) {
    socket.set_nonblocking(true).unwrap();
    let mut socket = mio::net::UnixStream::from_std(socket);
    let registration = Registration::new(&mut socket).unwrap();
    let mut byte = [0];
    let read =
        poll_fn(|cx| registration.poll_io(cx, Direction::Read, || (&socket).read(&mut byte)));
    assert_eq!(read.await.unwrap(), 1);
    registration.deregister(&mut socket);
}

#[test]
fn a_worker_woken_by_two_reads_tells_a_sibling_without_waking_its_own_poll() {
    let (shared, mut queues) = Shared::new(2, "park".to_owned(), None, Default::default());
    let local = Local::new(shared.clone(), 0, queues.remove(0));
    // SAFETY: `local` outlives the guard, on this thread.
    let guard = unsafe { context::WorkerGuard::new(&local) };
    let read = Arc::new(AtomicUsize::new(0));
    let mut peers = Vec::new();
    for _ in 0..2 {
        let (ours, peer) = StdUnixStream::pair().unwrap();
        peers.push(peer);
        let read = read.clone();
        let reader = async move {
            read_one(ours).await;
            read.fetch_add(1, Ordering::SeqCst);
        };
        drop(Shared::spawn(&shared, reader, Location::caller()));
    }
    local.run_at_hand();
    assert_eq!(read.load(Ordering::SeqCst), 0, "both wait to read");
    for peer in &mut peers {
        peer.write_all(b"x").unwrap();
    }
    let driver = shared.io().expect("the readers registered");
    let wakes = driver.waker_wakes();

    // Both bytes are there before the poll: one batch of two events wakes both readers
    // onto this worker, and its park ends.
    super::driven::park(&local);
    assert_eq!(
        driver.waker_wakes(),
        wakes,
        "telling a sibling of the batch wrote nothing to the driver's waker"
    );
    local.run_at_hand();
    assert_eq!(read.load(Ordering::SeqCst), 2, "both readers ran");

    drop(guard);
    assert!(shared.begin_shutdown());
    local.drain();
    shared.drain_injector();
}
