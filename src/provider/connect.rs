//! The TCP step of every model request: a ureq connector whose connect gives up as soon as the call is
//! cancelled, so a cancel takes effect even while a server that does not accept (its accept queue full, an
//! address that drops packets) holds the connect.
//!
//! ureq's own TCP connector blocks in `connect` until the server answers or the timeout ends, and
//! `Agent::shutdown` does not interrupt it. This one opens a non-blocking socket, starts the connect, and waits
//! for it in slices of [`SLICE`], looking at the call's cancellation flag between slices; on cancel it closes the
//! socket and fails at once. Once connected, the socket is registered with the agent (so `Agent::shutdown` still
//! cuts a blocked read or write) and handed on as a [`TcpSocket`], ureq's TCP transport redone (ureq does not
//! export its own): blocking reads and writes bounded by the request's timeouts. The chain is ureq's default one
//! with this connector in place of ureq's TCP step (HTTP CONNECT proxies from the environment, then rustls for
//! `https`), see [`agent`].
//! Not here: name resolution (ureq's resolver, bounded by the request timeout).

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use ureq::unversioned::resolver::DefaultResolver;
use ureq::unversioned::transport::{
    Buffers, ConnectProxyConnector, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout,
    RustlsConnector, ShutdownHandle, Transport,
};

/// How long a connect waits before it looks at the cancellation flag again.
const SLICE: Duration = Duration::from_millis(10);

/// An agent for one request: ureq's default connector chain with [`CancellableTcp`] as its TCP step.
pub fn agent(config: ureq::config::Config, cancelled: Arc<AtomicBool>) -> ureq::Agent {
    let connector =
        ().chain(ConnectProxyConnector::default())
            .chain(CancellableTcp { cancelled })
            .chain(RustlsConnector::default());
    ureq::Agent::with_parts(config, connector, DefaultResolver::default())
}

/// The TCP step of a connector chain: a connect that ends when `cancelled` is set.
pub struct CancellableTcp {
    cancelled: Arc<AtomicBool>,
}

impl fmt::Debug for CancellableTcp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancellableTcp").finish()
    }
}

impl<In: Transport> Connector<In> for CancellableTcp {
    type Out = Either<In, TcpSocket>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        // A connection made earlier in the chain (a CONNECT proxy's) is used as it is.
        if let Some(t) = chained {
            return Ok(Some(Either::A(t)));
        }
        let budget = (!details.timeout.after.is_not_happening()).then(|| *details.timeout.after);
        let stream = connect_any(&details.addrs, budget, &self.cancelled)
            .map_err(|e| connect_error(e, details.timeout))?;
        let config = details.config;
        if config.no_delay() {
            stream.set_nodelay(true)?;
        }
        let stream = Arc::new(stream);
        // Registered before any TLS: the agent's shutdown then cuts whatever I/O the request is blocked on.
        (details.register_shutdown)(Arc::downgrade(&stream) as Weak<dyn ShutdownHandle>)?;
        Ok(Some(Either::B(TcpSocket {
            stream,
            buffers: LazyBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
            read_timeout: None,
            write_timeout: None,
        })))
    }
}

/// A connected socket as a ureq transport: blocking reads and writes bounded by the request's timeouts. The
/// socket is shared (in an `Arc`) with the handle the agent shuts down on cancel.
pub struct TcpSocket {
    stream: Arc<TcpStream>,
    buffers: LazyBuffers,
    /// The timeouts last set on the socket, so that one is set only when it changes.
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

impl fmt::Debug for TcpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpSocket")
            .field("peer", &self.stream.peer_addr().ok())
            .finish()
    }
}

/// The time left of `timeout` (none: no limit), or ureq's timeout error once there is none left.
fn time_left(timeout: NextTimeout) -> Result<Option<Duration>, ureq::Error> {
    if timeout.after.is_not_happening() {
        return Ok(None);
    }
    if timeout.after.is_zero() {
        return Err(ureq::Error::Timeout(timeout.reason));
    }
    Ok(Some(*timeout.after))
}

/// An I/O error of a read or write as ureq reports it: a timed-out one (or a would-block, which a socket timeout
/// gives) is ureq's timeout.
fn io_error(e: io::Error, timeout: NextTimeout) -> ureq::Error {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ureq::Error::Timeout(timeout.reason),
        _ => ureq::Error::Io(e),
    }
}

impl Transport for TcpSocket {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let timeout = timeout.for_write();
        let left = time_left(timeout)?;
        if left != self.write_timeout {
            self.stream.set_write_timeout(left)?;
            self.write_timeout = left;
        }
        let output = &self.buffers.output()[..amount];
        (&*self.stream)
            .write_all(output)
            .map_err(|e| io_error(e, timeout))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let timeout = timeout.for_read();
        let left = time_left(timeout)?;
        if left != self.read_timeout {
            self.stream.set_read_timeout(left)?;
            self.read_timeout = left;
        }
        let input = self.buffers.input_append_buf();
        let read = loop {
            match (&*self.stream).read(input) {
                // A signal: read again (the socket's timeout still bounds the wait).
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        let amount = read.map_err(|e| io_error(e, timeout))?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        // Open when a read would block: nothing waiting (the server sends nothing unasked) and not closed.
        let mut byte = [0u8];
        let open = self.stream.set_nonblocking(true).is_ok()
            && matches!((&*self.stream).read(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        open && self.stream.set_nonblocking(false).is_ok()
    }
}

/// Why a connect ended early: the call was cancelled, or its time ran out.
fn connect_error(e: io::Error, timeout: NextTimeout) -> ureq::Error {
    if e.kind() == io::ErrorKind::TimedOut {
        ureq::Error::Timeout(timeout.reason)
    } else {
        ureq::Error::Io(e)
    }
}

/// Connect to the first of `addrs` that accepts, sharing `budget` (none: no limit) among those left; a refusal
/// or a timeout moves on to the next address, a cancel ends at once.
fn connect_any(
    addrs: &[SocketAddr],
    budget: Option<Duration>,
    cancelled: &AtomicBool,
) -> io::Result<TcpStream> {
    let end = budget.map(|b| Instant::now() + b);
    let mut last = io::Error::new(io::ErrorKind::ConnectionRefused, "no address to connect to");
    for (i, addr) in addrs.iter().enumerate() {
        let left = u32::try_from(addrs.len() - i).unwrap_or(u32::MAX);
        let until =
            end.map(|e| Instant::now() + e.saturating_duration_since(Instant::now()) / left);
        match connect_one(*addr, until, cancelled) {
            Ok(s) => return Ok(s),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Err(e),
            Err(e) => last = e,
        }
        if end.is_some_and(|e| Instant::now() >= e) {
            break;
        }
    }
    Err(last)
}

/// Connect to `addr` by `until` (none: no limit) unless `cancelled` is set first.
fn connect_one(
    addr: SocketAddr,
    until: Option<Instant>,
    cancelled: &AtomicBool,
) -> io::Result<TcpStream> {
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
    let fd = rustix::net::socket_with(family, SocketType::STREAM, flags, None)?;
    match rustix::net::connect(&fd, &addr) {
        Ok(()) => {}
        Err(Errno::INPROGRESS | Errno::INTR) => wait_connected(&fd, until, cancelled)?,
        Err(e) => return Err(e.into()),
    }
    let stream = TcpStream::from(fd);
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// Wait for the connect started on `fd` to end, a slice at a time; dropping `fd` on cancel or timeout closes
/// the half-open connection.
fn wait_connected(fd: &OwnedFd, until: Option<Instant>, cancelled: &AtomicBool) -> io::Result<()> {
    loop {
        if cancelled.load(Ordering::Relaxed) {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "the call was cancelled while connecting",
            ));
        }
        let slice = match until {
            Some(u) => {
                let left = u.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "connect timed out"));
                }
                left.min(SLICE)
            }
            None => SLICE,
        };
        let wait = Timespec::try_from(slice).map_err(io::Error::other)?;
        let mut fds = [PollFd::new(fd, PollFlags::OUT)];
        match rustix::event::poll(&mut fds, Some(&wait)) {
            Ok(0) | Err(Errno::INTR) => continue,
            Ok(_) => return rustix::net::sockopt::socket_error(fd)?.map_err(io::Error::from),
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// What the first bytes a server receives from a request to `scheme://` on it look like.
    fn first_bytes_received(scheme: &str) -> Vec<u8> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("{scheme}://{}/v1/models", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).unwrap();
            buf.to_vec()
        });
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(5)))
            .build();
        let agent = agent(config, Arc::new(AtomicBool::new(false)));
        // The server never answers; the request fails once it has read what it wanted.
        let _ = agent.get(&url).call();
        server.join().unwrap()
    }

    #[test]
    fn https_goes_through_rustls_after_the_cancellable_connect() {
        let first = first_bytes_received("https");
        // A TLS record of type handshake (22), version 3.x: the ClientHello.
        assert_eq!(first[0], 0x16, "{first:?}");
        assert_eq!(first[1], 0x03, "{first:?}");
    }

    #[test]
    fn http_is_sent_in_the_clear_after_the_cancellable_connect() {
        assert_eq!(first_bytes_received("http"), b"GET /");
    }

    #[test]
    fn a_refused_connect_fails_at_once_as_refused() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let err = connect_any(
            &[port],
            Some(Duration::from_secs(5)),
            &AtomicBool::new(false),
        )
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
    }
}
