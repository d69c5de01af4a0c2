/** `tokenize` and `detokenize`: a text model's own tokenizer, as llama.cpp's server has it. */
export interface TokenizeParams {
  /** A llama.cpp text model; default: the default chat model (as llama.cpp's server). */
  model?: string;
  content: string;
  /** Add what the model puts around a prompt (BOS); default false. */
  add_special?: boolean;
  /** Read special tokens written in the text (`<|im_start|>`) as such; default true. */
  parse_special?: boolean;
  /** Give each token with its piece; default false. */
  with_pieces?: boolean;
}

export interface TokenPiece {
  id: number;
  /** The token's text, or its bytes where they are not UTF-8 on their own. */
  piece: string | number[];
}

export interface TokenizeResponse<P extends boolean = boolean> {
  tokens: P extends true ? TokenPiece[] : number[];
}

export interface DetokenizeParams {
  /** As `TokenizeParams.model`. */
  model?: string;
  /** Token ids, each in the model's vocabulary. */
  tokens: number[];
}

export interface DetokenizeResponse {
  content: string;
}
