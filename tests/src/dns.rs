//! A DNS client for the tests of `mcs-policy dns`: real queries over UDP and TCP (hickory-proto
//! messages on std sockets, as a resolver sends them), and what the tests read in the answers.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};

/// How long a query waits for its answer.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// A recursive query of `kind` at `name`, class IN, with an id of its own.
pub fn request(name: &str, kind: RecordType) -> Message {
    request_with(name, kind, None)
}

/// [`request`], with an EDNS OPT record of `edns_version` when given.
pub fn request_with(name: &str, kind: RecordType, edns_version: Option<u8>) -> Message {
    static NEXT: AtomicU16 = AtomicU16::new(1);
    let mut message = Message::query();
    if let Some(version) = edns_version {
        let mut edns = Edns::new();
        edns.set_max_payload(1232);
        edns.set_version(version);
        message.set_edns(edns);
    }
    message.metadata.id = NEXT.fetch_add(1, Ordering::Relaxed);
    message.metadata.recursion_desired = true;
    let mut query = Query::query(Name::from_ascii(name).expect("a name"), kind);
    query.set_query_class(DNSClass::IN);
    message.add_query(query);
    message
}

/// `bytes` as the answer to `sent`: a response to a query, of the same id, echoing its question.
pub fn answer_to(sent: &[u8], bytes: &[u8]) -> Result<Message, String> {
    let asked = Message::from_vec(sent).map_err(|e| format!("the query: {e}"))?;
    let answer = Message::from_vec(bytes).map_err(|e| format!("not a DNS message: {e}"))?;
    if answer.metadata.id != asked.metadata.id
        || answer.metadata.message_type != MessageType::Response
        || answer.metadata.op_code != OpCode::Query
        || answer.queries != asked.queries
    {
        return Err(format!("not the answer to {asked:?}: {answer:?}"));
    }
    Ok(answer)
}

/// Sends `sent` (a DNS message) over UDP to `server` and reads its answer.
pub fn udp(server: SocketAddr, sent: &[u8]) -> Result<Message, String> {
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    socket
        .set_read_timeout(Some(ANSWER_WAIT))
        .map_err(|e| e.to_string())?;
    socket.send_to(sent, server).map_err(|e| e.to_string())?;
    let mut buffer = [0u8; 4096];
    let (len, from) = socket.recv_from(&mut buffer).map_err(|e| e.to_string())?;
    if from != server {
        return Err(format!("an answer from {from}, not {server}"));
    }
    answer_to(sent, &buffer[..len])
}

/// Sends `sent` over TCP to `server` and reads its answer (RFC 1035 4.2.2: each message after
/// its 16-bit length). An error when the connection is refused or closed.
pub fn tcp(server: SocketAddr, sent: &[u8]) -> Result<Message, String> {
    let mut stream = TcpStream::connect(server).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(ANSWER_WAIT))
        .map_err(|e| e.to_string())?;
    let len = u16::try_from(sent.len())
        .map_err(|e| e.to_string())?
        .to_be_bytes();
    stream
        .write_all(&[&len[..], sent].concat())
        .map_err(|e| e.to_string())?;
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).map_err(|e| e.to_string())?;
    let mut body = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut body).map_err(|e| e.to_string())?;
    answer_to(sent, &body)
}

/// The addresses of the A and AAAA records of `records`.
pub fn addresses(records: &[Record]) -> BTreeSet<IpAddr> {
    records
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            RData::AAAA(a) => Some(IpAddr::V6(a.0)),
            _ => None,
        })
        .collect()
}

/// Addresses written as text.
pub fn ips(list: &[&str]) -> BTreeSet<IpAddr> {
    list.iter()
        .map(|a| a.parse().expect("an IP address"))
        .collect()
}

/// The SRV answers as (port, target).
pub fn srvs(m: &Message) -> BTreeSet<(u16, String)> {
    m.answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::SRV(s) => Some((s.port, s.target.to_ascii())),
            _ => None,
        })
        .collect()
}

/// A ServiceImport of `namespace/name` with `spec`, as the tests of the DNS server make them.
pub fn service_import(namespace: &str, name: &str, spec: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "mcs-policy"}},
        "spec": spec,
    })
}

/// An imported slice as `mcs-policy sync` writes it into a member: the import's
/// `multicluster.kubernetes.io/service-name` and `source-cluster`, the derived Service's
/// `kubernetes.io/service-name`, managed by the clusterset controller; one named port `pg`.
pub fn imported_slice(
    namespace: &str,
    name: &str,
    (service, cluster): (&str, &str),
    family: &str,
    endpoints: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": namespace, "labels": {
            "multicluster.kubernetes.io/service-name": service,
            "multicluster.kubernetes.io/source-cluster": cluster,
            "kubernetes.io/service-name": format!("derived-{service}"),
            "endpointslice.kubernetes.io/managed-by":
                "endpointslice-clusterset-controller.karmada.io",
        }},
        "addressType": family,
        "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}],
        "endpoints": endpoints,
    })
}
