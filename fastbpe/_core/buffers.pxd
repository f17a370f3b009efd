# Lending a C++ buffer to NumPy through the buffer protocol (an owner's __getbuffer__).
from cpython.buffer cimport PyBUF_FORMAT


cdef inline void lend_vector(Py_buffer* view, object owner, void* data, Py_ssize_t* shape,
                             Py_ssize_t itemsize, char* fmt, int flags):
    """Fill ``view`` for ``owner``: a writable 1-d C-contiguous buffer of ``shape[0]`` items of
    ``itemsize`` bytes at ``data`` (``fmt``: their struct format, given when asked for).
    ``shape`` must live as long as the owner (a field of it)."""
    view.buf = data
    view.obj = owner
    view.len = shape[0] * itemsize
    view.readonly = 0
    view.itemsize = itemsize
    view.format = fmt if flags & PyBUF_FORMAT else NULL
    view.ndim = 1
    view.shape = shape
    view.strides = NULL
    view.suboffsets = NULL
    view.internal = NULL
