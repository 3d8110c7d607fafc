/* lib/tube.h — tube names and their stable hash (issue 14, T-01..T-04).
 * Owns: nothing. Uses: nothing but the C library.
 *
 * A tube name is beanstalkd's: 1 to TUBE_NAME_MAX bytes of ASCII letters,
 * digits and the punctuation - + / ; . $ _ ( ), not starting with '-'; the
 * same rule as pepsi.tube_name_valid (deploy/schema.sql). Its hash is
 * FNV-1a 64 over the name's exact bytes (no case folding, no locale, no
 * seed), the same as pepsi.tube_hash (deploy/tube_hash.sql); its partition
 * is the hash, unsigned, modulo the topology's partition count, the same
 * as pepsi.tube_partition. Both sides check testdata/tube-hash-vectors.json
 * (docs/tubes.md). */
#ifndef PEPSI_LIB_TUBE_H
#define PEPSI_LIB_TUBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TUBE_NAME_MAX 200                       /* bytes, as pepsi.input_limit('tube') */
#define TUBE_HASH_NAME "fnv1a64"                /* pepsi.topology.hash_name */
#define TUBE_FNV_OFFSET_BASIS UINT64_C(14695981039346656037)
#define TUBE_FNV_PRIME UINT64_C(1099511628211)

/* Whether s[0..n) is a valid tube name (T-02). */
bool tube_name_valid(const char *s, size_t n);

/* FNV-1a 64 over s[0..n) (T-03, T-04). The caller validates the name
 * first: only valid names are routed (T-02). */
uint64_t tube_hash(const char *s, size_t n);

/* The partition of a hash: hash mod count (count >= 1), unsigned (T-01). */
uint32_t tube_partition(uint64_t hash, uint32_t count);

#endif
