/* Whole-file reads (contract: read_file.h). */
#include "read_file.h"

#include <stdio.h>
#include <stdlib.h>

char *mvrt_read_file(const char *path, size_t max_bytes, size_t *out_size, char *why, size_t why_n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_n, "cannot open the file");
        return NULL;
    }
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0)
        snprintf(why, why_n, "cannot read the file (not a regular file?)");
    else if ((unsigned long)n > max_bytes)
        snprintf(why, why_n, "file of %ld bytes (over %zu)", n, max_bytes);
    else if (!(buf = malloc((size_t)n + 1)))
        snprintf(why, why_n, "out of memory for %ld bytes", n);
    else if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        snprintf(why, why_n, "read error");
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *out_size = (size_t)n;
    }
    return buf;
}
