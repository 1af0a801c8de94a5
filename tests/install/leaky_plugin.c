/* A plugin-shaped module that exports symbols too many. The symbol hygiene
 * check must reject it, both as a plugin (test symbol_hygiene_catches_leak:
 * an extra mvrt_* symbol) and in libmvrt's place
 * (symbol_hygiene_catches_library_leak: a symbol without the mvrt_ prefix):
 * this keeps the check itself able to fail. Never installed or loaded. */
#define LEAKY_EXPORT __attribute__((visibility("default")))

LEAKY_EXPORT const void *mvrt_backend_plugin_entry_v1(const void *host, unsigned abi);
LEAKY_EXPORT int mvrt_leaked_helper(int x);
LEAKY_EXPORT int leaky_unprefixed_helper(int x);

const void *mvrt_backend_plugin_entry_v1(const void *host, unsigned abi)
{
    (void)host;
    (void)abi;
    return 0;
}

int mvrt_leaked_helper(int x)
{
    return x + 1;
}

int leaky_unprefixed_helper(int x)
{
    return x - 1;
}
