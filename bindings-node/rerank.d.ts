/** `rerank.create`: Jina's and Cohere's rerank shape. */
export interface RerankCreateParams {
  model: string;
  query: string;
  /** Strings, or `{ text }` objects (Jina's and Cohere's v1 form). */
  documents: Array<string | { text: string }>;
  /** How many of the best results to return; default: all. */
  top_n?: number;
  /** Whether each result carries its document; default true. */
  return_documents?: boolean;
}

export interface RerankResult {
  /** Its place in `documents`. */
  index: number;
  /** An embedding model's cosine similarity (-1 to 1), or a reranking predictor's score. */
  relevance_score: number;
  document?: { text: string };
}

export interface RerankResponse {
  id: string;
  model: string;
  /** Most relevant first. */
  results: Array<RerankResult>;
  usage: { prompt_tokens: number; total_tokens: number };
}
