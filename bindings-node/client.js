'use strict';
// What `new OpenAI(options)` and `new Anthropic(options)` share: the engine's client, opened from
// the options (`config`, `modelsDir`, `predictors`), every option checked first.

const { NativeClient } = require('./native.js');
const { register } = require('./predictors.js');
const { callSync } = require('./errors.js');
const { badOption, describe, isObject, lonelySurrogate, toJson } = require('./request.js');

/** Gives `client` (a new `className`) its `_native` engine client and `predictors`. The other
 * options of the official clients (apiKey, baseURL, timeout, ...) are accepted and ignored. */
function openClient(client, options, className) {
  const where = `new ${className}(options)`;
  if (!isObject(options)) throw badOption(`${where}: options must be an object, not ${describe(options)}`);
  let { config = null, modelsDir = null } = options;
  // The config itself, as an object: JSON for the engine (a string is a path or TOML text).
  if (isObject(config)) {
    try {
      config = toJson(config, 'config');
    } catch (e) {
      throw badOption(`${where}: options.config cannot be written as JSON (${e.message})`);
    }
  }
  for (const [name, value] of [['config', config], ['modelsDir', modelsDir]]) {
    if (value !== null && typeof value !== 'string') {
      throw badOption(`${where}: options.${name} must be a path string, not ${describe(value)}${name === 'config' ? ' (or TOML text, or an object)' : ''}`);
    }
    if (typeof value === 'string' && lonelySurrogate(value)) {
      throw badOption(`${where}: options.${name} contains a lone UTF-16 surrogate (half of a character)`);
    }
  }
  const native = callSync(() => new NativeClient(config, modelsDir));
  client._native = native;
  /** Serve functions of your own: `client.predictors.register(predictor({ tag, ... }, fn))`. */
  client.predictors = {
    register(...predictors) {
      for (const p of predictors) register(native, p);
    },
  };
  const { predictors = [] } = options;
  if (!Array.isArray(predictors)) throw badOption(`${where}: options.predictors must be an array, not ${describe(predictors)}`);
  client.predictors.register(...predictors);
}

module.exports = { openClient };
