'use strict';
// `Anthropic`: the Messages API of the `@anthropic-ai/sdk` client in this process, on every chat
// model (users' predictors included): messages.create (whole or `stream: true`), the
// messages.stream() helper (its events, finalMessage(), finalText()), messages.countTokens().
// The core maps the request onto chat completions (core/src/anthropic); only conversion here.
// Errors are ingle's classes (named as the SDK's: BadRequestError, NotFoundError, ...) whose
// `error` is Anthropic's error object, `{ type: 'error', error: { type, message } }`.

const {
  OpenAIError, APIError, BadRequestError, NotFoundError, InternalServerError, APIUserAbortError,
} = require('./errors.js');
const { requestOptions, requestBody, badRequest, describe, isObject, toJson } = require('./request.js');
const { EventStream, abortable, create } = require('./streams.js');
const { openClient } = require('./client.js');

// Anthropic's error types by HTTP status (its API's table; the core's for the same errors).
const ERROR_TYPES = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error',
  404: 'not_found_error', 408: 'timeout_error', 413: 'request_too_large', 429: 'rate_limit_error',
  503: 'overloaded_error', 529: 'overloaded_error',
};
// The reverse, for an `error` event's type: its status (overloaded_error is Anthropic's 529).
const STATUSES = Object.fromEntries(Object.entries(ERROR_TYPES).filter(([status]) => status !== '503')
  .map(([status, type]) => [type, Number(status)]));

/** `error` (ingle's, OpenAI-shaped) with Anthropic's error object and type; its class is kept. */
function inAnthropicTerms(error) {
  if (error instanceof APIError && error.status !== undefined) {
    const type = ERROR_TYPES[error.status] || 'api_error';
    error.type = type;
    error.error = { type: 'error', error: { type, message: error.message } };
  }
  return error;
}

/** `fn`'s result, its error in Anthropic's terms; a Stream it gives converts its errors too. */
async function anthropicCall(fn) {
  let result;
  try {
    result = await fn();
  } catch (error) {
    throw inAnthropicTerms(error);
  }
  if (result && typeof result === 'object' && 'convertError' in result) result.convertError = inAnthropicTerms;
  return result;
}

/** Each raw event as the SDK gives it: `ping` left out, an `error` event (a failure after the
 * stream began) thrown as the SDK throws it. */
function rawEvent(event) {
  if (event.type === 'ping') return undefined;
  if (event.type === 'error') {
    const type = (event.error && event.error.type) || 'api_error';
    const message = (event.error && event.error.message) || 'The stream failed';
    const status = STATUSES[type] || 500;
    const Class = { 400: BadRequestError, 404: NotFoundError }[status] || InternalServerError;
    const error = new Class(status, event, message);
    error.type = type;
    throw error;
  }
  return event;
}

/** The stream's events made into the message (the SDK's accumulation), and what each emits. */
class MessageStream extends EventStream {
  constructor(start) {
    super(start);
    this._message = null;
    this._json = new Map();
  }

  /** The message as the events so far make it. */
  get currentMessage() {
    return this._message;
  }

  _handle(event) {
    const message = this._message;
    switch (event.type) {
      case 'message_start':
        this._message = structuredClone(event.message);
        break;
      case 'content_block_start':
        if (message) message.content.push(structuredClone(event.content_block));
        break;
      case 'content_block_delta': {
        const block = message && message.content[event.index];
        if (!block) break;
        if (event.delta.type === 'text_delta' && block.type === 'text') {
          block.text += event.delta.text;
        } else if (event.delta.type === 'input_json_delta' && block.type === 'tool_use') {
          const buffer = (this._json.get(event.index) || '') + event.delta.partial_json;
          this._json.set(event.index, buffer);
          try { // the input so far, once what has come parses (the SDK reads partial JSON)
            block.input = JSON.parse(buffer);
          } catch {
            // not yet a whole JSON value
          }
        }
        break;
      }
      case 'message_delta':
        if (!message) break;
        message.stop_reason = event.delta.stop_reason;
        message.stop_sequence = event.delta.stop_sequence;
        for (const [name, value] of Object.entries(event.usage || {})) {
          if (value !== null && value !== undefined) message.usage[name] = value;
        }
        break;
      default:
    }
    this._emit('streamEvent', event, this._message);
    if (event.type === 'content_block_delta' && this._message) {
      const block = this._message.content[event.index];
      if (event.delta.type === 'text_delta' && block && block.type === 'text') {
        this._emit('text', event.delta.text, block.text);
      } else if (event.delta.type === 'input_json_delta' && block && block.type === 'tool_use') {
        this._emit('inputJson', event.delta.partial_json, block.input);
      }
    } else if (event.type === 'content_block_stop' && this._message) {
      this._emit('contentBlock', this._message.content[event.index]);
    } else if (event.type === 'message_stop' && this._message) {
      this._emit('message', this._message);
      this._emit('finalMessage', this._message);
    }
  }

  /** The whole message, once the stream has ended. */
  async finalMessage() {
    await this._awaited();
    if (!this._message || this._message.stop_reason === null) {
      throw new OpenAIError('stream ended without producing a Message with role=assistant');
    }
    return this._message;
  }

  /** The text blocks of the final message, joined. */
  async finalText() {
    const message = await this.finalMessage();
    const texts = message.content.filter((block) => block.type === 'text').map((block) => block.text);
    if (texts.length === 0) {
      throw new OpenAIError('stream ended without producing a content block with type=text');
    }
    return texts.join(' ');
  }
}

function withoutStream(body, method) {
  if (!isObject(body)) throw badRequest(null, `${method}: the request must be an object, not ${describe(body)}`);
  const { stream, betas, ...params } = body; // betas: the SDK's beta header, nothing to turn on here
  return params;
}

class Messages {
  constructor(native) {
    this._native = native;
  }

  /** `body`: `model`, `max_tokens`, `messages` (text, `tool_use` and `tool_result` blocks),
   * `system`, `tools`, `tool_choice`, `stop_sequences`, `temperature`, `top_p`, `top_k`,
   * `metadata`, `output_config`, `stream`. `stream: true` gives a Stream of the raw events. */
  create(body, options) {
    const native = this._native;
    return anthropicCall(() => create('messages.create', (json) => native.stream('messages.stream', json),
      (json, cancel) => native.call('messages.create', json, cancel),
      isObject(body) ? (({ betas, ...rest }) => rest)(body) : body, options, rawEvent));
  }

  /** The events and the final message of `body` (as the SDK's `messages.stream`): iterate it,
   * or `on('text', (delta, snapshot) => ...)`, 'inputJson', 'contentBlock', 'message',
   * 'streamEvent', 'end', 'error'; then `finalMessage()` / `finalText()`. */
  stream(body, options) {
    const native = this._native;
    const start = anthropicCall(async () => {
      const { signal } = requestOptions(options, 'messages.stream');
      const params = { ...withoutStream(body, 'messages.stream'), stream: true };
      return create('messages.stream', (json) => native.stream('messages.stream', json), null, params, { signal }, rawEvent);
    });
    return new MessageStream(start);
  }

  /** How many input tokens `create(body)` would take, read by the model itself:
   * `{ input_tokens }`. */
  async countTokens(body, options) {
    return JSON.parse(await anthropicCall(() => {
      const { signal } = requestOptions(options, 'messages.countTokens');
      const json = toJson(requestBody(withoutStream(body, 'messages.countTokens'), 'messages.countTokens'));
      return abortable((cancel) => this._native.call('messages.count_tokens', json, cancel), signal);
    }));
  }
}

/** The `@anthropic-ai/sdk` client's Messages API on the models of this process. Options as
 * `new OpenAI(options)`'s (`config`, `modelsDir`, `predictors`); the SDK's own (apiKey,
 * baseURL, ...) are accepted and ignored, so existing code runs unchanged. */
class Anthropic {
  constructor(options = {}) {
    openClient(this, options, 'Anthropic');
    this.messages = new Messages(this._native);
  }
}

// The SDK's error classes as statics (`err instanceof Anthropic.APIError`): ingle's, of the
// same names; `AnthropicError` is the base of them all.
Object.assign(Anthropic, {
  AnthropicError: OpenAIError, APIError, BadRequestError, NotFoundError, InternalServerError, APIUserAbortError,
});

module.exports = { Anthropic, MessageStream };
