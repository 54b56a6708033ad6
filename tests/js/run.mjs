#!/usr/bin/env node
// The policy component in a JavaScript host: transpile it with jco, run every shared fixture
// (tests/fixtures/{validate,mutate,filter,service,load-balancer,decide,conclude,clusterset}) through it, and check that the answers are the ones
// `mcs-policy eval` (the Rust host, wasmtime) gives on the same input, and the ones the fixture
// expects. See README.md.
//
//   node run.mjs [--keep] [SUBSTRING...]
//
// SUBSTRING limits the run to fixtures whose `kind/name` contains one of them. `--keep` leaves
// the temp dir (component, transpiled JS, eval inputs) in place and prints where it is.
// Environment: MCS_POLICY_BIN (default ../../target/debug/mcs-policy, relative to this folder),
// MCS_POLICY_JOBS (parallel `mcs-policy eval` processes, default 4).
// Last line: `N passed, M failed`; exit code 0 only when M is 0.

import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { transpile } from '@bytecodealliance/jco';

import { rawValue } from './lib/raw-json.mjs';
import {
  callMutate,
  callValidate,
  contextFor,
  loadPolicy,
  mutationResponse,
  parseReview,
  runClusterset,
  clustersetDerivedNames,
  runConclude,
  runDecide,
  runFilter,
  runLoadBalancer,
  runService,
  validationResponse,
} from './lib/host.mjs';
import { applyPatch, checkResponse, checkService, isLowerUuid, jsonDiff } from './lib/compare.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');
const FIXTURES = join(ROOT, 'tests/fixtures');
const POLICIES = join(ROOT, 'policies');
const POLICY_INTERFACE = 'karmada:mcs-policy/policy@0.1.0';
const KINDS = ['validate', 'mutate', 'filter', 'service', 'load-balancer', 'decide', 'conclude', 'clusterset'];
const ID_LABEL = 'multiclusterservice.karmada.io/permanent-id';

const BIN = process.env.MCS_POLICY_BIN
  ? resolve(process.cwd(), process.env.MCS_POLICY_BIN)
  : resolve(HERE, '../../target/debug/mcs-policy');
const JOBS = Math.max(1, Number(process.env.MCS_POLICY_JOBS ?? 4) || 4);

const args = process.argv.slice(2);
const keep = args.includes('--keep');
const only = args.filter((a) => a !== '--keep');

const tmp = mkdtempSync(join(tmpdir(), 'mcs-policy-js-'));

// ---------------------------------------------------------------------------------------------
// The component, through jco

/** Writes the embedded component with `mcs-policy component`, transpiles it, imports it. */
async function loadComponent() {
  const wasm = join(tmp, 'policy.wasm');
  try {
    execFileSync(BIN, ['component', '--out', wasm], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    throw new Error(`${BIN} component --out ${wasm} failed: ${e.stderr?.toString().trim() || e.message}`);
  }
  const { files, imports } = await transpile(readFileSync(wasm), { name: 'policy' });
  if (imports.length > 0) {
    throw new Error(`the component should import nothing, jco reports imports: ${imports.join(', ')}`);
  }
  const out = join(tmp, 'jco');
  for (const [name, bytes] of Object.entries(files)) {
    mkdirSync(dirname(join(out, name)), { recursive: true });
    writeFileSync(join(out, name), bytes);
  }
  // jco writes ES modules with a `.js` extension: mark the folder as ESM for every Node 20.
  writeFileSync(join(out, 'package.json'), '{"type":"module"}\n');
  const module = await import(pathToFileURL(join(out, 'policy.js')).href);
  // The world exports the interface `karmada:mcs-policy/policy@0.1.0`; jco exposes it under its
  // plain name (`policy`) and its full name.
  const api = module.policy ?? module[POLICY_INTERFACE];
  for (const f of ['validate', 'mutate', 'filter', 'service', 'loadBalancerStatus', 'decide', 'conclude', 'clustersetDecide', 'clustersetDerivedName']) {
    if (typeof api?.[f] !== 'function') {
      throw new Error(`the transpiled component exports no ${POLICY_INTERFACE}#${f} (exports: ${Object.keys(module).join(', ')})`);
    }
  }
  return api;
}

// ---------------------------------------------------------------------------------------------
// The Rust host, as a subprocess

/** Runs `mcs-policy ...args` and returns its stdout parsed as JSON. */
function evalJson(evalArgs) {
  return new Promise((resolveRun, reject) => {
    const full = [...evalArgs.slice(0, 2), '--cache-dir', join(tmp, 'cache'), ...evalArgs.slice(2)];
    execFile(BIN, full, { maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`mcs-policy ${full.join(' ')} failed (${err.code ?? err.signal}): ${stderr.trim()}`));
        return;
      }
      try {
        resolveRun(JSON.parse(stdout));
      } catch (e) {
        reject(new Error(`mcs-policy ${full.join(' ')} printed no JSON: ${e.message}`));
      }
    });
  });
}

function writeTmp(name, text) {
  const path = join(tmp, 'inputs', name);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

// ---------------------------------------------------------------------------------------------
// One fixture of each kind: returns the problems (empty = pass)

const prefixed = (prefix, lines) => lines.map((l) => `${prefix}: ${l}`);

/** The response with its base64 patch decoded, so patches compare as JSON. */
function decodedPatch(review) {
  const r = review?.response;
  if (typeof r?.patch !== 'string') return review;
  const patch = JSON.parse(Buffer.from(r.patch, 'base64').toString('utf8'));
  return { ...review, response: { ...r, patch } };
}

async function admissionFixture(policy, kind, id, text) {
  const fixture = JSON.parse(text);
  const reviewText = rawValue(text, ['review']);
  const policyName = fixture.policy ?? 'karmada-compatible';
  const { settings } = loadPolicy(POLICIES, policyName);
  const review = parseReview(reviewText);

  let js;
  if (kind === 'validate') {
    const context = contextFor(fixture.context, review.namespace, review.name);
    js = validationResponse(review, callValidate(policy, review.request, settings, context));
  } else {
    js = mutationResponse(review, callMutate(policy, review.request, settings));
  }

  const evalArgs = ['eval', kind, '--policy', policyName];
  if (fixture.context != null) {
    evalArgs.push('--context', writeTmp(`${id}.context.json`, JSON.stringify(fixture.context)));
  }
  evalArgs.push(writeTmp(`${id}.review.json`, reviewText));
  const rust = await evalJson(evalArgs);

  const problems = prefixed('jco vs eval', jsonDiff(decodedPatch(js), decodedPatch(rust)));
  if (problems.length === 0 && js.response.patch !== rust.response.patch) {
    problems.push(`jco vs eval: same patch JSON, different bytes: ${js.response.patch} vs ${rust.response.patch}`);
  }
  if (js.response.uid !== fixture.review.request.uid) {
    problems.push(`jco: uid ${JSON.stringify(js.response.uid)} is not the request's`);
  }
  const expect = fixture.expect;
  if (kind === 'validate') {
    problems.push(...prefixed('jco vs expect', checkResponse(js, expect)));
    return problems;
  }

  // mutate: as tests/tests/fixtures.rs `every_mutate_fixture_gets_the_expected_patch`
  const fail = (p) => problems.push(`jco vs expect: ${p}`);
  const r = js.response;
  if (r.allowed !== expect.allowed) fail(`allowed: got ${r.allowed}, want ${expect.allowed}`);
  if ('code' in expect && r.status.code !== expect.code) fail(`status.code: got ${r.status.code}, want ${expect.code}`);
  let patched;
  if (r.patch !== undefined) {
    if (r.patchType !== 'JSONPatch') fail(`patchType: got ${JSON.stringify(r.patchType)}`);
    try {
      patched = applyPatch(fixture.review.request.object, decodedPatch(js).response.patch);
    } catch (e) {
      fail(`patch does not apply to the object as sent: ${e.message}`);
    }
  }
  if (typeof expect.patched === 'boolean' && (r.patch !== undefined) !== expect.patched) {
    fail(`patched: got ${r.patch !== undefined}, want ${expect.patched}`);
  }
  if (typeof expect.permanentId === 'string') {
    const object = patched ?? fixture.review.request.object;
    const id = object?.metadata?.labels?.[ID_LABEL];
    const got = typeof id === 'string' ? id : '';
    if (expect.permanentId === 'uuid') {
      if (!isLowerUuid(got)) fail(`permanent id ${JSON.stringify(got)} is not a lower-case UUID`);
      const again = mutationResponse(review, callMutate(policy, review.request, settings));
      if (again.response.patch !== r.patch) fail('the same request gave a different patch');
    } else if (got !== expect.permanentId) {
      fail(`permanent id: got ${JSON.stringify(got)}, want ${JSON.stringify(expect.permanentId)}`);
    }
  }
  return problems;
}

async function filterFixture(policy, id, text) {
  const fixture = JSON.parse(text);
  const js = runFilter(policy, fixture.input);
  const rust = await evalJson(['eval', 'filter', writeTmp(`${id}.input.json`, rawValue(text, ['input']))]);
  return [
    ...prefixed('jco vs eval', jsonDiff(js, rust)),
    ...prefixed('jco vs expect', jsonDiff(js, fixture.expect)),
  ];
}

async function serviceFixture(policy, id, text) {
  const fixture = JSON.parse(text);
  const js = runService(policy, fixture.input);
  const rust = await evalJson(['eval', 'service', writeTmp(`${id}.input.json`, rawValue(text, ['input']))]);
  return [
    ...prefixed('jco vs eval', jsonDiff(js, rust)),
    ...prefixed('jco vs expect', checkService(js, fixture.expect)),
  ];
}

async function loadBalancerFixture(policy, id, text) {
  const fixture = JSON.parse(text);
  const js = runLoadBalancer(policy, fixture.input);
  const rust = await evalJson(['eval', 'load-balancer', writeTmp(`${id}.input.json`, rawValue(text, ['input']))]);
  return [
    ...prefixed('jco vs eval', jsonDiff(js, rust)),
    ...prefixed('jco vs expect', jsonDiff(js, fixture.expect)),
  ];
}

/** A decide or conclude fixture: its `input` through jco and through `mcs-policy eval <kind>`. */
async function syncFixture(policy, kind, id, text) {
  const fixture = JSON.parse(text);
  const js = kind === 'decide' ? runDecide(policy, fixture.input) : runConclude(policy, fixture.input);
  const rust = await evalJson(['eval', kind, writeTmp(`${id}.input.json`, rawValue(text, ['input']))]);
  return [
    ...prefixed('jco vs eval', jsonDiff(js, rust)),
    ...prefixed('jco vs expect', jsonDiff(js, fixture.expect)),
  ];
}

/**
 * A clusterset fixture: its `input` through jco against the fixture's `expect` (the Rust host's
 * answer to the same input is checked against `expect` by tests/tests/fixtures.rs,
 * wasmtime_cli.rs and eval_cli.rs), and clusterset-derived-name against the names it applies.
 */
function clustersetFixture(policy, text) {
  const fixture = JSON.parse(text);
  const problems = prefixed('jco vs expect', jsonDiff(runClusterset(policy, fixture.input), fixture.expect));
  // The host reads the derived Service under the name clusterset-derived-name gives: the one
  // clusterset-decide applies.
  if (fixture.expect.ok !== undefined) {
    const { named, applied } = clustersetDerivedNames(policy, fixture.input);
    for (const a of applied) {
      if (a !== named) problems.push(`clusterset-derived-name: ${named}, but the decision applies ${a}`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------

/** The shared fixtures, then this host's extra cases (extra/<kind>/, same format). */
function fixtures() {
  const all = [];
  const add = (dir, prefix, kind, required) => {
    let files;
    try {
      files = readdirSync(dir);
    } catch (e) {
      if (!required && e.code === 'ENOENT') return;
      throw e;
    }
    const names = files.filter((f) => f.endsWith('.json')).sort().map((f) => f.slice(0, -'.json'.length));
    if (required && names.length === 0) throw new Error(`no fixtures in ${dir}`);
    for (const name of names) {
      const id = `${prefix}${kind}/${name}`;
      if (only.length === 0 || only.some((s) => id.includes(s))) {
        all.push({ kind, name, id, path: join(dir, `${name}.json`) });
      }
    }
  };
  for (const kind of KINDS) add(join(FIXTURES, kind), '', kind, true);
  for (const kind of KINDS) add(join(HERE, 'extra', kind), 'js-extra/', kind, false);
  return all;
}

async function main() {
  const policy = await loadComponent();
  const cases = fixtures();
  let passed = 0;
  let failed = 0;
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const { kind, id, path } = cases[next++];
      let problems;
      try {
        const text = readFileSync(path, 'utf8');
        if (kind === 'filter') problems = await filterFixture(policy, id, text);
        else if (kind === 'service') problems = await serviceFixture(policy, id, text);
        else if (kind === 'load-balancer') problems = await loadBalancerFixture(policy, id, text);
        else if (kind === 'decide' || kind === 'conclude') problems = await syncFixture(policy, kind, id, text);
        else if (kind === 'clusterset') problems = clustersetFixture(policy, text);
        else problems = await admissionFixture(policy, kind, id, text);
      } catch (e) {
        problems = [`error: ${e?.message ?? e}`];
      }
      if (problems.length === 0) {
        passed++;
      } else {
        failed++;
        console.log(`FAIL ${id}: ${problems.join(' | ').replace(/\s*\n\s*/g, ' ')}`);
      }
    }
  };
  await Promise.all(Array.from({ length: JOBS }, worker));
  return { passed, failed };
}

let code = 1;
try {
  const { passed, failed } = await main();
  console.log(`${passed} passed, ${failed} failed`);
  code = failed === 0 && passed > 0 ? 0 : 1;
} catch (e) {
  console.error(`error: ${e.stack ?? e}`);
  code = 2;
} finally {
  if (keep) console.error(`kept ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
}
process.exit(code);
