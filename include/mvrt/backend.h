/* Backends: one device of one vendor plugin ("cpu", "cuda:0", "hip:1").
 *
 * Plugins are shared modules libmvrt_backend_<name>.so searched in
 * $MVRT_BACKEND_PATH (':'-separated), then the directory of libmvrt itself,
 * then the install libdir. A plugin that is missing, has the wrong ABI
 * version, or whose vendor driver/device is absent is reported as
 * unavailable with the reason (every path tried) — never a crash.
 *
 * Threading: mvrt_backend_list/open/close may be called from any thread.
 * An open backend may be used from several threads at once; each stream must
 * be used by one thread at a time.
 */
#ifndef MVRT_BACKEND_H
#define MVRT_BACKEND_H

#include "mvrt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mvrt_backend mvrt_backend_t;

#define MVRT_NAME_MAX 64
#define MVRT_REASON_MAX 1024

/* One plugin as seen by the loader. */
typedef struct mvrt_backend_entry {
    char name[MVRT_NAME_MAX];       /* "cpu", "cuda", "hip" */
    int available;                   /* 1 if at least one device can be opened */
    int device_count;                /* usable devices (0 when unavailable) */
    int priority;                    /* higher wins for "auto" */
    char path[512];                  /* module that was loaded ("" if none) */
    char reason[MVRT_REASON_MAX];    /* why unavailable ("" when available) */
} mvrt_backend_entry_t;

/* Lists the known backends (cpu, cuda, hip, in that order). Writes at most
 * `capacity` entries to out_entries (may be NULL when capacity is 0) and the
 * number of known backends to *out_count. */
MVRT_API mvrt_status_t mvrt_backend_list(mvrt_backend_entry_t *out_entries,
                                         size_t capacity, size_t *out_count);

/* Opens a device. spec: "cpu", "cuda", "cuda:N", "hip", "hip:N" or "auto"
 * (the best available: cuda, then hip, then cpu). The backend must outlive
 * every buffer, stream, event and graph made from it. */
MVRT_API mvrt_status_t mvrt_backend_open(const char *spec, mvrt_backend_t **out_backend);

/* Closes a backend. NULL is a no-op. */
MVRT_API void mvrt_backend_close(mvrt_backend_t *backend);

typedef struct mvrt_device_info {
    char backend[MVRT_NAME_MAX];   /* "cpu", "cuda", "hip" */
    int device_index;
    char name[256];                /* e.g. "NVIDIA H100 80GB HBM3", CPU model */
    char vendor[64];               /* "NVIDIA", "AMD", "Intel", ... */
    uint64_t total_memory;         /* bytes */
    int warp_width;                /* 32 NVIDIA, 64 AMD CDNA, SIMD lanes (f32) on CPU */
    int compute_units;             /* SMs, CUs, or CPU threads available */
    int arch_major, arch_minor;    /* compute capability / gfx; 0 on CPU */
    /* e.g. "avx512f avx2 fma f16c"; CUDA: "sm_90 code=sm_75 tensor-cores=...
     * clusters=... dependent-launch=... fp32-gemm=...", where code=sm_XX is
     * the architecture whose paths the backend takes (the loaded code's,
     * capped by MVRT_CUDA_ARCH_CAP; tests read it) */
    char features[256];
} mvrt_device_info_t;

MVRT_API mvrt_status_t mvrt_backend_device_info(const mvrt_backend_t *backend,
                                                mvrt_device_info_t *out_info);

/* Number of worker threads the backend uses for its host work (CPU kernels).
 * n = 0 restores the default (all cores). GPU backends accept and ignore it. */
MVRT_API mvrt_status_t mvrt_backend_set_num_threads(mvrt_backend_t *backend, int n);

/* "cpu", "cuda", "hip" of an open backend; never NULL for a valid handle. */
MVRT_API const char *mvrt_backend_name(const mvrt_backend_t *backend);

#ifdef __cplusplus
}
#endif
#endif
