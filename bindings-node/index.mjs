// ESM entry: `import OpenAI from 'ingle'` or `import { OpenAI } from 'ingle'`.
import ingle from './index.js';

export default ingle;
export const {
  OpenAI,
  Anthropic,
  MessageStream,
  AnthropicError,
  Stream,
  ResponseStream,
  OpenAIError,
  APIError,
  BadRequestError,
  NotFoundError,
  InternalServerError,
  APIUserAbortError,
  version,
  systemInfo,
  Parameter,
  beta,
  predictor,
  PredictorDefinitionError,
  predictionSignal,
} = ingle;
