/* run_device.h — a launch plan (sched.h) run on a CUDA device with
 * device-resident tensors: every kernel of the plan generated (codegen/cuda),
 * compiled once by NVRTC for the device's own arch (the runtime's cubin
 * cache makes a second process compile nothing) and loaded once; then any
 * number of runs, each a sequence of launches on device addresses only —
 * no host round trip between kernels. Temporaries live on the device
 * (zeroed per run, as the interpreter has them); the caller owns the
 * tensors' device memory (one copy in, one copy out: src/api/compiled_cuda.c;
 * the GPU benchmark keeps them resident across runs). */
#ifndef TSL_SCHED_RUN_DEVICE_H
#define TSL_SCHED_RUN_DEVICE_H

#include "runtime/runtime.h"
#include "sched/sched.h"

typedef struct sched_dev sched_dev;

/* Generate, compile and load every kernel of p for dev (p and dev are kept,
 * not owned: both must outlive the result). Errors: the generator's
 * (naming the instruction), TSL_ERR_COMPILE (NVRTC's log), the driver's. */
tsl_status sched_dev_create(const sched_plan *p, rt_cuda_device *dev, sched_dev **out, tsl_diag *d);
void sched_dev_free(sched_dev *x); /* NULL allowed */

/* Memory for a run's temporaries, per run (device tensors on a caller's
 * stream): alloc gives `bytes` of device memory usable in stream order on
 * the device's current stream (0 on failure), free returns it in stream
 * order. */
typedef struct sched_dev_mem {
    rt_cuda_ptr (*alloc)(void *user, size_t bytes);
    void (*free)(void *user, rt_cuda_ptr p);
    void *user;
} sched_dev_mem;

/* Queue every launch of the plan under bound sizes b on the device's
 * stream (rt_cuda_set_stream; the legacy default stream unless set). With
 * mem NULL the plan keeps its temporaries across runs (grown when sizes
 * grow); with mem each run takes them from mem and gives them back once
 * its launches are queued (nothing is shared between runs on different
 * streams, and nothing allocates outside the stream: graph capture works).
 * Temporaries are zeroed on the stream either way. tensors[i] is the device address of def->tensors[i], dense in C
 * order with b's shape (ignored for scalars and temporaries; 0 allowed
 * for a tensor with no elements); scalars[i] a scalar parameter's value.
 * Launches over an empty box run nothing. With `check`, waits for the
 * device and turns a gather/scatter index out of range into TSL_ERR_BOUNDS
 * naming the kernel, tensor, dimension, index and extent (waiting on the
 * device's stream); without it the run returns as soon as everything is
 * queued (timing loops, asynchronous device runs: an index out of range
 * then reads 0 and is not reported). */
tsl_status sched_dev_run(sched_dev *x, const lang_bound *b, const rt_cuda_ptr *tensors, const double *scalars,
                         int check, const sched_dev_mem *mem, tsl_diag *d);

/* Launches the last run queued (empty boxes excluded). */
int sched_dev_launches_run(const sched_dev *x);

#endif
