//! The owned halves of a stream socket: a reader process and a writer process per
//! connection, each owning its half, is how a CSP server serves one.

use std::io::{self, IoSlice, IoSliceMut};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::io::{AsyncRead, AsyncWrite};

/// A stream socket that splits into owned halves: [`TcpStream`](crate::net::TcpStream),
/// [`UnixStream`](crate::net::unix::UnixStream). Sealed: it names the streams
/// [`ReadHalf`] and [`WriteHalf`] take, for code generic over both.
///
/// ```
/// use csp::net::{AsyncReadExt, ReadHalf, Split};
///
/// // Reads one line's worth of bytes from the read half of any stream socket.
/// async fn first_bytes<S: Split>(reader: &mut ReadHalf<S>) -> std::io::Result<Vec<u8>>
/// where
///     for<'a> &'a S: futures::io::AsyncRead + futures::io::AsyncWrite,
/// {
///     let mut buf = vec![0; 16];
///     let n = reader.read(&mut buf).await?;
///     buf.truncate(n);
///     Ok(buf)
/// }
///
/// # csp::block_on(async {
/// use csp::net::AsyncWriteExt;
/// let (a, b) = csp::net::unix::UnixStream::pair()?;
/// let (mut reader, _writer) = a.into_split();
/// let (_, mut writer) = b.into_split();
/// writer.write_all(b"hello").await?;
/// assert_eq!(first_bytes(&mut reader).await?, b"hello");
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
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
///
/// ```
/// # csp::block_on(async {
/// use csp::net::{AsyncReadExt, AsyncWriteExt, TcpListener, TcpStream};
/// let listener = TcpListener::bind("127.0.0.1:0").await?;
/// let client = TcpStream::connect(listener.local_addr()?).await?;
/// let (server, _) = listener.accept().await?;
/// let (mut reader, mut writer) = server.into_split();
/// // The read half and the write half each go to a process of their own.
/// let echo = csp::spawn(async move {
///     let mut buf = [0; 5];
///     reader.read_exact(&mut buf).await?;
///     writer.write_all(&buf).await
/// });
/// let (mut from_server, mut to_server) = client.into_split();
/// to_server.write_all(b"hello").await?;
/// let mut reply = [0; 5];
/// from_server.read_exact(&mut reply).await?;
/// assert_eq!(&reply, b"hello");
/// echo.await.unwrap()?;
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
#[derive(Debug)]
pub struct ReadHalf<S> {
    stream: Arc<S>,
}

/// The write half of a stream socket (`into_split`): dropped, it shuts the connection
/// down for writing (the peer reads the end of the stream); the connection closes once
/// both halves are gone.
///
/// ```
/// # csp::block_on(async {
/// use csp::net::{AsyncReadExt, AsyncWriteExt, TcpListener, TcpStream};
/// let listener = TcpListener::bind("127.0.0.1:0").await?;
/// let (_reader, mut writer) = TcpStream::connect(listener.local_addr()?).await?.into_split();
/// let (mut server, _) = listener.accept().await?;
/// writer.write_all(b"bye").await?;
/// drop(writer); // the peer reads the end of the stream
/// let mut all = Vec::new();
/// server.read_to_end(&mut all).await?;
/// assert_eq!(all, b"bye");
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
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
