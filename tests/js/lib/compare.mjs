// Comparing answers: a JSON deep diff (key order ignored), a tiny RFC 6902 add/replace, and the
// fixture expectations of tests/src/fixtures.rs (`check_response`, `check_service`) and
// tests/tests/fixtures.rs.

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const show = (v) => (v === undefined ? '(absent)' : JSON.stringify(v));

/**
 * The differences between two JSON values, one line each (`path: got X, want Y`); empty when
 * equal. Object key order does not matter; a key holding `undefined` counts as absent.
 */
export function jsonDiff(got, want, path = '') {
  if (Array.isArray(got) && Array.isArray(want)) {
    const out = [];
    if (got.length !== want.length) {
      return [`${path || '.'}: got ${got.length} items ${show(got)}, want ${want.length} items ${show(want)}`];
    }
    got.forEach((g, i) => out.push(...jsonDiff(g, want[i], `${path}[${i}]`)));
    return out;
  }
  if (isObject(got) && isObject(want)) {
    const keys = new Set([...Object.keys(got), ...Object.keys(want)]);
    const out = [];
    for (const k of [...keys].sort()) {
      if (got[k] === undefined && want[k] === undefined) continue;
      out.push(...jsonDiff(got[k], want[k], `${path}.${k}`));
    }
    return out;
  }
  return got === want ? [] : [`${path || '.'}: got ${show(got)}, want ${show(want)}`];
}

export const jsonEqual = (a, b) => jsonDiff(a, b).length === 0;

function unescapeToken(t) {
  return t.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Applies an RFC 6902 patch of `add`/`replace` operations to a copy of `doc`. */
export function applyPatch(doc, patch) {
  let root = structuredClone(doc);
  for (const { op, path, value } of patch) {
    if (op !== 'add' && op !== 'replace') throw new Error(`unsupported patch op ${op}`);
    if (path === '') {
      root = structuredClone(value);
      continue;
    }
    if (!path.startsWith('/')) throw new Error(`patch path ${JSON.stringify(path)} is not a JSON pointer`);
    const tokens = path.slice(1).split('/').map(unescapeToken);
    const last = tokens.pop();
    let parent = root;
    for (const t of tokens) {
      const next = Array.isArray(parent) ? parent[Number(t)] : isObject(parent) ? parent[t] : undefined;
      if (next === undefined || next === null || typeof next !== 'object') {
        throw new Error(`patch path ${path}: ${t} does not exist`);
      }
      parent = next;
    }
    if (Array.isArray(parent)) {
      const i = last === '-' ? parent.length : Number(last);
      if (!Number.isInteger(i) || i < 0 || i > parent.length || (op === 'replace' && i >= parent.length)) {
        throw new Error(`patch path ${path}: bad array index`);
      }
      if (op === 'add') parent.splice(i, 0, structuredClone(value));
      else parent[i] = structuredClone(value);
    } else if (isObject(parent)) {
      if (op === 'replace' && !Object.hasOwn(parent, last)) {
        throw new Error(`patch path ${path}: nothing to replace`);
      }
      parent[last] = structuredClone(value);
    } else {
      throw new Error(`patch path ${path}: parent is not a container`);
    }
  }
  return root;
}

/** `check_response`: the problems of a response AdmissionReview against a validate `expect`. */
export function checkResponse(response, expect) {
  const problems = [];
  const r = response.response ?? {};
  const st = r.status ?? {};
  const same = (what, got, want) => {
    const g = got ?? null;
    const w = want ?? null;
    if (!jsonEqual(g, w)) problems.push(`${what}: got ${JSON.stringify(g)}, want ${JSON.stringify(w)}`);
  };
  same('allowed', r.allowed, expect.allowed);
  if ('code' in expect) same('status.code', st.code, expect.code);
  if ('reason' in expect) same('status.reason', st.reason, expect.reason);
  if ('message' in expect) same('status.message', st.message, expect.message);
  if (typeof expect.messageContains === 'string') {
    const msg = typeof st.message === 'string' ? st.message : '';
    if (!msg.includes(expect.messageContains)) {
      problems.push(`status.message ${JSON.stringify(msg)} does not contain ${JSON.stringify(expect.messageContains)}`);
    }
  }
  if (expect.allowed === true && st.message !== undefined) {
    problems.push(`allowed response carries a message: ${JSON.stringify(st.message)}`);
  }
  same('warnings', r.warnings ?? [], expect.warnings ?? []);
  return problems;
}

/** `check_service`: the problems of a `service` answer (`eval service` shape) against its `expect`. */
export function checkService(got, expect) {
  if (expect.action !== 'error' && expect.action !== 'conflict') return jsonDiff(got, expect);
  const part = typeof expect.messageContains === 'string' ? expect.messageContains : '';
  if (got?.action === expect.action && typeof got.message === 'string' && got.message.includes(part)) return [];
  return [`got ${JSON.stringify(got)}, want ${expect.action} with a message containing ${JSON.stringify(part)}`];
}

/** True for a lower-case 8-4-4-4-12 UUID. */
export function isLowerUuid(s) {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(s);
}
