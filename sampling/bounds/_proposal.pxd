"""Declarations of the compiled WMB proposal kernel (cimported by ``_aobfs.pyx``)."""

cdef const double** pin_tables(list keep) except NULL

cdef class ProposalKernel:
    cdef const double** tab
    cdef object _keep
    cdef const long long[::1] cards, pre, pos, size
    cdef const long long[::1] comp_ptr, comp_kstride, comp_vptr, comp_vars, comp_strides
    cdef const double[::1] comp_lw
    cdef const long long[::1] bucket_ptr, bucket_fac, f_off, f_vptr, f_vars, f_strides
    cdef const double[::1] f_flat
    cdef double[::1] row, ex
    cdef int max_card
    cdef void _draw(self, const long long* starts, Py_ssize_t n_starts, long long* x,
                    const double* uniforms, double* out_q, double* out_g,
                    bint stop_at_zero) noexcept
