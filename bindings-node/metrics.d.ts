/** Durations in buckets, as `ingle serve`'s /metrics exports them. */
export interface MetricsHistogram {
  count: number;
  sum_seconds: number;
  /** `[le, cumulative count]` per bucket; `le` is null for +Inf. */
  buckets: Array<[number | null, number]>;
}

/** Load figures of a model (`client.metrics(model)`), counted since it loaded. */
export interface Metrics {
  active_requests: number;
  queued_requests: number;
  generated_tokens: number;
  /** Of `generated_tokens`, those a grammar forced (jump-forward decoding, docs/tools.md). */
  forced_tokens: number;
  /** Tokens proposed by speculative decoding (n-gram lookup, docs/speed.md), and of them those accepted. */
  draft_tokens: number;
  accepted_draft_tokens: number;
  prompt_tokens: number;
  cancelled_requests: number;
  /** KV-cache cells held by running sequences, and the cache's size (chat models; else 0). */
  kv_cells_used: number;
  kv_cells_total: number;
  audio_input_seconds: number;
  audio_output_seconds: number;
  /** Weights (plus a chat model's KV cache) in bytes; 0 when not known. */
  memory_bytes: number;
  queue_wait: MetricsHistogram;
  time_to_first_token: MetricsHistogram;
  time_per_output_token: MetricsHistogram;
}
