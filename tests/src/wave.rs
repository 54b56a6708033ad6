//! WAVE (WebAssembly Value Encoding) text for `wasmtime run --invoke`: the arguments of the
//! policy's exported functions, built from the same fixtures the other hosts run.

use mcs_policy::engine::types::{
    AdmissionRequest, Context, LoadBalancerIngress, LoadBalancerReport, McsRef, Operation,
    ProviderIngress, ProviderLoadBalancer, ServicePort, Settings, SliceSummary,
};

/// A WAVE string literal: `\u{...}` escapes, never JSON's `\uXXXX`.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn option(v: Option<String>) -> String {
    v.map_or_else(|| "none".to_string(), |s| format!("some({s})"))
}

fn list<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    format!("[{}]", items.iter().map(f).collect::<Vec<_>>().join(", "))
}

fn pairs(items: &[(String, String)]) -> String {
    list(items, |(k, v)| format!("({}, {})", string(k), string(v)))
}

fn opt_str(v: &Option<String>) -> String {
    option(v.as_deref().map(string))
}

pub fn request(r: &AdmissionRequest) -> String {
    let op = match r.operation {
        Operation::Create => "create",
        Operation::Update => "update",
        Operation::Delete => "delete",
        Operation::Connect => "connect",
    };
    format!(
        "{{uid: {}, operation: {op}, object: {}, old-object: {}}}",
        string(&r.uid),
        string(&r.object),
        opt_str(&r.old_object)
    )
}

pub fn settings(s: &Settings) -> String {
    format!(
        "{{reject-empty-types: {}, reject-repeated-types: {}, reject-duplicate-cluster-names: {}, reject-unknown-port-names: {}, warn-unregistered-clusters: {}}}",
        s.reject_empty_types,
        s.reject_repeated_types,
        s.reject_duplicate_cluster_names,
        s.reject_unknown_port_names,
        s.warn_unregistered_clusters
    )
}

fn service_port(p: &ServicePort) -> String {
    format!("{{name: {}, port: {}}}", string(&p.name), p.port)
}

pub fn service_ports(ports: Option<&[ServicePort]>) -> String {
    option(ports.map(|p| list(p, service_port)))
}

pub fn context(c: &Context) -> String {
    format!(
        "{{registered-clusters: {}, service-ports: {}}}",
        option(
            c.registered_clusters
                .as_ref()
                .map(|names| list(names, |n| string(n)))
        ),
        service_ports(c.service_ports.as_deref())
    )
}

pub fn mcs(m: &McsRef) -> String {
    format!(
        "{{name: {}, namespace: {}, ports: {}}}",
        string(&m.name),
        string(&m.namespace),
        list(&m.ports, |p| format!(
            "{{name: {}, port: {}}}",
            string(&p.name),
            p.port
        ))
    )
}

/// A `slice-summary` (what the endpoint filter reads of a slice).
pub fn summary(s: &SliceSummary) -> String {
    format!(
        "{{name: {}, namespace: {}, labels: {}, port-names: {}}}",
        string(&s.name),
        string(&s.namespace),
        pairs(&s.labels),
        list(&s.port_names, opt_str)
    )
}

pub fn summaries(items: &[SliceSummary]) -> String {
    list(items, summary)
}

/// `list<load-balancer-ingress>`.
pub fn ingress(items: &[LoadBalancerIngress]) -> String {
    ingress_as(items, false)
}

/// `list<load-balancer-ingress>`, with every `none` field left out when `printed` (as
/// `wasmtime run --invoke` prints records).
fn ingress_as(items: &[LoadBalancerIngress], printed: bool) -> String {
    let fields = |pairs: Vec<(&str, Option<String>)>| {
        let shown: Vec<String> = pairs
            .into_iter()
            .filter_map(|(name, value)| match value {
                Some(v) => Some(format!("{name}: some({v})")),
                None if printed => None,
                None => Some(format!("{name}: none")),
            })
            .collect();
        shown.join(", ")
    };
    list(items, |e| {
        let ports = list(&e.ports, |p| {
            let error = fields(vec![("error", p.error.as_deref().map(string))]);
            let tail = if error.is_empty() {
                String::new()
            } else {
                format!(", {error}")
            };
            format!(
                "{{port: {}, protocol: {}{tail}}}",
                p.port,
                string(&p.protocol)
            )
        });
        let head = fields(vec![
            ("ip", e.ip.as_deref().map(string)),
            ("hostname", e.hostname.as_deref().map(string)),
            ("ip-mode", e.ip_mode.as_deref().map(string)),
        ]);
        let head = if head.is_empty() {
            String::new()
        } else {
            format!("{head}, ")
        };
        format!("{{{head}ports: {ports}}}")
    })
}

/// `list<provider-load-balancer>`.
pub fn providers(items: &[ProviderLoadBalancer]) -> String {
    list(items, |p| {
        let state = match &p.ingress {
            ProviderIngress::Read(entries) => format!("read({})", ingress(entries)),
            ProviderIngress::Kept(entries) => {
                format!("kept({})", option(entries.as_deref().map(ingress)))
            }
            ProviderIngress::Withdrawn => "withdrawn".to_string(),
        };
        format!("{{cluster: {}, ingress: {state}}}", string(&p.cluster))
    })
}

/// A `load-balancer-report` as `wasmtime run --invoke` prints it.
pub fn load_balancer_report(r: &LoadBalancerReport) -> String {
    format!(
        "{{ingress: {}, changed: {}, complete: {}, reason: {}, message: {}}}",
        ingress_as(&r.ingress, true),
        r.changed,
        r.complete,
        string(&r.reason),
        string(&r.message)
    )
}

/// The value of a WAVE string literal at the start of `s` (`"..."` with WAVE escapes), and the
/// rest of `s` after it.
pub fn parse_string(s: &str) -> Option<(String, &str)> {
    let mut chars = s.strip_prefix('"')?.char_indices();
    let mut out = String::new();
    let body = &s[1..];
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'u' => {
                    let rest = &body[i + 2..];
                    let hex = rest.strip_prefix('{')?.split('}').next()?;
                    out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
                    for _ in 0..hex.len() + 2 {
                        chars.next();
                    }
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// A `service` answer printed by `wasmtime run --invoke` (`ok(unchanged)`, `ok(create("…"))`,
/// `ok(replace("…"))`, `err("…")`) in the JSON shape `mcs-policy eval service` prints.
pub fn service_answer(out: &str) -> Option<serde_json::Value> {
    use serde_json::json;
    if out == "ok(unchanged)" {
        return Some(json!({"action": "unchanged"}));
    }
    if let Some(rest) = out.strip_prefix("err(") {
        let (message, tail) = parse_string(rest)?;
        return (tail == ")").then(|| json!({"action": "error", "message": message}));
    }
    if let Some(rest) = out.strip_prefix("ok(conflict(") {
        let (message, tail) = parse_string(rest)?;
        return (tail == "))").then(|| json!({"action": "conflict", "message": message}));
    }
    for action in ["create", "replace", "recreate"] {
        if let Some(rest) = out.strip_prefix(&format!("ok({action}(")) {
            let (text, tail) = parse_string(rest)?;
            let object: serde_json::Value = serde_json::from_str(&text).ok()?;
            return (tail == "))").then(|| json!({"action": action, "object": object}));
        }
    }
    None
}
