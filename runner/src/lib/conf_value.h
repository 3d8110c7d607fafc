/* lib/conf_value.h — pepsi.conf's typed converters: a value's text into
 * the field a key row (lib/conf_key.h) says, with the reason when it does
 * not parse. The parsers themselves (conf_parse_duration, _bool, _int,
 * conf_list_next, conf_list_has) are declared in lib/conf.h.
 * Owns: nothing kept. Uses: lib/ (conf, conf_key, proto). */
#ifndef PEPSI_LIB_CONF_VALUE_H
#define PEPSI_LIB_CONF_VALUE_H

#include "lib/conf_key.h"

#include <stdbool.h>
#include <stddef.h>

/* What a stage name must be, for messages. */
extern const char conf_expect_stage[];

/* Keys are upper case: [A-Z][A-Z0-9_]*. */
bool conf_key_name_ok(const char *s);

/* Whether s is a valid stage name. */
bool conf_stage_name_ok(const char *s);

/* Parses value for key k into base (struct conf or struct stage_conf, at
 * k->off). Returns 0, -1 with the reason in why ("invalid value ...: ..."),
 * or -2 when out of memory. */
int conf_value_store(const struct conf_key *k, void *base, const char *value, char *why,
                     size_t whylen);

#endif
