// Types of `Anthropic`, ingle's in-process twin of the `@anthropic-ai/sdk` client's Messages API.
// The response types have the shapes of the SDK's (`Message`, `RawMessageStreamEvent`,
// `MessageTokensCount`), so values can be assigned to them; test/types checks that with tsc.
import type {
  ClientOptions, RequestOptions, Stream, OpenAIError, APIError, BadRequestError, NotFoundError,
  InternalServerError, APIUserAbortError,
} from './index';

export interface AnthropicTextBlock {
  type: 'text';
  text: string;
  citations: null;
}

/** The base of ingle's errors, by the SDK's name. */
export declare const AnthropicError: typeof OpenAIError;

export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}

export type AnthropicContentBlock = AnthropicTextBlock | AnthropicToolUseBlock;

export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

/** `input_tokens` leaves out the prompt tokens read from the prompt cache, which are
 * `cache_read_input_tokens` (their sum is the prompt), as Anthropic counts them. */
export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number | null;
  cache_creation_input_tokens: number | null;
}

export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: AnthropicContentBlock[];
  stop_reason: AnthropicStopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

export interface AnthropicMessageTokensCount {
  input_tokens: number;
}

export type AnthropicContentBlockParam =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content?: string | Array<{ type: 'text'; text: string }>; is_error?: boolean };

export interface AnthropicMessageParam {
  role: 'user' | 'assistant';
  content: string | AnthropicContentBlockParam[];
}

export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
  strict?: boolean;
}

export type AnthropicToolChoice =
  | { type: 'auto' | 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

export interface MessageCreateParamsBase {
  model: string;
  max_tokens: number;
  messages: AnthropicMessageParam[];
  system?: string | Array<{ type: 'text'; text: string }>;
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  metadata?: { user_id?: string | null };
  /** `{ format: { type: 'json_schema', schema } }`: the output follows the schema. */
  output_config?: { format?: { type: 'json_schema'; schema: Record<string, unknown> } | null };
  stream?: boolean;
}
export interface MessageCreateParamsNonStreaming extends MessageCreateParamsBase {
  stream?: false;
}
export interface MessageCreateParamsStreaming extends MessageCreateParamsBase {
  stream: true;
}
export type MessageCountTokensParams = Omit<MessageCreateParamsBase, 'max_tokens' | 'stream'> & { max_tokens?: number };

export type AnthropicRawMessageStreamEvent =
  | { type: 'message_start'; message: AnthropicMessage }
  | { type: 'content_block_start'; index: number; content_block: AnthropicContentBlock }
  | { type: 'content_block_delta'; index: number; delta: { type: 'text_delta'; text: string } | { type: 'input_json_delta'; partial_json: string } }
  | { type: 'content_block_stop'; index: number }
  | { type: 'message_delta'; delta: { stop_reason: AnthropicStopReason | null; stop_sequence: string | null }; usage: AnthropicUsage }
  | { type: 'message_stop' };

/** `messages.stream(...)`: the raw events (no `ping`), as an async iterable and as listeners,
 * as the SDK's MessageStream; `abort()` stops generation. */
export declare class MessageStream implements AsyncIterable<AnthropicRawMessageStreamEvent> {
  controller: AbortController;
  abort(): void;
  /** The message as the events so far make it. */
  readonly currentMessage: AnthropicMessage | null;
  on(type: 'text', listener: (delta: string, snapshot: string) => void): this;
  on(type: 'inputJson', listener: (partialJson: string, snapshot: unknown) => void): this;
  on(type: 'contentBlock', listener: (block: AnthropicContentBlock) => void): this;
  on(type: 'message' | 'finalMessage', listener: (message: AnthropicMessage) => void): this;
  on(type: 'streamEvent', listener: (event: AnthropicRawMessageStreamEvent, snapshot: AnthropicMessage) => void): this;
  on(type: 'connect' | 'end', listener: () => void): this;
  /** A failure; with neither an 'error' listener nor anyone awaiting the stream, an unhandled
   * rejection (as the SDK's). */
  on(type: 'error', listener: (error: Error) => void): this;
  /** `abort()`, `controller.abort()` or the request's `signal`. */
  on(type: 'abort', listener: (error: APIUserAbortError) => void): this;
  once(type: string, listener: (...args: any[]) => void): this;
  off(type: string, listener: (...args: any[]) => void): this;
  done(): Promise<void>;
  finalMessage(): Promise<AnthropicMessage>;
  /** The final message's text blocks, joined with a space (as the SDK's). */
  finalText(): Promise<string>;
  [Symbol.asyncIterator](): AsyncIterator<AnthropicRawMessageStreamEvent>;
}

/** The `@anthropic-ai/sdk` client's Messages API on the models of this process: every chat
 * model, your own chat predictors included. Errors are ingle's classes (named as the SDK's)
 * whose `error` is Anthropic's error object, `{ type: 'error', error: { type, message } }`. */
export declare class Anthropic {
  constructor(options?: ClientOptions);
  /** The SDK's error classes, ingle's of the same names (`err instanceof Anthropic.APIError`). */
  static AnthropicError: typeof OpenAIError;
  static APIError: typeof APIError;
  static BadRequestError: typeof BadRequestError;
  static NotFoundError: typeof NotFoundError;
  static InternalServerError: typeof InternalServerError;
  static APIUserAbortError: typeof APIUserAbortError;
  predictors: { register(...predictors: unknown[]): void };
  messages: {
    create(body: MessageCreateParamsNonStreaming, options?: RequestOptions | null): Promise<AnthropicMessage>;
    create(body: MessageCreateParamsStreaming, options?: RequestOptions | null): Promise<Stream<AnthropicRawMessageStreamEvent>>;
    create(body: MessageCreateParamsBase, options?: RequestOptions | null): Promise<AnthropicMessage | Stream<AnthropicRawMessageStreamEvent>>;
    stream(body: MessageCreateParamsBase, options?: RequestOptions | null): MessageStream;
    countTokens(body: MessageCountTokensParams, options?: RequestOptions | null): Promise<AnthropicMessageTokensCount>;
  };
}
