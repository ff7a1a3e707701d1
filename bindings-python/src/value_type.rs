//! Plain (non-GC) Python types for the small immutable values a check returns.
//!
//! Why not `#[pyclass]`: PyO3 makes every class GC-tracked (`Py_TPFLAGS_HAVE_GC`, always), so
//! each `Decision` paid for a GC allocation, tracking, untracking and its share of gen-0
//! collections, plus PyO3's generic allocation and deallocation path, although it holds only
//! integers and bools. That was ~31 ns of a ~99 ns `check_sync`. A value that refers to no
//! Python object can never be part of a reference cycle, so it needs none of that. The types here
//! are built with the stable ABI (`PyType_FromSpec`) from a [`ValueType`] description, and their
//! instances recycle memory through a small [`FreeList`], so a check neither mallocs nor frees.
//!
//! What a Python caller sees is what the pyclass gave, to the error message: read-only
//! attributes as getset descriptors with the fields' docs (so writing one says "attribute 'x'
//! of 'throttlekit.Decision' objects is not writable"), a keyword-only constructor with PyO3's
//! error texts and `__text_signature__`, `repr` as `Name(field=value, ...)`, `==`/`!=` by value
//! (`NotImplemented` for other types and for ordering), PyO3's `hash` (SipHash of the Rust
//! struct via `DefaultHasher`, -1 mapped to -2), not subclassable, no `__dict__`, no weakrefs,
//! not picklable (the default `object` reduction refuses it, as it did the pyclass).
//!
//! Soundness:
//! - Each type is created once, on first use, and a strong reference stays in its [`Statics`]
//!   for the life of the process (as PyO3 keeps its own classes), so an instance freed late in
//!   interpreter shutdown still finds its type. Every live instance also owns a reference to its
//!   type (`PyObject_Init` takes it, `dealloc` gives it back); memory parked on the freelist owns
//!   nothing.
//! - The value is `Copy`: there is no destructor to run, and nothing in an instance needs
//!   traversal.
//! - Slots that only read fields (`dealloc`, getters, `hash`, comparison) cannot panic; the rest
//!   (`__new__`, `repr`, methods) run inside [`boundary`], which turns a panic into a
//!   `PanicException` instead of unwinding into C.
//! - The freelist is only touched by a thread attached to the interpreter, and under the GIL only
//!   one such thread runs at a time. abi3 modules never load into a free-threaded build, and PyO3
//!   refuses to import its modules into a sub-interpreter, so there is one GIL and one freelist.

use std::cell::UnsafeCell;
use std::ffi::{CStr, CString, c_int, c_long, c_uint, c_void};
use std::fmt::Write as _;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use pyo3::exceptions::{PyMemoryError, PySystemError, PyTypeError};
use pyo3::ffi;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

/// A field's value as Python sees it.
#[derive(Clone, Copy)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
}

/// One field of a value type: a read-only attribute and a keyword of the constructor.
pub struct Field<T> {
    pub name: &'static CStr,
    pub doc: &'static CStr,
    pub get: fn(&T) -> Scalar,
    /// The default as the signature shows it (`"False"`); `None` when the keyword is required.
    pub default: Option<&'static str>,
}

/// A method taking no arguments (`METH_NOARGS`); `doc` starts with its text signature.
pub struct Method {
    pub name: &'static CStr,
    pub doc: &'static CStr,
    pub function: unsafe extern "C" fn(*mut ffi::PyObject, *mut ffi::PyObject) -> *mut ffi::PyObject,
}

/// A Rust value exposed to Python as an immutable, hashable, non-GC object.
pub trait ValueType: Copy + PartialEq + Hash + 'static {
    /// `module.Name`, e.g. `throttlekit.Decision`.
    const NAME: &'static CStr;
    /// The class docstring (without the signature, which comes from `FIELDS`).
    const DOC: &'static str;
    /// The fields, in constructor and `repr` order.
    const FIELDS: &'static [Field<Self>];
    /// Methods besides the slots.
    const METHODS: &'static [Method] = &[];

    /// This type's process-wide state.
    fn statics() -> &'static Statics;

    /// The value from the constructor's keywords, already matched to `FIELDS`.
    fn from_keywords(kw: &Keywords<'_>) -> PyResult<Self>;
}

/// Instance layout: the object header, then the value.
#[repr(C)]
struct Object<T> {
    base: ffi::PyObject,
    value: T,
}

/// Dead instances kept for reuse. A few dozen cover a caller that holds some decisions while
/// making more; past that, memory goes back to the allocator.
const FREELIST_CAPACITY: usize = 32;

struct FreeSlots {
    len: usize,
    objects: [*mut ffi::PyObject; FREELIST_CAPACITY],
}

/// Memory of freed instances of one type, each block sized for it. Guarded by the GIL (see the
/// module doc): every access comes from a thread attached to the interpreter.
pub struct FreeList(UnsafeCell<FreeSlots>);

// SAFETY: only used by threads attached to the interpreter, one at a time (the GIL).
unsafe impl Sync for FreeList {}

impl FreeList {
    const fn new() -> Self {
        FreeList(UnsafeCell::new(FreeSlots { len: 0, objects: [ptr::null_mut(); FREELIST_CAPACITY] }))
    }

    /// A parked block, or null when there is none.
    #[inline]
    fn pop(&self, _py: Python<'_>) -> *mut ffi::PyObject {
        // SAFETY: `_py` proves this thread is attached, so it has the only access (GIL).
        let slots = unsafe { &mut *self.0.get() };
        let Some(len) = slots.len.checked_sub(1) else { return ptr::null_mut() };
        slots.len = len;
        slots.objects.get(len).copied().unwrap_or(ptr::null_mut())
    }

    /// Parks `object`'s memory; false when the list is full (the caller frees it then).
    ///
    /// # Safety
    /// The calling thread is attached to the interpreter.
    #[inline]
    unsafe fn push(&self, object: *mut ffi::PyObject) -> bool {
        // SAFETY: the caller is attached, so it has the only access (GIL).
        let slots = unsafe { &mut *self.0.get() };
        match slots.objects.get_mut(slots.len) {
            Some(slot) => {
                *slot = object;
                slots.len += 1;
                true
            }
            None => false,
        }
    }
}

/// A value type's process-wide state: its Python type and its freelist.
pub struct Statics {
    ty: PyOnceLock<Py<PyType>>,
    free: FreeList,
}

impl Statics {
    pub const fn new() -> Self {
        Statics { ty: PyOnceLock::new(), free: FreeList::new() }
    }
}

/// `T`'s Python type, created on first use.
///
/// Always inlined: with `to_object` called from two places (`check_sync` and the log's
/// `check_sync_log`), the compiler called this instead, about 20 more instructions a
/// `check_sync` (callgrind).
#[inline(always)]
pub fn type_object<T: ValueType>(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    T::statics().ty.get_or_try_init(py, || create_type::<T>(py)).map(|ty| ty.bind(py))
}

/// `IntoPyObject` for a value type, by value (`into_pyobject!(Decision)`) or by reference
/// (`into_pyobject!(ref Decision)`): the object [`to_object`] makes. A macro because pyo3's
/// trait cannot be implemented for every `T: ValueType` outside pyo3.
macro_rules! into_pyobject {
    ($t:ty) => {
        $crate::value_type::into_pyobject!(@impl $t, |v: $t| v);
    };
    (ref $t:ty) => {
        $crate::value_type::into_pyobject!(@impl &$t, |v: &$t| *v);
    };
    (@impl $source:ty, $value:expr) => {
        impl<'py> pyo3::IntoPyObject<'py> for $source {
            type Target = pyo3::PyAny;
            type Output = pyo3::Bound<'py, pyo3::PyAny>;
            type Error = pyo3::PyErr;

            #[inline]
            fn into_pyobject(self, py: pyo3::Python<'py>) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                $crate::value_type::to_object(py, ($value)(self))
            }
        }
    };
}
pub(crate) use into_pyobject;

/// `value` as a new Python object of `T`'s type. This is the only way instances are made.
#[inline]
pub fn to_object<T: ValueType>(py: Python<'_>, value: T) -> PyResult<Bound<'_, PyAny>> {
    let tp = type_object::<T>(py)?.as_type_ptr();
    let mut object = T::statics().free.pop(py);
    if object.is_null() {
        // SAFETY: plain allocation; the size is the type's basicsize.
        object = unsafe { ffi::PyObject_Malloc(size_of::<Object<T>>()) }.cast();
        if object.is_null() {
            return Err(PyMemoryError::new_err(()));
        }
    }
    // SAFETY: `object` is an unused block of `size_of::<Object<T>>()` bytes from
    // `PyObject_Malloc`. `PyObject_Init` sets the type (taking a reference to it) and a
    // refcount of 1; the value is then written in place, and the new reference handed over.
    unsafe {
        ffi::PyObject_Init(object, tp);
        ptr::write(&raw mut (*object.cast::<Object<T>>()).value, value);
        Ok(Bound::from_owned_ptr(py, object))
    }
}

/// The value inside `object`.
///
/// # Safety
/// `object` is a live instance of `T`'s type.
#[inline]
pub unsafe fn value_of<'a, T: ValueType>(object: *mut ffi::PyObject) -> &'a T {
    unsafe { &(*object.cast::<Object<T>>()).value }
}

/// Runs the body of a raw CPython callback: a panic becomes a `PanicException` instead of
/// unwinding into C, and an error is raised, returning `failed`.
///
/// # Safety
/// Called from a slot or method that CPython invoked on an attached thread.
pub unsafe fn boundary<R>(failed: R, body: impl FnOnce(Python<'_>) -> PyResult<R>) -> R {
    // SAFETY: CPython calls slots and methods only on an attached thread, and the token does not
    // outlive this call.
    let py = unsafe { Python::assume_attached() };
    let err = match catch_unwind(AssertUnwindSafe(|| body(py))) {
        Ok(Ok(value)) => return value,
        Ok(Err(err)) => err,
        Err(payload) => PanicException::new_err((throttlekit::panic_message(&*payload).to_owned(),)),
    };
    err.restore(py);
    failed
}

/// `Name` from `module.Name`.
fn short_name<T: ValueType>() -> &'static str {
    let full = T::NAME.to_str().unwrap_or("value");
    full.rsplit('.').next().unwrap_or(full)
}

/// `(*, a, b, c=False)`, as PyO3 writes a keyword-only signature.
fn text_signature<T: ValueType>() -> String {
    let mut sig = String::from("(*");
    for field in T::FIELDS {
        let name = field.name.to_string_lossy();
        match field.default {
            Some(default) => write!(sig, ", {name}={default}"),
            None => write!(sig, ", {name}"),
        }
        .ok();
    }
    sig.push(')');
    sig
}

fn create_type<T: ValueType>(py: Python<'_>) -> PyResult<Py<PyType>> {
    // Descriptors keep pointers to their definitions, and the type lives for the whole process,
    // so the tables are leaked once, on purpose.
    let getsets: &'static mut [ffi::PyGetSetDef] = T::FIELDS
        .iter()
        .map(|field| ffi::PyGetSetDef {
            name: field.name.as_ptr(),
            get: Some(get_field::<T>),
            set: None,
            doc: field.doc.as_ptr(),
            closure: ptr::from_ref(field).cast_mut().cast(),
        })
        .chain([ffi::PyGetSetDef::default()])
        .collect::<Vec<_>>()
        .leak();
    let methods: &'static mut [ffi::PyMethodDef] = T::METHODS
        .iter()
        .map(|m| ffi::PyMethodDef {
            ml_name: m.name.as_ptr(),
            ml_meth: ffi::PyMethodDefPointer { PyCFunction: m.function },
            ml_flags: ffi::METH_NOARGS,
            ml_doc: m.doc.as_ptr(),
        })
        .chain([ffi::PyMethodDef::zeroed()])
        .collect::<Vec<_>>()
        .leak();
    // "Name(signature)\n--\n\n" is how CPython finds `__text_signature__`; it copies the doc.
    let doc = CString::new(format!("{}{}\n--\n\n{}", short_name::<T>(), text_signature::<T>(), T::DOC))?;
    let basicsize = c_int::try_from(size_of::<Object<T>>()).map_err(|_| PySystemError::new_err("type too large"))?;

    let mut slots = [
        slot(ffi::Py_tp_dealloc, dealloc::<T> as ffi::destructor as *mut c_void),
        slot(ffi::Py_tp_new, new::<T> as ffi::newfunc as *mut c_void),
        slot(ffi::Py_tp_repr, repr::<T> as ffi::reprfunc as *mut c_void),
        slot(ffi::Py_tp_hash, hash::<T> as ffi::hashfunc as *mut c_void),
        slot(ffi::Py_tp_richcompare, richcompare::<T> as ffi::richcmpfunc as *mut c_void),
        slot(ffi::Py_tp_getset, getsets.as_mut_ptr().cast()),
        slot(ffi::Py_tp_methods, methods.as_mut_ptr().cast()),
        slot(ffi::Py_tp_doc, doc.as_ptr().cast_mut().cast()),
        slot(0, ptr::null_mut()),
    ];
    let mut spec = ffi::PyType_Spec {
        // Not copied by CPython < 3.12: `NAME` is a static.
        name: T::NAME.as_ptr(),
        basicsize,
        itemsize: 0,
        // No HAVE_GC (the point), no BASETYPE (final, as the pyclass was).
        flags: ffi::Py_TPFLAGS_DEFAULT as c_uint,
        slots: slots.as_mut_ptr(),
    };
    // SAFETY: the spec and slot tables are valid for the call; what the type keeps pointing at
    // (name, getsets, methods) is 'static.
    unsafe {
        let ty = Bound::from_owned_ptr_or_err(py, ffi::PyType_FromSpec(&mut spec))?;
        Ok(ty.cast_into::<PyType>()?.unbind())
    }
}

fn slot(slot: c_int, pfunc: *mut c_void) -> ffi::PyType_Slot {
    ffi::PyType_Slot { slot, pfunc }
}

/// `tp_dealloc`: parks the memory on the freelist (or frees it) and releases the type.
unsafe extern "C" fn dealloc<T: ValueType>(object: *mut ffi::PyObject) {
    // SAFETY: CPython deallocates on an attached thread; `T` is `Copy`, so there is nothing to
    // drop, and the block came from `PyObject_Malloc`.
    unsafe {
        let tp = ffi::Py_TYPE(object);
        if !T::statics().free.push(object) {
            ffi::PyObject_Free(object.cast());
        }
        ffi::Py_DECREF(tp.cast());
    }
}

/// Getter of one field; `closure` points at its `Field`.
unsafe extern "C" fn get_field<T: ValueType>(object: *mut ffi::PyObject, closure: *mut c_void) -> *mut ffi::PyObject {
    // SAFETY: the descriptor checked that `object` is an instance; `closure` is the `&'static
    // Field<T>` this getter was registered with.
    unsafe {
        let field = &*closure.cast::<Field<T>>();
        match (field.get)(value_of::<T>(object)) {
            Scalar::Bool(b) => ffi::PyBool_FromLong(c_long::from(b)),
            Scalar::Int(i) => ffi::PyLong_FromLongLong(i),
        }
    }
}

/// `tp_hash`: PyO3's `#[pyclass(hash)]`, so hashes are unchanged.
unsafe extern "C" fn hash<T: ValueType>(object: *mut ffi::PyObject) -> ffi::Py_hash_t {
    let mut hasher = DefaultHasher::new();
    // SAFETY: CPython passes an instance of this type.
    unsafe { value_of::<T>(object) }.hash(&mut hasher);
    match hasher.finish() as ffi::Py_hash_t {
        -1 => -2,
        h => h,
    }
}

/// `tp_richcompare`: `==` and `!=` by value with the same type; `NotImplemented` otherwise.
unsafe extern "C" fn richcompare<T: ValueType>(
    a: *mut ffi::PyObject,
    b: *mut ffi::PyObject,
    op: c_int,
) -> *mut ffi::PyObject {
    // SAFETY: CPython passes this type's instance as `a` (the slot is looked up on `a`'s type);
    // `b` is read only once its type is known to be the same (the type is final).
    unsafe {
        let result = if ffi::Py_TYPE(a) != ffi::Py_TYPE(b) || !(op == ffi::Py_EQ || op == ffi::Py_NE) {
            ffi::Py_NotImplemented()
        } else if (value_of::<T>(a) == value_of::<T>(b)) == (op == ffi::Py_EQ) {
            ffi::Py_True()
        } else {
            ffi::Py_False()
        };
        ffi::Py_NewRef(result)
    }
}

/// `Name(field=value, ...)`, as the pyclass's `__repr__` wrote it.
pub fn repr_text<T: ValueType>(value: &T) -> String {
    let mut text = format!("{}(", short_name::<T>());
    for (i, field) in T::FIELDS.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let name = field.name.to_string_lossy();
        match (field.get)(value) {
            Scalar::Bool(b) => write!(text, "{sep}{name}={}", if b { "True" } else { "False" }),
            Scalar::Int(n) => write!(text, "{sep}{name}={n}"),
        }
        .ok();
    }
    text.push(')');
    text
}

/// `tp_repr`.
unsafe extern "C" fn repr<T: ValueType>(object: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython passes an instance of this type, on an attached thread.
    unsafe { boundary(ptr::null_mut(), |py| Ok(PyString::new(py, &repr_text(value_of::<T>(object))).into_ptr())) }
}

/// `tp_new`: the keyword-only constructor.
unsafe extern "C" fn new<T: ValueType>(
    _subtype: *mut ffi::PyTypeObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython passes a tuple and a dict or NULL, on an attached thread. `_subtype` is
    // this type: it is final, and `type.__new__`'s wrapper checks subtypes.
    unsafe {
        boundary(ptr::null_mut(), |py| {
            let args = Bound::from_borrowed_ptr(py, args).cast_into::<PyTuple>()?;
            let kwargs = Bound::from_borrowed_ptr_or_opt(py, kwargs).map(|k| k.cast_into::<PyDict>()).transpose()?;
            let keywords = Keywords::parse::<T>(&args, kwargs.as_ref())?;
            Ok(to_object(py, T::from_keywords(&keywords)?)?.into_ptr())
        })
    }
}

/// The constructor's keywords, matched to the fields (PyO3's rules and messages).
pub struct Keywords<'py> {
    names: Vec<&'static CStr>,
    values: Vec<Option<Bound<'py, PyAny>>>,
}

impl<'py> Keywords<'py> {
    fn parse<T: ValueType>(args: &Bound<'py, PyTuple>, kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Self> {
        let func = format!("{}.__new__()", short_name::<T>());
        let given = args.len();
        if given > 0 {
            let was = if given == 1 { "was" } else { "were" };
            return Err(PyTypeError::new_err(format!("{func} takes 0 positional arguments but {given} {was} given")));
        }
        let names: Vec<&'static CStr> = T::FIELDS.iter().map(|f| f.name).collect();
        let mut values: Vec<Option<Bound<'py, PyAny>>> = vec![None; names.len()];
        for (key, value) in kwargs.into_iter().flatten() {
            let key_str = key.cast::<PyString>().ok().and_then(|s| s.to_str().ok().map(str::to_owned));
            let slot = key_str.and_then(|k| names.iter().position(|n| n.to_bytes() == k.as_bytes()));
            match slot.and_then(|i| values.get_mut(i)) {
                Some(v) => *v = Some(value),
                None => return Err(PyTypeError::new_err(format!("{func} got an unexpected keyword argument '{key}'"))),
            }
        }
        let missing: Vec<String> = T::FIELDS
            .iter()
            .zip(&values)
            .filter(|(field, value)| field.default.is_none() && value.is_none())
            .map(|(field, _)| format!("'{}'", field.name.to_string_lossy()))
            .collect();
        if !missing.is_empty() {
            let noun = if missing.len() == 1 { "argument" } else { "arguments" };
            let list = match missing.as_slice() {
                [one] => one.clone(),
                [a, b] => format!("{a} and {b}"),
                [init @ .., last] => format!("{}, and {last}", init.join(", ")),
                [] => String::new(),
            };
            return Err(PyTypeError::new_err(format!(
                "{func} missing {} required keyword {noun}: {list}",
                missing.len()
            )));
        }
        Ok(Keywords { names, values })
    }

    /// Keyword `i` converted with PyO3's own extraction, or `None` when it was not given. A
    /// failure carries PyO3's note, "while processing 'name'".
    pub fn get<V>(&self, i: usize) -> PyResult<Option<V>>
    where
        V: for<'a> FromPyObject<'a, 'py>,
    {
        let Some(Some(value)) = self.values.get(i) else { return Ok(None) };
        value.extract::<V>().map(Some).map_err(|err| {
            let err: PyErr = err.into();
            let py = value.py();
            let name = self.names.get(i).map(|n| n.to_string_lossy()).unwrap_or_default();
            let _ = err.value(py).call_method1("add_note", (format!("while processing '{name}'"),));
            err
        })
    }

    /// Keyword `i`, which `parse` already found present.
    pub fn required<V>(&self, i: usize) -> PyResult<V>
    where
        V: for<'a> FromPyObject<'a, 'py>,
    {
        self.get(i)?.ok_or_else(|| PySystemError::new_err("a required keyword was not matched"))
    }
}
