// The Responses API's types (`client.responses`), shaped so that they are assignable to the
// openai package's (test/types/check.ts checks it with tsc). index.d.ts re-exports them.

export interface ResponseInputText {
  type: 'input_text';
  text: string;
}

export interface ResponseOutputText {
  type: 'output_text';
  text: string;
  /** Always empty: ingle's models cite nothing. */
  annotations: Array<never>;
  logprobs?: Array<never>;
}

/** An assistant message of `output`. */
export interface ResponseOutputMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  status: 'in_progress' | 'completed' | 'incomplete';
  content: Array<ResponseOutputText>;
}

/** A call of one of `tools` the model made: `arguments` is JSON text. */
export interface ResponseFunctionToolCall {
  id: string;
  type: 'function_call';
  status: 'in_progress' | 'completed' | 'incomplete';
  call_id: string;
  name: string;
  arguments: string;
}

export type ResponseOutputItem = ResponseOutputMessage | ResponseFunctionToolCall;

/** A message of `input`: a string, or text parts (`input_text`; `output_text` in an assistant's). */
export interface ResponseInputMessageParam {
  type?: 'message';
  role: 'user' | 'assistant' | 'system' | 'developer';
  content: string | Array<ResponseInputText | { type: 'output_text'; text: string }>;
  id?: string;
  status?: 'in_progress' | 'completed' | 'incomplete';
}

export interface ResponseFunctionCallParam {
  type: 'function_call';
  call_id: string;
  name: string;
  arguments: string;
  id?: string;
  status?: 'in_progress' | 'completed' | 'incomplete';
}

export interface ResponseFunctionCallOutputParam {
  type: 'function_call_output';
  call_id: string;
  output: string | Array<ResponseInputText>;
  id?: string | null;
  status?: 'in_progress' | 'completed' | 'incomplete' | null;
}

export type ResponseInputItem = ResponseInputMessageParam | ResponseFunctionCallParam | ResponseFunctionCallOutputParam;

/** A function the model may call, in the Responses shape (not chat's nested `function`). */
export interface FunctionTool {
  type: 'function';
  name: string;
  description?: string | null;
  parameters: Record<string, unknown> | null;
  strict: boolean | null;
}

export type ResponseFormatTextConfig =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; description?: string; strict?: boolean | null };

export type ResponseToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; name: string };

export interface ResponseCreateParams {
  model: string;
  input: string | Array<ResponseInputItem>;
  instructions?: string | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  tools?: Array<FunctionTool | { type: 'function'; name: string; description?: string | null; parameters?: Record<string, unknown> | null; strict?: boolean | null }>;
  tool_choice?: ResponseToolChoice;
  parallel_tool_calls?: boolean | null;
  /** ingle's: a tool call may repeat one made earlier (docs/tools.md, "A turn"). */
  allow_repeated_tool_calls?: boolean | null;
  /** JSON output, enforced by a grammar as chat's `response_format`. */
  text?: { format?: ResponseFormatTextConfig | (ResponseFormatTextConfig & { $parseRaw?: unknown }) } | null;
  /** Default true: kept in the store (SQLite), so `previous_response_id` can continue it. */
  store?: boolean | null;
  previous_response_id?: string | null;
  metadata?: Record<string, string> | null;
  user?: string;
  stream?: boolean | null;
  /** Other OpenAI parameters are accepted by type; those ingle cannot honour are refused by name. */
  [parameter: string]: unknown;
}
export interface ResponseCreateParamsNonStreaming extends ResponseCreateParams {
  stream?: false | null;
}
export interface ResponseCreateParamsStreaming extends ResponseCreateParams {
  stream: true;
}

export interface ResponseUsage {
  input_tokens: number;
  /** `cached_tokens`: input tokens whose KV came from the prompt cache (a continued
   * conversation); `cache_write_tokens`: the others, whose KV was computed and cached. */
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** `object: 'response'`; `output_text` joins the text of every output message, as openai's client adds it. */
export interface Response {
  id: string;
  object: 'response';
  created_at: number;
  completed_at?: number | null;
  status: 'completed' | 'failed' | 'in_progress' | 'incomplete';
  /** Why it failed (`status: 'failed'`, the last event `response.failed`). */
  error: { code: 'server_error' | 'invalid_prompt'; message: string } | null;
  incomplete_details: { reason?: 'max_output_tokens' } | null;
  access_programs: null;
  background?: boolean | null;
  instructions: string | null;
  max_output_tokens?: number | null;
  metadata: Record<string, string> | null;
  model: string;
  output: Array<ResponseOutputItem>;
  output_text: string;
  parallel_tool_calls: boolean;
  previous_response_id?: string | null;
  store?: boolean;
  temperature: number | null;
  text?: { format?: ResponseFormatTextConfig; verbosity?: 'low' | 'medium' | 'high' | null };
  tool_choice: ResponseToolChoice;
  tools: Array<FunctionTool>;
  top_p: number | null;
  truncation?: 'auto' | 'disabled' | null;
  usage?: ResponseUsage;
  user?: string;
}

/** `responses.parse`: `output_parsed` is the output text read as JSON (null unless completed). */
export interface ParsedResponse<T> extends Response {
  output_parsed: T | null;
}

interface ResponseEventBase {
  /** 0, 1, 2, ... over the whole stream. */
  sequence_number: number;
}
export interface ResponseLifecycleEvent extends ResponseEventBase {
  type: 'response.created' | 'response.in_progress' | 'response.completed' | 'response.incomplete' | 'response.failed';
  response: Response;
}
export interface ResponseOutputItemEvent extends ResponseEventBase {
  type: 'response.output_item.added' | 'response.output_item.done';
  output_index: number;
  item: ResponseOutputItem;
}
export interface ResponseContentPartEvent extends ResponseEventBase {
  type: 'response.content_part.added' | 'response.content_part.done';
  item_id: string;
  output_index: number;
  content_index: number;
  part: ResponseOutputText;
}
export interface ResponseTextDeltaEvent extends ResponseEventBase {
  type: 'response.output_text.delta';
  item_id: string;
  output_index: number;
  content_index: number;
  delta: string;
  logprobs: Array<never>;
}
export interface ResponseTextDoneEvent extends ResponseEventBase {
  type: 'response.output_text.done';
  item_id: string;
  output_index: number;
  content_index: number;
  text: string;
  logprobs: Array<never>;
}
export interface ResponseFunctionCallArgumentsDeltaEvent extends ResponseEventBase {
  type: 'response.function_call_arguments.delta';
  item_id: string;
  output_index: number;
  delta: string;
}
export interface ResponseFunctionCallArgumentsDoneEvent extends ResponseEventBase {
  type: 'response.function_call_arguments.done';
  item_id: string;
  output_index: number;
  name: string;
  arguments: string;
}
/** One event of a streamed response, in OpenAI's order: `response.created`,
 * `response.in_progress`, per output item `response.output_item.added`, its content, and
 * `response.output_item.done`; last `response.completed` (or `.incomplete`, `.failed`). */
export type ResponseStreamEvent =
  | ResponseLifecycleEvent
  | ResponseOutputItemEvent
  | ResponseContentPartEvent
  | ResponseTextDeltaEvent
  | ResponseTextDoneEvent
  | ResponseFunctionCallArgumentsDeltaEvent
  | ResponseFunctionCallArgumentsDoneEvent;

/** `responses.stream(...)`: the events as an async iterable and through `on(type, listener)`. */
export declare class ResponseStream implements AsyncIterable<ResponseStreamEvent> {
  /** `controller.abort()` (or `abort()`) stops generation. */
  controller: AbortController;
  abort(): void;
  on<T extends ResponseStreamEvent['type']>(type: T, listener: (event: Extract<ResponseStreamEvent, { type: T }>) => void): this;
  on(type: 'event', listener: (event: ResponseStreamEvent) => void): this;
  on(type: 'end', listener: () => void): this;
  on(type: 'error', listener: (error: Error) => void): this;
  once(type: string, listener: (...args: any[]) => void): this;
  off(type: string, listener: (...args: any[]) => void): this;
  /** Resolves once the stream has ended. */
  done(): Promise<void>;
  /** The whole response (`response.completed`'s); a failed one rejects. */
  finalResponse(): Promise<Response>;
  [Symbol.asyncIterator](): AsyncIterator<ResponseStreamEvent>;
}

/** An item of a stored response's input, as `inputItems.list` gives it (ids on every one). */
export type ResponseItem =
  | { id: string; type: 'message'; role: 'user' | 'system' | 'developer'; status?: 'completed'; content: Array<ResponseInputText> }
  | ResponseOutputMessage
  | ResponseFunctionToolCall
  | { id: string; type: 'function_call_output'; status: 'completed'; call_id: string; output: string | Array<ResponseInputText> };

export interface ResponseItemList {
  object: 'list';
  data: Array<ResponseItem>;
  first_id: string;
  last_id: string;
  has_more: boolean;
}

