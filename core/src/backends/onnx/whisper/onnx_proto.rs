//! Just enough of ONNX's protobuf encoding to build graphs in-process: ingle turns Whisper's
//! CTranslate2 weights into encoder and decoder graphs for ONNX Runtime at load time, so no
//! converter (and no Python) has to run first. Field numbers are those of `onnx.proto`.

/// Element types (`TensorProto.DataType`).
pub const FLOAT: i64 = 1;
pub const UINT8: i64 = 2;
pub const INT8: i64 = 3;
pub const INT64: i64 = 7;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, ((field as u64) << 3) | wire as u64);
}

fn int(out: &mut Vec<u8>, field: u32, v: i64) {
    key(out, field, 0);
    varint(out, v as u64);
}

fn bytes(out: &mut Vec<u8>, field: u32, data: &[u8]) {
    key(out, field, 2);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

fn float(out: &mut Vec<u8>, field: u32, v: f32) {
    key(out, field, 5);
    out.extend_from_slice(&v.to_le_bytes());
}

/// A node attribute.
pub enum Attr<'a> {
    Int(&'a str, i64),
    Ints(&'a str, &'a [i64]),
    Float(&'a str, f32),
}

impl Attr<'_> {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Attr::Int(name, v) => {
                bytes(&mut out, 1, name.as_bytes());
                int(&mut out, 3, *v);
                int(&mut out, 20, 2);
            }
            Attr::Ints(name, vs) => {
                bytes(&mut out, 1, name.as_bytes());
                for v in vs.iter() {
                    int(&mut out, 8, *v);
                }
                int(&mut out, 20, 7);
            }
            Attr::Float(name, v) => {
                bytes(&mut out, 1, name.as_bytes());
                float(&mut out, 2, *v);
                int(&mut out, 20, 1);
            }
        }
        out
    }
}

/// A tensor dimension of a graph input or output: fixed or named (dynamic).
pub enum Dim<'a> {
    Fixed(usize),
    Named(&'a str),
}

/// A graph under construction. Node outputs get fresh names; `name` them when a graph input or
/// output must have a particular one.
#[derive(Default)]
pub struct Graph {
    nodes: Vec<u8>,
    initializers: Vec<u8>,
    inputs: Vec<u8>,
    outputs: Vec<u8>,
    counter: usize,
}

fn value_info(name: &str, elem_type: i64, dims: &[Dim]) -> Vec<u8> {
    let mut shape = Vec::new();
    for dim in dims {
        let mut d = Vec::new();
        match dim {
            Dim::Fixed(n) => int(&mut d, 1, *n as i64),
            Dim::Named(s) => bytes(&mut d, 2, s.as_bytes()),
        }
        bytes(&mut shape, 1, &d);
    }
    let mut tensor = Vec::new();
    int(&mut tensor, 1, elem_type);
    bytes(&mut tensor, 2, &shape);
    let mut ty = Vec::new();
    bytes(&mut ty, 1, &tensor);
    let mut info = Vec::new();
    bytes(&mut info, 1, name.as_bytes());
    bytes(&mut info, 2, &ty);
    info
}

impl Graph {
    fn fresh(&mut self, hint: &str) -> String {
        self.counter += 1;
        format!("{hint}_{}", self.counter)
    }

    /// Adds a node of `op` (domain `""` for ONNX, `"com.microsoft"` for ONNX Runtime's own)
    /// with `outputs` results; returns their names.
    pub fn node_in(
        &mut self,
        domain: &str,
        op: &str,
        inputs: &[&str],
        outputs: usize,
        attrs: &[Attr],
    ) -> Vec<String> {
        let names: Vec<String> = (0..outputs).map(|_| self.fresh(op)).collect();
        let mut node = Vec::new();
        for input in inputs {
            bytes(&mut node, 1, input.as_bytes());
        }
        for output in &names {
            bytes(&mut node, 2, output.as_bytes());
        }
        let node_name = self.fresh("n");
        bytes(&mut node, 3, node_name.as_bytes());
        bytes(&mut node, 4, op.as_bytes());
        for attr in attrs {
            bytes(&mut node, 5, &attr.encode());
        }
        if !domain.is_empty() {
            bytes(&mut node, 7, domain.as_bytes());
        }
        bytes(&mut self.nodes, 1, &node);
        names
    }

    /// An ONNX node with one output.
    pub fn op(&mut self, op: &str, inputs: &[&str], attrs: &[Attr]) -> String {
        self.node_in("", op, inputs, 1, attrs).remove(0)
    }

    /// Renames a value to `name` with an Identity node (graph outputs need fixed names).
    pub fn name(&mut self, value: &str, name: &str) {
        let mut node = Vec::new();
        bytes(&mut node, 1, value.as_bytes());
        bytes(&mut node, 2, name.as_bytes());
        let node_name = self.fresh("n");
        bytes(&mut node, 3, node_name.as_bytes());
        bytes(&mut node, 4, b"Identity");
        bytes(&mut self.nodes, 1, &node);
    }

    fn initializer(&mut self, hint: &str, elem_type: i64, dims: &[usize], raw: &[u8]) -> String {
        let name = self.fresh(hint);
        let mut tensor = Vec::new();
        for d in dims {
            int(&mut tensor, 1, *d as i64);
        }
        int(&mut tensor, 2, elem_type);
        bytes(&mut tensor, 8, name.as_bytes());
        bytes(&mut tensor, 9, raw);
        bytes(&mut self.initializers, 5, &tensor);
        name
    }

    pub fn f32s(&mut self, hint: &str, dims: &[usize], values: &[f32]) -> String {
        debug_assert_eq!(dims.iter().product::<usize>(), values.len());
        let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.initializer(hint, FLOAT, dims, &raw)
    }

    pub fn i64s(&mut self, hint: &str, dims: &[usize], values: &[i64]) -> String {
        debug_assert_eq!(dims.iter().product::<usize>(), values.len());
        let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.initializer(hint, INT64, dims, &raw)
    }

    pub fn i8s(&mut self, hint: &str, dims: &[usize], values: &[i8]) -> String {
        debug_assert_eq!(dims.iter().product::<usize>(), values.len());
        let raw: Vec<u8> = values.iter().map(|v| *v as u8).collect();
        self.initializer(hint, INT8, dims, &raw)
    }

    pub fn u8s(&mut self, hint: &str, dims: &[usize], values: &[u8]) -> String {
        debug_assert_eq!(dims.iter().product::<usize>(), values.len());
        self.initializer(hint, UINT8, dims, values)
    }

    /// A 1-D int64 constant (shapes, axes).
    pub fn ints(&mut self, values: &[i64]) -> String {
        self.i64s("c", &[values.len()], values)
    }

    /// A scalar f32 constant.
    pub fn scalar(&mut self, value: f32) -> String {
        self.f32s("c", &[], &[value])
    }

    pub fn input(&mut self, name: &str, elem_type: i64, dims: &[Dim]) {
        let info = value_info(name, elem_type, dims);
        bytes(&mut self.inputs, 11, &info);
    }

    pub fn output(&mut self, name: &str, elem_type: i64, dims: &[Dim]) {
        let info = value_info(name, elem_type, dims);
        bytes(&mut self.outputs, 12, &info);
    }

    /// The serialised `ModelProto` (IR version 9), importing ONNX opset `opset` and
    /// ONNX Runtime's `com.microsoft` domain.
    pub fn model(self, name: &str, opset: i64) -> Vec<u8> {
        let mut graph = self.nodes;
        bytes(&mut graph, 2, name.as_bytes());
        graph.extend(self.initializers);
        graph.extend(self.inputs);
        graph.extend(self.outputs);
        let mut model = Vec::new();
        int(&mut model, 1, 9);
        bytes(&mut model, 2, b"ingle");
        for (domain, version) in [("", opset), ("com.microsoft", 1)] {
            let mut set = Vec::new();
            if !domain.is_empty() {
                bytes(&mut set, 1, domain.as_bytes());
            }
            int(&mut set, 2, version);
            bytes(&mut model, 8, &set);
        }
        bytes(&mut model, 7, &graph);
        model
    }
}
