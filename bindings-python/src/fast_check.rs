//! `Limiter.check_sync` as a raw CPython method, so that a check skips PyO3's call machinery.
//!
//! Why: on the "1k hot keys over" rows of `bindings-python/bench/bench.py` (a denial per call,
//! nothing missing the cache) PyO3's part of a call was about 180 of our ~640 instructions
//! (docs/performance.md): its trampoline (the attach guard's two thread-local accesses to the
//! GIL count, each a `__tls_get_addr` call in a shared library), the generic argument parser
//! (`extract_arguments_fastcall`, its copy of the arguments, the default cost extracted) and a
//! type check of `self` that CPython's method descriptor has already made.
//!
//! How: the module's init replaces the class attribute `Limiter.check_sync` (PyO3's method
//! descriptor) with a method descriptor of the same name, signature and doc whose C function is
//! [`check_sync`] here. It reads well-formed arguments itself (a `str` key and an optional cost,
//! by position or keyword, the cost through the same `Cost` conversion) and calls exactly what
//! PyO3's method calls once its arguments are read (`Limiter::check_one`, which also releases
//! the GIL around a store that does I/O). A call it cannot read (a missing, unknown or repeated
//! argument, a key that is not a `str` or not encodable, a bad cost) goes to PyO3's descriptor,
//! kept aside, with the same arguments, so every error and message is PyO3's as before. Nothing a
//! caller sees changes: `inspect.signature`, `__doc__`, `__qualname__` and the `.pyi` (stubtest)
//! are the method's as before.
//!
//! Soundness: CPython calls the function on an attached thread (so [`Python::assume_attached`]
//! holds for the call, as in `value_type`'s slots), and only with `self` an instance of
//! `Limiter`: the descriptor checks the type both when it binds (`limiter.check_sync`) and when
//! called unbound (`Limiter.check_sync(x, ...)`), and `Limiter` cannot be subclassed. A panic is
//! caught by [`value_type::boundary`] and raised as a `PanicException`, as PyO3 does. The key's
//! UTF-8 is CPython's cache inside the `str`, borrowed for the call (the caller holds the
//! argument), as `validate::string` reads it. Without PyO3's attach guard the GIL count stays
//! as it was (0 here): `Python::detach` saves and restores it as it finds it, and a `Py<T>`
//! dropped meanwhile is released at the next PyO3 entry instead of at once.

use std::ffi::CString;
use std::ptr;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

use crate::limiter::Limiter;
use crate::validate::Cost;
use crate::value_type;

/// PyO3's own `Limiter.check_sync` descriptor, for the calls [`check_sync`] does not answer.
static PYO3_METHOD: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Replaces `Limiter.check_sync` on the class `ty` with the raw method (once, at import).
pub fn install(ty: &Bound<'_, PyType>) -> PyResult<()> {
    let py = ty.py();
    if PYO3_METHOD.get(py).is_some() {
        return Ok(()); // installed by an earlier initialization of the module
    }
    let original = ty.getattr("check_sync")?;
    let signature: String = original.getattr("__text_signature__")?.extract()?;
    let doc: Option<String> = original.getattr("__doc__")?.extract()?;
    // "name(signature)\n--\n\n" is how CPython finds `__text_signature__`, as for PyO3's methods.
    // The descriptor keeps pointers to the definition, and the class lives for the whole
    // process, so the definition is leaked once, on purpose.
    let doc = CString::new(format!("check_sync{signature}\n--\n\n{}", doc.unwrap_or_default()))?;
    let def: &'static mut ffi::PyMethodDef = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: c"check_sync".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunctionFastWithKeywords: check_sync },
        ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: doc.into_raw(),
    }));
    // SAFETY: `ty` is a live type and `def` is 'static.
    let descriptor = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyDescr_NewMethod(ty.as_type_ptr(), def))? };
    PYO3_METHOD
        .set(py, original.unbind())
        .map_err(|_| pyo3::exceptions::PySystemError::new_err("Limiter.check_sync installed twice at once"))?;
    ty.setattr("check_sync", descriptor)
}

/// `Limiter.check_sync(self, key, cost=1)`, `METH_FASTCALL | METH_KEYWORDS`.
unsafe extern "C" fn check_sync(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this on an attached thread with `self` a `Limiter` (module doc),
    // `args` holding `nargs` positional arguments and then one per name in `kwnames`.
    unsafe {
        value_type::boundary(ptr::null_mut(), |py| {
            let limiter = Borrowed::from_ptr(py, slf).cast_unchecked::<Limiter>();
            let limiter = limiter.get();
            // `check_sync(key)`, the common call, is read inline; the other forms out of line
            // (inlined, their code made the common one ~20 instructions longer).
            let read = if nargs == 1 && kwnames.is_null() && ffi::PyUnicode_CheckExact(*args) != 0 {
                utf8(*args).map(|key| (key, 1))
            } else {
                arguments(py, args, nargs, kwnames)
            };
            if let Some((key, cost)) = read {
                return limiter.check_one(py, key, cost).map(Bound::into_ptr);
            }
            pyo3_call(py, slf, args, nargs, kwnames).map(Bound::into_ptr)
        })
    }
}

/// The key and the cost, when the arguments are well formed: a `str` key (given by position or
/// as `key=`), and a valid cost or none (1). `None` for anything else, with no error set:
/// PyO3's method then reads the same arguments again and raises its own error (its messages,
/// and the note it adds to an argument's error). Reading an argument has no side effect, so
/// reading it twice is safe.
///
/// # Safety
/// As [`check_sync`]'s arguments.
#[inline(never)]
unsafe fn arguments<'py>(
    py: Python<'py>,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> Option<(&'py str, u64)> {
    // SAFETY: `args` holds `nargs` positional arguments, then one per name in `kwnames` (a
    // tuple of str); the caller keeps every argument alive for the call.
    unsafe {
        let (mut key, mut cost) = match nargs {
            1 => (*args, ptr::null_mut()),
            2 => (*args, *args.add(1)),
            _ => (ptr::null_mut(), ptr::null_mut()),
        };
        if !kwnames.is_null() {
            for i in 0..ffi::PyTuple_Size(kwnames) {
                let name = ffi::PyTuple_GetItem(kwnames, i);
                let value = *args.offset(nargs + i);
                if key.is_null() && ffi::PyUnicode_CompareWithASCIIString(name, c"key".as_ptr()) == 0 {
                    key = value;
                } else if cost.is_null() && ffi::PyUnicode_CompareWithASCIIString(name, c"cost".as_ptr()) == 0 {
                    cost = value;
                } else {
                    return None; // an unknown name, or one given twice
                }
            }
        }
        // The exact-type test first: under the stable ABI the subclass test is a call.
        if key.is_null() || (ffi::PyUnicode_CheckExact(key) == 0 && ffi::PyUnicode_Check(key) == 0) {
            return None;
        }
        let cost = if cost.is_null() { 1 } else { Cost::extract(Borrowed::from_ptr(py, cost)).ok()?.0 };
        Some((utf8(key)?, cost))
    }
}

/// `key`'s UTF-8, CPython's cache inside the object; `None` (no error set) when it has lone
/// surrogates: PyO3's method then raises the `UnicodeEncodeError`.
///
/// # Safety
/// `key` is a `str` the caller keeps alive for `'py`.
#[inline(always)]
unsafe fn utf8<'py>(key: *mut ffi::PyObject) -> Option<&'py str> {
    let mut len: ffi::Py_ssize_t = 0;
    // SAFETY: as the function's contract; the bytes live as long as the object.
    unsafe {
        let data = ffi::PyUnicode_AsUTF8AndSize(key, &mut len);
        if data.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(std::str::from_utf8_unchecked(std::slice::from_raw_parts(data.cast::<u8>(), len as usize)))
    }
}

/// The call as PyO3's descriptor takes it: `self` first, the rest as given.
///
/// # Safety
/// As [`check_sync`]'s arguments.
#[cold]
unsafe fn pyo3_call<'py>(
    py: Python<'py>,
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> PyResult<Bound<'py, PyAny>> {
    let method = PYO3_METHOD
        .get(py)
        .ok_or_else(|| pyo3::exceptions::PySystemError::new_err("Limiter.check_sync not installed"))?;
    // SAFETY: the pointers are live for the call (the caller's contract).
    unsafe {
        let arg = |i: ffi::Py_ssize_t| Borrowed::from_ptr(py, *args.offset(i)).to_owned();
        let mut positional = vec![Borrowed::from_ptr(py, slf).to_owned()];
        positional.extend((0..nargs).map(arg));
        let positional = PyTuple::new(py, positional)?;
        let keywords = if kwnames.is_null() {
            None
        } else {
            let names = Borrowed::from_ptr(py, kwnames).cast_unchecked::<PyTuple>();
            let dict = PyDict::new(py);
            for (i, name) in names.iter().enumerate() {
                dict.set_item(name, arg(nargs + i as ffi::Py_ssize_t))?;
            }
            Some(dict)
        };
        method.bind(py).call(positional, keywords.as_ref())
    }
}
