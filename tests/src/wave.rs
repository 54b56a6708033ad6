//! WAVE (WebAssembly Value Encoding) text for `wasmtime run --invoke`: the arguments of the
//! policy's exported functions, built from the same fixtures the other hosts run, and some
//! answers as the CLI prints them.

use mcs_policy::engine::types::{
    AdmissionRequest, Context, EndpointPort, FinalizerChange, LoadBalancerIngress,
    LoadBalancerReport, McsRef, MemberSlices, MemberState, Operation, PassDecision, PassRead,
    ProviderIngress, ProviderLoadBalancer, ReadFailure, Reported, ServiceAction, ServicePort,
    Settings, SliceBody, SliceCopy, SliceSummary, StatusBasis, StatusNow, StatusUpdate,
    SyncSettings, UnsyncedCluster, WriteFailures,
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

pub(crate) fn option(v: Option<String>) -> String {
    v.map_or_else(|| "none".to_string(), |s| format!("some({s})"))
}

pub(crate) fn list<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    format!("[{}]", items.iter().map(f).collect::<Vec<_>>().join(", "))
}

pub(crate) fn pairs(items: &[(String, String)]) -> String {
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

// ---- a sync pass: `decide` and `conclude` ----

/// A record's fields in WAVE: an optional field (`Err(value)`) that is `none` is left out when
/// `printed` (as `wasmtime run --invoke` prints records).
pub(crate) fn record(fields: Vec<(&str, Result<String, Option<String>>)>, printed: bool) -> String {
    let shown: Vec<String> = fields
        .into_iter()
        .filter_map(|(name, value)| match value {
            Ok(v) => Some(format!("{name}: {v}")),
            Err(None) if printed => None,
            Err(v) => Some(format!("{name}: {}", option(v))),
        })
        .collect();
    format!("{{{}}}", shown.join(", "))
}

pub(crate) fn strings(items: &[String]) -> String {
    list(items, |s| string(s))
}

pub(crate) fn endpoint_port(p: &EndpointPort, printed: bool) -> String {
    let f = |v: &Option<String>| Err(v.as_deref().map(string));
    record(
        vec![
            ("name", f(&p.name)),
            ("port", Err(p.port.map(|n| n.to_string()))),
            ("protocol", f(&p.protocol)),
            ("app-protocol", f(&p.app_protocol)),
        ],
        printed,
    )
}

fn numbers<T: ToString>(items: &[T]) -> String {
    list(items, |n| n.to_string())
}

/// A `member-slices`.
fn member_slices(m: &MemberSlices) -> String {
    format!(
        "{{names: {}, name-lengths: {}, bodies: {}}}",
        string(&m.names),
        numbers(&m.name_lengths),
        numbers(&m.bodies)
    )
}

/// A `slice-body`.
fn slice_body(b: &SliceBody) -> String {
    format!(
        "{{namespace: {}, labels: {}, annotations: {}, ports: {}, content: {}}}",
        string(&b.namespace),
        b.labels,
        b.annotations,
        b.ports,
        string(&b.content)
    )
}

/// A `slice-copy` as `wasmtime run --invoke` prints it.
fn slice_copy(c: &SliceCopy) -> String {
    format!(
        "{{source: {}, name: {}, labels: {}, annotations: {}, ports: {}}}",
        c.source,
        string(&c.name),
        pairs(&c.labels),
        pairs(&c.annotations),
        numbers(&c.ports)
    )
}

fn read_failure(f: &ReadFailure) -> String {
    format!(
        "{{message: {}, not-served: {}}}",
        string(&f.message),
        f.not_served
    )
}

pub(crate) fn result<T, E>(
    r: &Result<T, E>,
    ok: impl Fn(&T) -> String,
    err: impl Fn(&E) -> String,
) -> String {
    match r {
        Ok(v) => format!("ok({})", ok(v)),
        Err(e) => format!("err({})", err(e)),
    }
}

/// A `pass-read` (the first argument of `decide`).
pub fn pass_read(p: &PassRead) -> String {
    let members = list(&p.members, |m| {
        let state = match &m.state {
            MemberState::NotReady(why) => format!("not-ready({})", string(why)),
            MemberState::Ready(o) => format!(
                "ready({{slices: {}, service: {}}})",
                result(&o.slices, member_slices, read_failure),
                result(&o.service, opt_str, read_failure)
            ),
        };
        format!(
            "{{cluster: {}, state: {state}, unreadable-ms: {}, last-ingress: {}}}",
            string(&m.cluster),
            m.unreadable_ms,
            option(m.last_ingress.as_deref().map(ingress))
        )
    });
    format!(
        "{{mcs: {}, members: {members}, template: {}, slice-bodies: {}, slice-maps: {}, \
         slice-ports: {}, unsynced: {}}}",
        string(&p.mcs),
        result(&p.template, opt_str, |e| string(e)),
        list(&p.slice_bodies, slice_body),
        list(&p.slice_maps, |m| pairs(m)),
        list(&p.slice_ports, |l| list(l, |p| endpoint_port(p, false))),
        list(&p.unsynced, unsynced_cluster)
    )
}

/// An `unsynced-cluster`.
fn unsynced_cluster(u: &UnsyncedCluster) -> String {
    format!(
        "{{cluster: {}, reason: {}}}",
        string(&u.cluster),
        string(&u.reason)
    )
}

/// A `sync-settings`.
pub fn sync_settings(s: &SyncSettings) -> String {
    format!(
        "{{stale-timeout-ms: {}}}",
        option(s.stale_timeout_ms.map(|n| n.to_string()))
    )
}

fn report(r: &LoadBalancerReport, printed: bool) -> String {
    format!(
        "{{ingress: {}, changed: {}, complete: {}, reason: {}, message: {}}}",
        ingress_as(&r.ingress, printed),
        r.changed,
        r.complete,
        string(&r.reason),
        string(&r.message)
    )
}

/// A `status-basis` (the first argument of `conclude`, and part of `decide`'s answer).
pub fn status_basis(b: &StatusBasis, printed: bool) -> String {
    record(
        vec![
            ("report", Ok(b.report.to_string())),
            ("invalid", Err(b.invalid.as_deref().map(string))),
            ("dispatches", Ok(b.dispatches.to_string())),
            ("service-failures", Ok(strings(&b.service_failures))),
            ("template-missing", Ok(b.template_missing.to_string())),
            ("dispatch-failures", Ok(strings(&b.dispatch_failures))),
            (
                "load-balancer-failures",
                Ok(strings(&b.load_balancer_failures)),
            ),
            (
                "load-balancer",
                Err(b.load_balancer.as_ref().map(|r| report(r, printed))),
            ),
            ("unknown-providers", Ok(strings(&b.unknown_providers))),
            ("unknown-consumers", Ok(strings(&b.unknown_consumers))),
            ("incompatible", Ok(strings(&b.incompatible))),
            ("unsynced", Ok(list(&b.unsynced, unsynced_cluster))),
        ],
        printed,
    )
}

/// A `write-failures`.
pub fn write_failures(f: &WriteFailures) -> String {
    format!(
        "{{service: {}, dispatch: {}}}",
        strings(&f.service),
        strings(&f.dispatch)
    )
}

/// A `status-now`.
pub fn status_now(s: &StatusNow) -> String {
    format!(
        "{{conditions: {}, generation: {}, now: {}}}",
        string(&s.conditions),
        option(s.generation.map(|g| g.to_string())),
        string(&s.now)
    )
}

/// A `reported`, printed or as an argument.
pub fn reported(r: &Reported, printed: bool) -> String {
    let flag = |v: Option<bool>| Err(v.map(|b| b.to_string()));
    record(
        vec![
            ("unknown", Ok(strings(&r.unknown))),
            ("incompatible", Ok(strings(&r.incompatible))),
            ("unsynced", Ok(strings(&r.unsynced))),
            ("service-applied", flag(r.service_applied)),
            ("dispatched", flag(r.dispatched)),
            ("load-balancer", flag(r.load_balancer)),
        ],
        printed,
    )
}

fn service_action(a: &ServiceAction) -> String {
    match a {
        ServiceAction::Unchanged => "unchanged".to_string(),
        ServiceAction::Create(o) => format!("create({})", string(o)),
        ServiceAction::Replace(o) => format!("replace({})", string(o)),
        ServiceAction::Recreate(o) => format!("recreate({})", string(o)),
        ServiceAction::Conflict(why) => format!("conflict({})", string(why)),
    }
}

/// A `decide` answer as `wasmtime run --invoke` prints it.
pub fn decide_answer(answer: &Result<PassDecision, String>) -> String {
    result(answer, pass_decision, |e| string(e))
}

fn pass_decision(d: &PassDecision) -> String {
    let p = &d.plan;
    let plan = record(
        vec![
            ("active", Ok(p.active.to_string())),
            ("deleting", Ok(p.deleting.to_string())),
            ("invalid", Err(p.invalid.as_deref().map(string))),
            ("mcs", Ok(mcs(&p.mcs))),
            ("providers", Ok(strings(&p.providers))),
            ("consumers", Ok(strings(&p.consumers))),
            ("unknown-providers", Ok(strings(&p.unknown_providers))),
            ("unknown-consumers", Ok(strings(&p.unknown_consumers))),
            ("load-balancer", Ok(p.load_balancer.to_string())),
            ("sweepable", Ok(p.sweepable.to_string())),
        ],
        true,
    );
    let finalizer = match &d.finalizer {
        FinalizerChange::Keep => "keep".to_string(),
        FinalizerChange::Add(name) => format!("add({})", string(name)),
        FinalizerChange::Release(name) => format!("release({})", string(name)),
    };
    let copies = list(&d.copies, |w| {
        format!(
            "{{cluster: {}, source-cluster: {}, copy: {}}}",
            string(&w.cluster),
            string(&w.source_cluster),
            slice_copy(&w.copy)
        )
    });
    let deletions = list(&d.deletions, |o| {
        format!(
            "{{cluster: {}, name: {}}}",
            string(&o.cluster),
            string(&o.name)
        )
    });
    let services = list(&d.services, |w| {
        format!(
            "{{cluster: {}, action: {}}}",
            string(&w.cluster),
            service_action(&w.action)
        )
    });
    let remember = list(&d.remember_ingress, |r| {
        format!(
            "{{cluster: {}, ingress: {}}}",
            string(&r.cluster),
            ingress_as(&r.ingress, true)
        )
    });
    record(
        vec![
            ("plan", Ok(plan)),
            ("finalizer", Ok(finalizer)),
            ("copies", Ok(copies)),
            ("deletions", Ok(deletions)),
            ("services", Ok(services)),
            (
                "ingress",
                Err(d.ingress.as_deref().map(|i| ingress_as(i, true))),
            ),
            ("remember-ingress", Ok(remember)),
            ("status", Ok(status_basis(&d.status, true))),
        ],
        true,
    )
}

/// A `status-update` as `wasmtime run --invoke` prints it.
pub fn status_update(u: &StatusUpdate) -> String {
    let events = list(&u.events, |e| {
        format!(
            "{{warning: {}, reason: {}, message: {}}}",
            e.warning,
            string(&e.reason),
            string(&e.message)
        )
    });
    record(
        vec![
            ("conditions", Err(u.conditions.as_deref().map(string))),
            ("events", Ok(events)),
            ("reported", Ok(reported(&u.reported, true))),
            ("retry", Ok(u.retry.to_string())),
        ],
        true,
    )
}
