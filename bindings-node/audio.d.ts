// The audio types of the `ingle` package (speech, transcriptions, translations), in the shapes
// of the `openai` package's, so values can be assigned to them (test/types checks that with tsc).
// index.d.ts re-exports them.

/** The voices of the OpenAI API: each speaks with the model's voice the config gives it, else the
 * model's default voice. */
export type SpeechVoice =
  | 'alloy' | 'ash' | 'ballad' | 'coral' | 'echo' | 'fable' | 'onyx' | 'nova' | 'sage' | 'shimmer'
  | 'verse' | 'marin' | 'cedar';

export interface SpeechCreateParams {
  /** A speech model, e.g. `@local/piper-en-us-joe-medium`. */
  model: string;
  /** The text to speak: 1 to 4096 characters. */
  input: string;
  /** One of the model's voices (`joe`), or an OpenAI voice name. */
  voice: (string & {}) | SpeechVoice;
  /** Default `mp3`. `pcm` is 16-bit little-endian mono at 24 kHz, as OpenAI sends it. */
  response_format?: 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';
  /** 0.25 to 4.0; default 1.0. */
  speed?: number;
  /** `audio` (default): the body is the audio file. `sse`: server-sent events
   * (`speech.audio.delta` with base64 audio, then `speech.audio.done` with usage). */
  stream_format?: 'sse' | 'audio';
  /** Refused by models that cannot follow them (none can yet). */
  instructions?: string;
}

/** Raw audio for `file`: interleaved float32 samples (nominally -1 to 1) at `sample_rate` Hz
 * (1000 to 768000) with `channels` channels (default 1; averaged to mono). */
export interface RawAudio {
  samples: Float32Array;
  sample_rate: number;
  channels?: number;
}

/** `file` of `audio.transcriptions.create`: read whole before the work starts. A `File`,
 * `Blob`, fetch `Response`, `fs.createReadStream(path)`, a web `ReadableStream` or any async
 * iterable of byte chunks (Buffer, Uint8Array, ArrayBuffer, string or Blob), what openai's
 * `toFile()` / `toStreamingFile()` make, raw bytes (Buffer, Uint8Array, ArrayBuffer), or
 * {@link RawAudio}. The audio is wav, flac, mp3, ogg (vorbis, opus), webm or m4a; the file's
 * name (`name`, a Response's URL, a stream's `path`) is only a hint. */
export type AudioFile =
  | Blob
  | globalThis.Response
  | ReadableStream<unknown>
  | AsyncIterable<unknown>
  | { readonly data: AsyncIterable<unknown> | ReadableStream<unknown>; readonly name: string; readonly type?: string | undefined }
  | ArrayBuffer
  | ArrayBufferView
  | RawAudio;

/** `diarized_json` (gpt-4o-transcribe-diarize) is in the type, as in openai's, and rejected by
 * the engine naming `response_format`. */
export type AudioResponseFormat = 'json' | 'text' | 'srt' | 'verbose_json' | 'vtt' | 'diarized_json';

export interface TranscriptionCreateParamsBase<F extends AudioResponseFormat | undefined = AudioResponseFormat | undefined> {
  /** A transcription model, e.g. `@local/whisper-tiny-en` (English) or `@local/whisper-base`
   * (99 languages). */
  model: string;
  file: AudioFile;
  /** An ISO-639-1 code (`fr`) or an English name (`french`); an English-only (`.en`) model takes
   * `en` only. Left out, a multilingual model detects it from the first 30 s with speech. */
  language?: string;
  /** Text to guide the style, or the words before the audio. */
  prompt?: string;
  /** Default `json`. `text`, `srt` and `vtt` resolve to a string. */
  response_format?: F;
  /** 0 to 1: the first sampling temperature (raised while a window fails Whisper's checks). */
  temperature?: number;
  /** Needs `response_format: 'verbose_json'`. */
  timestamp_granularities?: Array<'word' | 'segment'>;
  stream?: boolean | null;
}
export interface TranscriptionCreateParamsNonStreaming<F extends AudioResponseFormat | undefined = AudioResponseFormat | undefined>
  extends TranscriptionCreateParamsBase<F> {
  stream?: false | null;
}
/** Streaming works with `response_format` `json` (default) or `text`. */
export interface TranscriptionCreateParamsStreaming extends TranscriptionCreateParamsBase {
  stream: true;
}
export type TranscriptionCreateParams = TranscriptionCreateParamsNonStreaming | TranscriptionCreateParamsStreaming;

export interface TranscriptionUsageDuration {
  /** Seconds of audio. */
  seconds: number;
  type: 'duration';
}

export interface Transcription {
  text: string;
  usage?: TranscriptionUsageDuration;
}

export interface TranscriptionSegment {
  id: number;
  avg_logprob: number;
  compression_ratio: number;
  end: number;
  no_speech_prob: number;
  seek: number;
  start: number;
  temperature: number;
  text: string;
  tokens: Array<number>;
}

export interface TranscriptionWord {
  end: number;
  start: number;
  word: string;
}

export interface TranscriptionVerbose {
  task: 'transcribe';
  duration: number;
  /** The English name of the audio's language: the one given, or the one detected
   * (`'french'`). */
  language: string;
  text: string;
  /** With `timestamp_granularities` absent or including `segment`. */
  segments?: Array<TranscriptionSegment>;
  /** With `timestamp_granularities` including `word`. */
  words?: Array<TranscriptionWord>;
  usage?: TranscriptionUsageDuration;
}

/** A segment's text, as soon as its 30 s window is decoded. */
export interface TranscriptionTextDeltaEvent {
  delta: string;
  type: 'transcript.text.delta';
}

/** The last event. Its usage is the audio's duration (openai's type has token usage here, as
 * gpt-4o-transcribe reports; Whisper reports seconds). */
export interface TranscriptionTextDoneEvent {
  text: string;
  type: 'transcript.text.done';
  usage?: TranscriptionUsageDuration;
}

export type TranscriptionStreamEvent = TranscriptionTextDeltaEvent | TranscriptionTextDoneEvent;

export interface TranslationCreateParams<F extends AudioResponseFormat | undefined = AudioResponseFormat | undefined> {
  /** A multilingual transcription model, e.g. `@local/whisper-base`. */
  model: string;
  file: AudioFile;
  /** ingle's: the audio's language (an ISO-639-1 code or an English name), when it is known:
   * detection is skipped. */
  language?: string;
  /** Text to guide the style (in English). */
  prompt?: string;
  /** Default `json`. `text`, `srt` and `vtt` resolve to a string. */
  response_format?: F;
  /** 0 to 1: the first sampling temperature. */
  temperature?: number;
  /** ingle's; needs `response_format: 'verbose_json'`. */
  timestamp_granularities?: Array<'word' | 'segment'>;
}

/** A translation (`json`): the English text alone, as openai's `Translation`. */
export interface Translation {
  text: string;
}

/** A translation as `verbose_json`: `language` is the output's (`'english'`). */
export interface TranslationVerbose {
  task: 'translate';
  duration: number;
  language: string;
  text: string;
  /** With `timestamp_granularities` absent or including `segment`. */
  segments?: Array<TranscriptionSegment>;
  /** ingle's: with `timestamp_granularities` including `word`. */
  words?: Array<TranscriptionWord>;
}
