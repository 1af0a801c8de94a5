/* Plugin loader, the process-wide registry of backends, and open backends.
 *
 * Each known backend (cpu, cuda, hip) is loaded lazily, once per process,
 * the first time anything asks about it: libmvrt_backend_<name>.so is looked
 * for in $MVRT_BACKEND_PATH, then next to libmvrt, then in the install
 * libdir. The first candidate that loads, speaks our ABI and probes at least
 * one device wins; every other candidate's fate goes into the reason text,
 * so "unavailable" always says every path tried and what happened there.
 * The result (including failure) is cached; the cache is the only global
 * mutable state in libmvrt and is guarded by one mutex.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#ifndef MVRT_INSTALL_LIBDIR
#define MVRT_INSTALL_LIBDIR "/usr/local/lib"
#endif

/* Longest reason kept internally; mvrt_backend_entry_t::reason is shorter
 * and receives a truncated copy. */
#define REASON_CAP 3072
#define MAX_DIRS 32

typedef struct registry_slot {
    const char *name;
    int default_priority;   /* used until a plugin reports its own */
    int loaded;             /* load attempted (result below is final) */
    int available;
    int device_count;
    int priority;
    const mvrt_plugin_vtable_t *vt;
    char path[512];
    char reason[REASON_CAP];
} registry_slot_t;

/* Order is the order of mvrt_backend_list; "auto" picks by priority, ties
 * going to the earlier of cuda, hip, cpu. */
static registry_slot_t slots[] = {
    {.name = "cpu", .default_priority = 10},
    {.name = "cuda", .default_priority = 30},
    {.name = "hip", .default_priority = 20},
};
#define SLOT_COUNT (sizeof slots / sizeof slots[0])

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- small string builder (never overflows; marks truncation) ---------- */

typedef struct strbuf {
    char *buf;
    size_t cap, len;
} strbuf_t;

static void sb_addf(strbuf_t *sb, const char *fmt, ...) MVRT_PRINTF_LIKE(2, 3);
static void sb_addf(strbuf_t *sb, const char *fmt, ...)
{
    if (sb->len + 1 >= sb->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sb->cap - sb->len) {
        sb->len = sb->cap - 1;
        if (sb->cap >= 4)
            memcpy(sb->buf + sb->cap - 4, "...", 4);
    } else {
        sb->len += (size_t)n;
    }
}

/* Copies src into dst (size dst_size), ending in "..." when cut. */
static void copy_truncated(char *dst, size_t dst_size, const char *src)
{
    size_t n = strlen(src);
    if (n < dst_size) {
        memcpy(dst, src, n + 1);
        return;
    }
    memcpy(dst, src, dst_size - 4);
    memcpy(dst + dst_size - 4, "...", 4);
}

/* ---- search path -------------------------------------------------------- */

typedef struct dir_list {
    char dirs[MAX_DIRS][PATH_MAX];
    int count;
} dir_list_t;

static void dirs_add(dir_list_t *dl, const char *dir, size_t len)
{
    while (len > 1 && dir[len - 1] == '/')
        len--; /* "/a/" and "/a" are the same directory */
    if (len == 0 || len >= PATH_MAX || dl->count >= MAX_DIRS)
        return;
    for (int i = 0; i < dl->count; i++)
        if (strlen(dl->dirs[i]) == len && memcmp(dl->dirs[i], dir, len) == 0)
            return;
    memcpy(dl->dirs[dl->count], dir, len);
    dl->dirs[dl->count][len] = '\0';
    dl->count++;
}

static void search_dirs(dir_list_t *dl)
{
    dl->count = 0;
    const char *env = getenv("MVRT_BACKEND_PATH");
    if (env) {
        const char *p = env;
        while (*p) {
            const char *colon = strchr(p, ':');
            size_t len = colon ? (size_t)(colon - p) : strlen(p);
            dirs_add(dl, p, len); /* empty components are skipped */
            p += len;
            if (*p == ':')
                p++;
        }
    }
    /* The directory holding libmvrt itself (build tree or install prefix). */
    Dl_info info;
    if (dladdr((void *)&mvrt_backend_list, &info) && info.dli_fname && info.dli_fname[0]) {
        char resolved[PATH_MAX];
        const char *file = realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
        const char *slash = strrchr(file, '/');
        if (slash)
            dirs_add(dl, file, slash == file ? 1 : (size_t)(slash - file));
    }
    dirs_add(dl, MVRT_INSTALL_LIBDIR, strlen(MVRT_INSTALL_LIBDIR));
}

/* ---- loading one plugin ------------------------------------------------- */

/* Names a vtable function the plugin left NULL, or NULL when complete. The
 * scan entries are allowed to be NULL (op unsupported on that backend). */
static const char *missing_function(const mvrt_plugin_vtable_t *vt)
{
#define REQUIRE(f)      \
    if (!vt->f)         \
        return #f;
    REQUIRE(probe) REQUIRE(device_open) REQUIRE(device_close) REQUIRE(device_info)
    REQUIRE(set_num_threads) REQUIRE(mem_alloc) REQUIRE(mem_free) REQUIRE(default_stream)
    REQUIRE(stream_create) REQUIRE(stream_wrap) REQUIRE(stream_destroy)
    REQUIRE(stream_synchronize) REQUIRE(stream_native) REQUIRE(event_create)
    REQUIRE(event_destroy) REQUIRE(event_record) REQUIRE(stream_wait_event)
    REQUIRE(event_synchronize) REQUIRE(event_elapsed_ms) REQUIRE(copy_h2d)
    REQUIRE(copy_d2h) REQUIRE(copy_d2d) REQUIRE(fill)
#undef REQUIRE
    return NULL;
}

/* Tries one candidate file. Returns 1 and fills the slot on success;
 * otherwise writes what went wrong to `why` and returns 0. */
static int try_candidate(registry_slot_t *slot, const char *file, char *why, size_t why_size)
{
    /* RTLD_LOCAL: two plugins may use the same internal symbol names. */
    dlerror();
    void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *err = dlerror();
        snprintf(why, why_size, "dlopen failed: %s", err ? err : "unknown error");
        return 0;
    }
    dlerror();
    void *sym = dlsym(handle, MVRT_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
        snprintf(why, why_size, "no entry point %s", MVRT_PLUGIN_ENTRY_SYMBOL);
        dlclose(handle);
        return 0;
    }
    mvrt_plugin_entry_fn entry;
    /* POSIX guarantees a data pointer from dlsym converts to a function. */
    memcpy(&entry, &sym, sizeof entry);

    /* From here the plugin's own code has run: it stays loaded even when it
     * is rejected, because a vendor runtime it pulled in may have registered
     * handlers that would dangle after dlclose. */
    mvrt_error_set(MVRT_OK, "%s", "");
    const mvrt_plugin_vtable_t *vt = entry(mvrt_host_api(), MVRT_PLUGIN_ABI_VERSION);
    if (!vt) {
        const char *msg = mvrt_last_error();
        snprintf(why, why_size, "entry point returned no vtable for ABI version %u%s%s",
                 (unsigned)MVRT_PLUGIN_ABI_VERSION, msg[0] ? ": " : "", msg);
        return 0;
    }
    if (vt->abi_version != MVRT_PLUGIN_ABI_VERSION) {
        snprintf(why, why_size, "ABI version %u, expected %u", (unsigned)vt->abi_version,
                 (unsigned)MVRT_PLUGIN_ABI_VERSION);
        return 0;
    }
    if (!vt->name || strcmp(vt->name, slot->name) != 0) {
        snprintf(why, why_size, "plugin calls itself '%s', expected '%s'",
                 vt->name ? vt->name : "(null)", slot->name);
        return 0;
    }
    const char *missing = missing_function(vt);
    if (missing) {
        snprintf(why, why_size, "incomplete vtable: %s is NULL", missing);
        return 0;
    }
    int count = 0;
    mvrt_error_set(MVRT_OK, "%s", "");
    mvrt_status_t st = vt->probe(&count);
    if (st != MVRT_OK) {
        const char *msg = mvrt_last_error();
        snprintf(why, why_size, "probe failed: %s", msg[0] ? msg : mvrt_status_string(st));
        return 0;
    }
    if (count <= 0) {
        snprintf(why, why_size, "probe found no devices");
        return 0;
    }
    slot->vt = vt;
    slot->available = 1;
    slot->device_count = count;
    slot->priority = vt->priority;
    copy_truncated(slot->path, sizeof slot->path, file);
    slot->reason[0] = '\0';
    return 1;
}

/* Loads one slot. Called with registry_lock held. */
static void load_slot(registry_slot_t *slot)
{
    slot->priority = slot->default_priority;
    /* Probing may leave plugin messages in this thread's error buffer; the
     * caller's last error must survive a successful list/open. */
    /* Both are large: static, which is safe because the lock is held. */
    static char saved[MVRT_ERROR_MAX];
    mvrt_error_save(saved, sizeof saved);

    static dir_list_t dl;
    search_dirs(&dl);

    char file_name[MVRT_NAME_MAX + 32];
    snprintf(file_name, sizeof file_name, "libmvrt_backend_%s.so", slot->name);

    strbuf_t sb = {slot->reason, sizeof slot->reason, 0};
    slot->reason[0] = '\0';
    int any_failure = 0;        /* a candidate existed but was rejected */
    int in_not_found_run = 0;   /* consecutive "not found" dirs are grouped */
    for (int i = 0; i < dl.count; i++) {
        char file[PATH_MAX + sizeof file_name + 1];
        snprintf(file, sizeof file, "%s%s%s", dl.dirs[i],
                 strcmp(dl.dirs[i], "/") == 0 ? "" : "/", file_name);
        if (access(file, F_OK) != 0) {
            if (!in_not_found_run)
                sb_addf(&sb, "%snot found in: %s", sb.len ? "; " : "", dl.dirs[i]);
            else
                sb_addf(&sb, ", %s", dl.dirs[i]);
            in_not_found_run = 1;
            continue;
        }
        in_not_found_run = 0;
        char why[1536];
        if (try_candidate(slot, file, why, sizeof why))
            break;
        any_failure = 1;
        sb_addf(&sb, "%s%s: %s", sb.len ? "; " : "", file, why);
    }
    if (!slot->available) {
        if (dl.count == 0) {
            sb_addf(&sb, "no directory to search");
        }
        /* Prefix the file name so the reason reads on its own:
         * "libmvrt_backend_hip.so not found in: /a, /b". */
        char tmp[REASON_CAP];
        snprintf(tmp, sizeof tmp, "%s", slot->reason);
        strbuf_t out = {slot->reason, sizeof slot->reason, 0};
        sb_addf(&out, "%s%s%s", file_name, any_failure ? ": " : " ", tmp);
    }
    slot->loaded = 1;
    mvrt_error_restore(saved);
}

static registry_slot_t *get_slot(size_t i)
{
    pthread_mutex_lock(&registry_lock);
    if (!slots[i].loaded)
        load_slot(&slots[i]);
    pthread_mutex_unlock(&registry_lock);
    return &slots[i];
}

/* ---- public API --------------------------------------------------------- */

mvrt_status_t mvrt_backend_list(mvrt_backend_entry_t *out_entries, size_t capacity,
                                size_t *out_count)
{
    if (!out_count)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT, "mvrt_backend_list: out_count is NULL");
    if (capacity > 0 && !out_entries)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_backend_list: out_entries is NULL but capacity is %zu",
                              capacity);
    for (size_t i = 0; i < SLOT_COUNT && i < capacity; i++) {
        const registry_slot_t *s = get_slot(i);
        mvrt_backend_entry_t *e = &out_entries[i];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", s->name);
        e->available = s->available;
        e->device_count = s->available ? s->device_count : 0;
        e->priority = s->priority;
        copy_truncated(e->path, sizeof e->path, s->path);
        copy_truncated(e->reason, sizeof e->reason, s->reason);
    }
    *out_count = SLOT_COUNT;
    return MVRT_OK;
}

/* Parses "name" or "name:N". Returns the slot index or -1; *index = -1 when
 * no index was given. */
static int parse_spec(const char *spec, int *index)
{
    const char *colon = strchr(spec, ':');
    size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
    *index = -1;
    int slot = -1;
    for (size_t i = 0; i < SLOT_COUNT; i++)
        if (strlen(slots[i].name) == name_len && memcmp(slots[i].name, spec, name_len) == 0)
            slot = (int)i;
    if (slot < 0)
        return -1;
    if (colon) {
        const char *d = colon + 1;
        if (*d < '0' || *d > '9')
            return -1;
        long v = 0;
        for (; *d; d++) {
            if (*d < '0' || *d > '9')
                return -1;
            v = v * 10 + (*d - '0');
            if (v > INT_MAX)
                return -1;
        }
        *index = (int)v;
    }
    return slot;
}

static mvrt_status_t open_slot(size_t si, int index, const char *spec,
                               mvrt_backend_t **out_backend)
{
    registry_slot_t *s = get_slot(si);
    if (!s->available)
        return mvrt_error_set(MVRT_ERR_UNAVAILABLE,
                              "mvrt_backend_open: backend '%s' is unavailable: %s", s->name,
                              s->reason);
    if (index < 0)
        index = 0;
    if (index >= s->device_count)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_backend_open: spec \"%s\": device index %d out of range; "
                              "backend '%s' has %d device(s) (valid: 0..%d)",
                              spec, index, s->name, s->device_count, s->device_count - 1);
    mvrt_backend_t *b = mvrt_rt_calloc(1, sizeof *b);
    if (!b)
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY,
                              "mvrt_backend_open: out of host memory (%zu bytes)", sizeof *b);
    void *device = NULL;
    mvrt_status_t st = s->vt->device_open(index, &device);
    if (st != MVRT_OK) {
        free(b);
        return st; /* the plugin said why through set_error */
    }
    b->vt = s->vt;
    b->device = device;
    b->index = index;
    snprintf(b->name, sizeof b->name, "%s", s->name);
    *out_backend = b;
    return MVRT_OK;
}

mvrt_status_t mvrt_backend_open(const char *spec, mvrt_backend_t **out_backend)
{
    if (!out_backend)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT, "mvrt_backend_open: out_backend is NULL");
    if (!spec)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT, "mvrt_backend_open: spec is NULL");
    if (strcmp(spec, "auto") == 0) {
        int best = -1;
        for (size_t i = 0; i < SLOT_COUNT; i++) {
            const registry_slot_t *s = get_slot(i);
            if (!s->available)
                continue;
            /* Ties: cuda before hip before cpu (slot order is cpu, cuda, hip). */
            if (best < 0 || s->priority > slots[best].priority ||
                (s->priority == slots[best].priority && best == 0))
                best = (int)i;
        }
        if (best < 0) {
            char msg[3 * REASON_CAP + 128];
            strbuf_t sb = {msg, sizeof msg, 0};
            sb_addf(&sb, "no backend is available");
            for (size_t i = 0; i < SLOT_COUNT; i++)
                sb_addf(&sb, "; %s: %s", slots[i].name, slots[i].reason);
            return mvrt_error_set(MVRT_ERR_UNAVAILABLE, "mvrt_backend_open: spec \"auto\": %s",
                                  msg);
        }
        return open_slot((size_t)best, 0, spec, out_backend);
    }
    int index;
    int si = parse_spec(spec, &index);
    if (si < 0)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_backend_open: spec \"%s\" is not one of \"auto\", \"cpu\", "
                              "\"cuda\", \"cuda:N\", \"hip\", \"hip:N\"",
                              spec);
    return open_slot((size_t)si, index, spec, out_backend);
}

void mvrt_backend_close(mvrt_backend_t *backend)
{
    if (!backend)
        return;
    backend->vt->device_close(backend->device);
    free(backend);
}

mvrt_status_t mvrt_backend_device_info(const mvrt_backend_t *backend, mvrt_device_info_t *out_info)
{
    if (!backend)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_backend_device_info: backend is NULL");
    if (!out_info)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_backend_device_info: out_info is NULL");
    /* Filled in a local copy so that a failing plugin writes nothing. */
    mvrt_device_info_t info;
    memset(&info, 0, sizeof info);
    mvrt_status_t st = backend->vt->device_info(backend->device, &info);
    if (st != MVRT_OK)
        return st;
    snprintf(info.backend, sizeof info.backend, "%s", backend->name);
    info.device_index = backend->index;
    *out_info = info;
    return MVRT_OK;
}

mvrt_status_t mvrt_backend_set_num_threads(mvrt_backend_t *backend, int n)
{
    if (!backend)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_backend_set_num_threads: backend is NULL");
    if (n < 0)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_backend_set_num_threads: n is %d; it must be >= 0 "
                              "(0 = default)",
                              n);
    return backend->vt->set_num_threads(backend->device, n);
}

const char *mvrt_backend_name(const mvrt_backend_t *backend)
{
    return backend ? backend->name : "(null)";
}
