/* fake_cuda.h — what the stand-in driver (tests/fake/cuda_driver.c, built
 * as build/libfakecuda.so) lets a test see and steer. A test loads it as
 * the driver (TESSEL_LIBCUDA, in a process of its own: the runtime opens
 * the driver once per process) and reaches this state through
 * dlsym(dlopen(path, RTLD_NOLOAD), "fake_cuda"). Nothing runs on a GPU:
 * device memory is host memory, a launch runs no code. */
#ifndef TSL_FAKE_CUDA_H
#define TSL_FAKE_CUDA_H

#include "runtime/cuda_api.h"

/* One counter per driver entry point the runtime resolves (cuda_api.h). */
enum {
#define X(field, sym, ret, params) FAKE_CU_##field,
    CUDA_DRIVER_FUNCS(X)
#undef X
    FAKE_CU_N
};

/* A stream: its context (a test may change it, as a destroyed stream's
 * handle reused by another context would) and whether it is capturing. */
struct CUstream_st {
    CUcontext ctx;
    int capturing;
};

typedef struct fake_cuda_state {
    long calls[FAKE_CU_N];         /* by FAKE_CU_<field> */
    CUcontext primary, other;      /* device 0's primary context; a user's other one */
    CUcontext launch_ctx;          /* the calling thread's current context at the last launch */
    CUstream launch_stream;        /* the last launch's stream */
    unsigned launch_shared;        /* ... and dynamic shared bytes */
    /* the driver's own refusals, as a real one gives them: a launch on a
     * stream of another context than the current one
     * (CUDA_ERROR_INVALID_HANDLE), or with more dynamic shared memory than
     * the function's attribute allows (CUDA_ERROR_INVALID_VALUE) */
    long refused;
    CUstream (*stream_new)(CUcontext ctx);
    void (*stream_free)(CUstream s);
    CUcontext (*current)(void); /* the calling thread's current context */
} fake_cuda_state;

enum { FAKE_CUDA_ERROR_INVALID_HANDLE = 400, FAKE_CUDA_ERROR_INVALID_VALUE = 1 };

#endif
