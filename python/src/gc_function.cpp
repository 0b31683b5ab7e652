#include "gc_function.h"

#include <structmember.h>

#include <stdexcept>

namespace kiln::python {

namespace {

struct GcFunction {
  PyObject ob_base;              // PyObject_HEAD
  PyObject* impl;                // owned: the pybind11 function doing the work
  PyObject* named;               // owned: where other attributes are looked up
  std::vector<PyObject*>* deps;  // borrowed: references owned by impl's captures
};

int gc_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* f = reinterpret_cast<GcFunction*>(self);
#if PY_VERSION_HEX >= 0x03090000
  Py_VISIT(Py_TYPE(self));  // heap types are owned by their instances since 3.9
#endif
  Py_VISIT(f->impl);
  Py_VISIT(f->named);
  if (f->impl && f->deps) {
    for (PyObject* d : *f->deps) Py_VISIT(d);
  }
  return 0;
}

int gc_clear(PyObject* self) {
  auto* f = reinterpret_cast<GcFunction*>(self);
  Py_CLEAR(f->impl);  // releases the captures, and so the dependencies
  Py_CLEAR(f->named);
  return 0;
}

void gc_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  gc_clear(self);
  delete reinterpret_cast<GcFunction*>(self)->deps;
  PyObject_GC_Del(self);
  Py_DECREF(type);
}

PyObject* gc_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  auto* f = reinterpret_cast<GcFunction*>(self);
  if (!f->impl) {
    PyErr_SetString(PyExc_RuntimeError, "[kiln] This transformed function was cleared.");
    return nullptr;
  }
  return PyObject_Call(f->impl, args, kwargs);
}

PyObject* gc_getattro(PyObject* self, PyObject* name) {
  auto* f = reinterpret_cast<GcFunction*>(self);
  // The user's function names and documents the transformed one (as functools.wraps).
  for (const char* own : {"__doc__", "__name__", "__qualname__", "__module__"}) {
    if (f->named && PyUnicode_CompareWithASCIIString(name, own) == 0) {
      return PyObject_GetAttr(f->named, name);
    }
  }
  PyObject* r = PyObject_GenericGetAttr(self, name);
  if (r || !f->named || !PyErr_ExceptionMatches(PyExc_AttributeError)) return r;
  PyErr_Clear();
  return PyObject_GetAttr(f->named, name);
}

PyObject* gc_repr(PyObject* self) {
  auto* f = reinterpret_cast<GcFunction*>(self);
  if (!f->named) return PyUnicode_FromString("<kiln transformed function>");
  return PyUnicode_FromFormat("<kiln transformed function of %R>", f->named);
}

PyTypeObject* gc_function_type() {
  static PyTypeObject* type = [] {
    static PyType_Slot slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(gc_traverse)},
                                  {Py_tp_clear, reinterpret_cast<void*>(gc_clear)},
                                  {Py_tp_dealloc, reinterpret_cast<void*>(gc_dealloc)},
                                  {Py_tp_call, reinterpret_cast<void*>(gc_call)},
                                  {Py_tp_getattro, reinterpret_cast<void*>(gc_getattro)},
                                  {Py_tp_repr, reinterpret_cast<void*>(gc_repr)},
                                  {0, nullptr}};
    static PyType_Spec spec = {"kiln.core.transformed_function", sizeof(GcFunction), 0,
                               Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, slots};
    auto* t = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
    if (!t) throw py::error_already_set();
    return t;  // kept for the process's life
  }();
  return type;
}

}  // namespace

py::object gc_function(py::cpp_function impl, py::object named, std::vector<py::handle> deps) {
  PyTypeObject* type = gc_function_type();
  auto* f = PyObject_GC_New(GcFunction, type);
  if (!f) throw py::error_already_set();
#if PY_VERSION_HEX < 0x03080000
  Py_INCREF(type);
#endif
  f->impl = impl.release().ptr();
  f->named = named.release().ptr();
  f->deps = new std::vector<PyObject*>;
  for (auto d : deps) f->deps->push_back(d.ptr());
  PyObject_GC_Track(reinterpret_cast<PyObject*>(f));
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(f));
}

}  // namespace kiln::python
