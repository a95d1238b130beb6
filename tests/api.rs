//! The API contract of API.md: every item built so far is named here with its exact path
//! and signature, so a drift from the contract fails to compile. The tests at
//! the end also call a few of them.

use std::any::Any;
use std::cell::Cell;
use std::error::Error;
use std::fmt::{Debug, Display};
use std::future::{Future, Ready};
use std::io;
use std::panic::Location;
use std::rc::Rc;
use std::time::Duration;

use csp::{Builder, Handle, JoinError, JoinHandle, Metrics, ProcessInfo, ProcessState, Runtime};

mod common;

fn assert_send_sync<T: Send + Sync>() {}
fn assert_debug<T: Debug>() {}
fn assert_clone_debug<T: Clone + Debug>() {}
fn assert_copy_eq<T: Copy + Eq + Debug>() {}
fn assert_error<T: Error + Display + Send + Sync + 'static>() {}
fn assert_join_future<T, F: Future<Output = Result<T, JoinError>> + Unpin>() {}
fn assert_send<T: Send>(_: &T) {}
fn assert_unit_future<F: Future<Output = ()>>(_: F) {}

/// A blocking closure type that can be named: a plain `fn` pointer.
type Closure<R> = fn() -> R;

/// The signatures, by typed `fn` pointers (generic items instantiated at concrete types).
#[allow(clippy::type_complexity)]
fn signatures() {
    // Runtime.
    let _: fn() -> io::Result<Runtime> = Runtime::new;
    let _: fn() -> Builder = Runtime::builder;
    let _: fn(&Runtime, Ready<u8>) -> u8 = Runtime::block_on::<Ready<u8>>;
    // block_on: F need not be Send (nor its output).
    let _: fn(&Runtime, Ready<Rc<u8>>) -> Rc<u8> = Runtime::block_on::<Ready<Rc<u8>>>;
    let _: fn(&Runtime, Ready<u8>) -> JoinHandle<u8> = Runtime::spawn::<Ready<u8>>;
    // spawn: the output need be Send, not Sync.
    let _: fn(&Runtime, Ready<Cell<u8>>) -> JoinHandle<Cell<u8>> =
        Runtime::spawn::<Ready<Cell<u8>>>;
    let _: fn(&Runtime) -> Handle = Runtime::handle;
    let _: fn(&Runtime) -> Metrics = Runtime::metrics;
    let _: fn(&Runtime) -> Vec<ProcessInfo> = Runtime::processes;
    let _: fn(&Runtime) -> String = Runtime::wait_graph;
    let _: fn(Runtime, Duration) = Runtime::shutdown_timeout;

    // Builder.
    let _: fn(&mut Builder, usize) -> &mut Builder = Builder::worker_threads;
    let _: fn(&mut Builder, String) -> &mut Builder = Builder::thread_name;
    let _: for<'a> fn(&'a mut Builder, &'static str) -> &'a mut Builder = Builder::thread_name;
    let _: fn(&mut Builder, bool) -> &mut Builder = Builder::deadlock_detection;
    let _: fn(&mut Builder, Duration) -> &mut Builder = Builder::deadlock_grace;
    // Thread hooks: any `Fn() + Send + Sync + 'static`.
    let _: fn(&mut Builder, fn()) -> &mut Builder = Builder::on_thread_start::<fn()>;
    let _: fn(&mut Builder, fn()) -> &mut Builder = Builder::on_thread_stop::<fn()>;
    let _: fn(&mut Builder) -> io::Result<Runtime> = Builder::build;
    let _: fn(&mut Builder) -> io::Result<Handle> = Builder::build_default;

    // Handle.
    let _: fn() -> Handle = Handle::current;
    let _: fn() -> Option<Handle> = Handle::try_current;
    let _: fn(&Handle, Ready<u8>) -> JoinHandle<u8> = Handle::spawn::<Ready<u8>>;
    let _: fn(&Handle, Closure<u8>) -> JoinHandle<u8> = Handle::spawn_blocking::<Closure<u8>, u8>;
    let _: fn(&Handle) -> String = Handle::wait_graph;
    let _: fn(&Handle, Closure<Cell<u8>>) -> JoinHandle<Cell<u8>> =
        Handle::spawn_blocking::<Closure<Cell<u8>>, Cell<u8>>;
    let _: fn(&Handle) -> Handle = Handle::clone;

    // Free functions.
    let _: fn(Ready<u8>) -> JoinHandle<u8> = csp::spawn::<Ready<u8>>;
    let _: fn(Closure<u8>) -> JoinHandle<u8> = csp::spawn_blocking::<Closure<u8>, u8>;
    let _: fn(Ready<u8>) -> u8 = csp::block_on::<Ready<u8>>;
    let _: fn(Ready<Rc<u8>>) -> Rc<u8> = csp::block_on::<Ready<Rc<u8>>>;
    let _: fn() -> _ = csp::yield_now;
    assert_unit_future(csp::yield_now());

    // JoinHandle.
    let _: fn(&JoinHandle<u8>) = JoinHandle::<u8>::abort;
    let _: fn(&JoinHandle<u8>) -> bool = JoinHandle::<u8>::is_finished;
    let _: fn(&JoinHandle<u8>) -> u64 = JoinHandle::<u8>::id;

    // JoinError.
    let _: fn(&JoinError) -> bool = JoinError::is_panic;
    let _: fn(&JoinError) -> bool = JoinError::is_cancelled;
    let _: fn(JoinError) -> Box<dyn Any + Send + 'static> = JoinError::into_panic;
    let _: fn(JoinError) -> Result<Box<dyn Any + Send + 'static>, JoinError> =
        JoinError::try_into_panic;
}

/// `block_on` takes borrowing (non-'static) futures.
fn block_on_accepts_borrowing_futures<'a>(_: &'a u8) {
    let _: fn(&Runtime, Ready<&'a u8>) -> &'a u8 = Runtime::block_on::<Ready<&'a u8>>;
    let _: fn(Ready<&'a u8>) -> &'a u8 = csp::block_on::<Ready<&'a u8>>;
}

/// The trait bounds the contract promises.
fn bounds() {
    assert_send_sync::<Runtime>();
    assert_send_sync::<Handle>();
    assert_send_sync::<JoinHandle<u8>>();
    // Send + Sync if T: Send (not T: Sync).
    assert_send_sync::<JoinHandle<Cell<u8>>>();
    assert_error::<JoinError>();
    assert_join_future::<u8, JoinHandle<u8>>();
    assert_join_future::<Rc<u8>, JoinHandle<Rc<u8>>>();

    // Every public type is Debug.
    assert_debug::<Runtime>();
    assert_debug::<Builder>();
    assert_debug::<Handle>();
    assert_debug::<JoinHandle<u8>>();
    assert_debug::<JoinError>();
    assert_clone_debug::<Metrics>();
    assert_clone_debug::<ProcessInfo>();
    assert_clone_debug::<ProcessState>();
    assert_copy_eq::<ProcessState>();
    assert_clone_debug::<Handle>();

    // yield_now's future can be held across awaits in a process.
    assert_send(&csp::yield_now());
}

/// Public fields, read with their types.
fn fields(m: &Metrics, p: &ProcessInfo) {
    let _: usize = m.workers;
    let _: u64 = m.processes_alive;
    let _: u64 = m.spawned;
    let _: u64 = m.polls;
    let _: u64 = m.steals;
    let _: u64 = m.handoffs;
    let _: u64 = m.parks;
    let _: u64 = m.timers_armed;
    let _: u64 = m.takeovers;

    let _: u64 = p.id;
    let _: ProcessState = p.state;
    let _: &'static Location<'static> = p.spawned_at;
    let _: &Option<String> = &p.waiting_on;
}

/// All four states (the enum is `#[non_exhaustive]`, so a wildcard arm is required).
fn state_name(state: ProcessState) -> &'static str {
    match state {
        ProcessState::Sleeping => "sleeping",
        ProcessState::Queued => "queued",
        ProcessState::Running => "running",
        ProcessState::Yielding => "yielding",
        _ => "unknown",
    }
}

#[test]
fn the_contract_compiles() {
    signatures();
    block_on_accepts_borrowing_futures(&0);
    bounds();
    assert_eq!(state_name(ProcessState::Sleeping), "sleeping");
    assert_eq!(state_name(ProcessState::Queued), "queued");
    assert_eq!(state_name(ProcessState::Running), "running");
    assert_eq!(state_name(ProcessState::Yielding), "yielding");
}

/// The one test that touches the default runtime, so `build_default` runs first.
#[test]
fn calling_the_api() {
    common::bounded(30, calling_the_api_body);
}

fn calling_the_api_body() {
    // Configure the default runtime before anything uses it; then it is started.
    let default = Runtime::builder()
        .worker_threads(2)
        .thread_name("api-default")
        .build_default()
        .expect("the default runtime is not started yet in this binary");
    let err = Runtime::builder()
        .build_default()
        .expect_err("the default runtime has started");
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    assert_eq!(
        csp::block_on(async { csp::spawn(async { 2 + 2 }).await.unwrap() }),
        4
    );
    assert_eq!(
        futures::executor::block_on(default.spawn(async { 5 })).unwrap(),
        5
    );

    let rt = Runtime::builder()
        .worker_threads(2)
        .thread_name("api")
        .deadlock_detection(true)
        .deadlock_grace(Duration::from_secs(1))
        .build()
        .unwrap();
    assert_eq!(rt.metrics().workers, 2);
    let handle = rt.handle();
    let (sum, name) = rt.block_on(async {
        let current = Handle::current();
        assert!(Handle::try_current().is_some());
        csp::yield_now().await;
        let a = csp::spawn(async { 1u64 });
        let b = current.spawn(async { 2u64 });
        let c = current.spawn_blocking(|| 3u64);
        let d = csp::spawn_blocking(|| 4u64);
        let name = csp::spawn(async { std::thread::current().name().map(str::to_owned) });
        assert_ne!(a.id(), b.id());
        let sum = a.await.unwrap() + b.await.unwrap() + c.await.unwrap() + d.await.unwrap();
        (sum, name.await.unwrap())
    });
    assert_eq!(sum, 10);
    assert!(name.unwrap().starts_with("api-"));

    let pending = handle.spawn(std::future::pending::<()>());
    assert!(!pending.is_finished());
    let info = loop {
        let found = rt.processes().into_iter().find(|p| p.id == pending.id());
        if let Some(p) = found.filter(|p| p.state == ProcessState::Sleeping) {
            break p;
        }
        std::thread::yield_now();
    };
    fields(&rt.metrics(), &info);
    assert_eq!(info.spawned_at.file(), file!());
    assert!(info.waiting_on.is_none());
    pending.abort();
    let err = rt.block_on(pending).unwrap_err();
    assert!(err.is_cancelled() && !err.is_panic());
    assert!(err.try_into_panic().unwrap_err().is_cancelled());

    let err = rt
        .block_on(rt.spawn(async { panic!("api panic") }))
        .unwrap_err();
    assert!(err.is_panic());
    assert!(!err.to_string().is_empty());
    assert_eq!(
        *err.into_panic().downcast::<&'static str>().unwrap(),
        "api panic"
    );

    let held = rt.spawn(std::future::pending::<()>());
    rt.shutdown_timeout(Duration::from_secs(5));
    assert!(
        csp::block_on(held).unwrap_err().is_cancelled(),
        "shutdown cancels"
    );
    assert!(
        Runtime::new().unwrap().metrics().workers >= 1,
        "Runtime::new: one worker per core"
    );
}

// ---- Channels (API.md "Channels") ----

#[allow(dead_code, clippy::type_complexity)]
fn channel_signatures() {
    use csp::{
        Closed, Receiver, RecvError, RecvFuture, SendError, SendFuture, Sender, TryRecvError,
        TrySendError,
    };
    use std::task::{Context, Poll};

    let _: fn() -> (Sender<u8>, Receiver<u8>) = csp::channel::<u8>;
    let _: fn(usize) -> (Sender<u8>, Receiver<u8>) = csp::bounded::<u8>;
    let _: fn() -> (Sender<u8>, Receiver<u8>) = csp::unbounded::<u8>;

    let _: for<'a> fn(&'a Sender<u8>, u8) -> SendFuture<'a, u8> = Sender::<u8>::send;
    let _: fn(&Sender<u8>, u8) -> Result<(), TrySendError<u8>> = Sender::<u8>::try_send;
    let _: fn(&Sender<u8>, u8) -> Result<(), SendError<u8>> = Sender::<u8>::send_blocking;
    let _: for<'a> fn(&'a Sender<u8>) -> Closed<'a, u8> = Sender::<u8>::closed;
    let _: for<'a> fn(&'a Sender<u8>) -> csp::SendSink<'a, u8> = Sender::<u8>::sink;

    let _: for<'a> fn(&'a Receiver<u8>) -> RecvFuture<'a, u8> = Receiver::<u8>::recv;
    let _: fn(&Receiver<u8>) -> Result<u8, TryRecvError> = Receiver::<u8>::try_recv;
    let _: fn(&Receiver<u8>) -> Result<u8, RecvError> = Receiver::<u8>::recv_blocking;
    let _: fn(&mut Receiver<u8>, &mut Context<'_>) -> Poll<Result<u8, RecvError>> =
        Receiver::<u8>::poll_recv;

    // On both ends.
    let _: fn(&Sender<u8>) -> bool = Sender::<u8>::close;
    let _: fn(&Sender<u8>) -> bool = Sender::<u8>::is_closed;
    let _: fn(&Sender<u8>) -> usize = Sender::<u8>::len;
    let _: fn(&Sender<u8>) -> bool = Sender::<u8>::is_empty;
    let _: fn(&Sender<u8>) -> bool = Sender::<u8>::is_full;
    let _: fn(&Sender<u8>) -> Option<usize> = Sender::<u8>::capacity;
    let _: fn(&Sender<u8>) -> usize = Sender::<u8>::sender_count;
    let _: fn(&Sender<u8>) -> usize = Sender::<u8>::receiver_count;
    let _: fn(&Sender<u8>, &Receiver<u8>) -> bool = Sender::<u8>::same_channel::<Receiver<u8>>;
    let _: fn(&Sender<u8>, &Sender<u8>) -> bool = Sender::<u8>::same_channel::<Sender<u8>>;
    let _: fn(&Sender<u8>) = Sender::<u8>::mark_foreign;
    let _: fn(&Receiver<u8>) -> bool = Receiver::<u8>::close;
    let _: fn(&Receiver<u8>) -> bool = Receiver::<u8>::is_closed;
    let _: fn(&Receiver<u8>) -> usize = Receiver::<u8>::len;
    let _: fn(&Receiver<u8>) -> bool = Receiver::<u8>::is_empty;
    let _: fn(&Receiver<u8>) -> bool = Receiver::<u8>::is_full;
    let _: fn(&Receiver<u8>) -> Option<usize> = Receiver::<u8>::capacity;
    let _: fn(&Receiver<u8>) -> usize = Receiver::<u8>::sender_count;
    let _: fn(&Receiver<u8>) -> usize = Receiver::<u8>::receiver_count;
    let _: fn(&Receiver<u8>, &Sender<u8>) -> bool = Receiver::<u8>::same_channel::<Sender<u8>>;
    let _: fn(&Receiver<u8>) = Receiver::<u8>::mark_foreign;

    // Errors.
    let _: fn(SendError<u8>) -> u8 = SendError::<u8>::into_inner;
    let _: SendError<u8> = SendError(1u8);
    let _: fn(&TrySendError<u8>) -> bool = TrySendError::<u8>::is_full;
    let _: fn(&TrySendError<u8>) -> bool = TrySendError::<u8>::is_closed;
    let _: fn(TrySendError<u8>) -> u8 = TrySendError::<u8>::into_inner;
    let _: TrySendError<u8> = From::from(SendError(1u8));
    match TrySendError::Full(1u8) {
        TrySendError::Full(_) | TrySendError::Closed(_) => {}
    }
    match TryRecvError::Empty {
        TryRecvError::Empty | TryRecvError::Closed => {}
    }
    let _: RecvError = RecvError;
}

#[test]
fn channel_bounds() {
    use csp::{
        Closed, Receiver, RecvError, RecvFuture, SendError, SendFuture, Sender, TryRecvError,
        TrySendError,
    };
    use futures::future::FusedFuture;
    use futures::stream::{FusedStream, Stream};
    use std::fmt::{Debug, Display};

    struct NotDebug;
    fn end<E: Clone + Send + Sync + Unpin + Debug>() {}
    end::<Sender<NotDebug>>();
    end::<Receiver<NotDebug>>();
    fn stream<S: Stream<Item = u8> + FusedStream>() {}
    stream::<Receiver<u8>>();
    fn fused<F: FusedFuture + Debug>() {}
    fused::<SendFuture<'static, u8>>();
    fused::<RecvFuture<'static, u8>>();
    fused::<Closed<'static, u8>>();
    fn send<F: Send>() {}
    send::<SendFuture<'static, u8>>();
    // Sender::sink: a futures Sink whose errors give the value back.
    fn sink<S: futures::Sink<u8, Error = SendError<u8>> + Send + Debug>() {}
    sink::<csp::SendSink<'static, u8>>();
    fn any_sink<S: Debug>() {}
    any_sink::<csp::SendSink<'static, NotDebug>>();
    send::<RecvFuture<'static, u8>>();
    fn output<F: std::future::Future<Output = O>, O>() {}
    output::<SendFuture<'static, u8>, Result<(), SendError<u8>>>();
    output::<RecvFuture<'static, u8>, Result<u8, RecvError>>();
    output::<Closed<'static, u8>, ()>();
    fn error<E: std::error::Error + Display + Debug + Send + Sync + 'static>() {}
    error::<SendError<NotDebug>>();
    error::<TrySendError<NotDebug>>();
    error::<RecvError>();
    error::<TryRecvError>();
    fn copy_eq<E: Copy + Eq>() {}
    copy_eq::<SendError<u8>>();
    copy_eq::<TrySendError<u8>>();
    copy_eq::<RecvError>();
    copy_eq::<TryRecvError>();
    // The futures are !Unpin: this resolves only if exactly one impl applies, i.e. if
    // the type does not implement Unpin (the classic ambiguity trick).
    trait AmbiguousIfUnpin<A> {
        fn some_item() {}
    }
    impl<T: ?Sized> AmbiguousIfUnpin<()> for T {}
    impl<T: ?Sized + Unpin> AmbiguousIfUnpin<u8> for T {}
    <SendFuture<'static, u8> as AmbiguousIfUnpin<_>>::some_item();
    <RecvFuture<'static, u8> as AmbiguousIfUnpin<_>>::some_item();
    <Closed<'static, u8> as AmbiguousIfUnpin<_>>::some_item();

    let (tx, rx) = csp::bounded::<u8>(2);
    tx.try_send(1).unwrap();
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(csp::SendError(3u8).into_inner(), 3);
}

// ---- alt! / prialt! / Select (API.md "alt! / prialt! — CSP choice") ----

/// Each documented arm form of `alt!` and `prialt!`.
#[allow(dead_code)]
async fn alt_forms(rx: csp::Receiver<u8>, tx: csp::Sender<u8>) -> u8 {
    use std::time::Duration;
    let ready = true;
    let a: u8 = csp::alt! {
        recv(rx) -> msg => msg.unwrap_or(0),
        recv(&rx) -> msg if ready => { msg.unwrap_or(1) }
        send(tx, 1) -> res => { res.map(|()| 2).unwrap_or(3) }
        closed(tx) => 4,
        recv_any(&[&rx]) -> (i, msg) => msg.map(|m| m + i as u8).unwrap_or(5),
        send_any(&[&tx], 9) -> (i, res) => res.map(|()| i as u8).unwrap_or(6),
        default => 5,
    };
    let b: u8 = csp::prialt! {
        recv(rx) -> msg => msg.unwrap_or(6),
        after(Duration::from_millis(10)) => 7,
    };
    let token = csp::CancellationToken::new();
    let c: u8 = csp::alt! {
        recv(rx) -> msg => msg.unwrap_or(8),
        cancelled(token) => 9,
        cancelled(&token) if ready => 10,
        at(std::time::Instant::now()) => 11,
    };
    a + b + c
}

/// The future that contains an `alt!` is `Send` when the channels' `T` and the arm values
/// are.
#[allow(dead_code)]
fn alt_futures_are_send(rx: csp::Receiver<u8>, tx: csp::Sender<String>) {
    fn send<F: Future + Send>(_: F) {}
    send(async move {
        csp::alt! {
            recv(rx) -> _msg => {},
            send_any(&[&tx], String::new()) -> (_i, _res) => {},
            after(Duration::from_millis(1)) => {},
        }
    });
}

#[allow(dead_code)]
fn select_signatures<'a: 's, 's>() {
    use csp::{Receiver, RecvError, Select, SelectFuture, Selected, SendError, Sender};
    use std::time::Duration;

    let _: fn() -> Select<'a> = Select::new;
    let _: fn() -> Select<'a> = Select::new_biased;
    let _: fn(&mut Select<'a>, &'a Receiver<u8>) -> usize = Select::<'a>::recv::<u8>;
    let _: fn(&mut Select<'a>, &'a Sender<u8>, u8) -> usize = Select::<'a>::send::<u8>;
    let _: fn(&mut Select<'a>, Duration) = Select::<'a>::timeout;
    let _: fn(&mut Select<'a>, usize) = Select::<'a>::remove;
    let _: fn(&'s mut Select<'a>) -> Option<Selected<'s>> = Select::<'a>::try_select;
    let _: fn(&'s mut Select<'a>) -> SelectFuture<'s, 'a> = Select::<'a>::select;
    let _: fn(&Selected<'s>) -> usize = Selected::<'s>::index;
    let _: fn(Selected<'s>, &Receiver<u8>) -> Result<u8, RecvError> = Selected::<'s>::recv::<u8>;
    let _: fn(Selected<'s>, &Sender<u8>) -> Result<(), SendError<u8>> = Selected::<'s>::send::<u8>;
}

#[test]
fn select_contract() {
    use csp::{Select, SelectFuture, Selected};
    use std::fmt::Debug;
    fn send_debug<T: Send + Debug>() {}
    send_debug::<Select<'static>>();
    send_debug::<SelectFuture<'static, 'static>>();
    fn debug<T: Debug>() {}
    debug::<Selected<'static>>();
    fn future<F: std::future::Future<Output = Selected<'static>>>() {}
    future::<SelectFuture<'static, 'static>>();
    assert_eq!(Select::TIMEOUT, usize::MAX);

    let (tx, rx) = csp::bounded::<u8>(1);
    tx.try_send(3).unwrap();
    let mut sel = Select::new();
    let i = sel.recv(&rx);
    let op: Selected<'_> = sel.try_select().unwrap();
    assert_eq!(op.index(), i);
    assert_eq!(op.recv(&rx), Ok(3));
}

// ---- Timers (API.md "Timers") ----

#[allow(dead_code)]
fn timer_signatures() {
    use csp::{Elapsed, Receiver, Sleep, Timeout};
    use std::future::Ready;
    use std::pin::Pin;
    use std::time::Instant;

    let _: fn(Duration) -> Sleep = csp::sleep;
    let _: fn(Instant) -> Sleep = csp::sleep_until;
    let _: fn(Duration, Ready<u8>) -> Timeout<Ready<u8>> = csp::timeout::<Ready<u8>>;
    let _: fn(Duration) -> Receiver<Instant> = csp::after;
    let _: fn(Duration) -> Receiver<Instant> = csp::tick;
    let _: fn(&Sleep) -> Instant = Sleep::deadline;
    let _: fn(Pin<&mut Sleep>, Instant) = Sleep::reset;
    fn output<F: Future<Output = O>, O>() {}
    output::<Sleep, ()>();
    output::<Timeout<Ready<u8>>, Result<u8, Elapsed>>();
}

#[test]
fn timer_contract() {
    use csp::{Elapsed, Sleep};
    // `Sleep` is `!Unpin`: for an `Unpin` type, both impls below would apply and the
    // `_` could not be inferred, so this compiles only for `!Unpin` types.
    trait AmbiguousIfUnpin<A> {
        fn check() {}
    }
    impl<T: ?Sized> AmbiguousIfUnpin<()> for T {}
    impl<T: ?Sized + Unpin> AmbiguousIfUnpin<u8> for T {}
    <Sleep as AmbiguousIfUnpin<_>>::check();
    fn error<T: Error + Display + Copy + Eq + Send + Sync + 'static>() {}
    error::<Elapsed>();
    assert_debug::<Sleep>();
}

// ---- Pipelines (API.md "Pipelines") ----

#[allow(dead_code, clippy::type_complexity)] // the exact signatures are the point
fn pipe_signatures() {
    use csp::{Receiver, Sender};
    use std::future::Ready;

    let _: fn(fn(Sender<u32>) -> Ready<()>) -> Receiver<u32> =
        csp::pipe::producer::<u32, fn(Sender<u32>) -> Ready<()>, Ready<()>>;
    let _: fn(Receiver<u32>, fn(u32) -> u64) -> Receiver<u64> = csp::pipe::map::<u32, u64>;
    let _: fn(Receiver<u32>, fn(&u32) -> bool) -> Receiver<u32> = csp::pipe::filter::<u32>;
    let _: fn(Receiver<u32>, usize) -> Receiver<u32> = csp::pipe::buffer::<u32>;
    let _: fn(Vec<Receiver<u32>>) -> Receiver<u32> = csp::pipe::merge::<u32>;
}

/// No bounds beyond API.md's: wrappers with exactly API.md's bounds compile.
#[allow(dead_code)]
mod pipe_bounds {
    use csp::{Receiver, Sender};
    use std::future::Future;

    fn producer<T, F, Fut>(f: F) -> Receiver<T>
    where
        F: FnOnce(Sender<T>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
        T: Send + 'static,
    {
        csp::pipe::producer(f)
    }
    fn map<T, U>(rx: Receiver<T>, f: impl FnMut(T) -> U + Send + 'static) -> Receiver<U>
    where
        T: Send + 'static,
        U: Send + 'static,
    {
        csp::pipe::map(rx, f)
    }
    fn filter<T: Send + 'static>(
        rx: Receiver<T>,
        f: impl FnMut(&T) -> bool + Send + 'static,
    ) -> Receiver<T> {
        csp::pipe::filter(rx, f)
    }
    fn buffer<T: Send + 'static>(rx: Receiver<T>, n: usize) -> Receiver<T> {
        csp::pipe::buffer(rx, n)
    }
    fn merge<T: Send + 'static>(rxs: Vec<Receiver<T>>) -> Receiver<T> {
        csp::pipe::merge(rxs)
    }
}

// ---- par! (API.md "par! — parallel composition") ----

/// Each documented form of `par!`: a tuple of the outputs in written order (`()` for
/// none, a 1-tuple for one), and a `Vec` in index order for the replicated form.
#[allow(dead_code)]
async fn par_forms(n: u64) {
    async fn work(i: u64) -> u64 {
        i * 2
    }
    let (a, b): (u64, &str) = csp::par!(work(1), async { "b" });
    let (one,): (u8,) = csp::par!(async { 1u8 });
    let () = csp::par!();
    let v: Vec<u64> = csp::par!(for i in 0..n => work(i));
    let _ = (a, b, one, v);
}

/// The future that contains a `par!` is `Send` when the branches' outputs are.
#[allow(dead_code)]
fn par_futures_are_send() {
    fn send<F: Future + Send>(_: F) {}
    send(async { csp::par!(async { 1u8 }, async { String::new() }) });
    send(async { csp::par!(for i in 0..3u8 => async move { i }) });
}

// ---- Entry points (API.md "Entry points") ----

mod entry_points {
    #[csp::main]
    pub(super) async fn main_unit() {}

    #[csp::main(worker_threads = 4)]
    pub(super) async fn main_result() -> Result<(), Box<dyn std::error::Error>> {
        Ok(())
    }

    #[csp::test]
    async fn a_test() {}

    #[csp::test(worker_threads = 2)]
    async fn a_test_with_workers() {}

    #[csp::test]
    #[should_panic(expected = "boom")]
    async fn a_should_panic_test() {
        panic!("boom");
    }
}

#[test]
fn entry_points_run() {
    entry_points::main_unit();
    entry_points::main_result().unwrap();
}

/// `csp::net` (the `io` feature): csp's own sockets on the runtime's I/O driver, with
/// the paths and names they had when they were async-net's, and `futures`' I/O traits.
#[cfg(feature = "io")]
#[allow(dead_code)]
fn net_items() {
    use csp::net::{
        AsyncBufReadExt, AsyncFd, AsyncFdReadyGuard, AsyncRead, AsyncReadExt, AsyncToSocketAddrs,
        AsyncWrite, AsyncWriteExt, BufReader, Incoming, ReadHalf, Shutdown, SocketAddr, Split,
        TcpListener, TcpStream, ToSocketAddrs, TryIoError, UdpSocket, WriteHalf,
    };
    use std::future::Future;
    use std::io;

    let _: fn(Shutdown) -> std::net::Shutdown = std::convert::identity;
    let _: fn(SocketAddr) -> std::net::SocketAddr = std::convert::identity;
    fn io<T: AsyncRead + AsyncWrite + AsyncReadExt + AsyncWriteExt + Send + Sync + Unpin>() {}
    io::<TcpStream>();
    io::<&'static TcpStream>();
    io::<ReadHalf<TcpStream>>();
    io::<WriteHalf<TcpStream>>();
    fn buffered<T: AsyncBufReadExt>() {}
    buffered::<BufReader<TcpStream>>();
    fn addrs<T: ToSocketAddrs + AsyncToSocketAddrs>() {}
    addrs::<&str>();
    addrs::<String>();
    addrs::<SocketAddr>();
    addrs::<(&str, u16)>();
    fn split<S: Split>()
    where
        for<'a> &'a S: AsyncRead + AsyncWrite,
    {
    }
    split::<TcpStream>();
    fn incoming<T: futures::Stream<Item = io::Result<TcpStream>>>() {}
    incoming::<Incoming<'static>>();
    fn send<F: Future + Send>(_: F) {}

    let _: fn(std::net::TcpListener) -> io::Result<TcpListener> = TcpListener::from_std;
    let _: fn(TcpListener) -> io::Result<std::net::TcpListener> = TcpListener::into_std;
    let _: fn(&TcpListener) -> io::Result<SocketAddr> = TcpListener::local_addr;
    let _: fn(&TcpListener) -> Incoming<'_> = TcpListener::incoming;
    send(TcpListener::bind("127.0.0.1:0"));
    send(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let (stream, _peer): (TcpStream, SocketAddr) = listener.accept().await?;
        io::Result::Ok(stream)
    });

    let _: fn(std::net::TcpStream) -> io::Result<TcpStream> = TcpStream::from_std;
    let _: fn(TcpStream) -> io::Result<std::net::TcpStream> = TcpStream::into_std;
    let _: fn(TcpStream) -> (ReadHalf<TcpStream>, WriteHalf<TcpStream>) = TcpStream::into_split;
    let _: fn(&TcpStream) -> io::Result<SocketAddr> = TcpStream::local_addr;
    let _: fn(&TcpStream) -> io::Result<SocketAddr> = TcpStream::peer_addr;
    let _: fn(&TcpStream, bool) -> io::Result<()> = TcpStream::set_nodelay;
    let _: fn(&TcpStream) -> io::Result<bool> = TcpStream::nodelay;
    let _: fn(&TcpStream, Shutdown) -> io::Result<()> = TcpStream::shutdown;
    let _: fn(ReadHalf<TcpStream>, WriteHalf<TcpStream>) -> Result<TcpStream, _> =
        ReadHalf::reunite;
    send(TcpStream::connect("127.0.0.1:1"));
    send(async {
        let stream = TcpStream::connect(("localhost", 1)).await?;
        let mut buf = [0; 4];
        stream.peek(&mut buf).await
    });

    let _: fn(std::net::UdpSocket) -> io::Result<UdpSocket> = UdpSocket::from_std;
    let _: fn(UdpSocket) -> io::Result<std::net::UdpSocket> = UdpSocket::into_std;
    send(async {
        let socket = UdpSocket::bind("127.0.0.1:0").await?;
        socket.connect("127.0.0.1:9").await?;
        let mut buf = [0; 4];
        let _: usize = socket.send(b"x").await?;
        let _: usize = socket.recv(&mut buf).await?;
        let _: usize = socket.send_to(b"x", "127.0.0.1:9").await?;
        let _: (usize, SocketAddr) = socket.recv_from(&mut buf).await?;
        let _: (usize, SocketAddr) = socket.peek_from(&mut buf).await?;
        io::Result::Ok(())
    });

    #[cfg(unix)]
    {
        use csp::net::unix::{UnixDatagram, UnixListener, UnixStream};
        let _: fn(&'static str) -> io::Result<UnixListener> = UnixListener::bind::<&'static str>;
        let _: fn() -> io::Result<(UnixStream, UnixStream)> = UnixStream::pair;
        let _: fn() -> io::Result<(UnixDatagram, UnixDatagram)> = UnixDatagram::pair;
        let _: fn(UnixStream) -> (ReadHalf<UnixStream>, WriteHalf<UnixStream>) =
            UnixStream::into_split;
        io::<UnixStream>();
        send(UnixStream::connect("/tmp/x"));
        send(async {
            let listener = UnixListener::bind("/tmp/x")?;
            let (_stream, _addr): (UnixStream, csp::net::unix::SocketAddr) =
                listener.accept().await?;
            io::Result::Ok(())
        });

        let _: fn(
            std::os::unix::net::UnixStream,
        ) -> io::Result<AsyncFd<std::os::unix::net::UnixStream>> = AsyncFd::new;
        send(async {
            let (a, _b) = std::os::unix::net::UnixStream::pair()?;
            let fd = AsyncFd::new(a)?;
            let mut guard: AsyncFdReadyGuard<'_, _> = fd.readable().await?;
            let _: Result<io::Result<usize>, TryIoError> = guard.try_io(|_| Ok(0));
            guard.clear_ready();
            let _guard = fd.writable().await?;
            io::Result::Ok(())
        });
    }
}

// ---- Structured concurrency (crate docs: try_par!, JoinSet, CancellationToken,
// ---- Handle::metrics and processes, Builder::on_deadlock and enter_tokio) ----

#[allow(dead_code, clippy::type_complexity)]
fn structured_signatures() {
    use csp::{CancellationToken, Cancelled, DropGuard, JoinNext, JoinSet};
    use std::task::{Context, Poll};
    use std::time::Instant;

    // Handle: the runtime's counters and dump, from anywhere.
    let _: fn(&Handle) -> Metrics = Handle::metrics;
    let _: fn(&Handle) -> Vec<ProcessInfo> = Handle::processes;
    // Builder: a deadlock report with no block_on, and tokio's context.
    let _: fn(&mut Builder, fn(&str)) -> &mut Builder = Builder::on_deadlock::<fn(&str)>;
    let _: fn(&mut Builder, tokio::runtime::Handle) -> &mut Builder = Builder::enter_tokio;
    // Select with an instant.
    let _: fn(&mut csp::Select<'static>, Instant) = csp::Select::<'static>::deadline;

    // CancellationToken.
    let _: fn() -> CancellationToken = CancellationToken::new;
    let _: fn(&CancellationToken) = CancellationToken::cancel;
    let _: fn(&CancellationToken) -> bool = CancellationToken::is_cancelled;
    let _: for<'a> fn(&'a CancellationToken) -> Cancelled<'a> = CancellationToken::cancelled;
    let _: fn(&CancellationToken) -> CancellationToken = CancellationToken::child_token;
    let _: fn(CancellationToken) -> DropGuard = CancellationToken::drop_guard;
    let _: fn(DropGuard) -> CancellationToken = DropGuard::disarm;

    // JoinSet.
    let _: fn() -> JoinSet<u8> = JoinSet::<u8>::new;
    let _: fn(&JoinSet<u8>) -> u64 = JoinSet::<u8>::id;
    let _: fn(&JoinSet<u8>) -> usize = JoinSet::<u8>::len;
    let _: fn(&JoinSet<u8>) -> bool = JoinSet::<u8>::is_empty;
    let _: fn(&mut JoinSet<u8>, Ready<u8>) -> u64 = JoinSet::<u8>::spawn::<Ready<u8>>;
    let _: fn(&mut JoinSet<u8>, Ready<u8>, &Handle) -> u64 = JoinSet::<u8>::spawn_on::<Ready<u8>>;
    let _: for<'a> fn(&'a mut JoinSet<u8>) -> JoinNext<'a, u8> = JoinSet::<u8>::join_next;
    let _: fn(&mut JoinSet<u8>) -> Option<Result<u8, JoinError>> = JoinSet::<u8>::try_join_next;
    let _: for<'a, 'b> fn(
        &'a mut JoinSet<u8>,
        &'a mut Context<'b>,
    ) -> Poll<Option<Result<u8, JoinError>>> = JoinSet::<u8>::poll_join_next;
    let _: fn(&mut JoinSet<u8>) = JoinSet::<u8>::abort_all;
    let _: fn(&mut JoinSet<u8>, u64) -> bool = JoinSet::<u8>::abort;
    let _: fn(&mut JoinSet<u8>) = JoinSet::<u8>::detach_all;
}

/// The futures and their outputs; `try_par!`'s forms and output types.
#[allow(dead_code)]
async fn structured_futures(token: csp::CancellationToken, mut set: csp::JoinSet<u8>) {
    fn output<F: Future<Output = O>, O>(_: &F) {}
    output::<_, ()>(&token.cancelled());
    output::<_, Option<Result<u8, JoinError>>>(&set.join_next());
    let with_id = set.join_next_with_id();
    output::<_, Option<(u64, Result<u8, JoinError>)>>(&with_id);
    drop(with_id);
    output::<_, ()>(&set.shutdown());
    let _: Vec<u8> = csp::JoinSet::<u8>::new().join_all().await;
    let _: Result<(u8, &str), String> =
        csp::try_par!(async { Ok(1u8) }, async { Ok::<_, String>("two") });
    let _: Result<Vec<u64>, String> =
        csp::try_par!(for i in 0..3u64 => async move { Ok::<_, String>(i) });
    let _: Result<(), String> = csp::try_par!();
}

#[test]
fn structured_contract() {
    use csp::{CancellationToken, Cancelled, DropGuard, JoinNext, JoinSet};
    assert_send_sync::<CancellationToken>();
    assert_send_sync::<JoinSet<u8>>();
    assert_clone_debug::<CancellationToken>();
    assert_debug::<Cancelled<'static>>();
    assert_debug::<DropGuard>();
    assert_debug::<JoinSet<u8>>();
    assert_debug::<JoinNext<'static, u8>>();
    fn default<T: Default>() {}
    default::<CancellationToken>();
    default::<JoinSet<u8>>();
    fn send<T: Send>() {}
    send::<Cancelled<'static>>();
    send::<JoinNext<'static, u8>>();
    structured_signatures();
    let p: Option<ProcessInfo> = None;
    if let Some(p) = p {
        let _: Option<u64> = p.group;
    }
}

// ---- The console (feature `console`; the items exist without it, and building a
// ---- runtime that asks for a console then fails, saying so) ----

#[allow(dead_code)]
fn console_signatures() {
    // `console(addr: impl Into<String>)`: a `&str` or a `String`.
    fn console(builder: &mut Builder) -> &mut Builder {
        builder
            .console("127.0.0.1:0")
            .console(String::from("[::1]:0"))
    }
    let _: fn(&mut Builder) -> &mut Builder = console;
    let _: fn(&Runtime) -> Option<std::net::SocketAddr> = Runtime::console_addr;
    let _: fn(&Handle) -> Option<std::net::SocketAddr> = Handle::console_addr;
}

mod console_entry_points {
    #[csp::main(console = "127.0.0.1:0")]
    pub(super) async fn main_with_console() {}

    #[csp::main(worker_threads = 2, console = "127.0.0.1:0")]
    pub(super) async fn main_with_workers_and_console() -> u8 {
        1
    }
}

#[test]
fn console_contract() {
    console_signatures();
    let _: fn() = console_entry_points::main_with_console;
    let _: fn() -> u8 = console_entry_points::main_with_workers_and_console;
    // Without the feature, a console asked for is an error that names the feature.
    #[cfg(not(feature = "console"))]
    {
        let err = Builder::new().console("127.0.0.1:0").build().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Unsupported);
        assert!(err.to_string().contains("`console` feature"), "{err}");
    }
}
