//! `futures`' `AsyncRead` and `AsyncWrite` for a stream socket (`TcpStream`,
//! `UnixStream`) and for a shared reference to it: each read or write is the
//! non-blocking system call, retried on the driver's next readiness after `WouldBlock`;
//! nothing is buffered, so a flush has nothing to do, and closing shuts the writing side
//! down.

/// The most slices a vectored read may have and still count as short when it comes back
/// with fewer bytes than its slices hold (`Registration::poll_stream_read`): std passes
/// at most the system's `IOV_MAX` slices to one `readv` (1024 on Linux, macOS and the
/// BSDs), which POSIX guarantees to be at least 16 (`_XOPEN_IOV_MAX`). Past 16 a short
/// result may be that cut, with bytes still queued, so it says nothing about the socket.
pub(crate) const XOPEN_IOV_MAX: usize = 16;

/// The bytes a vectored read into `bufs` asks for, for telling a short result; 0, which
/// no result is short of, past [`XOPEN_IOV_MAX`] slices.
pub(crate) fn vectored_len(bufs: &[std::io::IoSliceMut<'_>]) -> usize {
    if bufs.len() > XOPEN_IOV_MAX {
        return 0;
    }
    bufs.iter().map(|buf| buf.len()).sum()
}

/// Implements the I/O traits for `$ty`, which has a field `io: Evented<M>` with `&M:
/// Read + Write`, and a `shutdown(&self, Shutdown) -> io::Result<()>`.
macro_rules! stream_io {
    ($ty:ty) => {
        impl $ty {
            fn poll_read_ref(
                &self,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                use std::io::Read;
                // Nothing to read into: done at once, as the system call is (waiting
                // for readiness first would wait for data that no read takes).
                if buf.is_empty() {
                    return std::task::Poll::Ready(Ok(0));
                }
                self.io
                    .poll_stream_read(cx, buf.len(), |mut io| io.read(buf))
            }

            fn poll_read_vectored_ref(
                &self,
                cx: &mut std::task::Context<'_>,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                use std::io::Read;
                // As in `poll_read_ref`.
                if bufs.iter().all(|buf| buf.is_empty()) {
                    return std::task::Poll::Ready(Ok(0));
                }
                let len = $crate::net::stream_io::vectored_len(bufs);
                self.io
                    .poll_stream_read(cx, len, |mut io| io.read_vectored(bufs))
            }

            fn poll_write_ref(
                &self,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                use std::io::Write;
                // Nothing to write: done at once, as the system call is.
                if buf.is_empty() {
                    return std::task::Poll::Ready(Ok(0));
                }
                self.io.poll_write_with(cx, |mut io| io.write(buf))
            }

            fn poll_write_vectored_ref(
                &self,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                use std::io::Write;
                // As in `poll_write_ref`.
                if bufs.iter().all(|buf| buf.is_empty()) {
                    return std::task::Poll::Ready(Ok(0));
                }
                self.io.poll_write_with(cx, |mut io| io.write_vectored(bufs))
            }

            /// Shuts the writing side down; a connection the peer already closed is no
            /// error.
            pub(crate) fn shutdown_write(&self) -> std::io::Result<()> {
                match self.shutdown(std::net::Shutdown::Write) {
                    Err(err) if err.kind() == std::io::ErrorKind::NotConnected => Ok(()),
                    other => other,
                }
            }
        }

        $crate::net::stream_io::stream_io!(@traits $ty, |this| this);
        $crate::net::stream_io::stream_io!(@traits &$ty, |this| *this);
    };
    (@traits $ty:ty, |$this:ident| $stream:expr) => {
        impl futures::io::AsyncRead for $ty {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let $this = &*self;
                $stream.poll_read_ref(cx, buf)
            }

            fn poll_read_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let $this = &*self;
                $stream.poll_read_vectored_ref(cx, bufs)
            }
        }

        impl futures::io::AsyncWrite for $ty {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let $this = &*self;
                $stream.poll_write_ref(cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let $this = &*self;
                $stream.poll_write_vectored_ref(cx, bufs)
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(Ok(()))
            }

            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                let $this = &*self;
                std::task::Poll::Ready($stream.shutdown_write())
            }
        }
    };
}

pub(crate) use stream_io;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vectored_read_over_more_slices_than_every_system_takes_is_never_short() {
        let mut bytes = [0u8; 64];
        let slices: Vec<_> = bytes.chunks_mut(2).map(std::io::IoSliceMut::new).collect();
        assert_eq!(slices.len(), 32);
        assert_eq!(vectored_len(&slices[..XOPEN_IOV_MAX]), 2 * XOPEN_IOV_MAX);
        assert_eq!(vectored_len(&slices[..=XOPEN_IOV_MAX]), 0);
        assert_eq!(vectored_len(&slices[..0]), 0);
    }
}
