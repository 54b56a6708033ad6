// The exact source text of one value inside a JSON document, as serde_json's `RawValue` keeps
// it. The Rust host passes `request.object` to the component as the bytes the API server sent
// (host/src/webhook/review.rs); re-serialising with JSON.stringify would change numbers such as
// `80.0` or `1e3`, which the component must see as sent. So this host slices the text instead.

const WS = new Set([' ', '\t', '\n', '\r']);

function skipWs(text, i) {
  while (i < text.length && WS.has(text[i])) i++;
  return i;
}

function fail(text, i, what) {
  throw new SyntaxError(`raw-json: ${what} at offset ${i} (${JSON.stringify(text.slice(i, i + 20))})`);
}

// End offset (exclusive) of the string starting at `i` (which must be `"`).
function skipString(text, i) {
  if (text[i] !== '"') fail(text, i, 'expected a string');
  i++;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\') i += 2;
    else if (c === '"') return i + 1;
    else i++;
  }
  fail(text, i, 'unterminated string');
}

// End offset (exclusive) of the value starting at `i` (no leading whitespace).
function skipValue(text, i) {
  const c = text[i];
  if (c === '"') return skipString(text, i);
  if (c === '{' || c === '[') {
    const close = c === '{' ? '}' : ']';
    i = skipWs(text, i + 1);
    if (text[i] === close) return i + 1;
    for (;;) {
      if (c === '{') {
        i = skipWs(text, skipString(text, i));
        if (text[i] !== ':') fail(text, i, 'expected `:`');
        i = skipWs(text, i + 1);
      }
      i = skipWs(text, skipValue(text, i));
      if (text[i] === ',') i = skipWs(text, i + 1);
      else if (text[i] === close) return i + 1;
      else fail(text, i, `expected \`,\` or \`${close}\``);
    }
  }
  // number, true, false, null
  let j = i;
  while (j < text.length && /[-+.0-9eEa-z]/.test(text[j])) j++;
  if (j === i) fail(text, i, 'expected a value');
  return j;
}

/**
 * The source text of the value at `path` (a list of object keys) in the JSON document `text`,
 * or `undefined` when a key is absent. The last occurrence wins for repeated keys, like
 * JSON.parse.
 */
export function rawValue(text, path) {
  let start = skipWs(text, 0);
  let end = skipValue(text, start);
  for (const key of path) {
    if (text[start] !== '{') return undefined;
    let found;
    let i = skipWs(text, start + 1);
    if (text[i] !== '}') {
      for (;;) {
        const keyEnd = skipString(text, i);
        const name = JSON.parse(text.slice(i, keyEnd));
        i = skipWs(text, keyEnd);
        i = skipWs(text, i + 1); // past `:`
        const valueEnd = skipValue(text, i);
        if (name === key) found = [i, valueEnd];
        i = skipWs(text, valueEnd);
        if (text[i] === ',') i = skipWs(text, i + 1);
        else break;
      }
    }
    if (!found) return undefined;
    [start, end] = found;
  }
  return text.slice(start, end);
}
