/* lib/tube.c — tube names and their stable hash (issue 14); see tube.h. */
#include "lib/tube.h"

#include <string.h>

/* Letters and digits, ASCII only: isalnum() would follow the locale. */
static bool is_alnum_ascii(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_tube_punct(char c)
{
    return c != '\0' && strchr("-+/;.$_()", c) != NULL;
}

bool tube_name_valid(const char *s, size_t n)
{
    if (s == NULL || n < 1 || n > TUBE_NAME_MAX || s[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum_ascii(s[i]) && !is_tube_punct(s[i]))
            return false;
    return true;
}

uint64_t tube_hash(const char *s, size_t n)
{
    uint64_t h = TUBE_FNV_OFFSET_BASIS;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= TUBE_FNV_PRIME; /* unsigned: wraps modulo 2^64 */
    }
    return h;
}

uint32_t tube_partition(uint64_t hash, uint32_t count)
{
    return count == 0 ? 0 : (uint32_t)(hash % count);
}
