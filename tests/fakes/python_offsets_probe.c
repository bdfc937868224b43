/* Prints the offsets profilers/system/python_runtime.cpp keeps for the CPython whose headers it is
 * built against (Py_BUILD_CORE), one "name value" line each, for
 * tests/unit/python_runtime_test.cpp, after the interpreter whose headers they are. Fields a
 * version lacks print as -1. */
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_MINOR_VERSION <= 10
#include <frameobject.h>
#else
#include <internal/pycore_frame.h>
#endif
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#include <stddef.h>
#include <stdio.h>

#define PRINT(name, value) printf("%s %ld\n", name, (long)(value))

int main(void) {
  printf("interpreter %s\n", PYTHON_INTERPRETER);
  PRINT("minor", PY_MINOR_VERSION);
  PRINT("runtime_interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_MINOR_VERSION <= 10
  PRINT("interpreter_threads_head", offsetof(PyInterpreterState, tstate_head));
#else
  PRINT("interpreter_threads_head", offsetof(PyInterpreterState, threads.head));
#endif
  PRINT("thread_next", offsetof(PyThreadState, next));
  PRINT("thread_pthread", offsetof(PyThreadState, thread_id));
#if PY_MINOR_VERSION <= 10
  PRINT("thread_frame", offsetof(PyThreadState, frame));
  PRINT("cframe_current_frame", -1);
  PRINT("frame_code", offsetof(PyFrameObject, f_code));
  PRINT("frame_previous", offsetof(PyFrameObject, f_back));
  PRINT("frame_instruction", offsetof(PyFrameObject, f_lasti));
  PRINT("frame_is_entry", -1);
  PRINT("frame_owner", -1);
  PRINT("every_frame_is_entry", 1);
#else
#if PY_MINOR_VERSION <= 12
  PRINT("thread_frame", offsetof(PyThreadState, cframe));
  PRINT("cframe_current_frame", offsetof(_PyCFrame, current_frame));
#else
  PRINT("thread_frame", offsetof(PyThreadState, current_frame));
  PRINT("cframe_current_frame", -1);
#endif
#if PY_MINOR_VERSION <= 12
  PRINT("frame_code", offsetof(_PyInterpreterFrame, f_code));
  PRINT("frame_instruction", offsetof(_PyInterpreterFrame, prev_instr));
#else
  PRINT("frame_code", offsetof(_PyInterpreterFrame, f_executable));
  PRINT("frame_instruction", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
  PRINT("frame_previous", offsetof(_PyInterpreterFrame, previous));
#if PY_MINOR_VERSION == 11
  PRINT("frame_is_entry", offsetof(_PyInterpreterFrame, is_entry));
  PRINT("frame_owner", -1);
#else
  PRINT("frame_is_entry", -1);
  PRINT("frame_owner", offsetof(_PyInterpreterFrame, owner));
  PRINT("owned_by_c_stack", FRAME_OWNED_BY_CSTACK);
#endif
  PRINT("every_frame_is_entry", 0);
#endif
  PRINT("object_type", offsetof(PyObject, ob_type));
  PRINT("code_filename", offsetof(PyCodeObject, co_filename));
  PRINT("code_name", offsetof(PyCodeObject, co_name));
#if PY_MINOR_VERSION <= 10
  PRINT("code_qualname", -1);
#else
  PRINT("code_qualname", offsetof(PyCodeObject, co_qualname));
#endif
  PRINT("code_first_line", offsetof(PyCodeObject, co_firstlineno));
  PRINT("unicode_length", offsetof(PyASCIIObject, length));
  PRINT("unicode_state", offsetof(PyASCIIObject, state));
  PRINT("unicode_ascii_data", sizeof(PyASCIIObject));
  PRINT("unicode_compact_data", sizeof(PyCompactUnicodeObject));
  return 0;
}
