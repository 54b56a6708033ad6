//! The DNS side: hickory-server's [`Server`] reads and frames the messages on one UDP socket
//! and one TCP listener (a message it cannot parse gets FORMERR or nothing, and the server
//! goes on); [`Handler`] answers each query from the caches' latest index.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use hickory_server::net::runtime::Time;
use hickory_server::proto::op::{
    Edns, Header, HeaderCounts, MessageType, Metadata, OpCode, ResponseCode,
};
use hickory_server::proto::rr::{DNSClass, Record};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::MessageResponseBuilder;

use super::answer::{Answer, Zone};
use super::cache::Shared;
use super::http::Metrics;
use crate::listen::ListenAddr;

/// Answers queries for `zone` from `shared`.
pub struct Handler {
    pub zone: Zone,
    pub shared: Arc<Shared>,
    pub metrics: Arc<Metrics>,
}

/// A response before it is encoded.
struct Reply {
    code: ResponseCode,
    authoritative: bool,
    answers: Vec<Record>,
    soa: Vec<Record>,
    additionals: Vec<Record>,
}

impl Reply {
    fn error(code: ResponseCode) -> Reply {
        Reply {
            code,
            authoritative: false,
            answers: Vec::new(),
            soa: Vec::new(),
            additionals: Vec::new(),
        }
    }
}

impl Handler {
    fn reply(&self, request: &Request) -> Reply {
        if request.metadata.message_type != MessageType::Query {
            return Reply::error(ResponseCode::FormErr);
        }
        if request.metadata.op_code != OpCode::Query {
            return Reply::error(ResponseCode::NotImp);
        }
        let Ok(info) = request.request_info() else {
            return Reply::error(ResponseCode::FormErr);
        };
        let query = info.query;
        if query.query_class() != DNSClass::IN && query.query_class() != DNSClass::ANY {
            return Reply::error(ResponseCode::Refused);
        }
        let qname = query.original().name();
        if !self.zone.name().zone_of(qname) {
            return Reply::error(ResponseCode::Refused);
        }
        let Some(snapshot) = self.shared.snapshot() else {
            return Reply::error(ResponseCode::ServFail);
        };
        let soa = || vec![self.zone.soa(snapshot.serial)];
        match self
            .zone
            .answer(&snapshot.index, snapshot.serial, qname, query.query_type())
        {
            Answer::Refused => Reply::error(ResponseCode::Refused),
            Answer::NxDomain => Reply {
                soa: soa(),
                authoritative: true,
                ..Reply::error(ResponseCode::NXDomain)
            },
            Answer::Found {
                answers,
                additionals,
            } => Reply {
                code: ResponseCode::NoError,
                authoritative: true,
                soa: if answers.is_empty() {
                    soa()
                } else {
                    Vec::new()
                },
                answers,
                additionals,
            },
        }
    }
}

#[async_trait::async_trait]
impl RequestHandler for Handler {
    async fn handle_request<R: ResponseHandler, T: Time>(
        &self,
        request: &Request,
        mut response_handle: R,
    ) -> ResponseInfo {
        // EDNS answered with EDNS (version 0, the client's payload size, at least 512 bytes);
        // a later EDNS version gets BADVERS (RFC 6891).
        let edns = request.edns.as_ref().map(|asked| {
            let mut ours = Edns::new();
            ours.set_max_payload(asked.max_payload().max(512));
            ours.set_version(0);
            ours
        });
        let reply = match &request.edns {
            Some(asked) if asked.version() > 0 => Reply::error(ResponseCode::BADVERS),
            _ => self.reply(request),
        };
        self.metrics.query(reply.code);
        let mut metadata = Metadata::response_from_request(&request.metadata);
        metadata.response_code = reply.code;
        metadata.authoritative = reply.authoritative;
        let mut builder = MessageResponseBuilder::from_message_request(request);
        if let Some(edns) = &edns {
            builder.edns(edns);
        }
        let response = builder.build(
            metadata,
            reply.answers.iter(),
            std::iter::empty(),
            reply.soa.iter(),
            reply.additionals.iter(),
        );
        match response_handle.send_response(response).await {
            Ok(info) => info,
            Err(error) => {
                tracing::debug!(%error, "sending a DNS response failed");
                let mut failed = Metadata::response_from_request(&request.metadata);
                failed.response_code = ResponseCode::ServFail;
                ResponseInfo::from(Header {
                    metadata: failed,
                    counts: HeaderCounts::default(),
                })
            }
        }
    }
}

/// The UDP socket and TCP listener of `addr`, on one port: with port 0, the port the kernel
/// gave the UDP socket, tried again with another when TCP has it taken.
pub fn bind(addr: ListenAddr) -> io::Result<(tokio::net::UdpSocket, tokio::net::TcpListener)> {
    let same_port = |udp: &tokio::net::UdpSocket| -> io::Result<ListenAddr> {
        let port = udp.local_addr()?.port();
        Ok(match addr {
            ListenAddr::Addr(a) => ListenAddr::Addr(SocketAddr::new(a.ip(), port)),
            ListenAddr::Any(_) => ListenAddr::Any(port),
        })
    };
    let asked_port = match addr {
        ListenAddr::Addr(a) => a.port(),
        ListenAddr::Any(port) => port,
    };
    let mut attempts = 0;
    loop {
        let udp = crate::listen::bind_udp(addr)?;
        match crate::listen::bind(same_port(&udp)?) {
            Ok(tcp) => return Ok((udp, tcp)),
            Err(err)
                if asked_port == 0 && err.kind() == io::ErrorKind::AddrInUse && attempts < 16 =>
            {
                attempts += 1;
            }
            Err(err) => return Err(err),
        }
    }
}
