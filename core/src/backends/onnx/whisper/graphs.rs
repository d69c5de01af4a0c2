//! Whisper's encoder and decoder as ONNX graphs, built from CTranslate2 weights at load.
//!
//! - encoder: `mel` [1, n_mels, 3000] → `cross_k{i}` [1, H, Dh, 1500] (already transposed for
//!   the score product) and `cross_v{i}` [1, H, 1500, Dh] for every decoder layer: the
//!   cross-attention keys and values are computed once per 30-second window, not per token.
//! - decoder: `tokens` [1, n], `positions` [k] (which of the n positions need logits),
//!   `past_k{i}`/`past_v{i}` [1, H, P, Dh] (the self-attention KV cache; P may be 0) and the
//!   encoder's cross K/V → `logits` [1, k, vocab], `present_k{i}`/`present_v{i}` [1, H, P+n, Dh]
//!   and `alignment` [heads, n, 1500]: the raw cross-attention scores of the alignment heads,
//!   which word timestamps are read from.
//!
//! Queries are pre-scaled by 1/sqrt(Dh) (Whisper scales q and k by Dh^-1/4 each: the same
//! product). Linear layers can be int8 (per-output-channel scales, activations quantised on
//! the fly by ONNX Runtime's DynamicQuantizeMatMul) where that pays: see docs/architecture.md.

use super::ct2::{Ct2Model, Variable};
use super::onnx_proto::{Attr, Dim, Graph, FLOAT, INT64, UINT8};
use crate::error::ErrorCode;
use crate::error::{Error, Result};

/// The sizes of a Whisper model, read from its weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub n_mels: usize,
    pub n_audio_ctx: usize,
    pub d_model: usize,
    pub heads: usize,
    pub encoder_layers: usize,
    pub decoder_layers: usize,
    pub vocab: usize,
    pub n_text_ctx: usize,
}

impl Dims {
    pub fn read(model: &Ct2Model) -> Result<Self> {
        let conv1 = model.get("encoder/conv1/weight", &[None, None, Some(3)])?;
        let (d_model, n_mels) = (conv1.dims[0], conv1.dims[1]);
        let heads = model.scalar("encoder/num_heads")? as usize;
        if heads == 0 || d_model % heads != 0 {
            return Err(Error::model(format!(
                "The Whisper model.bin has {heads} heads for width {d_model}"
            ))
            .with_code(ErrorCode::ModelFileInvalid));
        }
        let count = |prefix: &str| {
            (0..)
                .take_while(|i| {
                    model
                        .variables
                        .contains_key(&format!("{prefix}/layer_{i}/ffn/linear_0/weight"))
                })
                .count()
        };
        let encoder_positions = model.get(
            "encoder/position_encodings/encodings",
            &[None, Some(d_model)],
        )?;
        let embeddings = model.get("decoder/embeddings/weight", &[None, Some(d_model)])?;
        let decoder_positions = model.get(
            "decoder/position_encodings/encodings",
            &[None, Some(d_model)],
        )?;
        Ok(Dims {
            n_mels,
            n_audio_ctx: encoder_positions.dims[0],
            d_model,
            heads,
            encoder_layers: count("encoder"),
            decoder_layers: count("decoder"),
            vocab: embeddings.dims[0],
            n_text_ctx: decoder_positions.dims[0],
        })
    }

    pub fn head_dim(&self) -> usize {
        self.d_model / self.heads
    }
}

/// How linear layers are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    Float32,
    /// int8 weights with one scale per output channel; activations quantised per run.
    Int8,
}

struct Builder<'m> {
    g: Graph,
    model: &'m Ct2Model,
    dims: Dims,
    precision: Precision,
    /// int8 activations get one scale per row (per frame), as CTranslate2 quantises them, not
    /// one for the whole matrix: the encoder's 1500 frames span a range too wide for one
    /// scale (base heard French as "Marie-Échamie-Tappari" for "Marie et j'habite à Paris").
    /// A decoder step is one row, where both are the same.
    per_row: bool,
}

impl<'m> Builder<'m> {
    fn var(&self, name: &str) -> Result<&'m Variable> {
        self.model.variables.get(name).ok_or_else(|| {
            Error::model(format!("The Whisper model.bin has no variable `{name}`"))
                .with_code(ErrorCode::ModelFileInvalid)
        })
    }

    /// `x · Wᵀ + b` for the CTranslate2 weight `prefix/weight` [out, in], rows `rows` of it
    /// (a fused QKV is split this way), times `scale`.
    fn linear_rows(
        &mut self,
        x: &str,
        prefix: &str,
        rows: std::ops::Range<usize>,
        scale: f32,
        with_bias: bool,
    ) -> Result<String> {
        let weight = self.var(&format!("{prefix}/weight"))?;
        let (out_all, inputs) = (weight.dims[0], weight.dims[1]);
        if rows.end > out_all || weight.dims.len() != 2 {
            return Err(Error::model(format!(
                "The Whisper weight {prefix}/weight has shape {:?}",
                weight.dims
            ))
            .with_code(ErrorCode::ModelFileInvalid));
        }
        let outputs = rows.len();
        let bias: Option<Vec<f32>> = if with_bias {
            let b = self.var(&format!("{prefix}/bias"))?;
            Some(b.values[rows.clone()].iter().map(|v| v * scale).collect())
        } else {
            None
        };
        // [in, out], transposed from CTranslate2's [out, in].
        let mut transposed = vec![0f32; inputs * outputs];
        for (o, row) in rows.clone().enumerate() {
            let source = &weight.values[row * inputs..(row + 1) * inputs];
            for (i, v) in source.iter().enumerate() {
                transposed[i * outputs + o] = v * scale;
            }
        }
        let bias_name = bias.map(|b| self.g.f32s("b", &[outputs], &b));
        match self.precision {
            Precision::Float32 => {
                let w = self.g.f32s("w", &[inputs, outputs], &transposed);
                let y = self.g.op("MatMul", &[x, &w], &[]);
                Ok(match bias_name {
                    Some(b) => self.g.op("Add", &[&y, &b], &[]),
                    None => y,
                })
            }
            Precision::Int8 => {
                let levels = weight_levels();
                let mut scales = vec![0f32; outputs];
                for (o, s) in scales.iter_mut().enumerate() {
                    let peak = (0..inputs)
                        .map(|i| transposed[i * outputs + o].abs())
                        .fold(0f32, f32::max);
                    *s = if peak > 0.0 { peak / levels } else { 1.0 };
                }
                let quantised: Vec<i8> = transposed
                    .iter()
                    .enumerate()
                    .map(|(k, v)| (v / scales[k % outputs]).round().clamp(-levels, levels) as i8)
                    .collect();
                let w = self.g.i8s("w", &[inputs, outputs], &quantised);
                let s = self.g.f32s("s", &[outputs], &scales);
                if self.per_row {
                    return Ok(self.per_row_int8(x, &w, &s, bias_name.as_deref()));
                }
                let zero: Vec<i8> = vec![0; outputs];
                let z = self.g.i8s("z", &[outputs], &zero);
                let mut ins: Vec<&str> = vec![x, &w, &s, &z];
                if let Some(b) = &bias_name {
                    ins.push(b);
                }
                Ok(self
                    .g
                    .node_in("com.microsoft", "DynamicQuantizeMatMul", &ins, 1, &[])
                    .remove(0))
            }
        }
    }

    /// `x · W` with `x` quantised row by row (symmetric, scale = row max / 127), `W` int8
    /// [in, out] with per-column `scales`: MatMulInteger, then both scales, then the bias. The
    /// activations go in as uint8 with zero point 128 (the same values): MLAS's fast kernels are
    /// uint8 × int8 (int8 × int8 took 1.5× as long on base).
    fn per_row_int8(&mut self, x: &str, w: &str, scales: &str, bias: Option<&str>) -> String {
        let g = &mut self.g;
        let magnitude = g.op("Abs", &[x], &[]);
        let last = g.ints(&[-1]);
        let peak = g.op(
            "ReduceMax",
            &[&magnitude, &last],
            &[Attr::Int("keepdims", 1)],
        );
        let tiny = g.scalar(1e-12);
        let peak = g.op("Max", &[&peak, &tiny], &[]);
        let per_step = g.scalar(127.0);
        let row_scale = g.op("Div", &[&peak, &per_step], &[]);
        let scaled = g.op("Div", &[x, &row_scale], &[]);
        let rounded = g.op("Round", &[&scaled], &[]);
        let offset = g.scalar(128.0);
        let shifted = g.op("Add", &[&rounded, &offset], &[]);
        let q = g.op("Cast", &[&shifted], &[Attr::Int("to", UINT8)]);
        let zero_x = g.u8s("zx", &[], &[128]);
        let zero_w = g.i8s("zw", &[], &[0]);
        let product = g.op("MatMulInteger", &[&q, w, &zero_x, &zero_w], &[]);
        let product = g.op("Cast", &[&product], &[Attr::Int("to", FLOAT)]);
        let y = g.op("Mul", &[&product, &row_scale], &[]);
        let y = g.op("Mul", &[&y, scales], &[]);
        match bias {
            Some(b) => g.op("Add", &[&y, b], &[]),
            None => y,
        }
    }

    fn linear(&mut self, x: &str, prefix: &str) -> Result<String> {
        let rows = self.var(&format!("{prefix}/weight"))?.dims[0];
        self.linear_rows(x, prefix, 0..rows, 1.0, true)
    }

    fn layer_norm(&mut self, x: &str, prefix: &str) -> Result<String> {
        let gamma = self.var(&format!("{prefix}/gamma"))?;
        let beta = self.var(&format!("{prefix}/beta"))?;
        let g = self.g.f32s("gamma", &[gamma.values.len()], &gamma.values);
        let b = self.g.f32s("beta", &[beta.values.len()], &beta.values);
        Ok(self.g.op(
            "LayerNormalization",
            &[x, &g, &b],
            &[Attr::Int("axis", -1), Attr::Float("epsilon", 1e-5)],
        ))
    }

    fn gelu(&mut self, x: &str) -> String {
        self.g.op("Gelu", &[x], &[])
    }

    /// [1, T, D] → [1, H, T, Dh], or [1, H, Dh, T] when `transposed` (keys).
    fn heads(&mut self, x: &str, transposed: bool) -> String {
        let shape = self
            .g
            .ints(&[0, -1, self.dims.heads as i64, self.dims.head_dim() as i64]);
        let r = self.g.op("Reshape", &[x, &shape], &[]);
        let perm: &[i64] = if transposed {
            &[0, 2, 3, 1]
        } else {
            &[0, 2, 1, 3]
        };
        self.g.op("Transpose", &[&r], &[Attr::Ints("perm", perm)])
    }

    /// [1, H, T, Dh] → [1, T, D].
    fn merge_heads(&mut self, x: &str) -> String {
        let t = self
            .g
            .op("Transpose", &[x], &[Attr::Ints("perm", &[0, 2, 1, 3])]);
        let shape = self.g.ints(&[0, -1, self.dims.d_model as i64]);
        self.g.op("Reshape", &[&t, &shape], &[])
    }

    /// softmax(q · kᵀ [+ mask]) · v with kᵀ given as [1, H, Dh, S]; also the raw scores.
    fn attend(&mut self, q: &str, k_t: &str, v: &str, mask: Option<&str>) -> (String, String) {
        let scores = self.g.op("MatMul", &[q, k_t], &[]);
        let masked = match mask {
            Some(m) => self.g.op("Add", &[&scores, m], &[]),
            None => scores.clone(),
        };
        let p = self.g.op("Softmax", &[&masked], &[Attr::Int("axis", -1)]);
        let out = self.g.op("MatMul", &[&p, v], &[]);
        (self.merge_heads(&out), scores)
    }

    fn ffn(&mut self, x: &str, prefix: &str) -> Result<String> {
        let h = self.layer_norm(x, &format!("{prefix}/ffn/layer_norm"))?;
        let h = self.linear(&h, &format!("{prefix}/ffn/linear_0"))?;
        let h = self.gelu(&h);
        let h = self.linear(&h, &format!("{prefix}/ffn/linear_1"))?;
        Ok(self.g.op("Add", &[x, &h], &[]))
    }

    fn query_scale(&self) -> f32 {
        1.0 / (self.dims.head_dim() as f32).sqrt()
    }
}

/// The encoder graph (see the module docs).
pub fn encoder(model: &Ct2Model, dims: Dims, precision: Precision) -> Result<Vec<u8>> {
    let mut b = Builder {
        g: Graph::default(),
        model,
        dims,
        precision,
        per_row: true,
    };
    let frames = 2 * dims.n_audio_ctx;
    b.g.input(
        "mel",
        FLOAT,
        &[Dim::Fixed(1), Dim::Fixed(dims.n_mels), Dim::Fixed(frames)],
    );
    let mut x = "mel".to_string();
    for (conv, stride) in [("conv1", 1), ("conv2", 2)] {
        let w = b.var(&format!("encoder/{conv}/weight"))?;
        let bias = b.var(&format!("encoder/{conv}/bias"))?;
        let wn = b.g.f32s("convw", &w.dims, &w.values);
        let bn = b.g.f32s("convb", &bias.dims, &bias.values);
        let y = b.g.op(
            "Conv",
            &[&x, &wn, &bn],
            &[
                Attr::Ints("kernel_shape", &[3]),
                Attr::Ints("pads", &[1, 1]),
                Attr::Ints("strides", &[stride]),
            ],
        );
        x = b.gelu(&y);
    }
    let t =
        b.g.op("Transpose", &[&x], &[Attr::Ints("perm", &[0, 2, 1])]);
    let positions = model.get(
        "encoder/position_encodings/encodings",
        &[Some(dims.n_audio_ctx), Some(dims.d_model)],
    )?;
    let p = b.g.f32s("pos", &positions.dims, &positions.values);
    x = b.g.op("Add", &[&t, &p], &[]);
    let d = dims.d_model;
    for layer in 0..dims.encoder_layers {
        let prefix = format!("encoder/layer_{layer}");
        let attn = format!("{prefix}/self_attention");
        let h = b.layer_norm(&x, &format!("{attn}/layer_norm"))?;
        let q = b.linear_rows(&h, &format!("{attn}/linear_0"), 0..d, b.query_scale(), true)?;
        let k = b.linear_rows(&h, &format!("{attn}/linear_0"), d..2 * d, 1.0, true)?;
        let v = b.linear_rows(&h, &format!("{attn}/linear_0"), 2 * d..3 * d, 1.0, true)?;
        let (q, k, v) = (b.heads(&q, false), b.heads(&k, true), b.heads(&v, false));
        let (out, _) = b.attend(&q, &k, &v, None);
        let out = b.linear(&out, &format!("{attn}/linear_1"))?;
        x = b.g.op("Add", &[&x, &out], &[]);
        x = b.ffn(&x, &prefix)?;
    }
    let encoded = b.layer_norm(&x, "encoder/layer_norm")?;
    let (h, dh, n) = (dims.heads, dims.head_dim(), dims.n_audio_ctx);
    for layer in 0..dims.decoder_layers {
        let prefix = format!("decoder/layer_{layer}/attention/linear_1");
        let k = b.linear_rows(&encoded, &prefix, 0..d, 1.0, true)?;
        let v = b.linear_rows(&encoded, &prefix, d..2 * d, 1.0, true)?;
        let k = b.heads(&k, true);
        let v = b.heads(&v, false);
        b.g.name(&k, &format!("cross_k{layer}"));
        b.g.name(&v, &format!("cross_v{layer}"));
        b.g.output(
            &format!("cross_k{layer}"),
            FLOAT,
            &[Dim::Fixed(1), Dim::Fixed(h), Dim::Fixed(dh), Dim::Fixed(n)],
        );
        b.g.output(
            &format!("cross_v{layer}"),
            FLOAT,
            &[Dim::Fixed(1), Dim::Fixed(h), Dim::Fixed(n), Dim::Fixed(dh)],
        );
    }
    Ok(b.g.model("whisper_encoder", 20))
}

/// The decoder graph (see the module docs). `alignment_heads` are (layer, head) pairs.
pub fn decoder(
    model: &Ct2Model,
    dims: Dims,
    precision: Precision,
    alignment_heads: &[(usize, usize)],
) -> Result<Vec<u8>> {
    let mut b = Builder {
        g: Graph::default(),
        model,
        dims,
        precision,
        per_row: false,
    };
    let (d, h, dh, n_audio) = (dims.d_model, dims.heads, dims.head_dim(), dims.n_audio_ctx);
    b.g.input("tokens", INT64, &[Dim::Fixed(1), Dim::Named("n")]);
    b.g.input("positions", INT64, &[Dim::Named("k")]);
    for layer in 0..dims.decoder_layers {
        for kv in ["past_k", "past_v"] {
            b.g.input(
                &format!("{kv}{layer}"),
                FLOAT,
                &[
                    Dim::Fixed(1),
                    Dim::Fixed(h),
                    Dim::Named("past"),
                    Dim::Fixed(dh),
                ],
            );
        }
        b.g.input(
            &format!("cross_k{layer}"),
            FLOAT,
            &[
                Dim::Fixed(1),
                Dim::Fixed(h),
                Dim::Fixed(dh),
                Dim::Fixed(n_audio),
            ],
        );
        b.g.input(
            &format!("cross_v{layer}"),
            FLOAT,
            &[
                Dim::Fixed(1),
                Dim::Fixed(h),
                Dim::Fixed(n_audio),
                Dim::Fixed(dh),
            ],
        );
    }
    // Positions past..past+n of the positional embedding.
    let past = b.g.op(
        "Shape",
        &["past_k0"],
        &[Attr::Int("start", 2), Attr::Int("end", 3)],
    );
    let n = b.g.op(
        "Shape",
        &["tokens"],
        &[Attr::Int("start", 1), Attr::Int("end", 2)],
    );
    let end = b.g.op("Add", &[&past, &n], &[]);
    let axis0 = b.g.ints(&[0]);
    let position_table = model.get("decoder/position_encodings/encodings", &[None, Some(d)])?;
    let pt =
        b.g.f32s("pos", &position_table.dims, &position_table.values);
    let pos = b.g.op("Slice", &[&pt, &past, &end, &axis0], &[]);
    let embeddings = model.get("decoder/embeddings/weight", &[Some(dims.vocab), Some(d)])?;
    let emb = b.g.f32s("emb", &embeddings.dims, &embeddings.values);
    let tok = b.g.op("Gather", &[&emb, "tokens"], &[Attr::Int("axis", 0)]);
    let mut x = b.g.op("Add", &[&tok, &pos], &[]);
    // Causal mask [n, past+n]: position past+i sees keys 0..=past+i.
    let zero = b.g.i64s("c", &[], &[0]);
    let one = b.g.i64s("c", &[], &[1]);
    let past_s = b.g.op("Squeeze", &[&past, &axis0], &[]);
    let n_s = b.g.op("Squeeze", &[&n, &axis0], &[]);
    let end_s = b.g.op("Squeeze", &[&end, &axis0], &[]);
    let rows = b.g.op("Range", &[&past_s, &end_s, &one], &[]);
    let cols = b.g.op("Range", &[&zero, &end_s, &one], &[]);
    let _ = n_s;
    let axis1 = b.g.ints(&[1]);
    let rows = b.g.op("Unsqueeze", &[&rows, &axis1], &[]);
    let future = b.g.op("Greater", &[&cols, &rows], &[]);
    let blocked = b.g.scalar(-1e9);
    let open = b.g.scalar(0.0);
    let mask = b.g.op("Where", &[&future, &blocked, &open], &[]);
    let mut alignment = Vec::new();
    for layer in 0..dims.decoder_layers {
        let prefix = format!("decoder/layer_{layer}");
        let attn = format!("{prefix}/self_attention");
        let hn = b.layer_norm(&x, &format!("{attn}/layer_norm"))?;
        let q = b.linear_rows(
            &hn,
            &format!("{attn}/linear_0"),
            0..d,
            b.query_scale(),
            true,
        )?;
        let k = b.linear_rows(&hn, &format!("{attn}/linear_0"), d..2 * d, 1.0, true)?;
        let v = b.linear_rows(&hn, &format!("{attn}/linear_0"), 2 * d..3 * d, 1.0, true)?;
        let q = b.heads(&q, false);
        let k = b.heads(&k, false);
        let v = b.heads(&v, false);
        let present_k = b.g.op(
            "Concat",
            &[&format!("past_k{layer}"), &k],
            &[Attr::Int("axis", 2)],
        );
        let present_v = b.g.op(
            "Concat",
            &[&format!("past_v{layer}"), &v],
            &[Attr::Int("axis", 2)],
        );
        b.g.name(&present_k, &format!("present_k{layer}"));
        b.g.name(&present_v, &format!("present_v{layer}"));
        let k_t = b.g.op(
            "Transpose",
            &[&present_k],
            &[Attr::Ints("perm", &[0, 1, 3, 2])],
        );
        let (out, _) = b.attend(&q, &k_t, &present_v, Some(&mask));
        let out = b.linear(&out, &format!("{attn}/linear_1"))?;
        x = b.g.op("Add", &[&x, &out], &[]);
        // Cross-attention on the window's audio.
        let cross = format!("{prefix}/attention");
        let hn = b.layer_norm(&x, &format!("{cross}/layer_norm"))?;
        let q = b.linear_rows(
            &hn,
            &format!("{cross}/linear_0"),
            0..d,
            b.query_scale(),
            true,
        )?;
        let q = b.heads(&q, false);
        let (out, scores) = b.attend(
            &q,
            &format!("cross_k{layer}"),
            &format!("cross_v{layer}"),
            None,
        );
        for &(_, head) in alignment_heads.iter().filter(|(l, _)| *l == layer) {
            let index = b.g.i64s("c", &[], &[head as i64]);
            // [1, H, n, S] → [1, n, S] for this head.
            alignment.push(b.g.op("Gather", &[&scores, &index], &[Attr::Int("axis", 1)]));
        }
        let out = b.linear(&out, &format!("{cross}/linear_2"))?;
        x = b.g.op("Add", &[&x, &out], &[]);
        x = b.ffn(&x, &prefix)?;
    }
    let picked =
        b.g.op("Gather", &[&x, "positions"], &[Attr::Int("axis", 1)]);
    let normed = b.layer_norm(&picked, "decoder/layer_norm")?;
    // The output projection shares the token embedding (CTranslate2's alias): [vocab, d] is
    // a linear layer's [out, in].
    let logits = b.linear_rows(&normed, "decoder/embeddings", 0..dims.vocab, 1.0, false)?;
    b.g.name(&logits, "logits");
    b.g.output(
        "logits",
        FLOAT,
        &[Dim::Fixed(1), Dim::Named("k"), Dim::Fixed(dims.vocab)],
    );
    for layer in 0..dims.decoder_layers {
        for kv in ["present_k", "present_v"] {
            b.g.output(
                &format!("{kv}{layer}"),
                FLOAT,
                &[
                    Dim::Fixed(1),
                    Dim::Fixed(h),
                    Dim::Named("total"),
                    Dim::Fixed(dh),
                ],
            );
        }
    }
    let alignment_refs: Vec<&str> = alignment.iter().map(String::as_str).collect();
    let stacked = if alignment_refs.is_empty() {
        b.g.f32s("c", &[0, 0, n_audio], &[])
    } else {
        b.g.op("Concat", &alignment_refs, &[Attr::Int("axis", 0)])
    };
    b.g.name(&stacked, "alignment");
    b.g.output(
        "alignment",
        FLOAT,
        &[Dim::Named("heads"), Dim::Named("n"), Dim::Fixed(n_audio)],
    );
    Ok(b.g.model("whisper_decoder", 20))
}

/// The largest magnitude of a quantised weight. Without VNNI, ONNX Runtime's x86 kernels for
/// uint8 × int8 (AVX2, AVX-512 without VNNI) add pairs of products in 16 bits, which saturate:
/// 255 · 127 · 2 > 32767. On such a CPU Whisper base's translation of the French test clip
/// came out as "I'm going to the bar." over and over (float32 and VNNI CPUs: "Hello. I called
/// Marie..."). Weights of 7 bits (±63: 255 · 63 · 2 = 32130) cannot saturate, as ONNX
/// Runtime's own quantiser does with `reduce_range` for these CPUs.
fn weight_levels() -> f32 {
    #[cfg(target_arch = "x86_64")]
    if !std::arch::is_x86_feature_detected!("avx512vnni") {
        return 63.0;
    }
    127.0
}
