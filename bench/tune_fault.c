/* tune_fault.c — the tuner handed two workers (issue 16; on CUDA two
 * device ordinals, by default both 0, so one GPU serves): the candidates
 * are split between the workers, each is timed exactly once, and a fault
 * in one worker ends only its candidate while the other goes on.
 *
 *   build/tune_fault cpu          worker 1 dies of SIGSEGV on its 2nd candidate
 *   build/tune_fault cuda [I J]   worker 1 launches a kernel that writes
 *                                 through a bad pointer before its 2nd
 *                                 candidate (the context is poisoned: the
 *                                 candidate fails, the worker is replaced)
 *
 * Run it from a fresh process (a CUDA context does not survive the
 * workers' fork). Prints every candidate (who timed it, on which device)
 * and PASS or FAIL with the reason; exit 0 on PASS. Built by
 * bench/tune_gpu.sh --build (it needs libtessel.a's internal headers). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "runtime/runtime.h"
#include "tessel.h"
#include "tune/tune.h"

static const char src[] = "def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n";

static int cuda_fault;

/* In the worker process, before a candidate runs. */
static void hook(void *ctx, int worker, const char *options)
{
    (void)ctx;
    (void)options;
    static int handed; /* per worker process */
    if (worker != 1 || ++handed != 2) return;
    if (!cuda_fault) {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
        return;
    }
    /* a deliberately bad kernel on the worker's device (the primary
     * context the worker uses): the candidate that follows fails */
    const char *k = "extern \"C\" __global__ void fault(int *p) { p[threadIdx.x * 4096] = 1; }\n";
    rt_cuda_device *dev = NULL;
    void *cubin = NULL;
    size_t n = 0;
    rt_cuda_module *m = NULL;
    rt_cuda_function f = NULL;
    tsl_diag d = {0};
    if (rt_cuda_open_ordinal(*(const int *)ctx, &dev, &d) || rt_cuda_compile(k, NULL, NULL, &cubin, &n, NULL, &d) ||
        rt_cuda_module_load(dev, cubin, n, &m, &d) || rt_cuda_function_get(m, "fault", &f, &d)) {
        fprintf(stderr, "tune_fault: could not plant the fault: %s\n", sb_str(&d.msg));
        return;
    }
    rt_cuda_ptr bad = 0x10;
    void *params[] = {&bad};
    unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    tsl_status st = rt_cuda_launch(dev, f, grid, block, 0, params, &d);
    if (!st) st = rt_cuda_synchronize(dev, &d);
    fprintf(stderr, "tune_fault: worker 1 faulted the GPU: %s\n", st ? sb_str(&d.msg) : "(no error?)");
    /* dev stays open: closing would reset the context under the worker */
}

static void line(void *ctx, const char *l)
{
    (void)ctx;
    fprintf(stderr, "%s\n", l);
}

int main(int argc, char **argv)
{
    int gpu = argc > 1 && !strcmp(argv[1], "cuda");
    int devices[2] = {argc > 2 ? atoi(argv[2]) : 0, argc > 3 ? atoi(argv[3]) : 0};
    cuda_fault = gpu;
    tsl_context *ctx = tsl_context_create();
    tsl_program *p = NULL;
    if (tsl_program_compile(ctx, src, "mm.tc", NULL, &p)) {
        fprintf(stderr, "%s\n", tsl_context_error(ctx));
        return 2;
    }
    int64_t sa[2] = {97, 131}, sb[2] = {131, 75};
    DLTensor *A = tsl_tensor_alloc(TSL_DTYPE_F32, 2, sa), *B = tsl_tensor_alloc(TSL_DTYPE_F32, 2, sb);
    srand(7);
    for (int64_t i = 0; i < sa[0] * sa[1]; i++) ((float *)A->data)[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t i = 0; i < sb[0] * sb[1]; i++) ((float *)B->data)[i] = (float)rand() / RAND_MAX - 0.5f;
    tsl_args *a = tsl_args_create(p);
    interp_tensor *views = NULL, *cv = NULL;
    char **owned = NULL;
    if (tsl_args_set_tensor(a, "A", A) || tsl_args_set_tensor(a, "B", B) || api_args_views(p, a, &views) ||
        api_args_carry(p, views, &cv, &owned)) {
        fprintf(stderr, "%s\n", tsl_context_error(ctx));
        return 2;
    }
    tune_config cfg = {.target = gpu ? TSL_TARGET_CUDA : TSL_TARGET_CPU,
                       .budget_s = 240,
                       .generations = 2,
                       .population = 10,
                       .workers = 2,
                       .devices = devices,
                       .compilers = 2,
                       .candidate_ms = 20,
                       .timeout_s = 60,
                       .seed = 12345,
                       .progress = line,
                       .before_run = hook,
                       .hook_ctx = &devices[1]};
    tune_report rep;
    tsl_diag d = {0};
    tsl_status st = tune_run(&cfg, p->def, api_args_bound(a), cv, &rep, &d);
    if (st) {
        printf("FAIL: tune_run: %s\n", sb_str(&d.msg));
        return 1;
    }
    int ok = 0, faults = 0, twice = 0, after = 0, seen = 0;
    for (int i = 0; i < rep.nhist; i++) {
        const tune_entry *e = &rep.hist[i];
        printf("%-7s worker %2d device %2d timed %d %9.4f ms  %s  %s\n", e->status ? "failed" : "ok", e->worker,
               e->device, e->timed, e->ms, e->options[0] ? e->options : "(defaults)", e->msg);
        twice += e->timed > 1 || (e->status == TSL_OK) != (e->timed == 1);
        if (!e->status) {
            ok++;
            after += seen;
        } else if (e->worker == 1) {
            faults++;
            seen = 1;
        }
    }
    printf("%d candidates, %d timed: worker 0 (device %d) %d, worker 1 (device %d) %d; %d failed in worker 1; "
           "%d timed after the first fault; %.1f s\n",
           rep.nhist, ok, rep.device_of[0], rep.timed_by[0], rep.device_of[1], rep.timed_by[1], faults, after,
           rep.wall_s);
    const char *why = twice                                         ? "a candidate was timed more than once"
                      : rep.timed_by[0] < 1 || rep.timed_by[1] < 1  ? "the work was not split"
                      : faults < 1                                  ? "no fault was recorded"
                      : after < 1                                   ? "the search stopped at the fault"
                      : rep.timed_by[0] + rep.timed_by[1] != ok     ? "the workers' counts disagree"
                                                                    : NULL;
    printf("%s%s\n", why ? "FAIL: " : "PASS", why ? why : "");
    tune_report_free(&rep);
    api_args_uncarry(p, views, cv, owned, 0);
    free(views);
    tsl_args_free(a);
    tsl_tensor_free(A);
    tsl_tensor_free(B);
    tsl_program_free(p);
    tsl_context_free(ctx);
    return why ? 1 : 0;
}
