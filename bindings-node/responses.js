'use strict';
// client.responses: OpenAI's Responses API in process, over the chat models (the core maps it
// onto chat): create (whole or `stream: true`), the stream() helper with finalResponse(),
// parse(), and the stored responses: retrieve, delete, inputItems.list.

const {
  OpenAIError, InternalServerError, BadRequestError, call,
} = require('./errors.js');
const {
  requestOptions, requestBody, stringArgument, badRequest, describe, isObject, toJson,
} = require('./request.js');
const { EventStream, abortable, create } = require('./streams.js');

/** `output_text` on a response, as openai's client adds it: the text of every output message. */
function withOutputText(response) {
  if (!isObject(response) || response.object !== 'response') return response;
  const texts = [];
  for (const item of response.output || []) {
    if (item.type !== 'message') continue;
    for (const part of item.content || []) if (part.type === 'output_text') texts.push(part.text);
  }
  response.output_text = texts.join('');
  return response;
}

/** A whole response, or a stream event's `response`, given `output_text`. */
function shapeEvent(event) {
  if (isObject(event) && event.object === 'response') return withOutputText(event);
  if (isObject(event) && event.response) withOutputText(event.response);
  return event;
}

/** `output_parsed` of a response whose `text.format` asked for JSON: the text parsed, through
 * the format's own parser when it has one (openai's zodTextFormat), else JSON.parse. */
function parsed(response, format) {
  if (!format || (format.type !== 'json_schema' && format.type !== 'json_object')) {
    response.output_parsed = null;
    return response;
  }
  const parse = typeof format.$parseRaw === 'function' ? format.$parseRaw : JSON.parse;
  for (const item of response.output) {
    if (item.type !== 'message') continue;
    for (const part of item.content) {
      if (part.type === 'output_text') part.parsed = parse(part.text);
    }
  }
  response.output_parsed = response.status === 'completed' ? parse(response.output_text) : null;
  return response;
}

/** `client.responses.stream(...)`: the events, as an async iterable and as `on(type, listener)`
 * ('event' for every one, 'end', 'error'); `finalResponse()` resolves to the last response;
 * `abort()` (or `controller.abort()`, or `options.signal`) stops generation. */
class ResponseStream extends EventStream {
  _handle(event) {
    if (event.response) this._final = event.response;
    this._emit('event', event);
    this._emit(event.type, event);
  }

  /** The whole response: `response.completed`'s (or `.incomplete`'s). A failed one rejects. */
  async finalResponse() {
    await this._awaited();
    if (!this._final || this._final.status === 'in_progress') {
      throw new OpenAIError('The stream ended without a response.completed event');
    }
    if (this._final.status === 'failed') {
      // The error create() would have rejected with.
      const { code, message } = this._final.error || { code: 'server_error', message: 'The response failed' };
      const error = { message, type: code === 'invalid_prompt' ? 'invalid_request_error' : 'server_error', param: null, code };
      throw code === 'invalid_prompt' ? new BadRequestError(400, error, message) : new InternalServerError(500, error, message);
    }
    return this._final;
  }
}

class InputItems {
  constructor(native) {
    this._native = native;
  }

  /** The input items of a stored response, a page at a time as openai's CursorPage: awaitable
   * (`{object: 'list', data, first_id, last_id, has_more}`) and async-iterable over every item
   * (`for await (const item of client.responses.inputItems.list(id))`). `query`: `after`,
   * `limit` (1 to 100, default 20), `order` ('desc', the default, or 'asc'). */
  list(responseId, query = {}) {
    const page = (async () => {
      stringArgument(responseId, 'response_id', 'responses.inputItems.list(responseId, query)');
      if (!isObject(query)) throw badRequest(null, `responses.inputItems.list: query must be an object, not ${describe(query)}`);
      return this._page(responseId, query);
    })();
    const self = this;
    page[Symbol.asyncIterator] = async function* iterate() {
      let current = await page;
      for (;;) {
        yield* current.data;
        if (!current.has_more || current.data.length === 0) return;
        current = await self._page(responseId, { ...query, after: current.last_id });
      }
    };
    return page;
  }

  async _page(responseId, { after = null, limit = null, order = null }) {
    for (const [name, value, kind] of [['after', after, 'string'], ['order', order, 'string'], ['limit', limit, 'number']]) {
      if (value !== null && value !== undefined && typeof value !== kind) {
        throw badRequest(name, `\`${name}\` must be a ${kind}, not ${describe(value)}`);
      }
    }
    if (limit !== null && limit !== undefined && !Number.isInteger(limit)) {
      throw badRequest('limit', `\`limit\` must be an integer, not ${limit}`);
    }
    const request = toJson({ response_id: responseId, after, limit, order });
    return JSON.parse(await call(() => this._native.call('responses.input_items.list', request)));
  }
}

class InputTokens {
  constructor(native) {
    this._native = native;
  }

  /** How many input tokens `create(body)` would take (instructions, tools and the conversation
   * of `previous_response_id` included), read by the model itself:
   * `{ object: 'response.input_tokens', input_tokens }`. */
  async count(body, options) {
    const { signal } = requestOptions(options, 'responses.inputTokens.count');
    const json = toJson(requestBody(body, 'responses.inputTokens.count'));
    return JSON.parse(await abortable((cancel) => this._native.call('responses.input_tokens', json, cancel), signal));
  }
}

class Responses {
  constructor(native) {
    this._native = native;
    this.inputItems = new InputItems(native);
    this.inputTokens = new InputTokens(native);
  }

  /** `body`: `model`, `input` (a string or items), `instructions`, `tools`, `tool_choice`,
   * `text.format`, `max_output_tokens`, `previous_response_id`, `store`, `metadata`,
   * `temperature`, `top_p`, `stream`. `stream: true` gives a Stream of the events. */
  create(body, options) {
    const native = this._native;
    return create('responses.create', (json) => native.stream('responses.stream', json),
      (json, cancel) => native.call('responses.create', json, cancel), body, options, shapeEvent);
  }

  /** The events and the final response of `body` (as openai's `responses.stream`). */
  stream(body, options) {
    const native = this._native;
    const start = (async () => {
      const { signal } = requestOptions(options, 'responses.stream');
      const params = { ...(isObject(body) ? body : {}), stream: true };
      if (!isObject(body)) throw badRequest(null, `responses.stream: the request must be an object, not ${describe(body)}`);
      return create('responses.stream', (json) => native.stream('responses.stream', json), null, params, { signal }, shapeEvent);
    })();
    return new ResponseStream(start);
  }

  /** A whole response with `output_parsed` (and each text part's `parsed`): the output text
   * read as JSON when `text.format` is `json_schema` or `json_object`, through the format's
   * own parser when it has one (openai's `zodTextFormat`). */
  async parse(body, options) {
    const format = isObject(body) && isObject(body.text) ? body.text.format : null;
    let request = body;
    if (isObject(format) && typeof format.$parseRaw === 'function') {
      const { $parseRaw, $brand, ...plain } = format; // the helper's functions are not JSON
      request = { ...body, text: { ...body.text, format: plain } };
    }
    return parsed(await this.create(request, options), format);
  }

  /** A stored response, by id. */
  async retrieve(responseId) {
    stringArgument(responseId, 'response_id', 'responses.retrieve(responseId)');
    return withOutputText(JSON.parse(await call(() => this._native.call('responses.retrieve', toJson({ response_id: responseId })))));
  }

  /** Forgets a stored response. Resolves to nothing, as openai's. */
  async delete(responseId) {
    stringArgument(responseId, 'response_id', 'responses.delete(responseId)');
    await call(() => this._native.call('responses.delete', toJson({ response_id: responseId })));
  }
}

module.exports = { Responses, ResponseStream };
