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

/* Queue every launch of the plan under bound sizes b on the default
 * stream. tensors[i] is the device address of def->tensors[i], dense in C
 * order with b's shape (ignored for scalars and temporaries; 0 allowed
 * for a tensor with no elements); scalars[i] a scalar parameter's value.
 * Launches over an empty box run nothing. With `check`, waits for the
 * device and turns a gather/scatter index out of range into TSL_ERR_BOUNDS
 * naming the kernel, tensor, dimension, index and extent; without it the
 * run returns as soon as everything is queued (timing loops). */
tsl_status sched_dev_run(sched_dev *x, const lang_bound *b, const rt_cuda_ptr *tensors, const double *scalars,
                         int check, tsl_diag *d);

/* Launches the last run queued (empty boxes excluded). */
int sched_dev_launches_run(const sched_dev *x);

#endif
