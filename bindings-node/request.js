'use strict';
// Checking arguments. Everything a caller can get wrong is found here, in JS, before any native
// work starts, and reported as an OpenAIError: a request's content as BadRequestError (status
// 400, `param` the field at fault, as the engine reports its own checks), a client or request
// option as OpenAIError, as the openai package reports its options.

const { OpenAIError, BadRequestError, APIUserAbortError } = require('./errors.js');

/** Longest `param` (and path quoted in a message), as in the core: a 1 MB key is not quoted whole. */
const MAX_PARAM_CHARS = 256;
/** Deepest nesting of objects and arrays in a request (JSON parsers stop near 128 levels). */
const MAX_DEPTH = 100;

function bounded(text) {
  if (text.length <= MAX_PARAM_CHARS) return text;
  const end = MAX_PARAM_CHARS - 32;
  return `${text.slice(0, end)}…(${text.length - end} more characters)`;
}

/** A caller's bad request: BadRequestError naming `param` (null: the request as a whole). */
function badRequest(param, message) {
  const shownParam = param === null ? null : bounded(param);
  const error = { message, type: 'invalid_request_error', param: shownParam, code: null };
  return new BadRequestError(400, error, message);
}

/** A bad client or request option (not part of the request itself), as openai reports those. */
function badOption(message) {
  return new OpenAIError(message);
}

/** What a value is, for an error message; never quotes caller text at length. */
function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'undefined': return 'undefined';
    case 'number': return `a number (${value})`;
    case 'bigint': return 'a BigInt';
    case 'boolean': return `a boolean (${value})`;
    case 'string': return 'a string';
    case 'symbol': return 'a symbol';
    case 'function': return 'a function';
    default: return 'an object';
  }
}

function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `param`'s JSON path one level down: `messages[0]`, `messages[0].content`. */
function childPath(path, key, inArray) {
  if (inArray) return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

/** `\uDC00` for a lone surrogate quoted in a path. */
function escapeUnit(unit) {
  return `\\u${unit.charCodeAt(0).toString(16).toUpperCase()}`;
}

function lonelySurrogate(text) {
  if (typeof text.isWellFormed === 'function') return !text.isWellFormed();
  return /\p{Surrogate}/u.test(text);
}

/** The JSON text of a request (or of prediction inputs), or BadRequestError naming the field
 * that JSON cannot carry faithfully. JSON.stringify alone would turn NaN and ±Infinity into
 * null (so `max_tokens: NaN` means "no limit"), drop functions and symbols silently, write
 * `undefined` in an array as null, Maps and Sets as `{}`, throw a bare TypeError on a BigInt
 * or a cycle, and overflow the stack on deep nesting. Paths are relative to the request body
 * (or to `inputs`, as the engine names them): `max_tokens`, `messages[0].content`, or start
 * at `root` (a predictor's output). */
function toJson(value, root = '') {
  // The objects being written, innermost last, and their paths: JSON.stringify calls `check`
  // depth-first with the object being written as `this`, so whatever lies above `this` on the
  // stack is finished.
  const open = [];
  const paths = [];
  const onStack = new Set();
  function check(key, v) {
    let path = '';
    if (open.length === 0) {
      open.push(this);
      paths.push(root);
      path = root;
    } else {
      while (open.length > 1 && open[open.length - 1] !== this) {
        onStack.delete(open.pop());
        paths.pop();
      }
      if (lonelySurrogate(key)) {
        path = childPath(paths[paths.length - 1], key.replace(/\p{Surrogate}/gu, escapeUnit), false);
        throw badRequest(path, `The field name \`${bounded(path)}\` contains a lone UTF-16 surrogate (half of a character); it cannot be encoded as UTF-8`);
      }
      path = childPath(paths[paths.length - 1], key, Array.isArray(this));
    }
    const name = path === '' ? 'The request' : `\`${bounded(path)}\``;
    let primitive = v;
    if (v instanceof Number) primitive = Number(v);
    else if (v instanceof String) primitive = String(v);
    switch (typeof primitive) {
      case 'number':
        if (!Number.isFinite(primitive)) {
          throw badRequest(path, `${name} must be a finite number, not ${primitive} (JSON has no ${primitive})`);
        }
        return v;
      case 'string':
        if (lonelySurrogate(primitive)) {
          throw badRequest(path, `${name} contains a lone UTF-16 surrogate (half of a character); it cannot be encoded as UTF-8`);
        }
        return v;
      case 'bigint':
        throw badRequest(path, `${name} must be a Number, not a BigInt`);
      case 'function':
      case 'symbol':
        throw badRequest(path, `${name} must be JSON data, not ${describe(primitive)}`);
      case 'undefined':
        // Absent in an object, as JSON.stringify and openai treat it; an array has no absent items.
        if (Array.isArray(this)) throw badRequest(path, `${name} is undefined; an array item must have a value`);
        return v;
      case 'object':
        if (v === null || v instanceof Boolean) return v;
        break;
      default:
        return v;
    }
    if (v instanceof BigInt) throw badRequest(path, `${name} must be a Number, not a BigInt`);
    if (v instanceof Map || v instanceof Set || v instanceof ArrayBuffer || ArrayBuffer.isView(v)) {
      const kind = v instanceof Map ? 'a Map' : v instanceof Set ? 'a Set' : 'a typed array or buffer';
      throw badRequest(path, `${name} must be a plain object, array or value, not ${kind} (JSON would write it as an object)`);
    }
    if (onStack.has(v)) throw badRequest(path, `${name} refers back to an object that contains it (a circular structure)`);
    if (open.length > MAX_DEPTH) throw badRequest(path, `${name} is nested more than ${MAX_DEPTH} levels deep`);
    open.push(v);
    paths.push(path);
    onStack.add(v);
    return v;
  }
  return JSON.stringify(value, check);
}

/** `body` itself, which must be an object (not null, not an array). */
function requestBody(body, method) {
  if (!isObject(body)) {
    throw badRequest(null, `${method}(body): the request body must be an object, not ${describe(body)}`);
  }
  return body;
}

function isAbortSignal(signal) {
  if (typeof AbortSignal === 'function' && signal instanceof AbortSignal) return true;
  // One from another realm or a polyfill (the openai package accepts those too).
  return typeof signal === 'object' && signal !== null && typeof signal.aborted === 'boolean' &&
    typeof signal.addEventListener === 'function' && typeof signal.removeEventListener === 'function';
}

/** A request's options (`{ signal }`; openai's other options are accepted and ignored). */
function requestOptions(options, method) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw badOption(`${method}(body, options): options must be an object, not ${describe(options)}`);
  }
  const { signal } = options;
  if (signal === undefined || signal === null) return {};
  if (!isAbortSignal(signal)) {
    throw badOption(`${method}(body, options): options.signal must be an AbortSignal, not ${describe(signal)}`);
  }
  return { signal };
}

/** A string argument such as a model id: BadRequestError naming it otherwise. */
function stringArgument(value, param, method) {
  if (typeof value !== 'string') {
    throw badRequest(param, `${method}: \`${param}\` must be a string, not ${describe(value)}`);
  }
  if (lonelySurrogate(value)) {
    throw badRequest(param, `${method}: \`${param}\` contains a lone UTF-16 surrogate (half of a character)`);
  }
  return value;
}

function checkSignal(signal) {
  if (signal && signal.aborted) throw new APIUserAbortError();
}

module.exports = {
  bounded, badRequest, badOption, describe, isObject, lonelySurrogate, toJson, requestBody,
  requestOptions, stringArgument, checkSignal,
};
