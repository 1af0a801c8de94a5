/* Plugin loading, one scenario per process (the registry caches per
 * process): test_plugin_loading SCENARIO, with MVRT_BACKEND_PATH set by
 * CTest to directories holding fake modules (fake_plugin.c). Checks the
 * reason text of mvrt_backend_list (every path tried, what happened there)
 * and what mvrt_backend_open returns. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mvrt_plugin.h"
#include "test_util.h"

#ifndef MVRT_TEST_LIBDIR
#error "MVRT_TEST_LIBDIR (directory of libmvrt) must be defined"
#endif
#ifndef MVRT_TEST_INSTALL_LIBDIR
#error "MVRT_TEST_INSTALL_LIBDIR must be defined"
#endif

#define UNAVAILABLE MVRT_ERR_UNAVAILABLE

static char env_dirs[8][PATH_MAX];
static int n_env_dirs;
static char libdir[PATH_MAX];
static mvrt_backend_entry_t entries[3];

static const mvrt_backend_entry_t *entry(const char *name)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(entries[i].name, name) == 0)
            return &entries[i];
    return NULL;
}

static void read_env(void)
{
    const char *env = getenv("MVRT_BACKEND_PATH");
    if (!env) {
        fprintf(stderr, "MVRT_BACKEND_PATH is not set\n");
        exit(1);
    }
    char copy[8 * PATH_MAX];
    snprintf(copy, sizeof copy, "%s", env);
    for (char *tok = strtok(copy, ":"); tok && n_env_dirs < 8; tok = strtok(NULL, ":"))
        snprintf(env_dirs[n_env_dirs++], PATH_MAX, "%s", tok);
    if (!realpath(MVRT_TEST_LIBDIR, libdir))
        snprintf(libdir, sizeof libdir, "%s", MVRT_TEST_LIBDIR);
}

/* The reason names every directory searched, in order. */
static void check_all_dirs_listed(const char *reason)
{
    const char *pos = reason;
    for (int i = 0; i < n_env_dirs; i++) {
        const char *hit = strstr(pos, env_dirs[i]);
        CHECK(hit != NULL);
        if (hit)
            pos = hit + strlen(env_dirs[i]);
    }
    CHECK(strstr(pos, libdir) != NULL);
    CHECK(strstr(reason, MVRT_TEST_INSTALL_LIBDIR) != NULL);
}

/* The failure scenarios are observed on `target`: cuda, or hip where a
 * working cuda plugin sits next to libmvrt (a GPU machine) and makes cuda
 * available whatever the fake modules earlier on the path do. The fake
 * modules exist under both names. */
static const char *target;

static void pick_target(void)
{
    const char *names[2] = {"cuda", "hip"};
    for (int i = 0; i < 2; i++) {
        const mvrt_backend_entry_t *e = entry(names[i]);
        if (e && !e->available) {
            target = names[i];
            return;
        }
    }
    fprintf(stderr, "SKIP: cuda and hip are both available here; no backend left to break\n");
    exit(MVRT_TEST_SKIP);
}

/* `target` is unavailable: the reason has `cause` and every directory, and
 * mvrt_backend_open says so without writing its out-parameter. */
static void check_unavailable(const char *cause)
{
    const mvrt_backend_entry_t *e = entry(target);
    CHECK(e && !e->available && e->device_count == 0 && e->path[0] == '\0');
    if (!e)
        return;
    fprintf(stderr, "%s reason: %s\n", target, e->reason);
    char file[64], unavailable[64], spec[32];
    snprintf(file, sizeof file, "libmvrt_backend_%s.so", target);
    snprintf(unavailable, sizeof unavailable, "backend '%s' is unavailable", target);
    CHECK(strncmp(e->reason, file, strlen(file)) == 0);
    CHECK(strstr(e->reason, cause) != NULL);
    check_all_dirs_listed(e->reason);
    mvrt_backend_t *const poison = (mvrt_backend_t *)(uintptr_t)0x5151;
    mvrt_backend_t *be = poison;
    CHECK_ERR(mvrt_backend_open(target, &be), UNAVAILABLE, "mvrt_backend_open", unavailable, cause,
              libdir);
    CHECK(be == poison);
    snprintf(spec, sizeof spec, "%s:1", target);
    CHECK_ERR(mvrt_backend_open(spec, &be), UNAVAILABLE, unavailable, cause);
    CHECK(be == poison);
}

static void scenario_missing(void)
{
    pick_target();
    /* Consecutive directories without the file form one list. */
    char expect[3 * PATH_MAX];
    snprintf(expect, sizeof expect, "not found in: %s, %s", env_dirs[0], env_dirs[1]);
    check_unavailable(expect);
}

/* The candidate in the first directory was rejected for `cause`. */
static void scenario_rejected(const char *cause)
{
    pick_target();
    char file_cause[2 * PATH_MAX];
    snprintf(file_cause, sizeof file_cause, "%s/libmvrt_backend_%s.so: %s", env_dirs[0], target,
             cause);
    check_unavailable(file_cause);
}

static void scenario_good(void)
{
    const mvrt_backend_entry_t *e = entry("cuda");
    CHECK(e && e->available && e->device_count == 2 && e->priority == 30 && e->reason[0] == 0);
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/libmvrt_backend_cuda.so", env_dirs[n_env_dirs - 1]);
    CHECK(e && strcmp(e->path, path) == 0);

    /* auto takes the highest priority: the fake cuda (30) over cpu (10). */
    mvrt_backend_t *a = NULL, *c1 = NULL, *cpu = NULL;
    CHECK_OK(mvrt_backend_open("auto", &a));
    CHECK(a && strcmp(mvrt_backend_name(a), "cuda") == 0);
    CHECK_OK(mvrt_backend_open("cuda:1", &c1));
    mvrt_device_info_t info;
    CHECK_OK(mvrt_backend_device_info(c1, &info));
    CHECK(strcmp(info.backend, "cuda") == 0 && info.device_index == 1);
    CHECK(info.compute_units == 11 && strcmp(info.name, "Fake Device") == 0);
    mvrt_backend_t *bad = NULL;
    CHECK_ERR(mvrt_backend_open("cuda:2", &bad), MVRT_ERR_INVALID_ARGUMENT, "device index 2",
              "2 device(s)");
    CHECK(bad == NULL);

    /* A cuda stream with a cpu buffer is refused. */
    cpu = tu_open_or_skip("cpu");
    mvrt_stream_t *s = NULL;
    mvrt_buffer_t *hb = NULL, *cb = NULL;
    CHECK_OK(mvrt_stream_create(c1, &s));
    CHECK_OK(mvrt_buffer_alloc(cpu, 64, &hb));
    CHECK_OK(mvrt_buffer_alloc(c1, 4096, &cb));
    unsigned char data[64] = {0};
    CHECK_ERR(mvrt_copy_host_to_device(s, hb, 0, data, 64), MVRT_ERR_INVALID_ARGUMENT,
              "different backends", "cuda", "cpu");
    CHECK_ERR(mvrt_copy_device_to_device(NULL, cb, 0, hb, 0, 64), MVRT_ERR_INVALID_ARGUMENT,
              "different backends");

    /* Valid scan arguments on a backend without the scan: UNSUPPORTED. */
    int64_t bdl[3] = {1, 2, 3}, dn[2] = {2, 4};
    mvrt_selective_scan_args_t args;
    memset(&args, 0, sizeof args);
    args.u = mvrt_tensor_make(cb, 0, MVRT_DTYPE_F32, 3, bdl);
    args.delta = mvrt_tensor_make(cb, 256, MVRT_DTYPE_F32, 3, bdl);
    args.A = mvrt_tensor_make(cb, 512, MVRT_DTYPE_F32, 2, dn);
    args.B = mvrt_tensor_make(cb, 768, MVRT_DTYPE_F32, 2, dn);
    args.C = mvrt_tensor_make(cb, 1024, MVRT_DTYPE_F32, 2, dn);
    mvrt_selective_scan_outputs_t outs;
    memset(&outs, 0, sizeof outs);
    outs.out = mvrt_tensor_make(cb, 1280, MVRT_DTYPE_F32, 3, bdl);
    CHECK_ERR(mvrt_selective_scan_fwd(s, &args, &outs), MVRT_ERR_UNSUPPORTED, "cuda", "forward");
    size_t ws = 5;
    CHECK_ERR(mvrt_selective_scan_bwd_workspace_size(c1, &args, &ws), MVRT_ERR_UNSUPPORTED,
              "backward");
    CHECK(ws == 5);
    mvrt_selective_scan_grads_t g;
    memset(&g, 0, sizeof g);
    g.dout = mvrt_tensor_make(cb, 1536, MVRT_DTYPE_F32, 3, bdl);
    g.du = mvrt_tensor_make(cb, 1792, MVRT_DTYPE_F32, 3, bdl);
    g.ddelta = mvrt_tensor_make(cb, 2048, MVRT_DTYPE_F32, 3, bdl);
    g.dA = mvrt_tensor_make(cb, 2304, MVRT_DTYPE_F32, 2, dn);
    g.dB = mvrt_tensor_make(cb, 2560, MVRT_DTYPE_F32, 2, dn);
    g.dC = mvrt_tensor_make(cb, 2816, MVRT_DTYPE_F32, 2, dn);
    CHECK_ERR(mvrt_selective_scan_bwd(NULL, &args, &g, NULL), MVRT_ERR_UNSUPPORTED, "backward");

    mvrt_buffer_free(cb);
    mvrt_buffer_free(hb);
    mvrt_stream_destroy(s);
    mvrt_backend_close(cpu);
    mvrt_backend_close(c1);
    mvrt_backend_close(a);
}

/* A broken libmvrt_backend_cpu.so earlier on the path does not hide the
 * real one next to libmvrt. */
static void scenario_shadow_cpu(void)
{
    const mvrt_backend_entry_t *e = entry("cpu");
    CHECK(e && e->available);
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/libmvrt_backend_cpu.so", libdir);
    CHECK(e && strcmp(e->path, path) == 0);
    mvrt_backend_t *be = NULL;
    CHECK_OK(mvrt_backend_open("cpu", &be));
    mvrt_backend_close(be);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SCENARIO\n", argv[0]);
        return 2;
    }
    read_env();
    size_t n = 0;
    CHECK_OK(mvrt_backend_list(entries, 3, &n));
    CHECK(n == 3);
    const char *sc = argv[1];
    if (strcmp(sc, "missing") == 0)
        scenario_missing();
    else if (strcmp(sc, "abi") == 0) {
        char want[64];
        snprintf(want, sizeof want, "ABI version %u, expected %u", MVRT_PLUGIN_ABI_VERSION + 1,
                 MVRT_PLUGIN_ABI_VERSION);
        scenario_rejected(want);
    } else if (strcmp(sc, "noentry") == 0)
        scenario_rejected("no entry point mvrt_backend_plugin_entry_v1");
    else if (strcmp(sc, "probe") == 0)
        scenario_rejected("probe failed: fake: no driver (libfakevendor.so.1");
    else if (strcmp(sc, "nullvtable") == 0) {
        char want[96];
        snprintf(want, sizeof want, "entry point returned no vtable for ABI version %u: fake: refusing to load",
                 MVRT_PLUGIN_ABI_VERSION);
        scenario_rejected(want);
    } else if (strcmp(sc, "wrongname") == 0)
        scenario_rejected("plugin calls itself 'cpu', expected '");
    else if (strcmp(sc, "badelf") == 0)
        scenario_rejected("dlopen failed: ");
    else if (strcmp(sc, "good") == 0 || strcmp(sc, "fallthrough") == 0)
        scenario_good();
    else if (strcmp(sc, "shadowcpu") == 0)
        scenario_shadow_cpu();
    else {
        fprintf(stderr, "unknown scenario %s\n", sc);
        return 2;
    }
    TEST_END();
}
