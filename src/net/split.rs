//! The owned halves of a stream socket: a reader process and a writer process per
//! connection, each owning its half, is how a CSP server serves one.

use std::io::{self, IoSlice, IoSliceMut};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::io::{AsyncRead, AsyncWrite};

/// A stream socket that splits into owned halves: [`TcpStream`](crate::net::TcpStream),
/// [`UnixStream`](crate::net::unix::UnixStream).
pub trait Split: sealed::Sealed + Send + Sync + 'static
where
    for<'a> &'a Self: AsyncRead + AsyncWrite,
{
    /// Shuts the writing side down (what dropping the write half does).
    #[doc(hidden)]
    fn shut_write(&self) -> io::Result<()>;
}

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// The read half of a stream socket (`into_split`). It reads; it writes too, through the
/// same connection, for code generic over both.
#[derive(Debug)]
pub struct ReadHalf<S> {
    stream: Arc<S>,
}

/// The write half of a stream socket (`into_split`): dropped, it shuts the connection
/// down for writing (the peer reads the end of the stream); the connection closes once
/// both halves are gone.
#[derive(Debug)]
pub struct WriteHalf<S: Split>
where
    for<'a> &'a S: AsyncRead + AsyncWrite,
{
    stream: Arc<S>,
    /// Cleared by `reunite`, which keeps the connection whole.
    shut_on_drop: bool,
}

/// Splits `stream` into its halves.
pub(crate) fn split<S: Split>(stream: S) -> (ReadHalf<S>, WriteHalf<S>)
where
    for<'a> &'a S: AsyncRead + AsyncWrite,
{
    let stream = Arc::new(stream);
    (
        ReadHalf {
            stream: stream.clone(),
        },
        WriteHalf {
            stream,
            shut_on_drop: true,
        },
    )
}

impl<S: Split> ReadHalf<S>
where
    for<'a> &'a S: AsyncRead + AsyncWrite,
{
    /// The connection both halves share.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let (reader, _writer) = TcpStream::connect(listener.local_addr()?).await?.into_split();
    /// assert_eq!(reader.stream().peer_addr()?, listener.local_addr()?);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn stream(&self) -> &S {
        &self.stream
    }

    /// Puts the halves of one stream back together; gives them back if they are halves
    /// of two streams.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let (reader, writer) = TcpStream::connect(listener.local_addr()?).await?.into_split();
    /// let stream: TcpStream = reader.reunite(writer).expect("halves of one stream");
    /// assert!(stream.peer_addr().is_ok());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn reunite(self, write: WriteHalf<S>) -> Result<S, (ReadHalf<S>, WriteHalf<S>)> {
        if !Arc::ptr_eq(&self.stream, &write.stream) {
            return Err((self, write));
        }
        let mut write = write;
        write.shut_on_drop = false;
        drop(write);
        match Arc::try_unwrap(self.stream) {
            Ok(stream) => Ok(stream),
            Err(_) => unreachable!("csp: both halves of a stream were given"),
        }
    }
}

impl<S: Split> WriteHalf<S>
where
    for<'a> &'a S: AsyncRead + AsyncWrite,
{
    /// The connection both halves share.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let (_reader, writer) = TcpStream::connect(listener.local_addr()?).await?.into_split();
    /// writer.stream().set_nodelay(true)?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn stream(&self) -> &S {
        &self.stream
    }
}

impl<S: Split> Drop for WriteHalf<S>
where
    for<'a> &'a S: AsyncRead + AsyncWrite,
{
    fn drop(&mut self) {
        if self.shut_on_drop {
            let _ = self.stream.shut_write();
        }
    }
}

/// The I/O traits of a half, through `&S`.
macro_rules! half_io {
    ($half:ident $(: $bound:path)?) => {
        impl<S: Split> AsyncRead for $half<S>
        where
            for<'a> &'a S: AsyncRead + AsyncWrite,
        {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut [u8],
            ) -> Poll<io::Result<usize>> {
                Pin::new(&mut &*self.stream).poll_read(cx, buf)
            }

            fn poll_read_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &mut [IoSliceMut<'_>],
            ) -> Poll<io::Result<usize>> {
                Pin::new(&mut &*self.stream).poll_read_vectored(cx, bufs)
            }
        }

        impl<S: Split> AsyncWrite for $half<S>
        where
            for<'a> &'a S: AsyncRead + AsyncWrite,
        {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                Pin::new(&mut &*self.stream).poll_write(cx, buf)
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                Pin::new(&mut &*self.stream).poll_write_vectored(cx, bufs)
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Pin::new(&mut &*self.stream).poll_flush(cx)
            }

            fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Pin::new(&mut &*self.stream).poll_close(cx)
            }
        }
    };
}

half_io!(ReadHalf);
half_io!(WriteHalf);
