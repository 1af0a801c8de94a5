/* Run-time choice of the CPU scan kernels: the best instruction set the CPU
 * (and OS) supports, unless a test or benchmark forces one. */
#include <string.h>
#if defined(MVRT_SCAN_HAVE_X86)
#include <cpuid.h>
#endif

#include "scan_cpu.h"
#include "scan_cpu_complex.h"
#include "scan_cpu_internal.h"

typedef struct mvrt_cpu_scan_isa {
    const char *name;
    int lanes;
    void (*fwd)(const mvrt_scan_params_t *, int);
    size_t (*ws)(const mvrt_scan_params_t *, int);
    void (*bwd)(const mvrt_scan_params_t *, int);
} mvrt_cpu_scan_isa_t;

static const mvrt_cpu_scan_isa_t mvrt_cpu_scan_isas[] = {
#if defined(MVRT_SCAN_HAVE_X86)
    {"avx512", 16, mvrt_cpu_scan_fwd_avx512, mvrt_cpu_scan_bwd_ws_avx512, mvrt_cpu_scan_bwd_avx512},
    {"avx2", 8, mvrt_cpu_scan_fwd_avx2, mvrt_cpu_scan_bwd_ws_avx2, mvrt_cpu_scan_bwd_avx2},
#endif
    {"generic", 4, mvrt_cpu_scan_fwd_generic, mvrt_cpu_scan_bwd_ws_generic, mvrt_cpu_scan_bwd_generic},
};
#define MVRT_CPU_SCAN_NISA (sizeof mvrt_cpu_scan_isas / sizeof mvrt_cpu_scan_isas[0])

#if defined(MVRT_SCAN_HAVE_X86)
/* F16C (CPUID.1:ECX bit 29); not every compiler's __builtin_cpu_supports
 * knows it. The OS-state (XSAVE/AVX) checks come with "avx2" below. */
static int mvrt_cpu_scan_has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#endif

static int mvrt_cpu_scan_supported(const mvrt_cpu_scan_isa_t *isa)
{
#if defined(MVRT_SCAN_HAVE_X86)
    __builtin_cpu_init();
    /* The avx512 build also uses AVX2/FMA/F16C instructions. */
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               mvrt_cpu_scan_has_f16c();
    if (!strcmp(isa->name, "avx512"))
        return avx2 && __builtin_cpu_supports("avx512f");
    if (!strcmp(isa->name, "avx2"))
        return avx2;
#endif
    return !strcmp(isa->name, "generic");
}

/* Chosen lazily; a benign race (every thread computes the same value). */
static const mvrt_cpu_scan_isa_t *mvrt_cpu_scan_current;

static const mvrt_cpu_scan_isa_t *mvrt_cpu_scan_get(void)
{
    const mvrt_cpu_scan_isa_t *cur = __atomic_load_n(&mvrt_cpu_scan_current, __ATOMIC_ACQUIRE);
    if (cur)
        return cur;
    for (size_t i = 0; i < MVRT_CPU_SCAN_NISA; i++) {
        if (mvrt_cpu_scan_supported(&mvrt_cpu_scan_isas[i])) {
            cur = &mvrt_cpu_scan_isas[i];
            break;
        }
    }
    __atomic_store_n(&mvrt_cpu_scan_current, cur, __ATOMIC_RELEASE);
    return cur;
}

const char *mvrt_cpu_scan_isa(void) { return mvrt_cpu_scan_get()->name; }

int mvrt_cpu_scan_lanes(void) { return mvrt_cpu_scan_get()->lanes; }

int mvrt_cpu_scan_force_isa(const char *isa)
{
    if (!isa) {
        __atomic_store_n(&mvrt_cpu_scan_current, NULL, __ATOMIC_RELEASE);
        mvrt_cpu_scan_get();
        return 0;
    }
    for (size_t i = 0; i < MVRT_CPU_SCAN_NISA; i++) {
        if (!strcmp(mvrt_cpu_scan_isas[i].name, isa)) {
            if (!mvrt_cpu_scan_supported(&mvrt_cpu_scan_isas[i]))
                return -1;
            __atomic_store_n(&mvrt_cpu_scan_current, &mvrt_cpu_scan_isas[i], __ATOMIC_RELEASE);
            return 0;
        }
    }
    return -1;
}

void mvrt_cpu_scan_fwd(const mvrt_scan_params_t *p, int num_threads)
{
    if (p->complex_a)
        mvrt_cpu_scan_fwd_complex(p, num_threads);
    else
        mvrt_cpu_scan_get()->fwd(p, num_threads);
}

/* The largest need of any ISA this CPU runs, so that a size queried
 * before mvrt_cpu_scan_force_isa (which takes only those) stays valid
 * after it. An ISA the CPU lacks is never asked: its size function is
 * compiled for that ISA too, and a compiler may use its instructions
 * there (clang's AVX-512 build did: SIGILL on AVX2-only CPUs). */
size_t mvrt_cpu_scan_bwd_workspace_size(const mvrt_scan_params_t *p, int num_threads)
{
    if (p->complex_a)
        return mvrt_cpu_scan_bwd_ws_complex(p, num_threads);
    size_t best = 0;
    for (size_t i = 0; i < MVRT_CPU_SCAN_NISA; i++) {
        if (!mvrt_cpu_scan_supported(&mvrt_cpu_scan_isas[i]))
            continue;
        size_t s = mvrt_cpu_scan_isas[i].ws(p, num_threads);
        best = s > best ? s : best;
    }
    return best;
}

void mvrt_cpu_scan_bwd(const mvrt_scan_params_t *p, int num_threads)
{
    if (p->complex_a)
        mvrt_cpu_scan_bwd_complex(p, num_threads);
    else
        mvrt_cpu_scan_get()->bwd(p, num_threads);
}
