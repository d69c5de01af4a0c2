'use strict';
// The errors of the `openai` package, by the same names and shapes, and the conversion of the
// native addon's errors (an OpenAI error object in JSON) into them.

class OpenAIError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An error reported by the engine: `status` is the HTTP status the OpenAI API would answer
 * with, `error` the OpenAI error object, `param` the request field at fault. */
class APIError extends OpenAIError {
  constructor(status, error, message) {
    super(message);
    this.status = status;
    this.error = error;
    this.code = error ? error.code : undefined;
    this.param = error ? error.param : undefined;
    this.type = error ? error.type : undefined;
  }
}
class BadRequestError extends APIError {}
class NotFoundError extends APIError {}
class InternalServerError extends APIError {}
class APIUserAbortError extends APIError {
  constructor(message = 'Request was aborted.') {
    super(undefined, undefined, message);
  }
}

const ERROR_CLASSES = {
  invalid_request: BadRequestError,
  context_length_exceeded: BadRequestError,
  not_found: NotFoundError,
  cancelled: APIUserAbortError,
};

/** The native addon reports core errors as JSON in the message; make them openai-style. */
function convertError(err) {
  if (err instanceof OpenAIError) return err;
  let info;
  try {
    info = JSON.parse(err && err.message);
  } catch {
    info = null;
  }
  if (!info || info.ingle_error !== true) {
    // Not the core's: napi's own argument errors (StringExpected, ...). index.js checks every
    // argument before it reaches the addon, so this is a backstop: still an OpenAIError.
    if (err instanceof Error && typeof err.code === 'string') {
      return new OpenAIError(`ingle: ${err.message}`, { cause: err });
    }
    return err;
  }
  const Class = ERROR_CLASSES[info.kind] || InternalServerError;
  if (Class === APIUserAbortError) return new APIUserAbortError();
  const error = { message: info.message, type: info.type, param: info.param, code: info.code };
  return new Class(info.status, error, info.message);
}

async function call(fn) {
  try {
    return await fn();
  } catch (err) {
    throw convertError(err);
  }
}

function callSync(fn) {
  try {
    return fn();
  } catch (err) {
    throw convertError(err);
  }
}

module.exports = {
  OpenAIError, APIError, BadRequestError, NotFoundError, InternalServerError, APIUserAbortError,
  convertError, call, callSync,
};
