/* mvrt info: the library version, every known backend, whether it can be
 * used (and if not, why), and the devices of the usable ones. */
#include <stdio.h>
#include <string.h>

#include "mvrt/mvrt.h"
#include "commands.h"

static void print_memory(unsigned long long bytes)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    if (bytes >= (1ull << 30))
        printf("%.1f GiB", (double)bytes / gib);
    else
        printf("%.1f MiB", (double)bytes / (1024.0 * 1024.0));
}

static void print_device(const mvrt_backend_entry_t *e, int index)
{
    char spec[MVRT_NAME_MAX + 16];
    snprintf(spec, sizeof spec, "%.*s:%d", MVRT_NAME_MAX - 1, e->name, index);
    mvrt_backend_t *be = NULL;
    mvrt_status_t st = mvrt_backend_open(spec, &be);
    if (st != MVRT_OK) {
        printf("  device %d: cannot open: %s\n", index, mvrt_last_error());
        return;
    }
    mvrt_device_info_t info;
    st = mvrt_backend_device_info(be, &info);
    if (st != MVRT_OK) {
        printf("  device %d: no info: %s\n", index, mvrt_last_error());
        mvrt_backend_close(be);
        return;
    }
    printf("  device %d: %s\n", index, info.name);
    printf("    vendor:        %s\n", info.vendor);
    printf("    memory:        ");
    print_memory((unsigned long long)info.total_memory);
    printf("\n");
    printf("    warp width:    %d\n", info.warp_width);
    printf("    compute units: %d\n", info.compute_units);
    if (info.arch_major || info.arch_minor)
        printf("    arch:          %d.%d\n", info.arch_major, info.arch_minor);
    printf("    features:      %s\n", info.features);
    mvrt_backend_close(be);
}

int mvrt_cmd_info(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "usage: mvrt info\n");
        return 2;
    }
    printf("mvrt %s\n", mvrt_version());
    mvrt_backend_entry_t entries[8];
    size_t count = 0;
    if (mvrt_backend_list(entries, sizeof entries / sizeof entries[0], &count) != MVRT_OK) {
        fprintf(stderr, "mvrt info: %s\n", mvrt_last_error());
        return 1;
    }
    if (count > sizeof entries / sizeof entries[0])
        count = sizeof entries / sizeof entries[0];
    for (size_t i = 0; i < count; i++) {
        const mvrt_backend_entry_t *e = &entries[i];
        if (!e->available) {
            printf("%s: unavailable (%s)\n", e->name, e->reason);
            continue;
        }
        printf("%s: available, %d device(s), priority %d, %s\n", e->name, e->device_count,
               e->priority, e->path);
        for (int d = 0; d < e->device_count; d++)
            print_device(e, d);
    }
    return 0;
}
