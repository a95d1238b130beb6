//! The free functions: `spawn`, `spawn_blocking`, `block_on`, `yield_now`.

use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::runtime::{Shared, block_on as driver, context, default};
use crate::wait::JoinHandle;

/// Spawns a process: on the runtime the current thread is in (a csp process,
/// `Runtime::block_on`, a blocking-pool thread), else on the default runtime (a plain
/// thread, a tokio task). Returns its [`JoinHandle`]; dropping the handle detaches the
/// process, which keeps running.
///
/// ```
/// # csp::block_on(async {
/// let handle = csp::spawn(async { 1 + 2 });
/// assert_eq!(handle.await.unwrap(), 3);
/// csp::spawn(async { /* detached */ });
/// # });
/// ```
///
/// A process runs on a csp worker thread, outside any tokio runtime: spawned from a
/// tokio task, it cannot use tokio's sockets or timers (they panic, "there is no reactor
/// running") unless csp's threads enter tokio's context. With the `tokio` feature that is
/// one line, `Builder::enter_tokio`, on the default
/// runtime (`build_default`) or on your own; `examples/tokio_interop.rs` does it.
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let at = Location::caller();
    let mut future = Some(future);
    let on_worker = context::with_worker(|local| {
        local.map(|local| {
            let future = future.take().expect("taken once");
            Shared::spawn(local.shared(), future, at)
        })
    });
    if let Some(join) = on_worker {
        return join;
    }
    let future = future.take().expect("taken once");
    match context::current_handle() {
        Some(handle) => Shared::spawn(&handle.shared, future, at),
        None => Shared::spawn(default::shared(), future, at),
    }
}

/// Runs the blocking closure `f` on a blocking-pool thread of the current runtime (or
/// the default one), so it cannot stall processes. See [`Handle::spawn_blocking`](crate::Handle::spawn_blocking).
///
/// ```
/// # csp::block_on(async {
/// let n = csp::spawn_blocking(|| (1..=10u32).product::<u32>()).await.unwrap();
/// assert_eq!(n, 3_628_800);
/// # });
/// ```
#[track_caller]
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let at = Location::caller();
    match context::current_handle() {
        Some(handle) => Shared::spawn_blocking(&handle.shared, f, at),
        None => Shared::spawn_blocking(default::shared(), f, at),
    }
}

/// Runs `future` to completion on the current thread with the process-wide default
/// runtime as the current one: processes it spawns run on the default runtime's
/// workers. The future need not be `Send`.
///
/// # Panics
/// If called while csp is polling a process or a `block_on` future on this thread
/// (`.await` the future instead).
///
/// ```
/// let v = csp::block_on(async { csp::spawn(async { 21 * 2 }).await.unwrap() });
/// assert_eq!(v, 42);
/// ```
#[track_caller]
pub fn block_on<F: Future>(future: F) -> F::Output {
    context::assert_may_block("block_on");
    driver::block_on(&default::handle(), future)
}

/// Yields: the current process goes to the back of its worker's queue, letting others
/// run. Works under any executor (it wakes itself and returns `Pending` once).
///
/// ```
/// # csp::block_on(async {
/// let h = csp::spawn(async {
///     for _ in 0..3 {
///         csp::yield_now().await;
///     }
/// });
/// h.await.unwrap();
/// # });
/// ```
pub async fn yield_now() {
    YieldNow { yielded: false }.await
}

struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
