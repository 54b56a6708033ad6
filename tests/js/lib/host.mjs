// A JavaScript host for the policy component: the same conversions the Rust host does, written
// against the records jco generates from wit/policy.wit (records → objects with camelCase
// fields, option<T> → T | undefined, enums → strings, variants → {tag, val}, tuples → arrays,
// result<T, E> as a return value → T, or a thrown ComponentError whose `.payload` is E).
//
// Each function names the Rust code it mirrors; they must stay in step.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { rawValue } from './raw-json.mjs';

// ---------------------------------------------------------------------------------------------
// Policy settings (host/src/settings.rs)

const SETTING_KEYS = [
  'rejectEmptyTypes',
  'rejectRepeatedTypes',
  'rejectDuplicateClusterNames',
  'rejectUnknownPortNames',
  'warnUnregisteredClusters',
];

/**
 * Parses a settings document of policies/ (flat `key: value` YAML) into the WIT `settings`
 * record. The WIT field names in JS are the YAML keys, so the mapping is one to one. Unknown
 * keys are refused, like `#[serde(deny_unknown_fields)]`.
 */
export function parseSettings(text, origin) {
  const settings = Object.fromEntries(SETTING_KEYS.map((k) => [k, false]));
  let name;
  for (const [n, line] of text.split('\n').entries()) {
    const body = line.replace(/(^|\s)#.*$/, '').trim();
    if (body === '') continue;
    const m = /^([A-Za-z]+):\s*(.*)$/.exec(body);
    if (!m) throw new Error(`${origin}:${n + 1}: not a \`key: value\` line: ${line}`);
    const [, key, value] = m;
    if (key === 'name') {
      name = value.replace(/^(["'])(.*)\1$/, '$2');
    } else if (SETTING_KEYS.includes(key)) {
      if (value !== 'true' && value !== 'false') {
        throw new Error(`${origin}:${n + 1}: ${key} must be true or false, got ${value}`);
      }
      settings[key] = value === 'true';
    } else {
      throw new Error(`${origin}:${n + 1}: unknown field ${key}`);
    }
  }
  if (!name || !name.trim()) throw new Error(`${origin}: field \`name\` must not be empty`);
  return { name, settings };
}

/** A built-in policy (`karmada-compatible`, `strict`): the file of the same name in policies/. */
export function loadPolicy(policiesDir, name) {
  const path = join(policiesDir, `${name}.yaml`);
  return parseSettings(readFileSync(path, 'utf8'), path);
}

/**
 * `ContextFile::for_object`: the WIT `context` for the MCS `namespace/name`; `services`
 * (keyed `namespace/name`) wins over `servicePorts`.
 */
export function contextFor(file, namespace, name) {
  const f = file ?? {};
  const ports = f.services?.[`${namespace}/${name}`] ?? f.servicePorts ?? undefined;
  const context = {};
  if (f.registeredClusters != null) context.registeredClusters = [...f.registeredClusters];
  if (ports != null) context.servicePorts = ports.map((p) => ({ name: p.name ?? '', port: p.port }));
  return context;
}

// ---------------------------------------------------------------------------------------------
// AdmissionReview (host/src/webhook/review.rs)

const API_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'];
const OPERATIONS = { CREATE: 'create', UPDATE: 'update', DELETE: 'delete', CONNECT: 'connect' };

/**
 * `parse_review`: the review text → `{apiVersion, namespace, name, request}` where `request` is
 * the WIT `admission-request`. `object`/`oldObject` are the exact source text of
 * `request.object`/`request.oldObject` (`null` counts as absent).
 */
export function parseReview(text) {
  const review = JSON.parse(text);
  const apiVersion = review.apiVersion ?? '';
  if (!API_VERSIONS.includes(apiVersion)) {
    throw new Error(`unsupported AdmissionReview apiVersion ${JSON.stringify(apiVersion)}`);
  }
  if ((review.kind ?? '') !== 'AdmissionReview') {
    throw new Error(`expected kind "AdmissionReview", got ${JSON.stringify(review.kind ?? '')}`);
  }
  const req = review.request;
  if (req == null) throw new Error('AdmissionReview has no request');
  if (!req.uid) throw new Error('AdmissionReview request has no uid');
  const operation = OPERATIONS[req.operation ?? ''];
  if (!operation) throw new Error(`unsupported operation ${JSON.stringify(req.operation ?? '')}`);
  const raw = (key) => {
    const t = rawValue(text, ['request', key]);
    return t === undefined || t === 'null' ? undefined : t;
  };
  const request = { uid: req.uid, operation, object: raw('object') ?? '' };
  const oldObject = raw('oldObject');
  if (oldObject !== undefined) request.oldObject = oldObject;
  return { apiVersion, namespace: req.namespace ?? '', name: req.name ?? '', request };
}

/** A thrown `ComponentError` carries the `err` of a `result`; anything else is a host failure. */
function errPayload(e) {
  if (e !== null && typeof e === 'object' && e.constructor?.name === 'ComponentError' && 'payload' in e) {
    return { payload: e.payload };
  }
  throw e;
}

/** `validate`'s outcome as a Rust-style result: `{ok: warnings}` or `{err: denial}`. */
export function callValidate(policy, request, settings, context) {
  try {
    return { ok: policy.validate(request, settings, context) };
  } catch (e) {
    return { err: errPayload(e).payload };
  }
}

/** `mutate`'s outcome as a Rust-style result: `{ok: operations}` or `{err: message}`. */
export function callMutate(policy, request, settings) {
  try {
    return { ok: policy.mutate(request, settings) };
  } catch (e) {
    return { err: errPayload(e).payload };
  }
}

function status(code, message = '', reason = '') {
  const s = { metadata: {} };
  if (message !== '') s.message = message;
  if (reason !== '') s.reason = reason;
  s.code = code;
  return s;
}

function reviewOut(apiVersion, response) {
  return { apiVersion, kind: 'AdmissionReview', response };
}

/** `validation_response`: the response AdmissionReview, as the Rust host serialises it. */
export function validationResponse(review, verdict) {
  const uid = review.request.uid;
  let response;
  if ('ok' in verdict) {
    response = { uid, allowed: true, status: status(200) };
    if (verdict.ok.length > 0) response.warnings = verdict.ok;
  } else if (verdict.err.tag === 'malformed') {
    response = { uid, allowed: false, status: status(400, verdict.err.val) };
  } else if (verdict.err.tag === 'forbidden') {
    const rejection = verdict.err.val;
    response = { uid, allowed: false, status: status(403, rejection.message, 'Forbidden') };
    if (rejection.warnings.length > 0) response.warnings = rejection.warnings;
  } else {
    throw new Error(`unknown denial ${JSON.stringify(verdict.err)}`);
  }
  return reviewOut(review.apiVersion, response);
}

/** `patch_json`: the RFC 6902 document, byte for byte (each `value` is already JSON text). */
export function patchJson(ops) {
  const items = ops.map((op) => {
    if (op.op !== 'add' && op.op !== 'replace') throw new Error(`unknown patch op ${op.op}`);
    return `{"op":"${op.op}","path":${JSON.stringify(op.path)},"value":${op.value}}`;
  });
  return `[${items.join(',')}]`;
}

/** `mutation_response`: base64 JSONPatch when something changes. */
export function mutationResponse(review, result) {
  const uid = review.request.uid;
  let response;
  if ('ok' in result) {
    response = { uid, allowed: true, status: status(200) };
    if (result.ok.length > 0) {
      response.patch = Buffer.from(patchJson(result.ok), 'utf8').toString('base64');
      response.patchType = 'JSONPatch';
    }
  } else {
    response = { uid, allowed: false, status: status(400, result.err) };
  }
  return reviewOut(review.apiVersion, response);
}

// ---------------------------------------------------------------------------------------------
// Endpoint filter (host/src/eval.rs `filter_json`, host/src/engine/convert.rs)

// BTreeMap<String, _> order: byte order of the UTF-8 encoding.
const byUtf8Key = ([a], [b]) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

/** A `map<string,string>` (absent or null = empty) → `list<tuple<string,string>>` in key order. */
function pairs(map) {
  return Object.entries(map ?? {}).sort(byUtf8Key);
}

/** `list<tuple<string,string>>` → the map, absent when empty. */
function map(list) {
  return list.length > 0 ? Object.fromEntries(list) : undefined;
}

/** Copies the fields of `from` whose value is neither undefined nor null (serde's `Option`). */
function some(from, keys) {
  const out = {};
  for (const k of keys) if (from?.[k] != null) out[k] = from[k];
  return out;
}

const REF_KEYS = ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'];

function endpointToWit(e) {
  const c = e.conditions ?? {};
  const out = {
    addresses: [...(e.addresses ?? [])],
    conditions: some(c, ['ready', 'serving', 'terminating']),
    ...some(e, ['hostname', 'nodeName', 'zone']),
    deprecatedTopology: pairs(e.deprecatedTopology),
  };
  if (e.targetRef != null) out.targetRef = some(e.targetRef, REF_KEYS);
  if (e.hints != null) {
    out.hints = {
      forZones: (e.hints.forZones ?? []).map((z) => z.name),
      forNodes: (e.hints.forNodes ?? []).map((n) => n.name),
    };
  }
  return out;
}

/** `slice_to_wit`: a Kubernetes EndpointSlice → the WIT `endpoint-slice`. */
export function sliceToWit(slice) {
  const meta = slice.metadata ?? {};
  return {
    name: meta.name ?? '',
    namespace: meta.namespace ?? '',
    labels: pairs(meta.labels),
    annotations: pairs(meta.annotations),
    addressType: slice.addressType,
    endpoints: (slice.endpoints ?? []).map(endpointToWit),
    ports: (slice.ports ?? []).map((p) => some(p, ['name', 'port', 'protocol', 'appProtocol'])),
  };
}

function endpointFromWit(e) {
  const out = { addresses: e.addresses };
  const conditions = some(e.conditions, ['ready', 'serving', 'terminating']);
  if (Object.keys(conditions).length > 0) out.conditions = conditions;
  const topology = map(e.deprecatedTopology);
  if (topology) out.deprecatedTopology = topology;
  if (e.hints !== undefined) {
    out.hints = {};
    if (e.hints.forZones.length > 0) out.hints.forZones = e.hints.forZones.map((name) => ({ name }));
    if (e.hints.forNodes.length > 0) out.hints.forNodes = e.hints.forNodes.map((name) => ({ name }));
  }
  Object.assign(out, some(e, ['hostname', 'nodeName', 'zone']));
  if (e.targetRef !== undefined) out.targetRef = some(e.targetRef, REF_KEYS);
  return out;
}

/** `slice_from_wit` + the apiVersion/kind `eval filter` adds: the copy as Kubernetes JSON. */
export function sliceFromWit(slice) {
  const metadata = { name: slice.name, namespace: slice.namespace };
  const labels = map(slice.labels);
  if (labels) metadata.labels = labels;
  const annotations = map(slice.annotations);
  if (annotations) metadata.annotations = annotations;
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata,
    addressType: slice.addressType,
    endpoints: slice.endpoints.map(endpointFromWit),
    ports: slice.ports.map((p) => some(p, ['name', 'port', 'protocol', 'appProtocol'])),
  };
}

const portEntry = (p) => ({ name: p.name ?? '', port: p.port ?? 0 });

/** `convert::summary`: what the filter reads of a slice (WIT `slice-summary`). */
function summary(slice) {
  return {
    name: slice.name,
    namespace: slice.namespace,
    labels: slice.labels,
    portNames: slice.ports.map((p) => p.name),
  };
}

/** `convert::assemble`: the copy a `slice-copy` describes, made from the slice it names. */
function assemble(copy, slices) {
  const slice = slices[copy.source];
  if (slice === undefined) throw new Error(`the filter answered with a copy of slice ${copy.source}`);
  return {
    name: copy.name,
    namespace: slice.namespace,
    labels: copy.labels,
    annotations: copy.annotations,
    addressType: slice.addressType,
    endpoints: slice.endpoints,
    ports: Array.from(copy.ports, (i) => {
      if (slice.ports[i] === undefined) throw new Error(`the filter kept port ${i} of slice ${slice.name}`);
      return slice.ports[i];
    }),
  };
}

/** `filter_json`: a filter input (the `input` of a filter fixture) → the copies as JSON. */
export function runFilter(policy, input) {
  const mcs = {
    name: input.mcs.name,
    namespace: input.mcs.namespace,
    ports: (input.mcs.ports ?? []).map(portEntry),
  };
  const servicePorts = input.servicePorts == null ? undefined : input.servicePorts.map(portEntry);
  const slices = (input.slices ?? []).map(sliceToWit);
  const copies = policy.filter(
    mcs,
    servicePorts,
    input.sourceCluster,
    input.consumerCluster,
    slices.map(summary),
  );
  return copies.map((copy) => sliceFromWit(assemble(copy, slices)));
}

// ---------------------------------------------------------------------------------------------
// Service propagation (host/src/eval.rs `service_json`, `service_answer`)

/**
 * `service_json`: a service input (the `input` of a service fixture: `template`, `existing`; a
 * string is the exact text to pass, anything else its JSON) → the answer as `mcs-policy eval
 * service` prints it: `{action: 'unchanged'}`, `{action: 'create'|'replace'|'recreate', object}`,
 * `{action: 'conflict', message}` or `{action: 'error', message}`.
 */
export function runService(policy, input) {
  const template = jsonText(input.template ?? null);
  const existing = input.existing == null ? undefined : jsonText(input.existing);
  let action;
  try {
    action = policy.service(template, existing);
  } catch (e) {
    return { action: 'error', message: errPayload(e).payload };
  }
  return serviceAnswer(action);
}

/** JSON text as the WIT passes it: a string is the text itself, anything else its JSON. */
function jsonText(v) {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** `service_answer`: a `service-action` as `mcs-policy eval service` prints it. */
function serviceAnswer(action) {
  if (action.tag === 'unchanged') return { action: 'unchanged' };
  if (action.tag === 'conflict') return { action: 'conflict', message: action.val };
  let object;
  try {
    object = JSON.parse(action.val);
  } catch {
    object = action.val;
  }
  return { action: action.tag, object };
}

// ---------------------------------------------------------------------------------------------
// Load balancer status (host/src/eval.rs `load_balancer_json`, `load_balancer_answer`)

/** `ingress_to_wit`: a Kubernetes `LoadBalancerIngress` → the WIT `load-balancer-ingress`. */
function ingressToWit(e) {
  return {
    ...some(e, ['ip', 'hostname', 'ipMode']),
    ports: (e.ports ?? []).map((p) => ({ port: p.port, protocol: p.protocol, ...some(p, ['error']) })),
  };
}

/** `ingress_from_wit`: as Kubernetes writes it (`ports` absent when empty). */
function ingressFromWit(e) {
  const out = some(e, ['ip', 'hostname', 'ipMode']);
  if (e.ports.length > 0) out.ports = e.ports.map((p) => some(p, ['port', 'protocol', 'error']));
  return out;
}

/**
 * `load_balancer_json`: a load-balancer input (the `input` of a load-balancer fixture:
 * `providers` with `ingress` `{read: [...]}`, `{kept: [...] | null}` or `"withdrawn"`, and
 * `current`) → the report as `mcs-policy eval load-balancer` prints it.
 */
export function runLoadBalancer(policy, input) {
  const providers = input.providers.map((p) => {
    let ingress;
    if (p.ingress === 'withdrawn') ingress = { tag: 'withdrawn' };
    else if ('read' in p.ingress) ingress = { tag: 'read', val: p.ingress.read.map(ingressToWit) };
    else ingress = { tag: 'kept', val: p.ingress.kept == null ? undefined : p.ingress.kept.map(ingressToWit) };
    return { cluster: p.cluster, ingress };
  });
  return reportAnswer(policy.loadBalancerStatus(providers, (input.current ?? []).map(ingressToWit)));
}

/** `load_balancer_answer`: a `load-balancer-report` as `mcs-policy eval load-balancer` prints it. */
function reportAnswer(r) {
  return {
    ingress: r.ingress.map(ingressFromWit),
    changed: r.changed,
    complete: r.complete,
    reason: r.reason,
    message: r.message,
  };
}

// ---------------------------------------------------------------------------------------------
// One sync pass (host/src/eval/sync.rs `decide_json`, `decide_answer`, `conclude_json`,
// `conclude_answer`): `u64`/`s64` are BigInts in jco, `result` and variant arguments
// `{tag, val}` (tags in the WIT's kebab case).

/** A `result` of the eval input (`{ok: v}` or `{err: e}`) as jco takes it. */
function resultToWit(r, ok, err) {
  if (r != null && 'ok' in r) return { tag: 'ok', val: ok(r.ok) };
  if (r != null && 'err' in r) return { tag: 'err', val: err(r.err) };
  throw new Error(`not a result: ${JSON.stringify(r)}`);
}

const readFailure = (f) => ({ message: f.message, notServed: f.notServed ?? false });

/**
 * `convert::content`: the `slice-body.content` of a Kubernetes EndpointSlice, the SHA-256 (hex)
 * of the JSON of its address type and its endpoints as a copy carries them (`slice_from_wit`
 * of `slice_to_wit`). This host's own text: only this host compares it with itself.
 */
function content(slice) {
  const endpoints = (slice.endpoints ?? []).map((e) => endpointFromWit(endpointToWit(e)));
  const text = JSON.stringify({ addressType: slice.addressType, endpoints });
  return createHash('sha256').update(text).digest('hex');
}

/** Distinct items, each with its index (keyed by their JSON). */
class Table {
  constructor() {
    this.items = [];
    this.index = new Map();
  }

  /** The index of `item`, added when new. */
  of(item) {
    const key = JSON.stringify(item, (_, v) => (typeof v === 'bigint' ? v.toString() : v));
    let i = this.index.get(key);
    if (i === undefined) {
      i = this.items.length;
      this.items.push(item);
      this.index.set(key, i);
    }
    return i;
  }
}

/**
 * `PassSlices`: the Kubernetes slices of a pass by member, and what `decide` is given of them
 * (each member's `member-slices`; the pass's `slice-bodies`, `slice-maps`, `slice-ports`, each
 * distinct one once). The copies of the answer are made from the slices kept here.
 */
class PassSlices {
  constructor() {
    this.members = [];
    this.bodies = new Table();
    this.maps = new Table();
    this.ports = new Table();
  }

  /** `PassSlices::read`: keeps `slices` of `cluster`, returns its `member-slices`. */
  read(cluster, slices) {
    const names = slices.map((s) => s.metadata?.name ?? '');
    const bodies = slices.map((s) => {
      const meta = s.metadata ?? {};
      return this.bodies.of({
        namespace: meta.namespace ?? '',
        labels: this.maps.of(pairs(meta.labels)),
        annotations: this.maps.of(pairs(meta.annotations)),
        ports: this.ports.of((s.ports ?? []).map((p) => some(p, ['name', 'port', 'protocol', 'appProtocol']))),
        content: content(s),
      });
    });
    this.members.push([cluster, slices]);
    return {
      names: names.join(''),
      nameLengths: Uint32Array.from(names, (n) => Buffer.byteLength(n, 'utf8')),
      bodies: Uint32Array.from(bodies),
    };
  }

  /** `PassSlices::copy`: the copy `write` asks for, as Kubernetes JSON (`copy_slice`). */
  copy(write) {
    const member = this.members.find(([name]) => name === write.sourceCluster);
    const source = member?.[1][write.copy.source];
    if (source === undefined) {
      throw new Error(`the component copied slice ${write.copy.source} of ${write.sourceCluster}`);
    }
    return sliceFromWit(assemble({ ...write.copy, source: 0 }, [sliceToWit(source)]));
  }
}
const optionalText = (v) => (v == null ? undefined : jsonText(v));
const orNull = (v) => (v === undefined ? null : v);

/** `decide_input`: the eval input's `pass` → the WIT `pass-read`, its slices kept in `slices`. */
function passToWit(pass, slices) {
  const wit = {
    mcs: jsonText(pass.mcs),
    members: (pass.members ?? []).map((m) => {
      let state;
      if ('notReady' in m.state) {
        state = { tag: 'not-ready', val: m.state.notReady };
      } else {
        const o = m.state.ready;
        state = {
          tag: 'ready',
          val: {
            slices: resultToWit(o.slices, (list) => slices.read(m.cluster, list), readFailure),
            service: resultToWit(o.service, optionalText, readFailure),
          },
        };
      }
      return {
        cluster: m.cluster,
        state,
        unreadableMs: BigInt(m.unreadableMs ?? 0),
        lastIngress: m.lastIngress == null ? undefined : m.lastIngress.map(ingressToWit),
      };
    }),
    template: resultToWit(pass.template, optionalText, (e) => e),
  };
  wit.sliceBodies = slices.bodies.items;
  wit.sliceMaps = slices.maps.items;
  wit.slicePorts = slices.ports.items;
  wit.unsynced = (pass.unsynced ?? []).map(unsyncedToWit);
  return wit;
}

/** `unsynced-cluster`, in and out: `{cluster, reason}`, nothing else. */
const unsyncedToWit = (u) => ({ cluster: u.cluster, reason: u.reason });

function planAnswer(p) {
  return {
    active: p.active,
    deleting: p.deleting,
    invalid: orNull(p.invalid),
    mcs: { name: p.mcs.name, namespace: p.mcs.namespace, ports: p.mcs.ports.map((x) => ({ name: x.name, port: x.port })) },
    providers: p.providers,
    consumers: p.consumers,
    unknownProviders: p.unknownProviders,
    unknownConsumers: p.unknownConsumers,
    loadBalancer: p.loadBalancer,
    sweepable: p.sweepable,
  };
}

/**
 * `basis_json`: a `status-basis` as `eval decide` prints it and `eval conclude` reads it;
 * `unsynced` only when there is one.
 */
function basisAnswer(b) {
  const basis = {
    report: b.report,
    invalid: orNull(b.invalid),
    dispatches: b.dispatches,
    serviceFailures: b.serviceFailures,
    templateMissing: b.templateMissing,
    dispatchFailures: b.dispatchFailures,
    loadBalancerFailures: b.loadBalancerFailures,
    loadBalancer: b.loadBalancer === undefined ? null : reportAnswer(b.loadBalancer),
    unknownProviders: b.unknownProviders,
    unknownConsumers: b.unknownConsumers,
    incompatible: b.incompatible,
  };
  if (b.unsynced.length > 0) basis.unsynced = b.unsynced.map(unsyncedToWit);
  return basis;
}

/**
 * `decide_json`: a decide input (the `input` of a decide fixture: `pass`, `settings`) → the
 * answer as `mcs-policy eval decide` prints it: `{ok: decision}` or `{err: message}`.
 */
export function runDecide(policy, input) {
  const stale = input.settings?.staleTimeoutMs;
  const settings = { staleTimeoutMs: stale == null ? undefined : BigInt(stale) };
  const slices = new PassSlices();
  let d;
  try {
    d = policy.decide(passToWit(input.pass, slices), settings);
  } catch (e) {
    return { err: errPayload(e).payload };
  }
  const finalizer = d.finalizer.tag === 'keep' ? 'keep' : { [d.finalizer.tag]: d.finalizer.val };
  return {
    ok: {
      plan: planAnswer(d.plan),
      finalizer,
      copies: d.copies.map((w) => ({ cluster: w.cluster, slice: slices.copy(w) })),
      deletions: d.deletions.map((o) => ({ cluster: o.cluster, name: o.name })),
      services: d.services.map((w) => ({ ...serviceAnswer(w.action), cluster: w.cluster })),
      ingress: d.ingress === undefined ? null : d.ingress.map(ingressFromWit),
      rememberIngress: d.rememberIngress.map((r) => ({ cluster: r.cluster, ingress: r.ingress.map(ingressFromWit) })),
      status: basisAnswer(d.status),
    },
  };
}

/** `conclude_input`'s `basis`: as `eval decide` prints it, lists and options may be left out. */
function basisToWit(b) {
  const lb = b.loadBalancer;
  return {
    report: b.report,
    invalid: b.invalid ?? undefined,
    dispatches: b.dispatches ?? false,
    serviceFailures: b.serviceFailures ?? [],
    templateMissing: b.templateMissing ?? false,
    dispatchFailures: b.dispatchFailures ?? [],
    loadBalancerFailures: b.loadBalancerFailures ?? [],
    loadBalancer:
      lb == null
        ? undefined
        : {
            ingress: (lb.ingress ?? []).map(ingressToWit),
            changed: lb.changed,
            complete: lb.complete,
            reason: lb.reason,
            message: lb.message,
          },
    unknownProviders: b.unknownProviders ?? [],
    unknownConsumers: b.unknownConsumers ?? [],
    incompatible: b.incompatible ?? [],
    unsynced: (b.unsynced ?? []).map(unsyncedToWit),
  };
}

/**
 * `conclude_json`: a conclude input (the `input` of a conclude fixture: `basis`, `failures`,
 * `current`, `reported`) → the `status-update` as `mcs-policy eval conclude` prints it.
 */
export function runConclude(policy, input) {
  const current = input.current;
  const r = input.reported;
  const update = policy.conclude(
    basisToWit(input.basis),
    { service: input.failures?.service ?? [], dispatch: input.failures?.dispatch ?? [] },
    {
      conditions: current.conditions == null ? '[]' : jsonText(current.conditions),
      generation: current.generation == null ? undefined : BigInt(current.generation),
      now: current.now,
    },
    r == null
      ? undefined
      : {
          unknown: r.unknown ?? [],
          incompatible: r.incompatible ?? [],
          unsynced: r.unsynced ?? [],
          serviceApplied: r.serviceApplied ?? undefined,
          dispatched: r.dispatched ?? undefined,
          loadBalancer: r.loadBalancer ?? undefined,
        },
  );
  let conditions = null;
  if (update.conditions !== undefined) {
    try {
      conditions = JSON.parse(update.conditions);
    } catch {
      conditions = update.conditions;
    }
  }
  const rep = update.reported;
  const reported = {
    unknown: rep.unknown,
    incompatible: rep.incompatible,
    serviceApplied: orNull(rep.serviceApplied),
    dispatched: orNull(rep.dispatched),
    loadBalancer: orNull(rep.loadBalancer),
  };
  // `eval conclude` prints `unsynced` only when there is one.
  if (rep.unsynced.length > 0) reported.unsynced = rep.unsynced;
  return {
    conditions,
    events: update.events.map((e) => ({ warning: e.warning, reason: e.reason, message: e.message })),
    reported,
    retry: update.retry,
  };
}

// ---------------------------------------------------------------------------------------------
// clusterset-decide (tests/src/clusterset.rs `read_input`, `summary`)

/** `read_input`: a clusterset fixture's `input` → the WIT `clusterset-read` (objects as JSON text). */
function clustersetRead(input) {
  const text = (v) => (v === undefined ? undefined : JSON.stringify(v));
  return {
    namespace: input.namespace ?? '',
    name: input.name ?? '',
    now: input.now ?? '',
    // u64 fields are BigInts in jco.
    staleTimeoutMs: input.staleTimeoutMs === undefined ? undefined : BigInt(input.staleTimeoutMs),
    members: (input.members ?? []).map((m) => ({
      cluster: m.cluster,
      clusterProperty: m.clusterProperty ?? undefined,
      unreadableMs: BigInt(m.unreadableMs ?? 0),
      state:
        m.unreadable !== undefined
          ? { tag: 'unreadable', val: m.unreadable }
          : {
              tag: 'readable',
              val: {
                serviceExport: text(m.serviceExport),
                service: text(m.service),
                slices: (m.slices ?? []).map(sliceToWit),
                serviceImport: text(m.serviceImport),
                derivedService: text(m.derivedService),
                importedSlices: (m.importedSlices ?? []).map((s) => ({
                  slice: sliceToWit(s),
                  uid: s.metadata?.uid ?? '',
                  resourceVersion: s.metadata?.resourceVersion ?? '',
                })),
              },
            },
    })),
  };
}

const precondition = (p) => ({ name: p.name, uid: p.uid, resourceVersion: p.resourceVersion });

function objectWrite(w) {
  if (w.tag === 'leave') return 'leave';
  if (w.tag === 'apply') return { apply: JSON.parse(w.val) };
  return { delete: precondition(w.val) };
}

/**
 * `clusterset-derived-name` for a clusterset fixture's name, and the derived Service names its
 * `clusterset-decide` answer applies or annotates on the ServiceImports: they must be the same.
 */
export function clustersetDerivedNames(policy, input) {
  const named = policy.clustersetDerivedName(input.namespace ?? '', input.name ?? '');
  const applied = [];
  for (const m of policy.clustersetDecide(clustersetRead(input)).members ?? []) {
    if (m.derivedService.tag === 'apply') applied.push(JSON.parse(m.derivedService.val).metadata.name);
    if (m.serviceImport.tag === 'apply') {
      const a = JSON.parse(m.serviceImport.val).metadata.annotations?.['multicluster.kubernetes.io/derived-service'];
      if (a !== undefined) applied.push(a);
    }
  }
  return { named, applied };
}

/** `summary`: the answer in the clusterset fixtures' `expect` shape. */
export function runClusterset(policy, input) {
  let d;
  try {
    d = policy.clustersetDecide(clustersetRead(input));
  } catch (e) {
    return { err: errPayload(e).payload };
  }
  return {
    ok: {
      exporters: d.exporters,
      winner: d.winner ?? null,
      conflicts: d.conflicts,
      members: d.members.map((m) => ({
        cluster: m.cluster,
        clusterId: m.clusterId,
        conditions:
          m.exportConditions === undefined
            ? null
            : Object.fromEntries(JSON.parse(m.exportConditions).map((c) => [c.type, `${c.status} ${c.reason}`])),
        serviceImport: objectWrite(m.serviceImport),
        serviceImportStatus:
          m.serviceImportStatus === undefined
            ? null
            : JSON.parse(m.serviceImportStatus).status.clusters.map((c) => c.cluster),
        derivedService: objectWrite(m.derivedService),
        applySlices: m.applySlices.map((s) => ({
          name: s.name,
          labels: Object.fromEntries(s.labels),
          addresses: s.endpoints.flatMap((e) => e.addresses),
        })),
        deleteSlices: m.deleteSlices.map(precondition),
      })),
    },
  };
}
