'use strict';
/*
 * Protocol v1 adapter for the JavaScript original of tool-call-closure.
 *
 *   node adapter.cjs /path/to/tool-call-closure/src/index.cjs
 *   TCC_JS=/path/to/tool-call-closure/src/index.cjs node adapter.cjs
 *
 * It reads requests from stdin and writes responses to stdout as spec/protocol.md
 * describes, driving whatever library it is given. It holds none of the library's
 * logic: every answer comes from calling the library.
 *
 * This file is also the worked example for port authors. Sections, top to bottom:
 *
 *   1. Output     one synchronous write per response line
 *   2. Errors     the adapter's exception classes; how an exception becomes an error kind
 *   3. Session    the current instance and everything tags can refer to
 *   4. Tags       protocol values -> JavaScript values ($handle, $hook, ...)
 *   5. Hooks      a Proxy that runs nested requests on its first trigger
 *   6. Requests   hello, new, call, bye
 *   7. Input      reading stdin line by line, the startup code, and the main loop
 *
 * Everything is synchronous, and that matters. A hook runs nested requests while the
 * library is in the middle of a method call. Because nothing here is asynchronous,
 * each nested response is written (by a blocking write) before the library
 * returns. So nested responses come out before the response of the request that
 * triggered them, with no queueing or buffering to reason about.
 *
 * Plain CommonJS, no dependencies, Node >= 18.
 */

const fs = require('node:fs');
const path = require('node:path');

const PROTOCOL_VERSION = 1;
// The deepest nesting of arrays and objects a request line may have (spec/protocol.md,
// Limits; the request object is level 1). Deeper lines get a ProtocolError.
const MAX_DEPTH = 128;

// ---------------------------------------------------------------------------
// 1. Output
// ---------------------------------------------------------------------------

// Writes go straight to file descriptor 1 with fs.writeSync. process.stdout is never
// touched. Its writes to pipes can be asynchronous, which would break ordering and
// could lose output on exit. Also, creating it may put the pipe into non-blocking
// mode, and if the runner shares one pipe between stdout and stderr, that would affect
// our fd as well. (For the same reason, diagnostics go to fd 2 through fs.writeSync.)
function writeFd(fd, text) {
  const bytes = Buffer.from(text, 'utf8');
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += fs.writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      // A non-blocking descriptor (inherited from the parent) can refuse a write
      // for a moment; wait briefly and retry rather than drop or reorder output.
      if (error.code !== 'EAGAIN') throw error;
      pause(1);
    }
  }
}

function pause(milliseconds) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, milliseconds);
}

// Response lines are built by concatenation so the key order is exactly the
// protocol's: {"id":…,"ok":…}, {"id":…,"nested":d,"ok":…}, and the same with
// "error". Every part goes through JSON.stringify, which writes strings the way
// the protocol requires: non-ASCII raw, lone surrogates escaped as \udxxx.
function respond(id, depth, key, valueJson) {
  const nested = depth > 0 ? ',"nested":' + depth : '';
  writeFd(1, '{"id":' + JSON.stringify(id) + nested + ',"' + key + '":' + valueJson + '}\n');
}

function respondError(id, depth, kind, message) {
  respond(id, depth, 'error', JSON.stringify({ kind, message }));
}

// ---------------------------------------------------------------------------
// 2. Errors
// ---------------------------------------------------------------------------

// The request cannot be carried out as a request (bad JSON, unknown cmd, bad tag, a
// reference to nothing, ...). The answer is a ProtocolError and the adapter keeps
// serving. It can also be thrown from inside a library call, when a hook's `then`
// turns out to be malformed at the moment it is decoded.
class ProtocolFailure extends Error {}
ProtocolFailure.prototype.name = 'ProtocolFailure';

// What a hook with `throw` raises: "caller code raised" (CallerError). It extends
// plain Error, not TypeError or RangeError, so it can never be mistaken for an
// error raised by the library itself.
class HookThrow extends Error {}
HookThrow.prototype.name = 'HookThrow';

// Maps anything thrown out of a library call to an error kind and message. The
// library throws only TypeError and RangeError (its own and V8's). Anything else
// means a defect, either in the library or here.
function classify(error) {
  if (error instanceof HookThrow) return ['CallerError', error.message];
  if (error instanceof ProtocolFailure) return ['ProtocolError', error.message];
  if (error instanceof TypeError) return ['TypeError', error.message];
  if (error instanceof RangeError) return ['RangeError', error.message];
  return ['InternalError', describe(error)];
}

function describe(error) {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  try {
    return `non-Error value thrown: ${String(error)}`;
  } catch {
    return `non-Error value thrown (${typeof error})`;
  }
}

function respondFailure(id, depth, error) {
  const [kind, message] = classify(error);
  respondError(id, depth, kind, message);
}

// ---------------------------------------------------------------------------
// 3. Session
// ---------------------------------------------------------------------------

let Library = null; // the module exports of the library under test (set at startup)

const session = {
  instance: null, // the current ToolCallClosure, or null (before `new`, after a failed `new`)
  handles: new Map(), // generation -> the handle that begin returned ($handle)
  results: new Map(), // request id -> what that call returned ($snapshot, $clone)
};

// The protocol's method names are the library's own. Listing them keeps requests
// away from anything else on the instance (constructor, inherited methods, ...).
const METHODS = new Set([
  'begin', 'settle', 'succeed', 'fail', 'cancel', 'close', 'seal', 'snapshot',
  'activeGeneration', // a getter: read, not called
  'toOpenAIChatCompletions', 'toOpenAIResponses', 'toAnthropicToolResults',
]);

// A request's own field. Object.hasOwn keeps inherited names such as "constructor"
// from looking like fields.
function field(object, key) {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

// ---------------------------------------------------------------------------
// 4. Tags
// ---------------------------------------------------------------------------

// Where a value sits decides which tags it may be: `$undefined` is allowed only as
// a direct element of args. `$error` is allowed there or as a hook's `then`.
// Anything deeper is decoded with INSIDE.
const IN_ARGS = Object.freeze({ undefinedAllowed: true, errorAllowed: true });
const AS_THEN = Object.freeze({ undefinedAllowed: false, errorAllowed: true });
const INSIDE = Object.freeze({ undefinedAllowed: false, errorAllowed: false });

// Capability undefined-properties: a member of an object the library reads by
// property may be {"$undefined":true}, which becomes {key: undefined}, as a
// JavaScript caller writes it. Those objects are new's options, begin's call
// entries (each element of its first argument) and its second argument, settle's
// outcome and close's reason: "method/index" -> "object" or "entries".
const UNDEFINED_MEMBERS = new Map([
  ['begin/0', 'entries'],
  ['begin/1', 'object'],
  ['settle/2', 'object'],
  ['close/1', 'object'],
]);
const AS_MEMBER = Object.freeze({ undefinedAllowed: true, errorAllowed: false });
const OPTIONS = Object.freeze({ undefinedAllowed: false, errorAllowed: false, undefinedMembers: true });
const IN_ARGS_MEMBERS = Object.freeze({ undefinedAllowed: true, errorAllowed: true, undefinedMembers: true });

function decodeArg(method, index, value, depth) {
  const place = UNDEFINED_MEMBERS.get(`${method}/${index}`);
  if (place === 'entries' && Array.isArray(value)) return value.map((item) => decode(item, depth, OPTIONS));
  return decode(value, depth, place === 'object' ? IN_ARGS_MEMBERS : IN_ARGS);
}

// `depth` is the nesting depth of the request whose args are being decoded (0 for a
// top-level request). A hook created here answers its nested requests at depth+1.
function decode(value, depth, place = INSIDE) {
  if (Array.isArray(value)) return value.map((item) => decode(item, depth));
  if (value === null || typeof value !== 'object') return value;

  const keys = Object.keys(value);
  // A tag is an object with exactly one key, and that key starts with "$".
  // Objects with more keys are plain data, even if some of the keys start with "$".
  if (keys.length === 1 && keys[0].startsWith('$')) return decodeTag(keys[0], value[keys[0]], depth, place);

  const plain = {};
  for (const key of keys) {
    // defineProperty, not assignment: a JSON key "__proto__" must become an own
    // property (as JSON.parse makes it), not replace the prototype.
    Object.defineProperty(plain, key, {
      value: decode(value[key], depth, place.undefinedMembers ? AS_MEMBER : INSIDE),
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return plain;
}

function decodeTag(tag, payload, depth, place) {
  switch (tag) {
    case '$handle':
      // Identity matters: the library accepts only the very object that begin
      // returned, so we hand back that object, not a copy.
      if (typeof payload !== 'number' || !session.handles.has(payload)) {
        throw new ProtocolFailure(`$handle ${show(payload)}: no begin on this instance created that generation`);
      }
      return session.handles.get(payload);
    case '$forgedHandle':
      // A look-alike, shaped like the library's own handles (frozen, one key). The
      // payload is used as is (any JSON value, not decoded).
      return Object.freeze({ generation: payload });
    case '$snapshot':
    case '$clone': {
      if ((typeof payload !== 'number' && typeof payload !== 'string') || !session.results.has(payload)) {
        throw new ProtocolFailure(`${tag} ${show(payload)}: no earlier call with that id returned a value`);
      }
      const found = session.results.get(payload);
      // $snapshot: the very object (it is registered with the library, so exports
      // accept it). $clone: plain data equal to its JSON, which the library's
      // registry does not know.
      return tag === '$snapshot' ? found : JSON.parse(JSON.stringify(found));
    }
    case '$undefined':
      if (payload !== true) throw new ProtocolFailure('$undefined must be {"$undefined":true}');
      if (!place.undefinedAllowed) throw new ProtocolFailure('$undefined is allowed only as an element of args');
      return undefined;
    case '$nan':
      if (payload !== true) throw new ProtocolFailure('$nan must be {"$nan":true}');
      return NaN;
    case '$inf':
      if (payload !== 1 && payload !== -1) throw new ProtocolFailure('$inf must be 1 or -1');
      return payload * Infinity;
    case '$error':
      if (typeof payload !== 'string') throw new ProtocolFailure('$error takes a string');
      if (!place.errorAllowed) throw new ProtocolFailure("$error is allowed only as an element of args or as a hook's then");
      // Created here, in the library's realm, so `instanceof Error` holds inside it.
      return new Error(payload);
    case '$literal':
      return payload; // returned as is, without decoding
    case '$hook':
      return makeHook(payload, depth);
    default:
      throw new ProtocolFailure(`unknown tag ${show(tag)}`);
  }
}

function show(value) {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text;
}

// ---------------------------------------------------------------------------
// 5. Hooks
// ---------------------------------------------------------------------------

const HOOK_MEMBERS = new Set(['calls', 'then', 'throw']);

// A hook is a Proxy over an empty plain object. Only the `get` trap is defined.
// Every other trap falls through to the empty target, which is why type tests
// never trigger it:
//   typeof hook === 'object', !hook === false, Array.isArray(hook) === false
//     (these look only at the target);
//   hook instanceof Error === false (uses the getPrototypeOf trap -> Object.prototype);
//   Set.has / === / ?? / == null (compare identity; nothing is read).
// The original library reaches caller values only through property reads:
// `call.id`, `outcome.status`, `reason.message`, `handle?.generation`, the
// constructor's `options.maxCalls`, and so on. String() reads Symbol.toPrimitive,
// and JSON.stringify reads toJSON. Every one of these is a `get`, so `get` is the
// single place where a hook triggers.
function makeHook(spec, depth) {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
    throw new ProtocolFailure('$hook takes an object');
  }
  for (const key of Object.keys(spec)) {
    if (!HOOK_MEMBERS.has(key)) throw new ProtocolFailure(`$hook has an unknown member ${show(key)}`);
  }
  const calls = Object.hasOwn(spec, 'calls') ? spec.calls : [];
  if (!Array.isArray(calls)) throw new ProtocolFailure('$hook.calls must be an array');
  const throws = Object.hasOwn(spec, 'throw');
  if (throws && typeof spec.throw !== 'string') throw new ProtocolFailure('$hook.throw must be a string');

  let triggered = false;
  let then; // undefined until `then` is decoded (and stays so if it is absent)

  function trigger() {
    if (!triggered) {
      // Mark it first, so a read that happens while its own calls run (it cannot
      // happen with the original, which keeps no caller objects) behaves as `then`
      // instead of running the calls twice.
      triggered = true;
      for (const request of calls) handleRequest(request, depth + 1);
      // `then` is decoded only now, after the calls, so it may refer to their results.
      if (Object.hasOwn(spec, 'then')) then = decode(spec.then, depth, AS_THEN);
      if (throws) throw new HookThrow(spec.throw);
    }
    return then;
  }

  return new Proxy({}, {
    get(_target, key) {
      const value = trigger();
      // "Behaves as then".
      // String conversion: String(hook) reads Symbol.toPrimitive. toString also
      // covers implicit conversion by code that looks it up directly.
      if (key === Symbol.toPrimitive || key === 'toString') return () => String(value);
      // Serialization: JSON.stringify reads toJSON and then writes what it returns.
      if (key === 'toJSON') return () => value;
      // Any other read: then[k] when then is a plain (JSON) object with its own key k.
      // An Error or an array `then` gives undefined for every key, as in the Python
      // reference. Object.hasOwn on a hook `then` uses its getOwnPropertyDescriptor
      // trap, which does not trigger it.
      return isPlainObject(value) && Object.hasOwn(value, key) ? value[key] : undefined;
    },
  });
}

function isPlainObject(value) {
  return value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype;
}

// ---------------------------------------------------------------------------
// 6. Requests
// ---------------------------------------------------------------------------

let finished = false; // set by `bye`

// Answers one decoded request. depth is 0 for a top-level request, and d for a request
// that a hook runs while serving a request at depth d-1.
function handleRequest(request, depth) {
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    respondError(null, depth, 'ProtocolError', 'a request must be a JSON object');
    return;
  }
  const id = field(request, 'id');
  if (typeof id !== 'number' && typeof id !== 'string') {
    respondError(null, depth, 'ProtocolError', 'a request needs an id that is a number or a string');
    return;
  }
  try {
    const cmd = field(request, 'cmd');
    if (depth > 0 && cmd !== 'call') throw new ProtocolFailure('a hook may run only call requests');
    switch (cmd) {
      case 'hello': return helloRequest(id, request);
      case 'new': return newRequest(id, request);
      case 'call': return callRequest(id, request, depth);
      case 'tamper': return tamperRequest(id, request);
      case 'bye':
        respond(id, 0, 'ok', 'null');
        finished = true;
        return undefined;
      default:
        throw new ProtocolFailure(`unknown cmd ${show(cmd)}`);
    }
  } catch (error) {
    // Library errors are answered inside callRequest/newRequest. What gets here is a
    // ProtocolFailure from checking or decoding the request, or a defect in this file.
    if (error instanceof ProtocolFailure) respondError(id, depth, 'ProtocolError', error.message);
    else respondError(id, depth, 'InternalError', `adapter failure: ${describe(error)}`);
    return undefined;
  }
}

// The capabilities the original has (spec/protocol.md, Capabilities): hooks,
// tamper, the nesting bound (checked in handleLine) and undefined members
// (UNDEFINED_MEMBERS). Not "turn-guard": the turn token (deviation D20,
// turnToken and begin's {"turn": token}) is the reference's extension, and the
// original has no such guard (it has no turnToken, and its begin ignores a
// second argument); nor "gemini-export" and "bedrock-export" (D8): the original
// has no such methods; nor "content-parts" and "export-options" (D22): it has no
// content parts and no export options. conform skips those vectors instead of
// failing them.
function helloRequest(id, request) {
  if (field(request, 'protocol') !== PROTOCOL_VERSION) {
    throw new ProtocolFailure(`unsupported protocol ${show(field(request, 'protocol'))}; this subject speaks 1`);
  }
  writeFd(1, '{"id":' + JSON.stringify(id)
    + ',"protocol":' + PROTOCOL_VERSION
    + ',"implementation":' + JSON.stringify(IMPLEMENTATION)
    + ',"capabilities":["hook","tamper","nesting-limit","undefined-properties"]}\n');
}

function newRequest(id, request) {
  // Discard everything first. If a hook in `options` runs calls, they find no
  // instance, and no tag can reach the previous instance's handles or results.
  session.instance = null;
  session.handles = new Map();
  session.results = new Map();

  const hasOptions = Object.hasOwn(request, 'options');
  const options = hasOptions ? decode(request.options, 0, OPTIONS) : undefined;
  let instance;
  try {
    // With no options, pass no argument, so the constructor applies its own default.
    // Anything else, including null, goes through as is, and the library decides.
    instance = hasOptions ? new Library.ToolCallClosure(options) : new Library.ToolCallClosure();
  } catch (error) {
    respondFailure(id, 0, error);
    return;
  }
  session.instance = instance;
  respond(id, 0, 'ok', 'null');
}

function callRequest(id, request, depth) {
  let method;
  let args;
  try {
    if (session.instance === null) throw new ProtocolFailure('no current instance: send a successful new first');
    method = field(request, 'method');
    if (typeof method !== 'string' || !METHODS.has(method)) throw new ProtocolFailure(`unknown method ${show(method)}`);
    const rawArgs = Object.hasOwn(request, 'args') ? request.args : [];
    if (!Array.isArray(rawArgs)) throw new ProtocolFailure('args must be an array');
    // Tags are decoded before the call. A $snapshot here can still refer to an
    // earlier call that had this same id.
    args = rawArgs.map((arg, index) => decodeArg(method, index, arg, depth));
  } finally {
    // From here on, this request is the latest one with this id. Until it returns
    // a value, there is nothing to refer to under the id.
    session.results.delete(id);
  }

  const instance = session.instance;
  let value;
  try {
    // Extra args are ignored by JavaScript itself. Missing ones, and $undefined
    // ones, are undefined, so the library's default parameters apply.
    value = method === 'activeGeneration' ? instance.activeGeneration : instance[method](...args);
  } catch (error) {
    session.results.delete(id); // in case a nested call with this same id recorded something
    respondFailure(id, depth, error);
    return;
  }

  // `ok` is the library's value as its own JSON.stringify writes it.
  const json = JSON.stringify(value);
  if (json === undefined) {
    // No method of the original returns such a value, so this is a defect in the library.
    respondError(id, depth, 'InternalError', `${method} returned ${typeof value}, which JSON cannot represent`);
    return;
  }
  if (method === 'begin') {
    // $snapshot of a begin means its `superseded` snapshot, and $handle g means
    // the handle it created.
    session.handles.set(value.generation, value.handle);
    session.results.set(id, value.superseded);
  } else {
    session.results.set(id, value);
  }
  respond(id, depth, 'ok', json);
}

// `tamper` (the capability of the same name): try, by ordinary JavaScript means, to
// modify a value the library returned earlier. Post-order: the parts of a value are
// tampered with before the value itself. Every element of an array is assigned
// "tampered" and "tampered" is pushed; every own key of an object is assigned
// "tampered" and the key "tampered" is set to true. This file is strict mode, so a
// write to a frozen object throws; each attempt is tried on its own and a throw is
// ignored: that is immutability holding. Later snapshots and exports show whether
// anything the library relies on changed.
function tamperRequest(id, request) {
  const target = field(request, 'target');
  if ((typeof target !== 'number' && typeof target !== 'string') || !session.results.has(target)) {
    throw new ProtocolFailure(`tamper target ${show(target)}: no earlier call with that id returned a value`);
  }
  tamper(session.results.get(target));
  respond(id, 0, 'ok', 'null');
}

function tamper(value) {
  const attempt = (write) => { try { write(); } catch { /* frozen: the write is refused */ } };
  const stack = [[value, false]];
  while (stack.length > 0) {
    const [item, childrenDone] = stack.pop();
    if (item === null || typeof item !== 'object') continue;
    const keys = Array.isArray(item) ? item.map((_, index) => index) : Object.keys(item);
    if (!childrenDone) {
      stack.push([item, true]);
      for (let index = keys.length - 1; index >= 0; index -= 1) stack.push([item[keys[index]], false]);
      continue;
    }
    for (const key of keys) attempt(() => { item[key] = 'tampered'; });
    if (Array.isArray(item)) attempt(() => { item.push('tampered'); });
    else attempt(() => { item.tampered = true; });
  }
}

// ---------------------------------------------------------------------------
// 7. Input, startup and the main loop
// ---------------------------------------------------------------------------

// Yields stdin line by line, as Buffers. Lines are split on the byte "\n" only.
// U+2028/U+2029 are ordinary characters inside JSON strings, and "\r" is JSON
// whitespace. Splitting bytes is safe because 0x0A never occurs inside a multi-byte
// UTF-8 sequence. A last line without "\n" still counts.
function* stdinLines() {
  const chunk = Buffer.alloc(64 * 1024);
  let partial = []; // pieces of the line being read
  for (;;) {
    const count = readStdin(chunk);
    if (count === 0) break; // end of input
    const data = chunk.subarray(0, count);
    let start = 0;
    let newline;
    while ((newline = data.indexOf(0x0a, start)) !== -1) {
      partial.push(data.subarray(start, newline));
      yield Buffer.concat(partial); // a copy: `chunk` is reused by the next read
      partial = [];
      start = newline + 1;
    }
    if (start < count) partial.push(Buffer.from(data.subarray(start))); // copy, for the same reason
  }
  if (partial.length > 0) yield Buffer.concat(partial);
}

function readStdin(buffer) {
  for (;;) {
    try {
      return fs.readSync(0, buffer, 0, buffer.length, null);
    } catch (error) {
      if (error.code === 'EAGAIN') { pause(5); continue; } // non-blocking stdin: no data yet
      if (error.code === 'EOF') return 0; // how Windows reports a closed pipe
      throw error;
    }
  }
}

// fatal: malformed UTF-8 is answered with a ProtocolError instead of being silently
// replaced. ignoreBOM: a BOM is kept, so it is a JSON error too.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function handleLine(bytes) {
  let text;
  try {
    text = utf8.decode(bytes);
  } catch {
    respondError(null, 0, 'ProtocolError', 'request is not valid UTF-8');
    return;
  }
  if (/^[ \t\r]*$/.test(text)) return; // blank line: only JSON whitespace (the "\n" is already gone)
  let request;
  try {
    request = JSON.parse(text);
  } catch (error) {
    respondError(null, 0, 'ProtocolError', `request is not valid JSON: ${error.message}`);
    return;
  }
  if (nestingDepth(request) > MAX_DEPTH) {
    const id = isPlainObject(request) ? field(request, 'id') : undefined;
    const known = typeof id === 'number' || typeof id === 'string' ? id : null;
    respondError(known, 0, 'ProtocolError', `the request nests deeper than ${MAX_DEPTH} levels`);
    return;
  }
  handleRequest(request, 0);
}

// How many arrays and objects deep a parsed value nests (a scalar is 0), counted
// with an explicit stack so that no depth can exhaust the call stack. Stops
// counting past MAX_DEPTH.
function nestingDepth(value) {
  let deepest = 0;
  const pending = [[value, 1]];
  while (pending.length > 0) {
    const [item, level] = pending.pop();
    if (item === null || typeof item !== 'object') continue;
    deepest = Math.max(deepest, level);
    if (deepest > MAX_DEPTH) return deepest;
    for (const child of Array.isArray(item) ? item : Object.values(item)) pending.push([child, level + 1]);
  }
  return deepest;
}

// The version reported by hello is the one in the library's package.json. For
// .../src/index.cjs, that file is one directory above the library's directory.
function libraryVersion(resolvedPath) {
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(path.dirname(resolvedPath), '..', 'package.json'), 'utf8'));
    if (typeof manifest.version === 'string') return manifest.version;
  } catch {
    // no package.json (or not readable or not JSON): fall through
  }
  return 'unknown';
}

let IMPLEMENTATION = null;

function main() {
  const given = process.argv[2] || process.env.TCC_JS;
  if (!given) {
    writeFd(2, 'usage: node adapter.cjs <path to the library, e.g. .../src/index.cjs>  (or set TCC_JS)\n');
    process.exit(2);
  }
  let resolved;
  try {
    resolved = require.resolve(path.resolve(given));
    Library = require(resolved);
  } catch (error) {
    writeFd(2, `adapter: cannot load the library from ${given}: ${describe(error)}\n`);
    process.exit(1);
  }
  if (!Library || typeof Library.ToolCallClosure !== 'function') {
    writeFd(2, `adapter: ${resolved} does not export a ToolCallClosure class\n`);
    process.exit(1);
  }
  IMPLEMENTATION = { name: 'tool-call-closure', language: 'javascript', version: libraryVersion(resolved) };

  for (const line of stdinLines()) {
    try {
      handleLine(line);
    } catch (error) {
      // Only a defect in this file gets here. Answer anyway, so the runner is not left waiting.
      respondError(null, 0, 'InternalError', `adapter failure: ${describe(error)}`);
    }
    if (finished) break;
  }
  // `bye` or end of input. Every response has already been written synchronously.
  process.exit(0);
}

main();
