//! The futures of the channel operations: each is a one-arm choice (`Single`) whose
//! output is its operation's outcome. One macro writes the three public types.

/// What an operation's future resolves to, once its choice completed it.
pub(crate) trait Outcome {
    type Output;

    /// Moves the outcome out; called once, after the choice completed this operation.
    fn outcome(&self) -> Self::Output;

    /// Records, for the wait graph, the owner of `waker` as the last user of the side
    /// of the channel the operation used (`site.rs`); an operation on no side records
    /// nothing.
    #[inline]
    fn note_user(&self, _waker: &std::task::Waker) {}
}

/// Defines a public future type over a channel operation.
macro_rules! channel_future {
    ($(#[$attr:meta])* $name:ident => $op:ty, $output:ty) => {
        pin_project_lite::pin_project! {
            $(#[$attr])*
            #[must_use = "futures do nothing unless polled"]
            pub struct $name<'a, T> {
                #[pin]
                inner: $crate::wait::single::Single<$op>,
            }
        }

        impl<'a, T> $name<'a, T> {
            pub(crate) fn new(op: $op) -> Self {
                $name {
                    inner: $crate::wait::single::Single::new(op),
                }
            }
        }

        impl<'a, T> std::future::Future for $name<'a, T> {
            type Output = $output;

            fn poll(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Self::Output> {
                let mut inner = self.project().inner;
                std::task::ready!(inner.as_mut().poll(cx));
                let op = inner.as_ref().op();
                // Completed, waited or not: the owner used the op's side last (a
                // future's op records nothing while it waits: `ops.rs`).
                $crate::chan::future::Outcome::note_user(op, cx.waker());
                let output = $crate::chan::future::Outcome::outcome(op);
                inner.taken();
                std::task::Poll::Ready(output)
            }
        }

        impl<'a, T> futures::future::FusedFuture for $name<'a, T> {
            fn is_terminated(&self) -> bool {
                self.inner.is_terminated()
            }
        }

        impl<'a, T> std::fmt::Debug for $name<'a, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("terminated", &self.inner.is_terminated())
                    .finish()
            }
        }
    };
}

pub(crate) use channel_future;
