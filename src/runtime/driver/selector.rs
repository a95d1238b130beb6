//! The operating system's readiness queue under the driver: `mio` (epoll, kqueue) in a
//! build, and under loom a model of it that the models feed events to, so that they drive
//! the real driver and the real parking code (`loom_models.rs`).
//!
//! Three handles, as `mio` has them: the [`Selector`] the holder of the driver polls, the
//! [`Registrar`] that registers sources from any thread, and the [`Wakeup`] that brings
//! the holder out of its poll. A poll reports each event as its token and the readiness
//! bits of `readiness.rs`.

#[cfg(all(test, loom))]
pub(crate) use model::ModelSource;
#[cfg(loom)]
pub(crate) use model::{Registrar, Selector, Source, Token, Wakeup};
#[cfg(not(loom))]
pub(crate) use os::{Registrar, Selector, Source, Token, Wakeup};

#[cfg(not(loom))]
mod os {
    use std::io;
    use std::time::Duration;

    pub(crate) use mio::Token;
    pub(crate) use mio::event::Source;
    use mio::{Events, Interest, Poll, Registry};

    use crate::runtime::driver::readiness::{ERROR, READ_CLOSED, READABLE, WRITABLE, WRITE_CLOSED};

    /// The poll, and its event buffer (allocated once).
    pub(crate) struct Selector {
        poll: Poll,
        events: Events,
    }

    /// Registers sources with the poll, from any thread.
    pub(crate) struct Registrar(Registry);

    /// Ends the poll under way, or the next one.
    pub(crate) struct Wakeup(mio::Waker);

    impl Selector {
        /// A poll taking up to `capacity` events at once, whose wake-up reports as
        /// `wake_token` (a token no source has).
        pub(crate) fn new(
            capacity: usize,
            wake_token: Token,
        ) -> io::Result<(Selector, Registrar, Wakeup)> {
            let poll = Poll::new()?;
            let registrar = Registrar(poll.registry().try_clone()?);
            let wakeup = Wakeup(mio::Waker::new(poll.registry(), wake_token)?);
            let events = Events::with_capacity(capacity);
            Ok((Selector { poll, events }, registrar, wakeup))
        }

        /// Waits up to `timeout` (`None`: for ever) for events or a wake-up, and returns
        /// what came: each event's token and readiness bits.
        pub(crate) fn select(
            &mut self,
            timeout: Option<Duration>,
        ) -> io::Result<impl Iterator<Item = (Token, usize)> + '_> {
            self.poll.poll(&mut self.events, timeout)?;
            Ok(self.events.iter().map(|event| {
                let ready = [
                    (event.is_readable(), READABLE),
                    (event.is_writable(), WRITABLE),
                    (event.is_read_closed(), READ_CLOSED),
                    (event.is_write_closed(), WRITE_CLOSED),
                    (event.is_error(), ERROR),
                ]
                .into_iter()
                .fold(0, |ready, (is, bit)| ready | (usize::from(is) * bit));
                (event.token(), ready)
            }))
        }
    }

    impl Registrar {
        /// Registers `source` as `token`, edge-triggered, for reading and writing.
        pub(crate) fn register(&self, source: &mut impl Source, token: Token) -> io::Result<()> {
            self.0
                .register(source, token, Interest::READABLE | Interest::WRITABLE)
        }

        pub(crate) fn deregister(&self, source: &mut impl Source) -> io::Result<()> {
            self.0.deregister(source)
        }
    }

    impl Wakeup {
        pub(crate) fn wake(&self) -> io::Result<()> {
            self.0.wake()
        }
    }
}

/// The model: the events a model fires wait in a list until the holder's next poll
/// takes them; a poll with no timeout blocks until there are some or a wake-up comes (a
/// timed one returns at once: loom has no clock).
#[cfg(loom)]
mod model {
    use std::io;
    use std::time::Duration;

    use crate::loom::sync::{Arc, Condvar, Mutex};

    /// What names a source to the poll.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) struct Token(pub(crate) usize);

    /// What the model registers.
    pub(crate) trait Source {}

    /// A source of the model: it has no descriptor, and its events are what
    /// [`Registrar::fire`] says.
    pub(crate) struct ModelSource;

    impl Source for ModelSource {}

    #[derive(Default)]
    struct Pending {
        events: Vec<(Token, usize)>,
        woken: bool,
    }

    struct Kernel {
        pending: Mutex<Pending>,
        changed: Condvar,
    }

    impl Kernel {
        fn report(&self, change: impl FnOnce(&mut Pending)) {
            change(&mut self.pending.lock());
            self.changed.notify_all();
        }
    }

    pub(crate) struct Selector {
        kernel: Arc<Kernel>,
        taken: Vec<(Token, usize)>,
    }

    pub(crate) struct Registrar(Arc<Kernel>);

    pub(crate) struct Wakeup(Arc<Kernel>);

    impl Selector {
        pub(crate) fn new(
            capacity: usize,
            _wake_token: Token,
        ) -> io::Result<(Selector, Registrar, Wakeup)> {
            let kernel = Arc::new(Kernel {
                pending: Mutex::new(Pending::default()),
                changed: Condvar::new(),
            });
            let selector = Selector {
                kernel: kernel.clone(),
                taken: Vec::with_capacity(capacity),
            };
            Ok((selector, Registrar(kernel.clone()), Wakeup(kernel)))
        }

        pub(crate) fn select(
            &mut self,
            timeout: Option<Duration>,
        ) -> io::Result<impl Iterator<Item = (Token, usize)> + '_> {
            let mut pending = self.kernel.pending.lock();
            while timeout.is_none() && pending.events.is_empty() && !pending.woken {
                pending = self.kernel.changed.wait(pending);
            }
            pending.woken = false;
            self.taken.append(&mut pending.events);
            drop(pending);
            Ok(self.taken.drain(..))
        }
    }

    impl Registrar {
        pub(crate) fn register(&self, _source: &mut impl Source, _token: Token) -> io::Result<()> {
            Ok(())
        }

        pub(crate) fn deregister(&self, _source: &mut impl Source) -> io::Result<()> {
            Ok(())
        }

        /// The model's operating system reports `ready` for the source of `token`.
        pub(crate) fn fire(&self, token: Token, ready: usize) {
            self.0.report(|pending| pending.events.push((token, ready)));
        }
    }

    impl Wakeup {
        pub(crate) fn wake(&self) -> io::Result<()> {
            self.0.report(|pending| pending.woken = true);
            Ok(())
        }
    }
}
