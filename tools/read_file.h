/* Whole-file reads for the mvrt program (classify's images, bench's anchor
 * JSON). */
#ifndef MVRT_TOOLS_READ_FILE_H
#define MVRT_TOOLS_READ_FILE_H

#include <stddef.h>

/* Reads the regular file `path` (at most max_bytes) into a new buffer with
 * a NUL after the last byte (so text can be searched as a string); the
 * caller frees it. On failure returns NULL with the reason in why. */
char *mvrt_read_file(const char *path, size_t max_bytes, size_t *out_size, char *why, size_t why_n);

#endif
