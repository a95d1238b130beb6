//! The one door through which csp reaches atomics, cells, locks and threads.
//!
//! Under `--cfg loom` every item here is loom's model-checked twin, so the loom models in
//! the crate drive the real task, queue and parking code. Outside loom they are the
//! standard library's, wrapped only where the two APIs differ (`UnsafeCell::with`,
//! a poison-free `Mutex`).

#[cfg(not(loom))]
mod imp {
    pub(crate) mod sync {
        pub(crate) use std::sync::Arc;

        pub(crate) mod atomic {
            pub(crate) use std::sync::atomic::{
                AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence,
            };
        }

        /// `std::sync::Mutex` without poisoning: csp never leaves protected data half
        /// updated across a panic (user code never runs under one of its locks).
        #[derive(Debug, Default)]
        pub(crate) struct Mutex<T>(std::sync::Mutex<T>);

        impl<T> Mutex<T> {
            pub(crate) fn new(value: T) -> Self {
                Mutex(std::sync::Mutex::new(value))
            }

            pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, T> {
                self.0
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
            }
        }

        /// `std::sync::Condvar` without poisoning, to go with [`Mutex`].
        #[derive(Debug, Default)]
        pub(crate) struct Condvar(std::sync::Condvar);

        impl Condvar {
            pub(crate) fn new() -> Self {
                Condvar(std::sync::Condvar::new())
            }

            pub(crate) fn wait<'a, T>(
                &self,
                guard: std::sync::MutexGuard<'a, T>,
            ) -> std::sync::MutexGuard<'a, T> {
                self.0
                    .wait(guard)
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
            }

            pub(crate) fn wait_timeout<'a, T>(
                &self,
                guard: std::sync::MutexGuard<'a, T>,
                timeout: std::time::Duration,
            ) -> std::sync::MutexGuard<'a, T> {
                match self.0.wait_timeout(guard, timeout) {
                    Ok((guard, _)) => guard,
                    Err(poisoned) => poisoned.into_inner().0,
                }
            }

            pub(crate) fn notify_all(&self) {
                self.0.notify_all()
            }
        }
    }

    pub(crate) mod cell {
        /// `core::cell::UnsafeCell` with loom's closure-based access API.
        #[derive(Debug, Default)]
        pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

        impl<T> UnsafeCell<T> {
            pub(crate) const fn new(value: T) -> Self {
                UnsafeCell(core::cell::UnsafeCell::new(value))
            }

            #[inline(always)]
            pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
                f(self.0.get())
            }

            #[inline(always)]
            pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
                f(self.0.get())
            }
        }
    }

    pub(crate) mod thread {
        pub(crate) use std::thread::{Builder, JoinHandle, Thread, current, park, yield_now};
    }

    /// A hint that this thread is spinning on a value another thread will change.
    #[inline(always)]
    pub(crate) fn spin_loop() {
        std::hint::spin_loop()
    }

    /// Asymmetric fences: a `light` fence, which costs nothing at run time, and a
    /// `heavy` one, which makes every thread of the process that is running pass a
    /// full barrier (Linux's `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`). A light
    /// fence on one side and a heavy one on the other order a store before a load on
    /// each side as two `SeqCst` fences do, so a path taken millions of times a second
    /// pairs with one taken rarely at no cost to the first.
    pub(crate) mod asymmetric {
        /// The cheap side: stops the compiler from moving memory accesses across it;
        /// the heavy fence of the other side does the hardware's part.
        #[inline(always)]
        pub(crate) fn light() {
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        }

        /// Whether heavy fences work here (Linux 4.14 or later, and no seccomp filter
        /// that forbids `membarrier`): the first call registers the process for them.
        /// Without them, what relies on the pair must not run.
        #[cfg(target_os = "linux")]
        pub(crate) fn available() -> bool {
            static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
            *REGISTERED.get_or_init(|| {
                // SAFETY: a system call with integer arguments and no memory effects.
                let registered = unsafe {
                    libc::syscall(
                        libc::SYS_membarrier,
                        MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                        0,
                        0,
                    )
                };
                registered == 0
            })
        }

        /// Heavy fences need Linux's `membarrier`.
        #[cfg(not(target_os = "linux"))]
        pub(crate) fn available() -> bool {
            false
        }

        /// The costly side: a full barrier on every running thread of the process;
        /// false if it failed (a seccomp filter installed after [`available`] said
        /// true), when the caller must act as if no heavy fence existed. Only after
        /// [`available`] said true.
        #[cfg(target_os = "linux")]
        #[must_use]
        pub(crate) fn heavy() -> bool {
            #[cfg(test)]
            if FAIL_NEXT_HEAVY.with(|fail| fail.replace(false)) {
                return false;
            }
            // SAFETY: as in `available`.
            let done = unsafe {
                libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)
            };
            done == 0
        }

        #[cfg(all(test, target_os = "linux"))]
        std::thread_local! {
            /// Makes this thread's next [`heavy`] fail, as a forbidden `membarrier` does.
            pub(crate) static FAIL_NEXT_HEAVY: std::cell::Cell<bool> =
                const { std::cell::Cell::new(false) };
        }

        /// Never called: [`available`] is false.
        #[cfg(not(target_os = "linux"))]
        pub(crate) fn heavy() -> bool {
            unreachable!("no heavy fence on this platform")
        }

        /// `linux/membarrier.h`.
        #[cfg(target_os = "linux")]
        const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
        #[cfg(target_os = "linux")]
        const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) mod sync {
        pub(crate) use loom::sync::Arc;

        pub(crate) mod atomic {
            pub(crate) use loom::sync::atomic::{
                AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence,
            };
        }

        /// loom's `Mutex` with the poison-free signature of the std wrapper.
        #[derive(Debug)]
        pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

        impl<T> Mutex<T> {
            pub(crate) fn new(value: T) -> Self {
                Mutex(loom::sync::Mutex::new(value))
            }

            pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
                self.0
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
            }
        }

        impl<T: Default> Default for Mutex<T> {
            fn default() -> Self {
                Mutex::new(T::default())
            }
        }

        /// loom's `Condvar`. loom cannot model time, so a timed wait is an untimed one:
        /// models cover the untimed path (DESIGN.md).
        #[derive(Debug)]
        pub(crate) struct Condvar(loom::sync::Condvar);

        impl Condvar {
            pub(crate) fn new() -> Self {
                Condvar(loom::sync::Condvar::new())
            }

            pub(crate) fn wait<'a, T>(
                &self,
                guard: loom::sync::MutexGuard<'a, T>,
            ) -> loom::sync::MutexGuard<'a, T> {
                self.0
                    .wait(guard)
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
            }

            pub(crate) fn wait_timeout<'a, T>(
                &self,
                guard: loom::sync::MutexGuard<'a, T>,
                _timeout: std::time::Duration,
            ) -> loom::sync::MutexGuard<'a, T> {
                self.wait(guard)
            }

            pub(crate) fn notify_all(&self) {
                self.0.notify_all()
            }
        }
    }

    pub(crate) mod cell {
        pub(crate) use loom::cell::UnsafeCell;
    }

    pub(crate) mod thread {
        pub(crate) use loom::thread::{Thread, current, park, yield_now};
        // Worker and pool threads are real OS threads even under loom: the models drive
        // workers by hand and never start them.
        pub(crate) use std::thread::{Builder, JoinHandle};
    }

    pub(crate) use loom::thread_local;

    /// Under loom a spin must yield, or the model never lets the other thread run.
    #[inline(always)]
    pub(crate) fn spin_loop() {
        loom::thread::yield_now()
    }

    /// Under loom both sides of an asymmetric fence are `SeqCst` fences: what a
    /// `membarrier` gives the light side, modelled.
    pub(crate) mod asymmetric {
        pub(crate) fn light() {
            loom::sync::atomic::fence(loom::sync::atomic::Ordering::SeqCst);
        }

        pub(crate) fn available() -> bool {
            true
        }

        pub(crate) fn heavy() -> bool {
            loom::sync::atomic::fence(loom::sync::atomic::Ordering::SeqCst);
            true
        }
    }
}

pub(crate) use imp::*;
