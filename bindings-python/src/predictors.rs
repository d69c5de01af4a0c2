//! Predictors written in Python. `ingle._predictors` reads the function's annotations into a
//! declaration (the core's JSON format, [`Declaration`]) and an `invoke(inputs, logs)` that
//! returns a Python iterator of output lists; this wraps them into a core
//! [`ExternalPredictor`], which checks the rules and every output. The core calls in from any
//! thread (a request of `ingle serve`, a caller with the GIL released): each call attaches to
//! the interpreter for as long as Python code runs, and no longer.

use ingle::{
    Audio, Context, Declaration, Dtype, Error, ExternalPredictor, Inputs, Logs, OnCancel,
    OutputStream, Outputs, Tensor, Value,
};
use pyo3::exceptions::{PyStopIteration, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// A tensor between the core and Python: NumPy's dtype name, the shape, and the row-major
/// little-endian bytes. `ingle._predictors` turns it into (and makes it from) an `ndarray`.
#[pyclass(frozen, module = "ingle._ingle")]
pub struct RawTensor {
    #[pyo3(get)]
    dtype: &'static str,
    #[pyo3(get)]
    shape: Vec<usize>,
    #[pyo3(get)]
    data: Py<PyBytes>,
}

#[pymethods]
impl RawTensor {
    #[new]
    fn new(dtype: &str, shape: Vec<usize>, data: Py<PyBytes>) -> PyResult<Self> {
        let dtype = Dtype::from_name(dtype).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "tensors of dtype {dtype} cannot cross into ingle; use float32, float16, int64, \
                 int32, int8, uint8 or bool"
            ))
        })?;
        Ok(RawTensor {
            dtype: dtype.name(),
            shape,
            data,
        })
    }
}

/// Audio between the core and Python: float32 samples (native byte order, interleaved).
#[pyclass(frozen, module = "ingle._ingle")]
pub struct RawAudio {
    #[pyo3(get)]
    data: Py<PyBytes>,
    #[pyo3(get)]
    sample_rate: u32,
    #[pyo3(get)]
    channels: u16,
}

#[pymethods]
impl RawAudio {
    #[new]
    fn new(py: Python<'_>, data: Py<PyBytes>, sample_rate: u32, channels: u16) -> PyResult<Self> {
        if !data.as_bytes(py).len().is_multiple_of(4) {
            return Err(PyTypeError::new_err(
                "audio crosses as float32 samples: its bytes must be a multiple of 4",
            ));
        }
        Ok(RawAudio {
            data,
            sample_rate,
            channels,
        })
    }
}

/// Where a Python predictor's prints and tracebacks go: the prediction's logs.
#[pyclass(frozen, module = "ingle._ingle")]
pub struct LogSink {
    logs: Logs,
}

#[pymethods]
impl LogSink {
    fn write(&self, text: &str) -> usize {
        self.logs.write(text);
        text.len()
    }
}

/// A core value as a Python object: JSON-like values as themselves, tensors and audio as
/// [`RawTensor`] / [`RawAudio`].
fn to_python(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
    Ok(match value {
        Value::Null => py.None(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        Value::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Value::Float(f) => PyFloat::new(py, *f).into_any().unbind(),
        Value::String(s) => PyString::new(py, s).into_any().unbind(),
        Value::List(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any().unbind()
        }
        Value::Dict(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_python(py, v)?)?;
            }
            dict.into_any().unbind()
        }
        Value::Tensor(t) => Py::new(
            py,
            RawTensor {
                dtype: t.dtype.name(),
                shape: t.shape.clone(),
                data: PyBytes::new(py, &t.data).unbind(),
            },
        )?
        .into_any(),
        Value::Audio(a) => {
            let data = PyBytes::new_with(py, a.samples.len() * 4, |buffer| {
                for (out, x) in buffer.chunks_exact_mut(4).zip(&a.samples) {
                    out.copy_from_slice(&x.to_ne_bytes());
                }
                Ok(())
            })?;
            Py::new(
                py,
                RawAudio {
                    data: data.unbind(),
                    sample_rate: a.sample_rate,
                    channels: a.channels,
                },
            )?
            .into_any()
        }
    })
}

/// A Python object as a core value; `what` names it in errors. `ingle._predictors` has
/// already turned arrays, enums and response objects into what this takes.
fn from_python(object: &Bound<'_, PyAny>, what: &str) -> Result<Value, String> {
    nested_from_python(object, what, 0)
}

/// `from_python` at `depth` lists and dicts down. The depth is bounded (as JSON parsers bound
/// it), which also stops a list or dict that contains itself before the stack overflows.
fn nested_from_python(
    object: &Bound<'_, PyAny>,
    what: &str,
    depth: usize,
) -> Result<Value, String> {
    let nested = object.is_instance_of::<PyList>()
        || object.is_instance_of::<PyTuple>()
        || object.is_instance_of::<PyDict>();
    if nested && depth >= ingle::MAX_NESTING {
        return Err(format!(
            "{what} nests lists and dicts more than {} deep, or contains itself",
            ingle::MAX_NESTING
        ));
    }
    if object.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = object.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if object.is_instance_of::<PyInt>() {
        return object
            .extract::<i64>()
            .map(Value::Int)
            .map_err(|_| format!("{what} is an integer beyond 64 bits"));
    }
    if let Ok(f) = object.cast::<PyFloat>() {
        return Ok(Value::Float(f.value()));
    }
    if object.is_instance_of::<PyString>() {
        return object
            .extract::<String>()
            .map(Value::String)
            .map_err(|_| format!("{what} is a string that is not valid Unicode"));
    }
    if object.is_instance_of::<PyList>() || object.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, item) in object.try_iter().map_err(|e| e.to_string())?.enumerate() {
            let item = item.map_err(|e| e.to_string())?;
            items.push(nested_from_python(
                &item,
                &format!("{what}[{i}]"),
                depth + 1,
            )?);
        }
        return Ok(Value::List(items));
    }
    if let Ok(dict) = object.cast::<PyDict>() {
        let mut map = ingle::Dict::new();
        for (k, v) in dict.iter() {
            let key: String = k
                .extract()
                .map_err(|_| format!("{what} is a dict with a key that is not a string"))?;
            let value = nested_from_python(&v, &format!("{what}[{key:?}]"), depth + 1)?;
            map.insert(key, value);
        }
        return Ok(Value::Dict(map));
    }
    if let Ok(t) = object.cast::<RawTensor>() {
        let t = t.get();
        let data = t.data.as_bytes(object.py()).to_vec();
        let dtype = Dtype::from_name(t.dtype).expect("checked by RawTensor::new");
        return Tensor::new(dtype, t.shape.clone(), data)
            .map(Value::Tensor)
            .map_err(|e| format!("{what}: {}", e.message));
    }
    if let Ok(a) = object.cast::<RawAudio>() {
        let a = a.get();
        let samples = a
            .data
            .as_bytes(object.py())
            .chunks_exact(4)
            .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        return Ok(Value::Audio(Audio {
            samples,
            sample_rate: a.sample_rate,
            channels: a.channels,
        }));
    }
    let type_name = object
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into());
    Err(format!(
        "{what} is a {type_name}, which ingle cannot carry (use None, bool, int, float, str, \
         list, dict or a NumPy array)"
    ))
}

/// A Python exception raised by a predictor (or by ingle's wrapper of it) as a core error:
/// `ingle._predictors` words the message (the predictor, the exception) and has written the
/// traceback to the logs already.
fn predictor_error(py: Python<'_>, error: PyErr, tag: &str) -> Error {
    if error.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
        return Error::cancelled(format!("The predictor `{tag}` was interrupted"));
    }
    let cancelled = py
        .import("ingle._predictors")
        .and_then(|m| m.getattr("PredictionCancelled"))
        .is_ok_and(|class| error.get_type(py).is_subclass(&class).unwrap_or(false));
    if cancelled {
        return Error::cancelled(format!(
            "The predictor `{tag}` was stopped: its caller went away"
        ));
    }
    if error.is_instance_of::<pyo3::exceptions::PySystemExit>(py) {
        // Its message is only the exit code ("3"): say what happened.
        let code = error
            .value(py)
            .getattr("code")
            .and_then(|c| c.repr())
            .map(|r| r.to_string())
            .unwrap_or_default();
        return Error::model(format!(
            "The predictor `{tag}` raised SystemExit({code}) (it called sys.exit); the \
             prediction failed and the process goes on"
        ));
    }
    let message = error
        .value(py)
        .str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| format!("The predictor `{tag}` failed"));
    Error::model(message)
}

/// The iterator `invoke` returned: each `__next__` runs the predictor to its next output.
/// Dropping it closes the Python generator, so the predictor's `finally` runs at once.
struct PythonOutputs {
    tag: String,
    iterator: Option<Py<PyAny>>,
    /// This prediction's call, current in the thread while its code runs, for `interrupt`.
    call: u64,
    /// Interrupts the code running for `call` when the prediction is cancelled: its stream
    /// dropped, or its caller stopped (a closed stream, a cancelled task, a client that left
    /// `ingle.serve`).
    interrupt: Option<OnCancel>,
}

impl Iterator for PythonOutputs {
    type Item = ingle::Result<Outputs>;

    fn next(&mut self) -> Option<Self::Item> {
        let iterator = self.iterator.as_ref()?;
        let tag = self.tag.clone();
        let call = self.call;
        let attached = Python::try_attach(|py| -> Option<ingle::Result<Outputs>> {
            let _scope = crate::interrupt::CallScope::enter(call);
            let Some(running) = crate::interrupt::Running::start(py) else {
                return Some(Err(Error::cancelled(format!(
                    "The predictor `{}` was stopped: its caller went away",
                    self.tag
                ))));
            };
            let item = iterator.bind(py).call_method0("__next__");
            running.finish(py);
            let item = match item {
                Ok(item) => item,
                Err(e) if e.is_instance_of::<PyStopIteration>(py) => return None,
                Err(e) => return Some(Err(predictor_error(py, e, &self.tag))),
            };
            let list = match item.cast::<PyList>() {
                Ok(list) => list,
                Err(_) => {
                    return Some(Err(Error::internal(
                        "a Python predictor's wrapper gave something other than a list",
                    )))
                }
            };
            let mut outputs = Vec::with_capacity(list.len());
            for (i, value) in list.iter().enumerate() {
                match from_python(&value, &format!("output {i}")) {
                    Ok(value) => outputs.push(value),
                    Err(problem) => {
                        return Some(Err(Error::model(format!(
                            "The predictor `{}` gave a value ingle cannot carry: {problem}",
                            self.tag
                        ))))
                    }
                }
            }
            Some(Ok(outputs))
        });
        // No interpreter (it is shutting down): the prediction cannot go on.
        let result = attached.unwrap_or_else(|| {
            Some(Err(Error::model(format!(
                "The predictor `{tag}` cannot run: the Python interpreter is shutting down"
            ))))
        });
        if !matches!(result, Some(Ok(_))) {
            self.close();
        }
        result
    }
}

impl PythonOutputs {
    fn close(&mut self) {
        if let Some(iterator) = self.iterator.take() {
            // At interpreter shutdown there is nothing left to close.
            Python::try_attach(|py| {
                if let Err(e) = iterator.bind(py).call_method0("close") {
                    e.write_unraisable(py, Some(iterator.bind(py)));
                }
            });
        }
    }
}

impl Drop for PythonOutputs {
    fn drop(&mut self) {
        self.close();
        // Unregistered first, so that a later cancel does not run it; one already running may
        // still mark the call after `forget` (an id never used again: harmless).
        drop(self.interrupt.take());
        crate::interrupt::forget(self.call);
    }
}

/// Parses a declaration and wraps `invoke` (registering it checks it against the OpenAI rules).
pub fn python_predictor(declaration: &str, invoke: Py<PyAny>) -> ingle::Result<ExternalPredictor> {
    let declaration = Declaration::from_json(declaration)?;
    let tag = declaration.tag.clone();
    Ok(ExternalPredictor::new(
        declaration,
        move |inputs: Inputs, context: &Context| {
            let attached = Python::try_attach(|py| -> ingle::Result<OutputStream> {
                let call = || -> PyResult<Py<PyAny>> {
                    let dict = PyDict::new(py);
                    for (name, value) in &inputs {
                        dict.set_item(name, to_python(py, value)?)?;
                    }
                    let sink = Py::new(
                        py,
                        LogSink {
                            logs: context.logs.clone(),
                        },
                    )?;
                    Ok(invoke.bind(py).call1((dict, sink))?.unbind())
                };
                let iterator = call().map_err(|e| predictor_error(py, e, &tag))?;
                let call = crate::interrupt::new_call();
                Ok(Box::new(PythonOutputs {
                    tag: tag.clone(),
                    iterator: Some(iterator),
                    call,
                    interrupt: Some(
                        context
                            .cancel
                            .on_cancel(move || crate::interrupt::interrupt(call)),
                    ),
                }))
            });
            attached.unwrap_or_else(|| {
                Err(Error::model(format!(
                    "The predictor `{tag}` cannot run: the Python interpreter is shutting down"
                )))
            })
        },
    ))
}

/// Checks a declaration as registering it would, without registering it.
pub fn check_declaration(declaration: &str) -> ingle::Result<()> {
    let declaration = Declaration::from_json(declaration)?;
    ingle::openai::check_predictor(&declaration.tag, &declaration.signature)
}

/// `predictions` inputs given as `RawTensor` / `RawAudio` (NumPy arrays, `ingle.AudioSamples`),
/// which JSON cannot carry.
pub fn raw_inputs(raw: Option<Bound<'_, PyDict>>) -> PyResult<Inputs> {
    let mut inputs = Inputs::new();
    for (name, value) in raw.iter().flat_map(|d| d.iter()) {
        let name: String = name.extract()?;
        let value = from_python(&value, &format!("inputs[{name:?}]"))
            .map_err(|problem| crate::py_err(Error::invalid(name.as_str(), problem)))?;
        inputs.insert(name, value);
    }
    Ok(inputs)
}
