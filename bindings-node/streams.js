'use strict';
// Streams and cancellation: the async-iterable Stream of chat and completions, the fetch Response
// body of speech, and the AbortSignal plumbing that stops native work when a caller gives up.

const { NativeCancel } = require('./native.js');
const { OpenAIError, APIUserAbortError, call } = require('./errors.js');
const {
  badRequest, describe, toJson, requestBody, requestOptions, checkSignal,
} = require('./request.js');

/** A response stream: `for await (const chunk of stream)`. `break`, `stream.controller.abort()`
 * or the request's `signal` stop generation at once. */
class Stream {
  constructor(start, signal, shape = null) {
    this.controller = new AbortController();
    this._start = start; // a Promise of the native stream
    this._signal = signal;
    this._shape = shape; // what each parsed item goes through (Responses: output_text)
    this._iterated = false;
    this.convertError = null; // what an engine error becomes (Anthropic's shape), if not itself
  }

  async *[Symbol.asyncIterator]() {
    if (this._iterated) throw new OpenAIError('Cannot iterate over a consumed stream');
    this._iterated = true;
    const native = await call(() => this._start);
    const signals = [this.controller.signal, this._signal].filter(Boolean);
    const onAbort = () => native.close();
    for (const s of signals) s.addEventListener('abort', onAbort);
    try {
      for (;;) {
        for (const s of signals) checkSignal(s);
        const text = await call(() => native.next()).catch((error) => {
          throw this.convertError ? this.convertError(error) : error;
        });
        for (const s of signals) checkSignal(s);
        if (text === null) return;
        const item = this._shape ? this._shape(JSON.parse(text)) : JSON.parse(text);
        if (item !== undefined) yield item; // a shape may leave an event out (Anthropic's ping)
      }
    } finally {
      native.close();
      for (const s of signals) s.removeEventListener('abort', onAbort);
    }
  }
}

/** Runs a whole-response create; aborting `signal` rejects at once with APIUserAbortError and
 * stops generation at the next token. */
async function abortable(start, signal) {
  checkSignal(signal);
  const cancel = new NativeCancel();
  const promise = call(() => start(cancel));
  if (!signal) return promise;
  let onAbort;
  const aborted = new Promise((_, reject) => {
    onAbort = () => {
      cancel.cancel();
      reject(new APIUserAbortError());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
  promise.catch(() => {}); // after an abort its rejection (cancelled) is expected
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** create() of chat.completions and completions: `stream: true` gives a Stream, otherwise
 * the whole response. `options.signal` aborts; openai's other request options (headers,
 * timeout, ...) are ignored. Every argument is checked before anything starts. */
async function create(method, startStream, createWhole, body, options, shape = null) {
  const { signal } = requestOptions(options, method);
  const { stream, ...params } = requestBody(body, method);
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    throw badRequest('stream', `\`stream\` must be a boolean, not ${describe(stream)}`);
  }
  const json = toJson(params);
  checkSignal(signal);
  if (stream) {
    const start = call(() => startStream(json));
    await start; // errors before the first chunk reject create() itself, as in openai
    return new Stream(start, signal, shape);
  }
  const whole = JSON.parse(await abortable((cancel) => createWhole(json, cancel), signal));
  return shape ? shape(whole) : whole;
}

/** Starts `start` (a Promise of a native stream); aborting `signal` meanwhile rejects at once
 * with APIUserAbortError, sets `cancel` (the NativeCancel the start was given, if any: the work
 * of the start stops), and the stream is closed when it arrives. */
async function abortableStart(start, signal, cancel = null) {
  if (!signal) return start;
  let onAbort;
  const aborted = new Promise((_, reject) => {
    onAbort = () => {
      if (cancel) cancel.cancel();
      start.then((native) => native.close(), () => {});
      reject(new APIUserAbortError());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([start, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** A fetch `Response` whose body streams the native speech: the bytes pulled at the start, then
 * one `next()` per read on the libuv thread pool (synthesis runs at most a sentence ahead of
 * the reader). Aborting `signal`, `body.cancel()` or the end of the audio closes the native
 * stream, which stops synthesis before the next sentence; an abort errors the body with
 * APIUserAbortError, a failure in a later sentence with the engine's error. */
function speechResponse(native, signal) {
  const first = native.takeFirst();
  let finished = false;
  let onAbort;
  const finish = () => {
    finished = true;
    native.close();
    if (signal) signal.removeEventListener('abort', onAbort);
  };
  const body = new ReadableStream({
    start(controller) {
      if (signal) {
        onAbort = () => {
          if (finished) return;
          finish();
          controller.error(new APIUserAbortError());
        };
        signal.addEventListener('abort', onAbort, { once: true });
      }
      if (first) controller.enqueue(first);
    },
    async pull(controller) {
      let chunk;
      try {
        chunk = await call(() => native.next());
      } catch (err) {
        if (!finished) {
          finish();
          controller.error(err);
        }
        return;
      }
      if (finished) return; // aborted while this sentence was synthesised
      if (chunk === null) {
        finish();
        controller.close();
      } else {
        controller.enqueue(chunk);
      }
    },
    cancel() {
      if (!finished) finish();
    },
  });
  return new Response(body, { status: 200, headers: { 'content-type': native.contentType } });
}

/** The base of the stream helpers (`responses.stream`, Anthropic's `messages.stream`): the events
 * of a Stream as an async iterable and as `on(type, listener)` ('end', 'error', and what the
 * subclass's `_handle(event)` emits); `abort()` (or `controller.abort()`, or `options.signal`)
 * stops generation; `done()` resolves when it has ended. */
class EventStream {
  constructor(start) {
    this.controller = new AbortController();
    this._listeners = new Map();
    this._queue = [];
    this._waiting = null;
    this._ended = false;
    this._error = null;
    this._final = null;
    this._iterated = false;
    this._catching = false; // whether someone awaits the stream's end
    this._done = this._pump(start);
    this._done.catch(() => {}); // reported by done(), the final result and the iteration
  }

  /** The stream's end, for someone who awaits it (its errors are theirs, then). */
  _awaited() {
    this._catching = true;
    return this._done;
  }

  /** What an event emits (the subclass's). */
  _handle(event) {
    this._emit(event.type, event);
  }

  async _pump(start) {
    try {
      const stream = await start;
      const onAbort = () => stream.controller.abort();
      this.controller.signal.addEventListener('abort', onAbort);
      if (this.controller.signal.aborted) onAbort(); // aborted while the stream was starting
      try {
        this._emit('connect');
        for await (const event of stream) {
          this._push({ event });
          this._handle(event);
        }
      } finally {
        this.controller.signal.removeEventListener('abort', onAbort);
      }
      if (this.controller.signal.aborted) throw new APIUserAbortError();
    } catch (error) {
      this._error = error;
      this._push({ error });
      // As the SDKs' streams: an abort is 'abort', a failure 'error'; with neither a listener
      // nor anyone awaiting the stream (done(), the final result, iteration), the error is
      // an unhandled rejection rather than lost.
      const type = error instanceof APIUserAbortError ? 'abort' : 'error';
      if (!this._catching && !(this._listeners.get(type) || []).length) Promise.reject(error);
      this._emit(type, error);
      throw error;
    } finally {
      this._ended = true;
      this._push(null);
      this._emit('end');
    }
  }

  _push(entry) {
    if (this._waiting) {
      const resolve = this._waiting;
      this._waiting = null;
      resolve(entry);
    } else {
      this._queue.push(entry);
    }
  }

  _emit(type, ...args) {
    for (const listener of [...(this._listeners.get(type) || [])]) {
      try {
        listener.fn(...args);
      } catch (error) {
        queueMicrotask(() => { throw error; }); // as an EventEmitter's listener would
      }
      if (listener.once) this.off(type, listener.fn);
    }
  }

  on(type, fn) {
    if (typeof fn !== 'function') throw new OpenAIError(`on(${type}, listener): the listener must be a function, not ${describe(fn)}`);
    if (!this._listeners.has(type)) this._listeners.set(type, []);
    this._listeners.get(type).push({ fn, once: false });
    return this;
  }

  once(type, fn) {
    this.on(type, fn);
    const list = this._listeners.get(type);
    list[list.length - 1].once = true;
    return this;
  }

  off(type, fn) {
    const list = this._listeners.get(type) || [];
    const at = list.findIndex((listener) => listener.fn === fn);
    if (at >= 0) list.splice(at, 1);
    return this;
  }

  abort() {
    this.controller.abort();
  }

  /** Resolves once the stream has ended (rejects with its error). */
  async done() {
    await this._awaited();
  }

  async *[Symbol.asyncIterator]() {
    this._catching = true;
    if (this._iterated) throw new OpenAIError('Cannot iterate over a consumed stream');
    this._iterated = true;
    try {
      for (;;) {
        const entry = this._queue.length
          ? this._queue.shift()
          : await new Promise((resolve) => { this._waiting = resolve; });
        if (entry === null) return;
        if (entry.error) throw entry.error;
        yield entry.event;
      }
    } finally {
      if (!this._ended) this.abort(); // `break`: stop generating
    }
  }
}

module.exports = { Stream, EventStream, abortable, create, abortableStart, speechResponse };
