//! Listen addresses of `serve --listen` and `sync --metrics-listen`: `HOST:PORT` (an IPv4
//! address or a bracketed IPv6 one), or `:PORT` for every address of the host. `:PORT` binds
//! `[::]:PORT` with `IPV6_V6ONLY` off, so one socket takes IPv6 and IPv4 connections on
//! dual-stack and IPv6-only clusters alike, and falls back to `0.0.0.0:PORT` on a host without
//! IPv6.

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpListener, UdpSocket};

/// Connections the kernel queues before `accept` (tokio's own default).
const BACKLOG: i32 = 1024;

/// Where to listen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    /// One address.
    Addr(SocketAddr),
    /// `:PORT`: every address, IPv6 and IPv4.
    Any(u16),
}

#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a listen address: expected HOST:PORT (127.0.0.1:8443, [::1]:8443) or :PORT")]
pub struct ListenAddrError(String);

impl FromStr for ListenAddr {
    type Err = ListenAddrError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || ListenAddrError(text.to_string());
        match text.strip_prefix(':') {
            Some(port) => port.parse().map(ListenAddr::Any).map_err(|_| error()),
            None => text.parse().map(ListenAddr::Addr).map_err(|_| error()),
        }
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Addr(addr) => write!(f, "{addr}"),
            ListenAddr::Any(port) => write!(f, ":{port}"),
        }
    }
}

/// Binds `addr` and listens (with `SO_REUSEADDR`, as `tokio::net::TcpListener::bind` does).
/// Needs a Tokio runtime.
pub fn bind(addr: ListenAddr) -> io::Result<TcpListener> {
    TcpListener::from_std(bind_socket(addr, Type::STREAM)?.into())
}

/// Binds a UDP socket on `addr`, every address for `:PORT` as [`bind`] does for TCP. Needs a
/// Tokio runtime.
pub fn bind_udp(addr: ListenAddr) -> io::Result<UdpSocket> {
    UdpSocket::from_std(bind_socket(addr, Type::DGRAM)?.into())
}

/// A non-blocking socket of type `kind` (stream: listening) bound to `addr`; `:PORT` is one
/// `[::]:PORT` socket with `IPV6_V6ONLY` off, or `0.0.0.0:PORT` on a host without IPv6.
fn bind_socket(addr: ListenAddr, kind: Type) -> io::Result<Socket> {
    match addr {
        ListenAddr::Addr(addr) => socket_on(addr, false, kind),
        ListenAddr::Any(port) => {
            let any6 = SocketAddr::from((Ipv6Addr::UNSPECIFIED, port));
            match socket_on(any6, true, kind) {
                Ok(socket) => Ok(socket),
                // The port is taken or forbidden: IPv4 would say the same, or worse, succeed
                // beside an IPv6-only socket that holds it.
                Err(err)
                    if matches!(
                        err.kind(),
                        io::ErrorKind::AddrInUse | io::ErrorKind::PermissionDenied
                    ) =>
                {
                    Err(err)
                }
                Err(err) => {
                    tracing::debug!(error = %err, "no IPv6 socket on this host; binding IPv4 only");
                    socket_on(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)), false, kind)
                }
            }
        }
    }
}

/// A non-blocking socket on `addr`; `dual_stack` turns `IPV6_V6ONLY` off; a stream socket
/// reuses the address and listens.
fn socket_on(addr: SocketAddr, dual_stack: bool, kind: Type) -> io::Result<Socket> {
    let stream = kind == Type::STREAM;
    let protocol = if stream { Protocol::TCP } else { Protocol::UDP };
    let socket = Socket::new(Domain::for_address(addr), kind, Some(protocol))?;
    if dual_stack {
        socket.set_only_v6(false)?;
    }
    #[cfg(unix)]
    if stream {
        socket.set_reuse_address(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    if stream {
        socket.listen(BACKLOG)?;
    }
    Ok(socket)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_an_address_or_a_bare_port() {
        assert_eq!(
            "127.0.0.1:8443".parse::<ListenAddr>().unwrap(),
            ListenAddr::Addr("127.0.0.1:8443".parse().unwrap())
        );
        assert_eq!(
            "[::1]:8080".parse::<ListenAddr>().unwrap(),
            ListenAddr::Addr("[::1]:8080".parse().unwrap())
        );
        assert_eq!(
            ":8443".parse::<ListenAddr>().unwrap(),
            ListenAddr::Any(8443)
        );
        assert_eq!(":0".parse::<ListenAddr>().unwrap(), ListenAddr::Any(0));
        for bad in [
            "",
            ":",
            "8443",
            ":http",
            ":70000",
            "localhost:8443",
            "::1:8443",
        ] {
            let err = bad.parse::<ListenAddr>().unwrap_err().to_string();
            assert!(err.contains("expected HOST:PORT"), "{bad}: {err}");
        }
        assert_eq!(ListenAddr::Any(8080).to_string(), ":8080");
        assert_eq!(
            ListenAddr::Addr("[::1]:1".parse().unwrap()).to_string(),
            "[::1]:1"
        );
    }

    /// `:0` binds every address and takes an IPv4 connection, whether the host has IPv6 (the
    /// dual-stack socket) or not (the IPv4 fallback).
    #[tokio::test]
    async fn a_bare_port_binds_every_address_and_accepts_ipv4() {
        let listener = bind(ListenAddr::Any(0)).unwrap();
        let local = listener.local_addr().unwrap();
        assert!(local.ip().is_unspecified(), "{local}");
        assert_ne!(local.port(), 0);
        let connect = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, local.port()));
        let (accepted, connected) = tokio::join!(listener.accept(), connect);
        let (_, peer) = accepted.unwrap();
        connected.unwrap();
        let peer_v4 = match peer {
            SocketAddr::V4(v4) => *v4.ip(),
            SocketAddr::V6(v6) => v6.ip().to_ipv4_mapped().expect("an IPv4-mapped peer"),
        };
        assert_eq!(peer_v4, Ipv4Addr::LOCALHOST);
    }

    #[tokio::test]
    async fn one_address_binds_that_address() {
        let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let local = listener.local_addr().unwrap();
        assert_eq!(local.ip(), Ipv4Addr::LOCALHOST);
        let taken = bind(ListenAddr::Addr(local)).unwrap_err();
        assert_eq!(taken.kind(), io::ErrorKind::AddrInUse);
    }

    /// UDP too: `:0` takes a datagram sent to IPv4 loopback, and a taken address is refused.
    #[tokio::test]
    async fn a_bare_port_binds_udp_on_every_address_and_takes_ipv4() {
        let socket = bind_udp(ListenAddr::Any(0)).unwrap();
        let local = socket.local_addr().unwrap();
        assert!(local.ip().is_unspecified(), "{local}");
        let sender = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        sender
            .send_to(b"ping", (Ipv4Addr::LOCALHOST, local.port()))
            .await
            .unwrap();
        let mut buf = [0u8; 8];
        let (n, _) = socket.recv_from(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"ping");

        let one = bind_udp("127.0.0.1:0".parse().unwrap()).unwrap();
        let taken = bind_udp(ListenAddr::Addr(one.local_addr().unwrap())).unwrap_err();
        assert_eq!(taken.kind(), io::ErrorKind::AddrInUse);
    }
}
