//! What both channel ends offer: inspection and closing.

/// A channel end: a [`Sender`](crate::Sender) or a [`Receiver`](crate::Receiver). Lets
/// `same_channel` compare either kind of end with either kind.
///
/// ```
/// let (tx, rx) = csp::channel::<u8>();
/// assert!(tx.same_channel(&rx) && rx.same_channel(&tx.clone()));
/// ```
pub trait ChannelEnd<T>: sealed::Sealed<T> {}

pub(crate) mod sealed {
    /// Implemented by `Sender` and `Receiver` only.
    pub trait Sealed<T> {
        /// The address of the channel, identifying it.
        fn channel_addr(&self) -> *const ();
    }
}

impl<T, E: sealed::Sealed<T>> ChannelEnd<T> for E {}

/// The methods both ends share, written once.
macro_rules! channel_end_methods {
    ($side:expr) => {
        /// Closes the channel: waiting and future sends fail (giving their values
        /// back), receivers drain what is buffered and then get `RecvError`. True if this
        /// call closed it.
        ///
        /// ```
        /// let (tx, rx) = csp::bounded::<u8>(1);
        /// assert!(rx.close());
        /// assert!(!tx.close(), "already closed");
        /// assert!(tx.is_closed());
        /// ```
        pub fn close(&self) -> bool {
            self.chan().close_from($side)
        }

        /// True once the channel is closed.
        ///
        /// ```
        /// let (tx, rx) = csp::unbounded::<u8>();
        /// drop(rx);
        /// assert!(tx.is_closed());
        /// ```
        pub fn is_closed(&self) -> bool {
            self.chan().is_closed()
        }

        /// Values buffered in the channel (briefly more than the capacity when a
        /// dropped receiver handed one back).
        ///
        /// ```
        /// let (tx, rx) = csp::bounded(4);
        /// tx.try_send(1).unwrap();
        /// assert_eq!(rx.len(), 1);
        /// ```
        pub fn len(&self) -> usize {
            self.chan().lock().len()
        }

        /// True if no value is buffered.
        ///
        /// ```
        /// let (tx, _rx) = csp::bounded::<u8>(4);
        /// assert!(tx.is_empty());
        /// ```
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// True if a send would have to wait: the buffer is at capacity (always, for a
        /// rendezvous channel; never, for an unbounded one).
        ///
        /// ```
        /// let (tx, _rx) = csp::bounded(1);
        /// tx.try_send(1).unwrap();
        /// assert!(tx.is_full());
        /// assert!(csp::channel::<u8>().0.is_full());
        /// ```
        pub fn is_full(&self) -> bool {
            let chan = self.chan();
            chan.cap().is_some_and(|cap| chan.lock().buffered() >= cap)
        }

        /// The buffer's capacity: `Some(0)` for a rendezvous channel, `None` for an
        /// unbounded one.
        ///
        /// ```
        /// assert_eq!(csp::bounded::<u8>(3).0.capacity(), Some(3));
        /// assert_eq!(csp::channel::<u8>().1.capacity(), Some(0));
        /// assert_eq!(csp::unbounded::<u8>().0.capacity(), None);
        /// ```
        pub fn capacity(&self) -> Option<usize> {
            self.chan().cap()
        }

        /// Live `Sender`s of this channel.
        ///
        /// ```
        /// let (tx, _rx) = csp::channel::<u8>();
        /// let tx2 = tx.clone();
        /// assert_eq!(tx2.sender_count(), 2);
        /// ```
        pub fn sender_count(&self) -> usize {
            self.chan().sender_count()
        }

        /// Live `Receiver`s of this channel.
        ///
        /// ```
        /// let (_tx, rx) = csp::channel::<u8>();
        /// assert_eq!(rx.clone().receiver_count(), 2);
        /// ```
        pub fn receiver_count(&self) -> usize {
            self.chan().receiver_count()
        }

        /// True if `other` (either kind of end) belongs to the same channel.
        ///
        /// ```
        /// let (tx, rx) = csp::channel::<u8>();
        /// let (tx2, _) = csp::channel::<u8>();
        /// assert!(tx.same_channel(&rx));
        /// assert!(!tx.same_channel(&tx2));
        /// ```
        pub fn same_channel<E: $crate::chan::ChannelEnd<T>>(&self, other: &E) -> bool {
            let this: *const $crate::chan::core::Chan<T> = self.chan();
            this.cast::<()>() == $crate::chan::end::sealed::Sealed::channel_addr(other)
        }

        /// Marks the channel as used outside csp, so deadlock detection never counts a
        /// process blocked on it as deadlocked. csp notices by itself an end created,
        /// cloned or used outside the runtime's processes and `block_on` future; this is
        /// needed only for an end *moved* to a plain thread (or another executor) that
        /// will first use it later, while processes already wait on the channel.
        ///
        /// ```
        /// let (tx, rx) = csp::bounded::<u8>(1);
        /// tx.mark_foreign();
        /// std::thread::spawn(move || tx.send_blocking(1)).join().unwrap().unwrap();
        /// assert_eq!(rx.recv_blocking(), Ok(1));
        /// ```
        pub fn mark_foreign(&self) {
            self.chan().mark_foreign();
        }
    };
}

pub(crate) use channel_end_methods;
