/* Prints the offsets profilers/system/python_runtime.cpp keeps for this CPython, read from its own
 * headers (Py_BUILD_CORE), one "name value" line each, for tests/unit/python_runtime_test.cpp. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#include <stddef.h>
#include <stdio.h>

#define PRINT(name, value) printf("%s %zu\n", name, (size_t)(value))

int main(void) {
  PRINT("runtime_interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
  PRINT("interpreter_threads_head", offsetof(PyInterpreterState, threads.head));
  PRINT("thread_next", offsetof(PyThreadState, next));
  PRINT("thread_pthread", offsetof(PyThreadState, thread_id));
  PRINT("thread_frame", offsetof(PyThreadState, cframe));
  PRINT("cframe_current_frame", offsetof(_PyCFrame, current_frame));
  PRINT("frame_code", offsetof(_PyInterpreterFrame, f_code));
  PRINT("frame_previous", offsetof(_PyInterpreterFrame, previous));
  PRINT("frame_instruction", offsetof(_PyInterpreterFrame, prev_instr));
  PRINT("frame_is_entry", offsetof(_PyInterpreterFrame, is_entry));
  PRINT("object_type", offsetof(PyObject, ob_type));
  PRINT("code_filename", offsetof(PyCodeObject, co_filename));
  PRINT("code_name", offsetof(PyCodeObject, co_name));
  PRINT("code_qualname", offsetof(PyCodeObject, co_qualname));
  PRINT("code_first_line", offsetof(PyCodeObject, co_firstlineno));
  PRINT("unicode_length", offsetof(PyASCIIObject, length));
  PRINT("unicode_state", offsetof(PyASCIIObject, state));
  PRINT("unicode_ascii_data", sizeof(PyASCIIObject));
  PRINT("unicode_compact_data", sizeof(PyCompactUnicodeObject));
  return 0;
}
