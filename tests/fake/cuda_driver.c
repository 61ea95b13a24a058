/* cuda_driver.c — a stand-in for libcuda.so.1 (fake_cuda.h), so that the
 * runtime's use of the driver — which calls a run makes, in which context,
 * on which stream — is tested where there is no GPU. Every entry point of
 * cuda_api.h's table is here and counted. Device memory is host memory
 * (copies and memsets work), a launch runs nothing. It refuses what a
 * real driver refuses where tessel's caches could go wrong: a launch on a
 * stream of another context than the current one, and dynamic shared
 * memory above the function's attribute. A function's handle is reused
 * after its module is unloaded (as a real driver's may be), its attribute
 * back at the default. One device (sm_90a, 4 SMs), one process. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake/fake_cuda.h"

struct CUctx_st {
    int id;
};

enum { FAKE_FNS = 8 };

struct CUfunc_st {
    int smem_attr; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    struct CUfunc_st *next_free;
};

struct CUmod_st {
    struct CUfunc_st *fns[FAKE_FNS];
    int nfns;
};

static struct CUctx_st primary = {1}, other = {2};
static _Thread_local CUcontext current;
static struct CUfunc_st *free_fns; /* unloaded modules' functions, handed out again */

static CUstream stream_new(CUcontext ctx)
{
    CUstream s = calloc(1, sizeof *s);
    if (s) s->ctx = ctx;
    return s;
}

static void stream_free(CUstream s) { free(s); }
static CUcontext current_ctx(void) { return current; }

fake_cuda_state fake_cuda = {.primary = &primary, .other = &other, .stream_new = stream_new,
                             .stream_free = stream_free, .current = current_ctx};

#define COUNT(field) (fake_cuda.calls[FAKE_CU_##field]++)

/* The stream a call names, resolved as the driver does: NULL (0x0) and the
 * legacy / per-thread handles (0x1, 0x2) are the current context's. */
static CUcontext stream_ctx(CUstream s)
{
    return (uintptr_t)s <= 2 ? current : s->ctx;
}

CUresult cuInit(unsigned flags)
{
    COUNT(Init);
    return flags ? FAKE_CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v)
{
    COUNT(DriverGetVersion);
    *v = 99990; /* no real driver's: nothing it compiles shares a cache key with a real one */
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
    COUNT(DeviceGetCount);
    *n = 1;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    COUNT(DeviceGet);
    *dev = ordinal;
    return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    COUNT(DeviceGetName);
    strncpy(name, "tessel fake GPU", (size_t)len);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice dev)
{
    COUNT(DeviceGetAttribute);
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 4; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 * 1024; break;
    default: return FAKE_CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    COUNT(DevicePrimaryCtxRetain);
    *ctx = &primary;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    COUNT(DevicePrimaryCtxRelease);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    COUNT(DevicePrimaryCtxReset);
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    COUNT(CtxSetCurrent);
    current = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    COUNT(CtxSynchronize);
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned nopt, CUjit_option *opts, void **vals)
{
    COUNT(ModuleLoadDataEx);
    *m = calloc(1, sizeof **m);
    return *m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuModuleUnload(CUmodule m)
{
    COUNT(ModuleUnload);
    for (int i = 0; i < m->nfns; i++) {
        m->fns[i]->next_free = free_fns;
        free_fns = m->fns[i];
    }
    free(m);
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    COUNT(ModuleGetFunction);
    if (m->nfns == FAKE_FNS) return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUfunc_st *fn = free_fns;
    if (fn) free_fns = fn->next_free;
    else if (!(fn = malloc(sizeof *fn))) return CUDA_ERROR_OUT_OF_MEMORY;
    memset(fn, 0, sizeof *fn);
    m->fns[m->nfns++] = fn;
    *f = fn;
    return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction f, int attr, int value)
{
    COUNT(FuncSetAttribute);
    if (attr != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return FAKE_CUDA_ERROR_INVALID_VALUE;
    f->smem_attr = value;
    return CUDA_SUCCESS;
}

/* Clusters: as many as two SMs each would hold (the fake device's SMs / the
 * cluster size); only a kernel's own __cluster_dims__ are modelled. */
CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *config)
{
    COUNT(OccupancyMaxActiveClusters);
    if (!n || !f || !config || config->numAttrs) return FAKE_CUDA_ERROR_INVALID_VALUE;
    *n = config->gridDimX ? 132 / (int)config->gridDimX : 0;
    return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void **params, void **extra)
{
    COUNT(LaunchKernel);
    fake_cuda.launch_ctx = current;
    fake_cuda.launch_stream = stream;
    fake_cuda.launch_shared = shared;
    if (stream_ctx(stream) != current) {
        fake_cuda.refused++;
        return FAKE_CUDA_ERROR_INVALID_HANDLE;
    }
    if (shared > 48 * 1024 && (int)shared > f->smem_attr) {
        fake_cuda.refused++;
        return FAKE_CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
    COUNT(MemAlloc);
    void *m = calloc(1, bytes);
    *p = (CUdeviceptr)(uintptr_t)m;
    return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
    COUNT(MemFree);
    free((void *)(uintptr_t)p);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    COUNT(MemcpyHtoD);
    memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    COUNT(MemcpyDtoH);
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    COUNT(MemcpyDtoD);
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n)
{
    COUNT(MemsetD8);
    memset((void *)(uintptr_t)dst, v, n);
    return CUDA_SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
    COUNT(MemsetD8Async);
    if (stream_ctx(s) != current) return FAKE_CUDA_ERROR_INVALID_HANDLE;
    memset((void *)(uintptr_t)dst, v, n);
    return CUDA_SUCCESS;
}

CUresult cuMemAllocAsync(CUdeviceptr *p, size_t bytes, CUstream s)
{
    COUNT(MemAllocAsync);
    if (stream_ctx(s) != current) return FAKE_CUDA_ERROR_INVALID_HANDLE;
    void *m = calloc(1, bytes);
    *p = (CUdeviceptr)(uintptr_t)m;
    return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    COUNT(MemFreeAsync);
    free((void *)(uintptr_t)p);
    return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s)
{
    COUNT(StreamSynchronize);
    return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx(CUstream s, CUcontext *ctx)
{
    COUNT(StreamGetCtx);
    *ctx = stream_ctx(s);
    return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream s, int *status)
{
    COUNT(StreamIsCapturing);
    *status = (uintptr_t)s <= 2 ? 0 : s->capturing;
    return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *e, unsigned flags)
{
    COUNT(EventCreate);
    *e = malloc(1);
    return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuEventRecord(CUevent e, CUstream s)
{
    COUNT(EventRecord);
    return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent e)
{
    COUNT(EventSynchronize);
    return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    COUNT(EventElapsedTime);
    *ms = 0;
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent e)
{
    COUNT(EventDestroy);
    free(e);
    return CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *gaddr, const unsigned long long *gdim,
                                const unsigned long long *gstrides, const unsigned *box, const unsigned *estrides,
                                int interleave, int swizzle, int l2promotion, int oobfill)
{
    COUNT(TensorMapEncodeTiled);
    memset(map, 0, 128);
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult r, const char **s)
{
    COUNT(GetErrorName);
    *s = r == FAKE_CUDA_ERROR_INVALID_HANDLE  ? "CUDA_ERROR_INVALID_HANDLE"
         : r == FAKE_CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE"
                                              : "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult r, const char **s)
{
    COUNT(GetErrorString);
    *s = "refused by the fake driver";
    return CUDA_SUCCESS;
}
