/* cuda_api.h — the few CUDA driver and NVRTC types, constants and function
 * signatures the CUDA runtime uses, declared here so that tessel builds
 * with no CUDA toolkit installed (cuda.h and nvrtc.h are never included).
 * Values are the driver API's ABI (CUDA 12/13 headers); both libraries are
 * opened with dlopen and these pointers filled by name with dlsym. The
 * driver's versioned entry points (`_v2`) are the ones its header maps the
 * plain names to; cuda.c resolves those exact names. */
#ifndef TSL_CUDA_API_H
#define TSL_CUDA_API_H

#include <stddef.h>

typedef int CUresult;                 /* 0 = CUDA_SUCCESS */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef int CUjit_option;
/* cuLaunchKernelEx's configuration (CUlaunchConfig): here only for
 * cuOccupancyMaxActiveClusters, with no attributes (a kernel's
 * __cluster_dims__ give its cluster). */
typedef struct CUlaunchConfig {
    unsigned gridDimX, gridDimY, gridDimZ;
    unsigned blockDimX, blockDimY, blockDimZ;
    unsigned sharedMemBytes;
    CUstream hStream;
    void *attrs;
    unsigned numAttrs;
} CUlaunchConfig;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_ERROR_ASSERT = 710,
    CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    CUDA_ERROR_MISALIGNED_ADDRESS = 716,
    CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
    CUDA_ERROR_INVALID_PC = 718,
    CUDA_ERROR_LAUNCH_FAILED = 719,
};

/* CUdevice_attribute values used */
enum {
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

/* CUjit_option: a buffer for the loader's error log, and its size */
enum { CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 };
/* CUfunction_attribute */
enum { CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 };
/* CUtensorMapDataType, CUtensorMapSwizzle, CUtensorMapL2promotion */
enum {
    CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
    CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1,
    CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2,
    CU_TENSOR_MAP_DATA_TYPE_INT32 = 3,
    CU_TENSOR_MAP_DATA_TYPE_UINT64 = 4,
    CU_TENSOR_MAP_DATA_TYPE_INT64 = 5,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT64 = 8,
    CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
};
enum { CU_TENSOR_MAP_SWIZZLE_NONE = 0, CU_TENSOR_MAP_SWIZZLE_32B, CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B };
enum { CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2 };
/* CUevent_flags */
enum { CU_EVENT_DEFAULT = 0 };

typedef int nvrtcResult; /* 0 = NVRTC_SUCCESS */
typedef struct _nvrtcProgram *nvrtcProgram;
enum { NVRTC_SUCCESS = 0, NVRTC_ERROR_COMPILATION = 6 };

/* One row per entry point: X(field, exported symbol, return type, params). */
#define CUDA_DRIVER_FUNCS(X) \
    X(Init, "cuInit", CUresult, (unsigned flags)) \
    X(DriverGetVersion, "cuDriverGetVersion", CUresult, (int *version)) \
    X(DeviceGetCount, "cuDeviceGetCount", CUresult, (int *count)) \
    X(DeviceGet, "cuDeviceGet", CUresult, (CUdevice * dev, int ordinal)) \
    X(DeviceGetName, "cuDeviceGetName", CUresult, (char *name, int len, CUdevice dev)) \
    X(DeviceGetAttribute, "cuDeviceGetAttribute", CUresult, (int *v, int attr, CUdevice dev)) \
    X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult, (CUcontext * ctx, CUdevice dev)) \
    X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult, (CUdevice dev)) \
    X(DevicePrimaryCtxReset, "cuDevicePrimaryCtxReset_v2", CUresult, (CUdevice dev)) \
    X(CtxSetCurrent, "cuCtxSetCurrent", CUresult, (CUcontext ctx)) \
    X(CtxSynchronize, "cuCtxSynchronize", CUresult, (void)) \
    X(ModuleLoadDataEx, "cuModuleLoadDataEx", CUresult,                                              \
      (CUmodule * m, const void *image, unsigned nopt, CUjit_option *opts, void **vals)) \
    X(ModuleUnload, "cuModuleUnload", CUresult, (CUmodule m)) \
    X(ModuleGetFunction, "cuModuleGetFunction", CUresult, (CUfunction * f, CUmodule m, const char *name)) \
    X(FuncSetAttribute, "cuFuncSetAttribute", CUresult, (CUfunction f, int attr, int value)) \
    X(OccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters", CUresult,                        \
      (int *n, CUfunction f, const CUlaunchConfig *config)) \
    X(LaunchKernel, "cuLaunchKernel", CUresult,                                                      \
      (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,      \
       unsigned bz, unsigned shared, CUstream stream, void **params, void **extra)) \
    X(MemAlloc, "cuMemAlloc_v2", CUresult, (CUdeviceptr * p, size_t bytes)) \
    X(MemFree, "cuMemFree_v2", CUresult, (CUdeviceptr p)) \
    X(MemcpyHtoD, "cuMemcpyHtoD_v2", CUresult, (CUdeviceptr dst, const void *src, size_t n)) \
    X(MemcpyDtoH, "cuMemcpyDtoH_v2", CUresult, (void *dst, CUdeviceptr src, size_t n)) \
    X(MemcpyDtoD, "cuMemcpyDtoD_v2", CUresult, (CUdeviceptr dst, CUdeviceptr src, size_t n)) \
    X(MemsetD8, "cuMemsetD8_v2", CUresult, (CUdeviceptr dst, unsigned char v, size_t n)) \
    X(MemsetD8Async, "cuMemsetD8Async", CUresult, (CUdeviceptr dst, unsigned char v, size_t n, CUstream s)) \
    X(MemAllocAsync, "cuMemAllocAsync", CUresult, (CUdeviceptr * p, size_t bytes, CUstream s)) \
    X(MemFreeAsync, "cuMemFreeAsync", CUresult, (CUdeviceptr p, CUstream s)) \
    X(StreamSynchronize, "cuStreamSynchronize", CUresult, (CUstream s)) \
    X(StreamGetCtx, "cuStreamGetCtx", CUresult, (CUstream s, CUcontext * ctx)) \
    X(StreamIsCapturing, "cuStreamIsCapturing", CUresult, (CUstream s, int *status)) \
    X(EventCreate, "cuEventCreate", CUresult, (CUevent * e, unsigned flags)) \
    X(EventRecord, "cuEventRecord", CUresult, (CUevent e, CUstream stream)) \
    X(EventSynchronize, "cuEventSynchronize", CUresult, (CUevent e)) \
    X(EventElapsedTime, "cuEventElapsedTime", CUresult, (float *ms, CUevent a, CUevent b)) \
    X(EventDestroy, "cuEventDestroy_v2", CUresult, (CUevent e)) \
    X(TensorMapEncodeTiled, "cuTensorMapEncodeTiled", CUresult,                                   \
      (void *map, int dtype, unsigned rank, void *gaddr, const unsigned long long *gdim,            \
       const unsigned long long *gstrides, const unsigned *box, const unsigned *estrides, int interleave, \
       int swizzle, int l2promotion, int oobfill)) \
    X(GetErrorName, "cuGetErrorName", CUresult, (CUresult r, const char **s)) \
    X(GetErrorString, "cuGetErrorString", CUresult, (CUresult r, const char **s))

#define NVRTC_FUNCS(X) \
    X(Version, "nvrtcVersion", nvrtcResult, (int *major, int *minor)) \
    X(GetErrorString, "nvrtcGetErrorString", const char *, (nvrtcResult r)) \
    X(CreateProgram, "nvrtcCreateProgram", nvrtcResult,                                                 \
      (nvrtcProgram * p, const char *src, const char *name, int nheaders,                  \
       const char *const *headers, const char *const *include_names)) \
    X(CompileProgram, "nvrtcCompileProgram", nvrtcResult, (nvrtcProgram p, int nopt, const char *const *opts)) \
    X(GetProgramLogSize, "nvrtcGetProgramLogSize", nvrtcResult, (nvrtcProgram p, size_t *n)) \
    X(GetProgramLog, "nvrtcGetProgramLog", nvrtcResult, (nvrtcProgram p, char *log)) \
    X(GetCUBINSize, "nvrtcGetCUBINSize", nvrtcResult, (nvrtcProgram p, size_t *n)) \
    X(GetCUBIN, "nvrtcGetCUBIN", nvrtcResult, (nvrtcProgram p, char *cubin)) \
    X(GetPTXSize, "nvrtcGetPTXSize", nvrtcResult, (nvrtcProgram p, size_t *n)) \
    X(GetPTX, "nvrtcGetPTX", nvrtcResult, (nvrtcProgram p, char *ptx)) \
    X(DestroyProgram, "nvrtcDestroyProgram", nvrtcResult, (nvrtcProgram * p))

#endif
