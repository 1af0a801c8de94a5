/* mvrt debug hooks: allocation fault injection, for tests only.
 *
 * Every allocation libmvrt itself makes goes through one counter: host
 * memory (object records, graph nodes, model weights staged on the host,
 * safetensors files and headers) and device memory the runtime asks a
 * backend for (mvrt_buffer_alloc, graph workspaces, model weights, the
 * temporary workspace of mvrt_selective_scan_bwd). Allocations a backend
 * plugin makes internally (its streams, events, threads) are not counted.
 *
 * Contract:
 *   - The counter and the armed position are process-wide (shared by all
 *     threads) and kept in C11 atomics, so the calls are thread-safe; which
 *     thread's allocation is "the n-th" is only deterministic when a single
 *     thread uses mvrt while the hook is armed.
 *   - An injected failure behaves exactly like a real one: the public call
 *     that needed the memory returns MVRT_ERR_OUT_OF_MEMORY with a message in
 *     mvrt_last_error(), frees whatever it had allocated, writes no output,
 *     and leaves every object passed to it usable.
 *   - Only the n-th allocation fails; later ones succeed again.
 *   - Not meant for production: the counting costs one atomic increment per
 *     allocation whether armed or not.
 */
#ifndef MVRT_DEBUG_H
#define MVRT_DEBUG_H

#include <stdint.h>

#include "mvrt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Resets the allocation counter to 0 and arms the hook: the n-th allocation
 * (host or device, counted from 1) made by the runtime from now on fails.
 * n <= 0 disarms (the counter is still reset and keeps counting). */
MVRT_API void mvrt_debug_fail_allocation(int64_t n);

/* Allocations counted (made or failed) since the last call of
 * mvrt_debug_fail_allocation (or since the library was loaded). A run that
 * ends with a count below the armed n met no injected failure. */
MVRT_API int64_t mvrt_debug_allocation_count(void);

#ifdef __cplusplus
}
#endif
#endif
