/* The allocation layer: one process-wide counter in front of every host
 * allocation of libmvrt and every device allocation the runtime asks a
 * backend for, and the fault-injection hook of include/mvrt/debug.h.
 *
 * The counter always runs (one relaxed atomic increment per allocation, a
 * cost far below that of the allocation itself); a failure is injected only
 * when an allocation's number equals the armed position. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

/* Allocations since the last mvrt_debug_fail_allocation, and the number of
 * the one to fail (0: none). */
static atomic_int_least64_t alloc_count;
static atomic_int_least64_t alloc_fail_at;

void mvrt_debug_fail_allocation(int64_t n)
{
    /* Disarm first so that no allocation racing with this call fails at a
     * position counted from the old start. */
    atomic_store(&alloc_fail_at, 0);
    atomic_store(&alloc_count, 0);
    atomic_store(&alloc_fail_at, n > 0 ? n : 0);
}

int64_t mvrt_debug_allocation_count(void)
{
    return (int64_t)atomic_load(&alloc_count);
}

/* Counts one allocation; returns its number when it is the one to fail,
 * else 0. */
static int64_t injected_failure(void)
{
    int64_t n = (int64_t)atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed) + 1;
    int64_t at = (int64_t)atomic_load_explicit(&alloc_fail_at, memory_order_relaxed);
    return at > 0 && n == at ? n : 0;
}

void *mvrt_rt_malloc(size_t size)
{
    return injected_failure() ? NULL : malloc(size);
}

void *mvrt_rt_calloc(size_t count, size_t size)
{
    return injected_failure() ? NULL : calloc(count, size);
}

void *mvrt_rt_realloc(void *ptr, size_t size)
{
    /* Like a failing realloc: NULL, and ptr is left as it was. */
    return injected_failure() ? NULL : realloc(ptr, size);
}

mvrt_status_t mvrt_rt_device_alloc(const char *fn, mvrt_backend_t *backend, size_t bytes,
                                   void **out_ptr)
{
    int64_t n = injected_failure();
    if (n)
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY,
                              "%s: cannot allocate %zu bytes of %s device memory (allocation #%lld "
                              "failed by mvrt_debug_fail_allocation)",
                              fn, bytes, backend->name, (long long)n);
    return backend->vt->mem_alloc(backend->device, bytes, out_ptr);
}
