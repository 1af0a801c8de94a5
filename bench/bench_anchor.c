/* The anchors' JSON files (see bench.h): loaded whole, searched by key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tools/read_file.h"

char *mvrt_bench_anchor_load(const char *path)
{
    char why[256];
    size_t size = 0;
    char *json = mvrt_read_file(path, (size_t)64 << 20, &size, why, sizeof why);
    if (!json)
        fprintf(stderr, "mvrt bench: the anchor file %s: %s\n", path, why);
    return json;
}

double mvrt_bench_anchor_field(const char *json, const char *key, const char *field)
{
    char qkey[160], qfield[48];
    if (!json || snprintf(qkey, sizeof qkey, "\"%s\"", key) >= (int)sizeof qkey ||
        snprintf(qfield, sizeof qfield, "\"%s\"", field) >= (int)sizeof qfield)
        return 0.0;
    const char *at = strstr(json, qkey);
    if (!at)
        return 0.0;
    at += strlen(qkey);
    const char *end = strchr(at, '}');
    const char *v = strstr(at, qfield);
    if (!v || (end && v > end))
        return 0.0;
    v = strchr(v + strlen(qfield), ':');
    return v ? strtod(v + 1, NULL) : 0.0;
}
