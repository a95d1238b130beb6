//! How a worker that the driver's events woke comes out of its park, driven by hand on
//! the test's thread with real sockets: the word it sends about a batch reaches a
//! sleeping sibling, and never the poll it has just left.

use std::future::poll_fn;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

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

/// A two-worker runtime whose first worker is driven on this thread, with two
/// processes waiting to read from sockets whose peers have each just written a byte:
/// the worker's next park takes both events in one poll, with the second worker asleep
/// on the idle event if `sibling_asleep`. Returns the writes to the driver's waker
/// during that park, the readers that ran once the worker ran what it woke, and whether
/// the sibling was told.
fn park_woken_by_two_reads(sibling_asleep: bool) -> (usize, usize, bool) {
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

    // The second worker, asleep on the idle event as a parked worker is (it would hold
    // the driver if it had parked first).
    let idle = shared.idle();
    let sibling = sibling_asleep.then(|| {
        idle.begin_park();
        idle.event().listen(1)
    });
    // Both bytes are there before the poll: one batch of two events wakes both readers
    // onto this worker, and its park ends.
    super::driven::park(&local);
    let wakes = driver.waker_wakes() - wakes;
    let sibling_told = sibling.is_some_and(|sibling| {
        let told = sibling.wait_deadline(Instant::now());
        idle.finish_park();
        told
    });
    local.run_at_hand();
    let read = read.load(Ordering::SeqCst);

    local.shut_down_by_hand(guard);
    (wakes, read, sibling_told)
}

#[test]
fn a_worker_woken_by_two_reads_does_not_wake_the_poll_it_left() {
    let (wakes, read, _) = park_woken_by_two_reads(false);
    assert_eq!(wakes, 0, "nothing was written to the driver's waker");
    assert_eq!(read, 2, "both readers ran");
}

#[test]
fn a_worker_woken_by_two_reads_tells_a_sleeping_sibling() {
    let (wakes, read, sibling_told) = park_woken_by_two_reads(true);
    assert!(
        sibling_told,
        "the sibling asleep on the idle event was told of the batch"
    );
    assert_eq!(wakes, 0, "nothing was written to the driver's waker");
    assert_eq!(read, 2, "both readers ran");
}
