/** What `systemInfo()` says ingle runs with here. */
export interface SystemInfo {
  version: string;
  /** The CPU variant of llama.cpp's kernels in use: `zen4`, `icelake`, `haswell`... */
  cpu_variant: string;
  /** `best` (the highest-scoring variant this CPU runs) or `INGLE_CPU_VARIANT`. */
  cpu_variant_chosen_by: string;
  /** Every variant considered, with its score here (0: this CPU cannot run it). */
  cpu_variants: Record<string, number>;
  cpu_variants_excluded: Record<string, string>;
  cpu_features: string;
  cpu_backend_path: string;
  default_threads: number;
  /** The GPU modules loaded and skipped (with why), and the GPUs they found. */
  gpu: {
    /** `INGLE_DEVICE`: `auto`, `cpu`, `vulkan` or `cuda`. */
    requested: string;
    /** [backend, module path] */
    loaded: [string, string][];
    /** [backend, why] */
    skipped: [string, string][];
    devices: {
      name: string;
      description: string;
      backend: string;
      memory_total: number;
      memory_free: number;
    }[];
  };
  /** Where each chat model loaded so far runs. */
  offloads: {
    model: string;
    /** The GPU (`Vulkan0`, `CUDA0`), or null on the CPU. */
    device: string | null;
    layers: number;
    layers_total: number;
    /** `fit`, `n_gpu_layers`, `device` or `no GPU`. */
    chosen_by: string;
  }[];
  /** Where the ONNX models (embeddings, speech, transcription) run (before one is loaded:
   * where they would, with the default ONNX Runtime). */
  onnx: {
    /** The ONNX Runtime library loaded. */
    library: string;
    /** `cuda`, `cpu`, or `none` (`INGLE_DEVICE=cuda` and CUDA cannot be used). */
    execution_provider: string;
    /** Why not CUDA (empty on CUDA). */
    why: string;
  };
}
